/* two_mass_host.c: a C co-simulation master without Python for the native rbcosim FMU of
 * scenarios/two_mass_oscillator.toml (tests/test_fmu_native.py builds and runs it).
 *
 *   two_mass_host 2|3 BINARY.so RESOURCES TOKEN SETUP_FILE OUT.csv
 *
 * (FMI version; RESOURCES: the resources folder as a file URI for FMI 2, a path for FMI 3;
 * TOKEN: the GUID / instantiationToken.) It dlopen()s the FMU's binary (the FMI calls:
 * host_fmi.c) and runs the scenario's Jacobi scheme with inputs held (e = 0) or extrapolated
 * linearly (e = 1), the rigid side in the FMU and the flexible side here: a grounded linear
 * structure with one translational boundary DOF u_b (the interface's x, structure axes =
 * inertial) and k fixed-interface modes eta, as rbcosim's reference flexible body
 * (src/rbcosim/flex/runtime/body.py, grounded.py) integrates it:
 *   step from the rigid motion (x, v, a) at t_n: eta -= S (x - x_f), eta' -= S (v - v_f)
 *   (the frame moves to the rigid side's motion keeping the interior in place); the interface
 *   acceleration over the step is a + c1 tau, c1 = (a - a_(n-1)) / H with e = 1 after the
 *   first step (else 0); [eta; eta'] <- P [eta; eta'; x - p_ref; v; a; c1; 0; 0] (the exact
 *   discrete propagator of the modal ODE with that input; the last k entries are gravity's,
 *   0 here) and the frame to its end: x_f = x + v H + a H^2/2 + c1 H^3/6,
 *   v_f = v + a H + c1 H^2/2, a_f = a + c1 H;
 *   wrench fx = -FB [u_b, u_b', u_b'', eta, eta', eta''], eta'' = W [eta, eta', u_b, u_b', u_b''],
 *   handed to the FMU over [t_n, t_n + H] as fx = W_n and, with e = 1 after the first step,
 *   dfx = (W_n - W_(n-1)) / H (interface.dfx).
 * The initial wrench W_0 is set in initialization mode (it takes effect at
 * exitInitializationMode); in each step the host reads the motion at t_n and sets the step's
 * wrench in the order `order` names: read-first (default) or set-first (the wrench set before
 * the motion is read, as OMSimulator does): both give the same bits, as the FMU's outputs do
 * not depend on inputs set since the last doStep.
 * SETUP_FILE holds, as "key values..." tokens: address, steps, H (s), extrapolation (e),
 * order (read-first | set-first), k, the value references
 * (vr NAME NUMBER), P (2k x (3k+5)), W (k x (2k+3)), FB (3+3k), S (k), pref, eta, etad (k each),
 * all row-major. OUT.csv gets one row per communication point: t, interface.x, interface.vx,
 * coupling.gap_pos, eta_1..eta_k. Exit status 0 on success, 1 with a message on stderr.
 */
#include <string.h>

#include "host_fmi.h"

#define MAXK 16
enum { X, VX, AX, FX, DFX, FLEX_X, FLEX_VX, FLEX_Q0, GAP, ADDRESS, N_NAMES };
static const char *const NAMES[N_NAMES] = {
    "interface.x", "interface.vx", "interface.ax", "interface.fx", "interface.dfx",
    "coupling.flex.x",
    "coupling.flex.vx", "coupling.flex.q0", "coupling.gap_pos", "server.address"};

static struct {
    char address[256];
    long steps;
    int k, extrapolation, set_first;
    double H, P[2 * MAXK * (3 * MAXK + 5)], W[MAXK * (2 * MAXK + 3)], FB[3 + 3 * MAXK];
    double S[MAXK], pref, eta[MAXK], etad[MAXK];
    host_vr vr[N_NAMES];
} setup;

static double xf, vf, af; /* the flexible side's frame: its own estimate of the joint */

static void read_setup(const char *path) {
    FILE *f = fopen(path, "r");
    char key[128];
    setup_path = path;
    if (f == NULL) fail("cannot open %s", path);
    while (fscanf(f, "%127s", key) == 1) {
        int k = setup.k;
        if (!strcmp(key, "address")) {
            if (fscanf(f, "%255s", setup.address) != 1) fail_setup("address");
        } else if (!strcmp(key, "steps")) {
            if (fscanf(f, "%ld", &setup.steps) != 1) fail_setup("steps");
        } else if (!strcmp(key, "H")) {
            read_numbers(f, &setup.H, 1, "H");
        } else if (!strcmp(key, "extrapolation")) {
            if (fscanf(f, "%d", &setup.extrapolation) != 1 || setup.extrapolation < 0 ||
                setup.extrapolation > 1) {
                fail_setup("extrapolation (0 or 1)");
            }
        } else if (!strcmp(key, "order")) {
            char order[32];
            if (fscanf(f, "%31s", order) != 1 ||
                (strcmp(order, "read-first") && strcmp(order, "set-first"))) {
                fail_setup("order (read-first or set-first)");
            }
            setup.set_first = !strcmp(order, "set-first");
        } else if (!strcmp(key, "k")) {
            if (fscanf(f, "%d", &setup.k) != 1 || setup.k < 1 || setup.k > MAXK) fail_setup("k");
        } else if (!strcmp(key, "vr")) {
            char name[128];
            unsigned vr;
            if (fscanf(f, "%127s %u", name, &vr) != 2) fail_setup("vr NAME NUMBER");
            for (int i = 0; i < N_NAMES; ++i) {
                if (!strcmp(name, NAMES[i])) setup.vr[i] = vr;
            }
        } else if (!strcmp(key, "P")) {
            read_numbers(f, setup.P, 2 * k * (3 * k + 5), "P");
        } else if (!strcmp(key, "W")) {
            read_numbers(f, setup.W, k * (2 * k + 3), "W");
        } else if (!strcmp(key, "FB")) {
            read_numbers(f, setup.FB, 3 + 3 * k, "FB");
        } else if (!strcmp(key, "S")) {
            read_numbers(f, setup.S, k, "S");
        } else if (!strcmp(key, "pref")) {
            read_numbers(f, &setup.pref, 1, "pref");
        } else if (!strcmp(key, "eta")) {
            read_numbers(f, setup.eta, k, "eta");
        } else if (!strcmp(key, "etad")) {
            read_numbers(f, setup.etad, k, "etad");
        } else {
            fail_setup("unknown key %s", key);
        }
    }
    fclose(f);
}

