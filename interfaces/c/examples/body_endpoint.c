/* body_endpoint.c: see body_endpoint.h. */
#include "body_endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flex/body_file.h"
#include "flex/frame.h"

struct be_endpoint {
    rbc_fx_body_file body;    /* the library's body (state: rbc_fx_body_state) */
    rbc_fx_exchange_store x;  /* what this side has exchanged */
    be_scheme scheme;
    int order;                /* extrapolation order, 0..2 */
    double H;                 /* macro step, s (the body file's) */
    double motions[2][19], motion_times[2]; /* rigid motions stepped from, newest first */
    int n_motions;
    double *scratch;          /* 28 + 2k doubles */
};

int be_scheme_of(const char *name)
{
    if (!strcmp(name, "jacobi"))
        return BE_JACOBI;
    if (!strcmp(name, "gauss_seidel_rigid_first"))
        return BE_GS_RIGID_FIRST;
    if (!strcmp(name, "gauss_seidel_flex_first"))
        return BE_GS_FLEX_FIRST;
    return -1;
}

be_endpoint *be_open(const char *path, be_scheme scheme, int order, double H, long micro_steps,
                     char *reason, size_t size)
{
    be_endpoint *ep = calloc(1, sizeof *ep);
    if (!ep) {
        snprintf(reason, size, "out of memory");
        return NULL;
    }
    if (rbc_fx_body_file_load(&ep->body, path, reason, size) != 0) {
        free(ep);
        return NULL;
    }
    if (!ep->body.grounded) {
        snprintf(reason, size, "%.3000s: not a grounded body", path);
        goto bad;
    }
    if (ep->body.H != H || (micro_steps > 0 && ep->body.micro_steps != micro_steps)) {
        snprintf(reason, size, "%.3000s was written for H = %.17g s, %ld micro steps; the "
                 "session couples with H = %.17g s, %ld micro steps", path, ep->body.H,
                 (long)ep->body.micro_steps, H, micro_steps);
        goto bad;
    }
    ep->scratch = malloc(sizeof(double) * (size_t)(FX_ETA + 2 * ep->body.k));
    if (!ep->scratch) {
        snprintf(reason, size, "out of memory");
        goto bad;
    }
    rbc_fx_exchange_init(&ep->x);
    ep->scheme = scheme;
    ep->order = order < 0 ? 0 : order > 2 ? 2 : order;
    ep->H = H;
    return ep;
bad:
    rbc_fx_body_file_free(&ep->body);
    free(ep);
    return NULL;
}

void be_close(be_endpoint *ep)
{
    if (!ep)
        return;
    free(ep->scratch);
    rbc_fx_body_file_free(&ep->body);
    free(ep);
}

be_scheme be_scheme_in(const be_endpoint *ep) { return ep->scheme; }

int be_has_reference(const be_endpoint *ep) { return ep->body.reference.size == 3; }

int be_start(be_endpoint *ep, double t, const double *motion, int want_added_mass,
             double *added_mass)
{
    ep->n_motions = 0;
    return rbc_fx_endpoint_start(&ep->body, &ep->x, t, motion, want_added_mass, ep->scratch,
                                 added_mass);
}

void be_report(const be_endpoint *ep, double *kinematics, double *energy)
{
    const double *s = ep->body.ground.state.d;
    memcpy(kinematics, s + FX_R, 13 * sizeof(double));
    *energy = ep->x.energy;
}

/* One exchange step of the library from the motion at t, the accelerations through it and
 * the past motions (or the end motion and the newest past one); with coeff, the polynomial
 * through the end-of-step rigid input (flexible side first). 1 on success. */
static int step(be_endpoint *ep, double t, const double *motion, double t_end,
                const double *end, double *coeff, int64_t *rows)
{
    double taus[2], past[2 * 19];
    int n = ep->order < ep->n_motions ? ep->order : ep->n_motions;
    for (int i = 0; i < n; ++i) {
        taus[i] = ep->motion_times[i] - t;
        memcpy(past + 19 * i, ep->motions[i], sizeof ep->motions[i]);
    }
    if (end) { /* [end, newest past] */
        if (n) {
            taus[1] = taus[0];
            memcpy(past + 19, past, sizeof ep->motions[0]);
        }
        taus[0] = t_end - t;
        memcpy(past, end, sizeof ep->motions[0]);
        n = n ? 2 : 1;
    }
    int ok = rbc_fx_endpoint_step(&ep->body, &ep->x, motion, n, taus, past, t, ep->H,
                                  coeff ? ep->order : -1, coeff, rows);
    if (ok != 1)
        return 0;
    memcpy(ep->motions[1], ep->motions[0], sizeof ep->motions[0]);
    ep->motion_times[1] = ep->motion_times[0];
    memcpy(ep->motions[0], motion, sizeof ep->motions[0]);
    ep->motion_times[0] = t;
    ep->n_motions = ep->n_motions < 2 ? ep->n_motions + 1 : 2;
    return 1;
}

int be_polynomial(const be_endpoint *ep, double t, double *coeff)
{
    int64_t count = ep->x.count < ep->order + 1 ? ep->x.count : ep->order + 1;
    rbc_fx_exchange_polynomial(&ep->x.x, t, count, 0, NULL, NULL, coeff);
    return (int)count;
}

int be_inputs(be_endpoint *ep, double t, const double *motion, double *coeff)
{
    if (ep->scheme == BE_GS_FLEX_FIRST) {
        int64_t rows = 0;
        return step(ep, t, motion, 0.0, NULL, coeff, &rows) ? (int)rows : -1;
    }
    return be_polynomial(ep, t, coeff);
}

int be_finish(be_endpoint *ep, double t, const double *motion, double t_end, const double *end)
{
    if (ep->scheme == BE_GS_RIGID_FIRST)
        return end && step(ep, t, motion, t_end, end, NULL, NULL) ? 0 : -1;
    if (ep->scheme == BE_JACOBI)
        return step(ep, t, motion, 0.0, NULL, NULL, NULL) ? 0 : -1;
    return 0;
}

void be_wrench(const be_endpoint *ep, double *wrench)
{
    memcpy(wrench, ep->body.ground.wrench.d, 6 * sizeof(double));
}

const double *be_modal_state(const be_endpoint *ep, int *k)
{
    *k = (int)ep->body.k;
    return ep->body.ground.state.d + FX_ETA;
}

double be_time(const be_endpoint *ep) { return ep->body.ground.state.d[FX_T]; }
