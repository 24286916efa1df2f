/* two_beams_flex.c: ONE C process driving both beams of scenarios/two_beams.toml.
 *
 *   two_beams_flex ENDPOINT (--scenario FILE | --session ID) [--set KEY=VALUE]...
 *                  [--out FILE.csv] [--timeout S]
 *
 * The scenario's rigid link carries two steel cantilevers: `beam_tip` (0.6 m, clamped at
 * point `tip`, joint `clamp_tip`) and `beam_side` (0.4 m, at point `side`, joint
 * `clamp_side`), 10 mm x 10 mm, 7850 kg/m^3, each along its point frame's +x axis. This
 * process attaches BOTH points and joints with one rbc_attach and sends both wrenches in one
 * step message per macro step (interfaces/PROTOCOL.md section 7a, rows in the order
 * tip, side).
 *
 * The physics is deliberately simpler than rbcosim's: rbcosim models the beams as floating
 * (FFRF) Craig-Bampton bodies with two bending modes each; here each beam is a RIGID prism
 * clamped at its point (rigid_beam.h: exact mass and inertia, Newton-Euler wrench with the
 * point's accelerations and gravity), with its added mass handed over when the scenario asks
 * (cosim.added_mass, the default). With `--set flex_bodies.beam_tip.modes=0 --set
 * flex_bodies.beam_side.modes=0` rbcosim's beams are rigid too and `rbcosim run` gives the
 * same link angle bitwise. With the scenario's two modes per beam the link's swing differs
 * by what the beams' bending does to it: over the first 0.05 s (a swing of 0.0115 rad) the
 * link angles differ by at most 2.2e-4 rad (tests/test_c_examples.py checks 5e-4 rad).
 *
 * --out: this side's rows "t,tip.x,tip.z,side.x,side.z" (s, m): the beams' free ends.
 */
#include <stdio.h>
#include <string.h>

#include "example_common.h"
#include "flex_endpoint.h"
#include "rigid_beam.h"

#define N_BEAMS 2

static const char *PROGRAM = "two_beams_flex";
static const char *USAGE = "ENDPOINT (--scenario FILE | --session ID) [--set KEY=VALUE]... "
                           "[--out FILE.csv] [--timeout S]";
static const char *POINTS[N_BEAMS] = {"tip", "side"};
static const char *JOINTS[N_BEAMS] = {"clamp_tip", "clamp_side"};
static const double LENGTH[N_BEAMS] = {0.6, 0.4}; /* m */
static const double WIDTH = 0.01;                 /* m, square section */
static const double DENSITY = 7850.0;             /* kg/m^3 */
static const double GRAVITY[3] = {0.0, 0.0, -9.81}; /* m/s^2, the scenario's default */

typedef struct beams {
    rb_beam body[N_BEAMS];
    fe_endpoint ep[N_BEAMS];
} beams;

static void write_row(FILE *csv, const beams *b)
{
    double p[N_BEAMS][3];
    if (!csv)
        return;
    for (int i = 0; i < N_BEAMS; ++i)
        rb_tip(&b->body[i], p[i]);
    fprintf(csv, "%.17g,%.17g,%.17g,%.17g,%.17g\n", b->body[0].t, p[0][0], p[0][2], p[1][0],
            p[1][2]);
}

/* Both beams' node reports [2][13], energies [2] and wrench polynomials [2][3][6] (the
 * shorter one zero-padded); returns the number of terms, < 0 if a step failed. */
static int inputs(beams *b, const rbc_exchange *ex, double *kin, double *energy, double *poly)
{
    int terms = 0;
    memset(poly, 0, sizeof(double) * N_BEAMS * 18);
    for (int i = 0; i < N_BEAMS; ++i) {
        fe_motion now;
        double coeff[18];
        fe_motion_from(&now, ex->motions + 19 * i, ex->time);
        fe_report(&b->ep[i], kin + 13 * i, energy + i);
        int n = fe_inputs(&b->ep[i], ex->time, &now, coeff); /* flex first: steps here */
        if (n < 0)
            return -1;
        memcpy(poly + 18 * i, coeff, sizeof(double) * 6 * n);
        terms = n > terms ? n : terms;
    }
    /* the wire's layout is [n_points][terms][6]: close the gaps of the padding */
    for (int i = 1; i < N_BEAMS; ++i)
        memmove(poly + 6 * terms * i, poly + 18 * i, sizeof(double) * 6 * terms);
    return terms;
}

static int finish_all(beams *b, double t, const double *start, const rbc_exchange *end)
{
    for (int i = 0; i < N_BEAMS; ++i) {
        fe_motion now, later;
        fe_motion_from(&now, start + 19 * i, t);
        if (end)
            fe_motion_from(&later, end->motions + 19 * i, end->time);
        if (fe_finish(&b->ep[i], t, &now, end ? &later : NULL))
            return -1;
    }
    return 0;
}

