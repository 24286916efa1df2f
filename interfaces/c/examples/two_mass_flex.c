/* two_mass_flex.c: the flexible side of the two-mass oscillator, over the rbcosim C library.
 *
 *   two_mass_flex ENDPOINT (--scenario FILE | --session ID) [--set KEY=VALUE]...
 *                 [--out FILE.csv] [--data DIR] [--timeout S]
 *
 * The rigid side (mass m1 on a slider, rbcosim's server) and this process exchange, once per
 * macro step, the interface point's motion and the structure's wrench on it, in the sequence
 * of interfaces/PROTOCOL.md section 7a, so that the rigid results are those of `rbcosim run`
 * (to round-off: this structure is the same physics in physical instead of modal
 * coordinates). The structure is scenarios/data/two_mass/{m,k,c}.mtx (or --data DIR): a
 * massless boundary DOF following the point's x and a mass m2 on the interior DOF x2, with
 * the unstressed interface at x = 0 (the scenario's grounded_reference). Point "interface",
 * joint "coupling" (scenarios/two_mass_oscillator_mtx.toml).
 *
 * --scenario: create a session from FILE (a path the server can read; --set overrides);
 * --session: join one (e.g. the one `rbcosim cosim FILE --serve-external` prints).
 * --out: this side's rows "t,x2,x_node" (s, m, m: mass 2 and the structure's own interface
 * node, which ends each step where its extrapolated frame puts it) at the steps where the
 * server records a result row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_common.h"
#include "flex_endpoint.h"
#include "grounded_structure.h"

#ifndef TWO_MASS_DATA_DIR
#define TWO_MASS_DATA_DIR "scenarios/data/two_mass"
#endif

static const char *PROGRAM = "two_mass_flex";
static const char *USAGE = "ENDPOINT (--scenario FILE | --session ID) [--set KEY=VALUE]... "
                           "[--out FILE.csv] [--data DIR] [--timeout S]";

/* The structure of the two-mass oscillator from DIR/{m,k,c}.mtx, boundary "x". */
static gs_structure *load_structure(const char *dir, int micro_steps)
{
    char m[1024], k[1024], c[1024], err[512];
    const char *components[1] = {"x"};
    snprintf(m, sizeof m, "%s/m.mtx", dir);
    snprintf(k, sizeof k, "%s/k.mtx", dir);
    snprintf(c, sizeof c, "%s/c.mtx", dir);
    gs_structure *s = gs_load(m, k, c, 1, components, micro_steps, err, sizeof err);
    if (!s)
        fprintf(stderr, "%s: %s\n", PROGRAM, err);
    return s;
}

static void write_row(FILE *csv, const fe_endpoint *ep)
{
    const gs_structure *body = ep->body.self;
    double kin[13];
    if (!csv)
        return;
    gs_node_kinematics(body, kin);
    fprintf(csv, "%.17g,%.17g,%.17g\n", gs_time(body), gs_interior(body)[0], kin[0]);
}

/* Initialize from the attach motion, hand the added mass over if there is one, and report
 * at step 0 with the initial wrench to hold. Fills *out with the report's reply. */
static int start(rbc_client *c, fe_endpoint *ep, const rbc_coupling *cp,
                 const rbc_exchange *initial, rbc_exchange *out)
{
    static const double reference[3] = {0.0, 0.0, 0.0}; /* grounded_reference, m */
    fe_motion m0;
    double added[36], kin[13], energy, coeff[18];
    const char *frames[1];
    fe_motion_from(&m0, initial->motions, initial->time);
    gs_initialize(ep->body.self, initial->time, m0.v, reference);
    if (fe_initialize(ep, initial->time, cp->added_mass, added, frames)) {
        if (rbc_set_added_mass(c, added, frames) != RBC_OK)
            return ex_fail(c, PROGRAM, "set_added_mass");
        fprintf(stderr, "%s: added mass handed over (%s axes), M_a[x][x] = %g kg\n", PROGRAM,
                frames[0], added[0]);
    }
    fe_report(ep, kin, &energy);
    rbc_inputs in = {0};
    in.wrench = coeff;
    in.wrench_terms = fe_polynomial(ep, initial->time, NULL, coeff);
    in.flex_kinematics = kin;
    in.flex_energy = &energy;
    if (rbc_report(c, &in, out) != RBC_OK)
        return ex_fail(c, PROGRAM, "report");
    return 0;
}