/* The force on the rigid body (N, along x) at the flexible side's current state. */
static double flex_wrench(void) {
    int k = setup.k;
    double z[2 * MAXK + 3], x[3 + 3 * MAXK], fb = 0.0;
    double ub[3] = {xf - setup.pref, vf, af};
    for (int i = 0; i < k; ++i) {
        z[i] = setup.eta[i];
        z[k + i] = setup.etad[i];
    }
    memcpy(z + 2 * k, ub, sizeof ub);
    memcpy(x, ub, sizeof ub);
    for (int i = 0; i < k; ++i) {
        double acc = 0.0;
        for (int j = 0; j < 2 * k + 3; ++j) acc += setup.W[i * (2 * k + 3) + j] * z[j];
        x[3 + i] = setup.eta[i];
        x[3 + k + i] = setup.etad[i];
        x[3 + 2 * k + i] = acc;
    }
    for (int j = 0; j < 3 + 3 * k; ++j) fb += setup.FB[j] * x[j];
    return -fb;
}

/* One macro step from the rigid motion (x, v, a) at t_n; c1 (m/s3) the slope of the
 * interface acceleration over it. */
static void flex_step(double x, double v, double a, double c1) {
    int k = setup.k, n = 3 * k + 5;
    double in[3 * MAXK + 5] = {0};
    double H = setup.H;
    for (int i = 0; i < k; ++i) {
        in[i] = setup.eta[i] - setup.S[i] * (x - xf);
        in[k + i] = setup.etad[i] - setup.S[i] * (v - vf);
    }
    in[2 * k] = x - setup.pref;
    in[2 * k + 1] = v;
    in[2 * k + 2] = a;
    in[2 * k + 3] = c1;
    for (int i = 0; i < 2 * k; ++i) {
        double y = 0.0;
        for (int j = 0; j < n; ++j) y += setup.P[i * n + j] * in[j];
        if (i < k) setup.eta[i] = y; else setup.etad[i - k] = y;
    }
    xf = x + v * H + 0.5 * a * H * H + c1 * H * H * H / 6.0;
    vf = v + a * H + 0.5 * c1 * H * H;
    af = a + c1 * H;
}

int main(int argc, char **argv) {
    if (argc != 7 || (strcmp(argv[1], "2") && strcmp(argv[1], "3"))) {
        fail("usage: two_mass_host 2|3 BINARY.so RESOURCES TOKEN SETUP OUT.csv");
    }
    read_setup(argv[5]);
    host_open(argv[1][0] - '0', argv[2]);
    FILE *out = fopen(argv[6], "w");
    if (out == NULL) fail("cannot write %s", argv[6]);
    const host_vr *vr = setup.vr;
    host_start(argv[3], argv[4], vr[ADDRESS], setup.address);
    double t = 0.0, m[3];
    host_get(&vr[X], 3, m); /* the initial motion (initialization mode) places the frame */
    xf = m[0];
    vf = m[1];
    af = m[2];
    double w0 = flex_wrench();
    host_set(&vr[FX], 1, &w0); /* held from t_0: the motion after exitInitializationMode sees it */
    host_exit_init(); /* held or linear wrench inputs are the host's choice (interface.dfx) */
    double w_prev = 0.0, a_prev = 0.0;
    for (long n = 0; n <= setup.steps; ++n) {
        double wrench = flex_wrench(), report[3] = {xf, vf, 1.0}, row[3];
        int linear = setup.extrapolation == 1 && n > 0;
        double poly[2] = {wrench, linear ? (wrench - w_prev) / setup.H : 0.0};
        host_set(&vr[FLEX_X], 3, report);          /* flex.x, flex.vx, flex.q0 */
        host_vr outs[3] = {vr[X], vr[VX], vr[GAP]};
        host_get(outs, 3, row);
        fprintf(out, "%.17g,%.17g,%.17g,%.17g", t, row[0], row[1], row[2]);
        for (int i = 0; i < setup.k; ++i) fprintf(out, ",%.17g", setup.eta[i]);
        fputc('\n', out);
        if (n == setup.steps) break;
        if (setup.set_first) host_set(&vr[FX], 2, poly); /* fx, dfx */
        host_get(&vr[X], 3, m); /* the motion at t_n: the same in either order */
        if (!setup.set_first) host_set(&vr[FX], 2, poly);
        flex_step(m[0], m[1], m[2], linear ? (m[2] - a_prev) / setup.H : 0.0);
        w_prev = wrench;
        a_prev = m[2];
        host_do_step(t, setup.H);
        t += setup.H;
    }
    fclose(out);
    host_stop();
    return 0;
}
