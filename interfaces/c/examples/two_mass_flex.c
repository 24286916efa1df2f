/* two_mass_flex.c: the flexible side of the two-mass oscillator, over the rbcosim C library,
 * on rbcosim's own flexible body.
 *
 *   two_mass_flex ENDPOINT (--scenario FILE | --session ID) --body FILE.body
 *                 [--set KEY=VALUE]... [--out FILE.csv] [--timeout S]
 *
 * The rigid side (mass m1 on a slider, rbcosim's server) and this process exchange, once per
 * macro step, the interface point's motion and the structure's wrench on it, in the sequence
 * of interfaces/PROTOCOL.md section 7a, so that the rigid results are those of `rbcosim run`.
 * The structure is the scenario's grounded body read from its body file,
 *
 *   rbcosim export-body scenarios/two_mass_oscillator_mtx.toml --body structure -o FILE.body
 *
 * (the same --set overrides as the session where they touch the body or the macro step), and
 * stepped by the library rbcosim_flex (librbcosim/flex/body_file.h: the kernels rbcosim's
 * FlexBody and FlexEndpoint call): a massless boundary DOF following the point's x and a mass
 * m2 on the interior, the unstressed interface at x = 0 (the scenario's grounded_reference).
 * Point "interface", joint "coupling" (scenarios/two_mass_oscillator_mtx.toml).
 *
 * --scenario: create a session from FILE (a path the server can read; --set overrides);
 * --session: join one (e.g. the one `rbcosim cosim FILE --serve-external` prints).
 * --out: this side's rows "t,eta1,x_node" (s, m, m: the structure's Craig-Bampton modal
 * coordinate, rbcosim's structure.eta1, and its own interface node, which ends each step
 * where its extrapolated frame puts it) at the steps where the server records a result row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "body_endpoint.h"
#include "example_common.h"

static const char *PROGRAM = "two_mass_flex";
static const char *USAGE = "ENDPOINT (--scenario FILE | --session ID) --body FILE.body "
                           "[--set KEY=VALUE]... [--out FILE.csv] [--timeout S]";

static void write_row(FILE *csv, const be_endpoint *ep)
{
    double kin[13], energy;
    int k;
    if (!csv)
        return;
    be_report(ep, kin, &energy);
    const double *modal = be_modal_state(ep, &k);
    fprintf(csv, "%.17g,%.17g,%.17g\n", be_time(ep), k > 0 ? modal[0] : 0.0, kin[0]);
}

/* Initialize from the attach motion, hand the added mass over if there is one, and report
 * at step 0 with the initial wrench to hold. Fills *out with the report's reply. */
static int start(rbc_client *c, be_endpoint *ep, const rbc_coupling *cp,
                 const rbc_exchange *initial, rbc_exchange *out)
{
    double added[36], kin[13], energy, coeff[24];
    const char *frames[1] = {"inertial"};
    if (be_start(ep, initial->time, initial->motions, cp->added_mass, added)) {
        if (rbc_set_added_mass(c, added, frames) != RBC_OK)
            return ex_fail(c, PROGRAM, "set_added_mass");
        fprintf(stderr, "%s: added mass handed over (%s axes), M_a[x][x] = %g kg\n", PROGRAM,
                frames[0], added[0]);
    }
    be_report(ep, kin, &energy);
    rbc_inputs in = {0};
    in.wrench = coeff;
    in.wrench_terms = be_polynomial(ep, initial->time, coeff);
    in.flex_kinematics = kin;
    in.flex_energy = &energy;
    if (rbc_report(c, &in, out) != RBC_OK)
        return ex_fail(c, PROGRAM, "report");
    return 0;
}

/* One macro step k in the coupling's order (section 7a, step 4); *ex: the motions at t_k
 * in, those at t_{k+1} out. */
static int macro_step(rbc_client *c, be_endpoint *ep, rbc_exchange *ex)
{
    double now[19], t = ex->time, kin[13], energy, coeff[24];
    memcpy(now, ex->motions, sizeof now);
    be_report(ep, kin, &energy);
    rbc_inputs in = {0};
    in.wrench = coeff;
    in.wrench_terms = be_inputs(ep, t, now, coeff); /* flex first: steps here */
    in.flex_kinematics = kin;
    in.flex_energy = &energy;
    if (in.wrench_terms < 0)
        goto failed;
    if (rbc_step_send(c, &in) != RBC_OK)
        return ex_fail(c, PROGRAM, "step");
    if (be_scheme_in(ep) == BE_JACOBI && be_finish(ep, t, now, 0.0, NULL)) /* meanwhile */
        goto failed;
    if (rbc_step_wait(c, ex) != RBC_OK)
        return ex_fail(c, PROGRAM, "step");
    if (be_scheme_in(ep) != BE_JACOBI && be_finish(ep, t, now, ex->time, ex->motions))
        goto failed;
    return 0;
failed:
    fprintf(stderr, "%s: the structure's step from t = %g s failed\n", PROGRAM, t);
    rbc_destroy(c);
    return 1;
}

int main(int argc, char **argv)
{
    ex_options o;
    rbc_coupling cp;
    rbc_exchange ex;
    char reason[4400];
    const char *points[1] = {"interface"}, *joints[1] = {"coupling"};
    if (ex_parse(argc, argv, &o, USAGE))
        return 2;
    if (!o.body) {
        fprintf(stderr, "%s: --body FILE.body is required (rbcosim export-body SCENARIO "
                "--body structure -o FILE.body)\n", PROGRAM);
        return 2;
    }
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
    be_endpoint *ep = be_open(o.body, (be_scheme)be_scheme_of(cp.scheme), cp.extrapolation,
                              cp.macro_step, cp.micro_steps, reason, sizeof reason);
    if (!ep) {
        fprintf(stderr, "%s: %s\n", PROGRAM, reason);
        rbc_destroy(c);
        return 1;
    }
    FILE *csv = o.out ? fopen(o.out, "w") : NULL;
    if (o.out && !csv) {
        fprintf(stderr, "%s: cannot write %s\n", PROGRAM, o.out);
        rbc_destroy(c);
        be_close(ep);
        return 1;
    }
    if (csv)
        fprintf(csv, "t,eta1,x_node\n");
    int rc = start(c, ep, &cp, &ex, &ex);
    if (!rc)
        write_row(csv, ep);
    int every = cp.output_every > 0 ? cp.output_every : 1;
    for (long k = ex.step; !rc && k < cp.n_steps; k = ex.step) {
        rc = macro_step(c, ep, &ex);
        if (!rc && (ex.step % every == 0 || ex.step == cp.n_steps))
            write_row(csv, ep);
    }
    if (!rc) { /* the final report: the server records the last result row */
        double kin[13], energy;
        rbc_inputs in = {0};
        be_report(ep, kin, &energy);
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
    be_close(ep);
    return rc;
}
