/* pendulum_host.c: a C co-simulation master without Python for the native rbcosim FMU (FMI 2
 * or 3) of scenarios/rigid_flex_pendulum.toml (tests/test_fmu_pendulum_host.py builds and runs
 * it).
 *
 *   pendulum_host 2|3 BINARY.so RESOURCES TOKEN SETUP_FILE OUT.csv
 *
 * (FMI version; RESOURCES: the resources folder as a file URI for FMI 2, a path for FMI 3;
 * TOKEN: the GUID / instantiationToken.) It dlopen()s the FMU's binary (the rigid link, in an
 * rbcosim server; the FMI calls: host_fmi.c) and couples it to its own flexible side, the
 * pendulum's floating beam, integrated as rbcosim's reference body and its endpoint do it
 * (src/rbcosim/flex/floating.py, frame.py, polynomial.py, body.py, cosim/flex_endpoint.py;
 * the numerics are floating_beam.c), with the scenario's Gauss-Seidel scheme, flexible side
 * first, extrapolation order e (0..2):
 *   start (initialization mode): read the point's motion m_0 (pose, velocities, accelerations)
 *   and place the beam's floating frame there, eta = eta' = 0; its added mass
 *   M_a = -d wrench / d [a; alpha] (exact: the wrench is linear in them), turned to the point
 *   frame (T^T M_a T, T = diag(R(q_0), R(q_0))), goes to the FMU as P.added_mass[i,j] with
 *   P.added_mass_frame = "point" (when it is not zero), and the rigid input is then
 *   W + T M_a T^T [a; alpha] (W the beam's wrench, [a; alpha] and T at the frame's current
 *   values; the FMU applies -M_a [a_p; alpha_p] itself). After initialization the FMU gets
 *   that input W_0, held.
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
 * micro_steps, k, nodes (their number; both before any array), gravity (3), axis (3 x 3),
 * ode (k x (20k + 15)), node_positions (nodes x 3), modes (6 nodes x k), mass (6 nodes
 * squared), total_mass, first_moment (3), modal_first (3 x k), spin (3 x 3), out_position (3),
 * out_rows (3 x k) (the model's floating inertia, row-major), and the value references
 * "vr ROLE v..." of the roles below. OUT.csv gets one row per communication point: t, the
 * `outputs` variables, J.gap_pos, eta_1..eta_k, the beam's output node (x, y, z). Exit status
 * 0 on success, 1 with a message on stderr.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "floating_beam.h"
#include "host_fmi.h"

enum { MOTION, WRENCH, FLEX, ADDED_MASS, ADDED_MASS_FRAME, GAP, ADDRESS, OUTPUTS, N_ROLES };
static const char *const ROLES[N_ROLES] = {"motion", "wrench", "flex", "added_mass",
                                           "added_mass_frame", "gap", "address", "outputs"};
/* value references per role: P.x .. P.alz (19), P.fx .. P.d2mz (18), J.flex.x .. J.flex.wz
 * (13), P.added_mass[1,1] .. [6,6] (36), then one each, and up to 8 outputs to record */
static const int ROLE_SIZE[N_ROLES] = {19, 18, 13, 36, 1, 1, 1, -8};

static struct {
    char address[256];
    long steps;
    int extrapolation, n_out;
    double H;
    host_vr vr[N_ROLES][36];
} setup;
static beam_model model;

