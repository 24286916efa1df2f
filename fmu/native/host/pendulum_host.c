/* pendulum_host.c: a C co-simulation master without Python for the native rbcosim FMU (FMI 2
 * or 3) of scenarios/rigid_flex_pendulum.toml (tests/test_fmu_pendulum_host.py builds and runs
 * it).
 *
 *   pendulum_host 2|3 BINARY.so RESOURCES TOKEN SETUP_FILE OUT.csv
 *
 * (FMI version; RESOURCES: the resources folder as a file URI for FMI 2, a path for FMI 3;
 * TOKEN: the GUID / instantiationToken.) It dlopen()s the FMU's binary (the rigid link, in an
 * rbcosim server; the FMI calls: host_fmi.c) and couples it to its own flexible side, the
 * pendulum's floating beam, read from its body file (`rbcosim export-body`) and integrated by
 * rbcosim's own library (src/rbcosim/librbcosim/flex, body_file.h: the kernels rbcosim's
 * FlexBody and FlexEndpoint call, linked in), with the scenario's Gauss-Seidel scheme, flexible side
 * first, extrapolation order e (0..2):
 *   start (initialization mode): read the point's motion m_0 (pose, velocities, accelerations)
 *   and place the beam's floating frame there, eta = eta' = 0; its added mass
 *   M_a = -d wrench / d [a; alpha] (exact: the wrench is linear in them), turned to the point
 *   frame (T^T M_a T, T = diag(R(q_0), R(q_0))), goes to the FMU as P.added_mass[i,j] with
 *   P.added_mass_frame = "point" (when it is not zero), and the rigid input is then
 *   W + T M_a T^T [a; alpha] (W the beam's wrench, [a; alpha] and T at the frame's current
 *   values; the FMU applies -M_a [a_p; alpha_p] itself). The FMU gets that input W_0,
 *   held, in initialization mode (it takes effect at exitInitializationMode).
 *   step n, from the point's motion m_n at t_n: the frame moves to m_n; over [t_n, t_n + H] its
 *   accelerations are the polynomial through m_n's and those of the last e motions stepped
 *   from (at their times; fewer in the first steps), velocities and position its exact
 *   integrals; (q, eta, eta') advance by micro_steps classic RK4 steps of the linear
 *   floating-frame modal ODE eta'' = W z; the frame goes to its end-of-step values. The rigid
 *   input there, W_(n+1) at tau = H, and the last max(e, 1) exchanged ones (as many as there
 *   are) give the wrench polynomial c_0 + c_1 tau + c_2 tau^2 over the step (linear in the
 *   first step, then quadratic for e = 2), handed as P.f*, P.df* = c_1, P.d2f* = 2 c_2; the
 *   FMU steps; W_(n+1) joins the history.
 *   after every step (and at t_0): the beam's interface node (the frame's pose and velocities)
 *   goes to the FMU as J.flex.*, so the FMU's gaps are current.
 * The flexible side's energy ledger and its range warnings are not kept (they feed nothing
 * the FMU takes). SETUP_FILE holds "key values..." tokens: address, steps, H (s), e,
 * body (the beam's body file: `rbcosim export-body rigid_flex_pendulum.toml --body beam -o
 * FILE`; micro steps and the model come from it), and the value references
 * "vr ROLE v..." of the roles below. OUT.csv gets one row per communication point: t, the
 * `outputs` variables, J.gap_pos, eta_1..eta_k, the beam's output node (x, y, z). Exit status
 * 0 on success, 1 with a message on stderr.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flex/body_file.h"
#include "flex/frame.h"
#include "host_fmi.h"

enum { MOTION, WRENCH, FLEX, ADDED_MASS, ADDED_MASS_FRAME, GAP, ADDRESS, OUTPUTS, N_ROLES };
static const char *const ROLES[N_ROLES] = {"motion", "wrench", "flex", "added_mass",
                                           "added_mass_frame", "gap", "address", "outputs"};
/* value references per role: P.x .. P.alz (19), P.fx .. P.d2mz (18), J.flex.x .. J.flex.wz
 * (13), P.added_mass[1,1] .. [6,6] (36), then one each, and up to 8 outputs to record */
static const int ROLE_SIZE[N_ROLES] = {19, 18, 13, 36, 1, 1, 1, -8};

static struct {
    char address[256], body[4096];
    long steps;
    int extrapolation, n_out;
    double H;
    host_vr vr[N_ROLES][36];
} setup;

static void read_vr(FILE *f) {
    char role[64];
    if (fscanf(f, "%63s", role) != 1) fail_setup("vr ROLE NUMBERS...");
    for (int r = 0; r < N_ROLES; ++r) {
        if (strcmp(role, ROLES[r])) continue;
        int n = ROLE_SIZE[r];
        if (n < 0 && (fscanf(f, "%d", &setup.n_out) != 1 || setup.n_out < 1 ||
                      setup.n_out > -n)) {
            fail_setup("vr %s COUNT (1..%d) NUMBERS...", role, -n);
        }
        if (n < 0) n = setup.n_out;
        for (int i = 0; i < n; ++i) {
            if (fscanf(f, "%u", &setup.vr[r][i]) != 1) fail_setup("vr %s needs %d", role, n);
        }
        return;
    }
    fail_setup("unknown vr role %s", role);
}

