/* structure_driver.c: the grounded structure ALONE, fed with a recorded sequence of rigid
 * motions - the check that the C structure reproduces rbcosim's Python FlexEndpoint.
 *
 *   structure_driver M.mtx K.mtx C.mtx|- COMPONENTS MOTIONS.txt > OUT.txt
 *
 * COMPONENTS: comma-separated boundary components, e.g. "x" or "x,rz".
 * MOTIONS.txt: first line "scheme order H micro_steps n_steps ref(0|1) rx ry rz added(0|1)"
 * (added: the Python side handed its added mass over, so the polynomials exclude it), then
 * n_steps + 1 lines "t m[19]" (the rigid point's motions at t_0 .. t_n).
 * OUT.txt: per step k = 0..n-1 one line
 *   k terms coeff[3][6] kin[13] energy | wrench[6] x[n_i] x'[n_i]
 * (the polynomial sent, the node report at t_k, then the state after the step) - the same
 * sequence as tests/c_structure_reference.py writes from Python.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flex_endpoint.h"
#include "grounded_structure.h"

static int read_motions(FILE *f, int n, fe_motion *m)
{
    for (int k = 0; k < n; ++k) {
        if (fscanf(f, "%lf", &m[k].time) != 1)
            return -1;
        for (int i = 0; i < 19; ++i)
            if (fscanf(f, "%lf", &m[k].v[i]) != 1)
                return -1;
    }
    return 0;
}

static void print_row(int k, int terms, const double *coeff, const double *kin, double energy,
                      const fe_endpoint *ep)
{
    double w[6];
    const gs_structure *body = ep->body.self;
    int ni = gs_n_interior(body);
    printf("%d %d", k, terms);
    for (int i = 0; i < 18; ++i)
        printf(" %.17g", i < 6 * terms ? coeff[i] : 0.0);
    for (int i = 0; i < 13; ++i)
        printf(" %.17g", kin[i]);
    printf(" %.17g", energy);
    gs_wrench(body, w);
    for (int i = 0; i < 6; ++i)
        printf(" %.17g", w[i]);
    for (int i = 0; i < 2 * ni; ++i)
        printf(" %.17g", gs_interior(body)[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    char err[512], scheme[64], *names[6], comps[64];
    int order, micro, n_steps, has_ref, has_added, nb = 0;
    double H, ref[3];
    if (argc != 6) {
        fprintf(stderr, "usage: %s M.mtx K.mtx C.mtx|- COMPONENTS MOTIONS.txt\n", argv[0]);
        return 2;
    }
    snprintf(comps, sizeof comps, "%s", argv[4]);
    for (char *tok = strtok(comps, ","); tok && nb < 6; tok = strtok(NULL, ","))
        names[nb++] = tok;
    FILE *f = fopen(argv[5], "r");
    if (!f || fscanf(f, "%63s %d %lf %d %d %d %lf %lf %lf %d", scheme, &order, &H, &micro,
                     &n_steps, &has_ref, &ref[0], &ref[1], &ref[2], &has_added) != 10) {
        fprintf(stderr, "%s: cannot read the header line\n", argv[5]);
        return 1;
    }
    fe_motion *m = malloc(sizeof *m * (size_t)(n_steps + 1));
    if (!m || read_motions(f, n_steps + 1, m)) {
        fprintf(stderr, "%s: expected %d motion lines\n", argv[5], n_steps + 1);
        return 1;
    }
    fclose(f);
    gs_structure *body = gs_load(argv[1], argv[2], strcmp(argv[3], "-") ? argv[3] : NULL, nb,
                                 (const char *const *)names, micro, err, sizeof err);
    if (!body || fe_scheme_of(scheme) < 0) {
        fprintf(stderr, "%s\n", body ? "unknown scheme" : err);
        return 1;
    }
    fe_endpoint ep;
    double kin[13], energy, coeff[18], added[36];
    const char *frame = NULL;
    fe_setup(&ep, gs_body(body), (fe_scheme)fe_scheme_of(scheme), order, H);
    gs_initialize(body, m[0].time, m[0].v, has_ref ? ref : NULL);
    if (fe_initialize(&ep, m[0].time, has_added, added, &frame) != has_added) {
        fprintf(stderr, "the Python side %s an added mass, this one %s\n",
                has_added ? "handed over" : "had no", has_added ? "has none" : "has one");
        return 1;
    }
    for (int k = 0; k < n_steps; ++k) {
        fe_report(&ep, kin, &energy);
        int terms = fe_inputs(&ep, m[k].time, &m[k], coeff);
        if (terms < 0 || fe_finish(&ep, m[k].time, &m[k], &m[k + 1])) {
            fprintf(stderr, "step %d failed\n", k);
            return 1;
        }
        print_row(k, terms, coeff, kin, energy, &ep);
    }
    gs_destroy(body);
    free(m);
    return 0;
}