/* One macro step k in the coupling's order (section 7a, step 4); *ex: the motions at t_k
 * in, those at t_{k+1} out. */
static int macro_step(rbc_client *c, fe_endpoint *ep, rbc_exchange *ex)
{
    fe_motion now, end;
    double kin[13], energy, coeff[18];
    fe_motion_from(&now, ex->motions, ex->time);
    fe_report(ep, kin, &energy);
    rbc_inputs in = {0};
    in.wrench = coeff;
    in.wrench_terms = fe_inputs(ep, ex->time, &now, coeff); /* flex first: steps here */
    in.flex_kinematics = kin;
    in.flex_energy = &energy;
    if (in.wrench_terms < 0) {
        fprintf(stderr, "%s: the structure's step from t = %g s failed\n", PROGRAM, ex->time);
        rbc_destroy(c);
        return 1;
    }
    if (rbc_step_send(c, &in) != RBC_OK)
        return ex_fail(c, PROGRAM, "step");
    if (ep->scheme == FE_JACOBI && fe_finish(ep, now.time, &now, NULL)) /* meanwhile */
        goto failed;
    if (rbc_step_wait(c, ex) != RBC_OK)
        return ex_fail(c, PROGRAM, "step");
    fe_motion_from(&end, ex->motions, ex->time);
    if (ep->scheme != FE_JACOBI && fe_finish(ep, now.time, &now, &end))
        goto failed;
    return 0;
failed:
    fprintf(stderr, "%s: the structure's step from t = %g s failed\n", PROGRAM, now.time);
    rbc_destroy(c);
    return 1;
}

int main(int argc, char **argv)
{
    ex_options o;
    rbc_coupling cp;
    rbc_exchange ex;
    const char *points[1] = {"interface"}, *joints[1] = {"coupling"};
    if (ex_parse(argc, argv, &o, USAGE))
        return 2;
    rbc_client *c = ex_open(&o, PROGRAM);
    if (!c)
        return 1;
    printf("session %s\n", rbc_session_id(c)); /* for whoever fetches the results */
    fflush(stdout);
    if (rbc_attach(c, points, 1, joints, 1, PROGRAM, 0, &cp, &ex) != RBC_OK)
        return ex_fail(c, PROGRAM, "attach");
    if (!ex_scheme_supported(&cp, PROGRAM) || !ex.motions || cp.macro_step <= 0.0) {
        rbc_destroy(c);
        return 1;
    }
    gs_structure *body = load_structure(o.data ? o.data : TWO_MASS_DATA_DIR, cp.micro_steps);
    FILE *csv = o.out ? fopen(o.out, "w") : NULL;
    if (!body || (o.out && !csv)) {
        if (o.out && !csv)
            fprintf(stderr, "%s: cannot write %s\n", PROGRAM, o.out);
        rbc_destroy(c);
        return 1;
    }
    fe_endpoint ep;
    fe_setup(&ep, gs_body(body), (fe_scheme)fe_scheme_of(cp.scheme), cp.extrapolation, cp.macro_step);
    if (csv)
        fprintf(csv, "t,x2,x_node\n");
    int rc = start(c, &ep, &cp, &ex, &ex);
    if (!rc)
        write_row(csv, &ep);
    int every = cp.output_every > 0 ? cp.output_every : 1;
    for (long k = ex.step; !rc && k < cp.n_steps; k = ex.step) {
        rc = macro_step(c, &ep, &ex);
        if (!rc && (ex.step % every == 0 || ex.step == cp.n_steps))
            write_row(csv, &ep);
    }
    if (!rc) { /* the final report: the server records the last result row */
        double kin[13], energy;
        rbc_inputs in = {0};
        fe_report(&ep, kin, &energy);
        in.flex_kinematics = kin;
        in.flex_energy = &energy;
        rc = rbc_report(c, &in, &ex) != RBC_OK ? ex_fail(c, PROGRAM, "final report") : 0;
        if (!rc) {
            fprintf(stderr, "%s: %ld steps to t = %.6g s (%s), energy delivered %.9g J\n",
                    PROGRAM, ex.step, ex.time, cp.scheme, energy);
            rbc_detach(c);
            rbc_destroy(c);
        }
    }
    if (csv)
        fclose(csv);
    gs_destroy(body);
    return rc;
}