static int start(rbc_client *c, beams *b, const rbc_coupling *cp, rbc_exchange *ex)
{
    double added[N_BEAMS][36] = {{0}}, kin[N_BEAMS][13], energy[N_BEAMS], poly[N_BEAMS][6];
    const char *frames[N_BEAMS] = {"point", "point"};
    int handover = 0;
    for (int i = 0; i < N_BEAMS; ++i) {
        rb_setup(&b->body[i], LENGTH[i], WIDTH, DENSITY, GRAVITY, cp->micro_steps);
        rb_initialize(&b->body[i], ex->time, ex->motions + 19 * i);
        fe_setup(&b->ep[i], rb_body(&b->body[i]), (fe_scheme)fe_scheme_of(cp->scheme),
                 cp->extrapolation, cp->macro_step);
        handover |= fe_initialize(&b->ep[i], ex->time, cp->added_mass, added[i], &frames[i]);
        fe_report(&b->ep[i], kin[i], &energy[i]);
        fe_polynomial(&b->ep[i], ex->time, NULL, poly[i]);
    }
    if (handover && rbc_set_added_mass(c, &added[0][0], frames) != RBC_OK)
        return ex_fail(c, PROGRAM, "set_added_mass");
    rbc_inputs in = {0};
    in.wrench = &poly[0][0];
    in.wrench_terms = 1;
    in.flex_kinematics = &kin[0][0];
    in.flex_energy = energy;
    if (rbc_report(c, &in, ex) != RBC_OK)
        return ex_fail(c, PROGRAM, "report");
    return 0;
}

static int macro_step(rbc_client *c, beams *b, rbc_exchange *ex)
{
    double kin[N_BEAMS * 13], energy[N_BEAMS], poly[N_BEAMS * 18], m_start[N_BEAMS * 19];
    double t = ex->time;
    fe_scheme scheme = b->ep[0].scheme;
    memcpy(m_start, ex->motions, sizeof m_start);
    rbc_inputs in = {0};
    in.wrench = poly;
    in.wrench_terms = inputs(b, ex, kin, energy, poly);
    in.flex_kinematics = kin;
    in.flex_energy = energy;
    if (in.wrench_terms < 0)
        goto failed;
    if (rbc_step_send(c, &in) != RBC_OK)
        return ex_fail(c, PROGRAM, "step");
    if (scheme == FE_JACOBI && finish_all(b, t, m_start, NULL)) /* while the rigid side steps */
        goto failed;
    if (rbc_step_wait(c, ex) != RBC_OK)
        return ex_fail(c, PROGRAM, "step");
    if (scheme != FE_JACOBI && finish_all(b, t, m_start, ex))
        goto failed;
    return 0;
failed:
    fprintf(stderr, "%s: a beam's step from t = %g s failed\n", PROGRAM, t);
    rbc_destroy(c);
    return 1;
}

int main(int argc, char **argv)
{
    ex_options o;
    rbc_coupling cp;
    rbc_exchange ex;
    beams b;
    if (ex_parse(argc, argv, &o, USAGE))
        return 2;
    rbc_client *c = ex_open(&o, PROGRAM);
    if (!c)
        return 1;
    printf("session %s\n", rbc_session_id(c));
    fflush(stdout);
    if (rbc_attach(c, POINTS, N_BEAMS, JOINTS, N_BEAMS, PROGRAM, 0, &cp, &ex) != RBC_OK)
        return ex_fail(c, PROGRAM, "attach");
    if (!ex_scheme_supported(&cp, PROGRAM) || !ex.motions || cp.macro_step <= 0.0) {
        rbc_destroy(c);
        return 1;
    }
    FILE *csv = o.out ? fopen(o.out, "w") : NULL;
    if (o.out && !csv) {
        fprintf(stderr, "%s: cannot write %s\n", PROGRAM, o.out);
        rbc_destroy(c);
        return 1;
    }
    if (csv)
        fprintf(csv, "t,tip.x,tip.z,side.x,side.z\n");
    int rc = start(c, &b, &cp, &ex);
    if (!rc)
        write_row(csv, &b);
    int every = cp.output_every > 0 ? cp.output_every : 1;
    for (long k = ex.step; !rc && k < cp.n_steps; k = ex.step) {
        rc = macro_step(c, &b, &ex);
        if (!rc && (ex.step % every == 0 || ex.step == cp.n_steps))
            write_row(csv, &b);
    }
    if (!rc) {
        double kin[N_BEAMS * 13], energy[N_BEAMS];
        rbc_inputs in = {0};
        for (int i = 0; i < N_BEAMS; ++i)
            fe_report(&b.ep[i], kin + 13 * i, energy + i);
        in.flex_kinematics = kin;
        in.flex_energy = energy;
        rc = rbc_report(c, &in, &ex) != RBC_OK ? ex_fail(c, PROGRAM, "final report") : 0;
        if (!rc) {
            fprintf(stderr, "%s: %ld steps to t = %.6g s (%s), energies %.6g J, %.6g J\n",
                    PROGRAM, ex.step, ex.time, cp.scheme, energy[0], energy[1]);
            rbc_detach(c);
            rbc_destroy(c);
        }
    }
    if (csv)
        fclose(csv);
    return rc;
}