static double *array(FILE *f, int n, const char *what) {
    if (model.k < 1 || model.n_nodes < 1) fail_setup("%s before k and nodes", what);
    double *out = malloc(sizeof(double) * n);
    if (out == NULL) fail_setup("%s: out of memory", what);
    read_numbers(f, out, n, what);
    return out;
}

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
        int k = model.k, dof = 6 * model.n_nodes;
        if (!strcmp(key, "address")) {
            if (fscanf(f, "%255s", setup.address) != 1) fail_setup("address");
        } else if (!strcmp(key, "steps")) {
            if (fscanf(f, "%ld", &setup.steps) != 1 || setup.steps < 0) fail_setup("steps");
        } else if (!strcmp(key, "H")) {
            read_numbers(f, &setup.H, 1, "H");
        } else if (!strcmp(key, "e")) {
            if (fscanf(f, "%d", &setup.extrapolation) != 1 || setup.extrapolation < 0 ||
                setup.extrapolation > 2) {
                fail_setup("e (0, 1 or 2)");
            }
        } else if (!strcmp(key, "micro_steps")) {
            if (fscanf(f, "%d", &model.micro_steps) != 1 || model.micro_steps < 1) {
                fail_setup("micro_steps");
            }
        } else if (!strcmp(key, "k")) {
            if (fscanf(f, "%d", &model.k) != 1 || model.k < 1 || model.k > BEAM_MAXK) {
                fail_setup("k (1..%d)", BEAM_MAXK);
            }
        } else if (!strcmp(key, "nodes")) {
            if (fscanf(f, "%d", &model.n_nodes) != 1 || model.n_nodes < 1 ||
                6 * model.n_nodes > BEAM_MAXDOF) {
                fail_setup("nodes (1..%d)", BEAM_MAXDOF / 6);
            }
        } else if (!strcmp(key, "gravity")) {
            read_numbers(f, model.gravity, 3, "gravity");
        } else if (!strcmp(key, "axis")) {
            read_numbers(f, model.axis, 9, "axis");
        } else if (!strcmp(key, "ode")) {
            model.ode = array(f, k * (20 * k + 15), "ode");
        } else if (!strcmp(key, "node_positions")) {
            model.nodes = array(f, 3 * model.n_nodes, "node_positions");
        } else if (!strcmp(key, "modes")) {
            model.modes = array(f, dof * k, "modes");
        } else if (!strcmp(key, "mass")) {
            model.mass = array(f, dof * dof, "mass");
        } else if (!strcmp(key, "total_mass")) {
            read_numbers(f, &model.total_mass, 1, "total_mass");
        } else if (!strcmp(key, "first_moment")) {
            read_numbers(f, model.first_moment, 3, "first_moment");
        } else if (!strcmp(key, "modal_first")) {
            model.modal_first = array(f, 3 * k, "modal_first");
        } else if (!strcmp(key, "spin")) {
            read_numbers(f, model.spin, 9, "spin");
        } else if (!strcmp(key, "out_position")) {
            read_numbers(f, model.out_position, 3, "out_position");
        } else if (!strcmp(key, "out_rows")) {
            model.out_rows = array(f, 3 * k, "out_rows");
        } else if (!strcmp(key, "vr")) {
            read_vr(f);
        } else {
            fail_setup("unknown key %s", key);
        }
    }
    fclose(f);
    if (!model.ode || !model.nodes || !model.modes || !model.mass || !model.modal_first ||
        !model.out_rows || setup.n_out == 0 || !(setup.H > 0.0)) {
        fail_setup("H, ode, node_positions, modes, mass, modal_first, out_rows and vr outputs "
             "are required");
    }
}

/* The beam and its side of the exchange (cosim/flex_endpoint.py FlexEndpoint). */
static beam_state beam;
static int implicit_mass;
static double handed[36];            /* the added mass handed over, point frame */
static double times[4], wrenches[4][6]; /* exchanged rigid inputs, newest first */
static int count;
static double motions[2][19], motion_times[2]; /* rigid motions stepped from, newest first */
static int n_motions;

/* The wrench the rigid side takes now (FlexEndpoint.rigid_input). */
static void rigid_input(double *out) {
    beam_wrench(&model, beam.frame, beam.y, out);
    if (!implicit_mass) return;
    double mass[36];
    point_frame_mass(handed, beam.frame + 3, 1, mass);
    for (int i = 0; i < 6; ++i) {
        double acc = 0.0;
        for (int j = 0; j < 6; ++j) acc += mass[6 * i + j] * beam.frame[13 + j];
        out[i] += acc;
    }
}

/* The wrench polynomial over [t, t + H] (FlexEndpoint.polynomial), to the FMU as c_0, c_1,
 * 2 c_2; `end` the value at t + H (interpolation) or NULL (extrapolation). */
