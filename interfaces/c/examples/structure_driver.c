/* structure_driver.c: a grounded structure ALONE, rbcosim's own flexible body (the library
 * rbcosim_flex on a body file), fed with a recorded sequence of rigid motions - the check
 * that the C exchange over the library reproduces rbcosim's Python FlexEndpoint.
 *
 *   structure_driver BODY_FILE MOTIONS.txt > OUT.txt
 *
 * BODY_FILE: `rbcosim export-body SCENARIO --body NAME -o BODY_FILE` (with the overrides the
 * motions were recorded with); it carries the grounded reference and the micro steps.
 * MOTIONS.txt: first line "scheme order H micro_steps n_steps ref(0|1) rx ry rz added(0|1)"
 * (added: the Python side handed its added mass over, so the polynomials exclude it), then
 * n_steps + 1 lines "t m[19]" (the rigid point's motions at t_0 .. t_n).
 * OUT.txt: per step k = 0..n-1 one line
 *   k terms coeff[3][6] kin[13] energy | wrench[6] eta[k] eta'[k]
 * (the polynomial sent, the node report at t_k, then the state after the step, modal
 * coordinates) - the same sequence as structure_reference.py writes from Python.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "body_endpoint.h"

static int read_motions(FILE *f, int n, double *t, double *m)
{
    for (int k = 0; k < n; ++k) {
        if (fscanf(f, "%lf", &t[k]) != 1)
            return -1;
        for (int i = 0; i < 19; ++i)
            if (fscanf(f, "%lf", &m[19 * k + i]) != 1)
                return -1;
    }
    return 0;
}

static void print_row(int k, int terms, const double *coeff, const double *kin, double energy,
                      const be_endpoint *ep)
{
    double w[6];
    int nk;
    const double *modal = be_modal_state(ep, &nk);
    printf("%d %d", k, terms);
    for (int i = 0; i < 18; ++i)
        printf(" %.17g", i < 6 * terms ? coeff[i] : 0.0);
    for (int i = 0; i < 13; ++i)
        printf(" %.17g", kin[i]);
    printf(" %.17g", energy);
    be_wrench(ep, w);
    for (int i = 0; i < 6; ++i)
        printf(" %.17g", w[i]);
    for (int i = 0; i < 2 * nk; ++i)
        printf(" %.17g", modal[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    char reason[4400], scheme[64];
    int order, micro, n_steps, has_ref, has_added;
    double H, ref[3];
    if (argc != 3) {
        fprintf(stderr, "usage: %s BODY_FILE MOTIONS.txt\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[2], "r");
    if (!f || fscanf(f, "%63s %d %lf %d %d %d %lf %lf %lf %d", scheme, &order, &H, &micro,
                     &n_steps, &has_ref, &ref[0], &ref[1], &ref[2], &has_added) != 10) {
        fprintf(stderr, "%s: cannot read the header line\n", argv[2]);
        return 1;
    }
    double *t = malloc(sizeof *t * (size_t)(n_steps + 1));
    double *m = malloc(sizeof *m * 19 * (size_t)(n_steps + 1));
    if (!t || !m || read_motions(f, n_steps + 1, t, m)) {
        fprintf(stderr, "%s: expected %d motion lines\n", argv[2], n_steps + 1);
        return 1;
    }
    fclose(f);
    if (be_scheme_of(scheme) < 0) {
        fprintf(stderr, "unknown scheme %s\n", scheme);
        return 1;
    }
    be_endpoint *ep = be_open(argv[1], (be_scheme)be_scheme_of(scheme), order, H, micro, reason,
                              sizeof reason);
    if (!ep) {
        fprintf(stderr, "%s\n", reason);
        return 1;
    }
    if (be_has_reference(ep) != has_ref) {
        fprintf(stderr, "the motions were recorded %s a grounded reference, %s has %s\n",
                has_ref ? "with" : "without", argv[1], has_ref ? "none" : "one");
        return 1;
    }
    double kin[13], energy, coeff[24], added[36];
    if (be_start(ep, t[0], m, has_added, added) != has_added) {
        fprintf(stderr, "the Python side %s an added mass, this one %s\n",
                has_added ? "handed over" : "had no", has_added ? "has none" : "has one");
        return 1;
    }
    for (int k = 0; k < n_steps; ++k) {
        be_report(ep, kin, &energy);
        int terms = be_inputs(ep, t[k], m + 19 * k, coeff);
        if (terms < 0 || be_finish(ep, t[k], m + 19 * k, t[k + 1], m + 19 * (k + 1))) {
            fprintf(stderr, "step %d failed\n", k);
            return 1;
        }
        print_row(k, terms, coeff, kin, energy, ep);
    }
    be_close(ep);
    free(t);
    free(m);
    return 0;
}