static void read_setup(const char *path) {
    FILE *f = fopen(path, "r");
    char key[128];
    setup_path = path;
    if (f == NULL) fail("cannot open %s", path);
    while (fscanf(f, "%127s", key) == 1) {
        if (!strcmp(key, "address")) {
            if (fscanf(f, "%255s", setup.address) != 1) fail_setup("address");
        } else if (!strcmp(key, "body")) {
            if (fscanf(f, "%4095s", setup.body) != 1) fail_setup("body FILE");
        } else if (!strcmp(key, "steps")) {
            if (fscanf(f, "%ld", &setup.steps) != 1 || setup.steps < 0) fail_setup("steps");
        } else if (!strcmp(key, "H")) {
            read_numbers(f, &setup.H, 1, "H");
        } else if (!strcmp(key, "e")) {
            if (fscanf(f, "%d", &setup.extrapolation) != 1 || setup.extrapolation < 0 ||
                setup.extrapolation > 2) {
                fail_setup("e (0, 1 or 2)");
            }
        } else if (!strcmp(key, "vr")) {
            read_vr(f);
        } else {
            fail_setup("unknown key %s", key);
        }
    }
    fclose(f);
    if (!setup.body[0] || setup.n_out == 0 || !(setup.H > 0.0)) {
        fail_setup("H, body and vr outputs are required");
    }
}

/* The beam (librbcosim/flex/body_file.h) and its side of the exchange (FlexEndpoint). */
static rbc_fx_body_file beam;
static rbc_fx_exchange_store exchange;
static double motions[2][19], motion_times[2]; /* rigid motions stepped from, newest first */
static int n_motions;

/* The wrench polynomial's rows c (rows x 6) to the FMU as c_0, c_1, 2 c_2. */
static void send_polynomial(const double *c, int64_t rows) {
    double out[18] = {0.0};
    for (int j = 0; j < 6; ++j) {
        out[j] = c[j];
        if (rows > 1) out[6 + j] = c[6 + j];
        if (rows > 2) out[12 + j] = 2.0 * c[12 + j];
    }
    host_set(setup.vr[WRENCH], 18, out);
}

static void start(const double *motion, double t, double *scratch) {
    double handed[36];
    if (rbc_fx_endpoint_start(&beam, &exchange, t, motion, 1, scratch, handed)) {
        host_set(setup.vr[ADDED_MASS], 36, handed);
        host_set_string(setup.vr[ADDED_MASS_FRAME][0], "point");
    }
}

static void record(FILE *out, double t) {
    double values[9], node[3];
    const double *state = rbc_fx_body_state(&beam);
    host_set(setup.vr[FLEX], 13, state + FX_R); /* report: the interface node's kinematics */
    host_get(setup.vr[OUTPUTS], setup.n_out, values);
    host_get(setup.vr[GAP], 1, values + setup.n_out);
    fprintf(out, "%.17g", t);
    for (int i = 0; i <= setup.n_out; ++i) fprintf(out, ",%.17g", values[i]);
    for (int64_t i = 0; i < beam.k; ++i) fprintf(out, ",%.17g", state[FX_ETA + i]);
    rbc_fx_body_output_nodes(&beam, node);
    fprintf(out, ",%.17g,%.17g,%.17g\n", node[0], node[1], node[2]);
}

int main(int argc, char **argv) {
    if (argc != 7 || (strcmp(argv[1], "2") && strcmp(argv[1], "3"))) {
        fail("usage: pendulum_host 2|3 BINARY.so RESOURCES TOKEN SETUP OUT.csv");
    }
    read_setup(argv[5]);
    char reason[4400];
    if (rbc_fx_body_file_load(&beam, setup.body, reason, sizeof reason) != 0) fail("%s", reason);
    if (beam.grounded || beam.n_out != 1) fail("%s: expected a floating body, one output node",
                                               setup.body);
    rbc_fx_exchange_init(&exchange);
    double *scratch = malloc(sizeof(double) * (size_t)(FX_ETA + 2 * beam.k));
    if (scratch == NULL) fail("out of memory");
    FILE *out = fopen(argv[6], "w");
    if (out == NULL) fail("cannot write %s", argv[6]);
    host_open(argv[1][0] - '0', argv[2]);
    host_start(argv[3], argv[4], setup.vr[ADDRESS][0], setup.address);
    double t = 0.0, H = setup.H, m[19], past[2 * 19], past_taus[2], c[4 * 6];
    int64_t rows;
    host_get(setup.vr[MOTION], 19, m);
    start(m, t, scratch);
    /* held: the polynomial through the last min(e + 1, count) exchanged values, set in
     * initialization mode (it takes effect at exitInitializationMode) */
    rows = setup.extrapolation + 1 < exchange.count ? setup.extrapolation + 1 : exchange.count;
    rbc_fx_exchange_polynomial(&exchange.x, t, rows, 0, NULL, NULL, c);
    send_polynomial(c, rows);
    host_exit_init();
    record(out, t);
    for (long n = 0; n < setup.steps; ++n) {
        host_get(setup.vr[MOTION], 19, m); /* before the step's wrench */
        int n_past = setup.extrapolation < n_motions ? setup.extrapolation : n_motions;
        for (int i = 0; i < n_past; ++i) {
            past_taus[i] = motion_times[i] - t;
            memcpy(past + 19 * i, motions[i], sizeof motions[i]);
        }
        /* the beam's step and its commit, the polynomial through its end-of-step rigid input
         * and the past ones (Gauss-Seidel, flexible side first) */
        if (rbc_fx_endpoint_step(&beam, &exchange, m, n_past, past_taus, past, t, H,
                                 setup.extrapolation, c, &rows) != 1) {
            fail("flexible body: non-finite modal state after the step from t=%.17g", t);
        }
        send_polynomial(c, rows);
        host_do_step(t, H);
        memcpy(motions[1], motions[0], sizeof motions[0]);
        motion_times[1] = motion_times[0];
        memcpy(motions[0], m, sizeof m);
        motion_times[0] = t;
        n_motions = n_motions < 2 ? n_motions + 1 : 2;
        t += H;
        record(out, t);
    }
    fclose(out);
    host_stop();
    free(scratch);
    rbc_fx_body_file_free(&beam);
    return 0;
}