static void send_polynomial(double t, const double *end) {
    int e = setup.extrapolation, m = 0, past;
    double taus[4], values[4 * 6], c[4 * 6], out[18] = {0.0};
    if (end != NULL) {
        taus[m] = setup.H;
        memcpy(values, end, 6 * sizeof(double));
        ++m;
        past = e > 1 ? e : 1;
    } else {
        past = e + 1;
    }
    if (past > count) past = count;
    for (int i = 0; i < past; ++i, ++m) {
        taus[m] = times[i] - t;
        memcpy(values + 6 * m, wrenches[i], 6 * sizeof(double));
    }
    polynomial_through(m, 6, taus, values, c);
    for (int j = 0; j < 6; ++j) {
        out[j] = c[j];
        if (m > 1) out[6 + j] = c[6 + j];
        if (m > 2) out[12 + j] = 2.0 * c[12 + j];
    }
    host_set(setup.vr[WRENCH], 18, out);
}

static void start(const double *motion, double t) {
    double mass[36], largest = 0.0;
    memset(beam.y, 0, 2 * model.k * sizeof(double));
    beam_set_frame(&beam, motion);
    beam_added_mass(&model, &beam, mass);
    for (int i = 0; i < 36; ++i) largest = fabs(mass[i]) > largest ? fabs(mass[i]) : largest;
    for (int i = 0; i < 36; ++i) {
        if (fabs(mass[i]) > 1e-12 * (largest > 1.0 ? largest : 1.0)) implicit_mass = 1;
    }
    if (implicit_mass) {
        point_frame_mass(mass, motion + 3, 0, handed);
        host_set(setup.vr[ADDED_MASS], 36, handed);
        host_set_string(setup.vr[ADDED_MASS_FRAME][0], "point");
    }
    times[0] = t;
    rigid_input(wrenches[0]);
    count = 1;
}

static void record(FILE *out, double t) {
    double values[9], node[3];
    host_set(setup.vr[FLEX], 13, beam.frame); /* report: the interface node's kinematics */
    host_get(setup.vr[OUTPUTS], setup.n_out, values);
    host_get(setup.vr[GAP], 1, values + setup.n_out);
    fprintf(out, "%.17g", t);
    for (int i = 0; i <= setup.n_out; ++i) fprintf(out, ",%.17g", values[i]);
    for (int i = 0; i < model.k; ++i) fprintf(out, ",%.17g", beam.y[i]);
    beam_output_node(&model, &beam, node);
    fprintf(out, ",%.17g,%.17g,%.17g\n", node[0], node[1], node[2]);
}

int main(int argc, char **argv) {
    if (argc != 7 || (strcmp(argv[1], "2") && strcmp(argv[1], "3"))) {
        fail("usage: pendulum_host 2|3 BINARY.so RESOURCES TOKEN SETUP OUT.csv");
    }
    read_setup(argv[5]);
    beam.y = calloc(2 * model.k, sizeof(double));
    if (beam.y == NULL) fail("out of memory");
    FILE *out = fopen(argv[6], "w");
    if (out == NULL) fail("cannot write %s", argv[6]);
    host_open(argv[1][0] - '0', argv[2]);
    host_start(argv[3], argv[4], setup.vr[ADDRESS][0], setup.address);
    double t = 0.0, H = setup.H, m[19], end[6], past[2 * 19], past_taus[2];
    host_get(setup.vr[MOTION], 19, m);
    start(m, t);
    host_exit_init();
    send_polynomial(t, NULL);
    record(out, t);
    for (long n = 0; n < setup.steps; ++n) {
        host_get(setup.vr[MOTION], 19, m); /* before the step's wrench */
        int n_past = setup.extrapolation < n_motions ? setup.extrapolation : n_motions;
        for (int i = 0; i < n_past; ++i) {
            past_taus[i] = motion_times[i] - t;
            memcpy(past + 19 * i, motions[i], sizeof motions[i]);
        }
        if (!beam_step(&model, &beam, m, n_past, past_taus, past, H)) {
            fail("flexible body: non-finite modal state after the step from t=%.17g", t);
        }
        rigid_input(end);
        send_polynomial(t, end);
        host_do_step(t, H);
        memmove(times + 1, times, 3 * sizeof(double)); /* commit */
        memmove(wrenches[1], wrenches[0], 3 * sizeof wrenches[0]);
        times[0] = t + H;
        memcpy(wrenches[0], end, sizeof end);
        count = count < 4 ? count + 1 : 4;
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
    return 0;
}
