/* flex_endpoint.c: see flex_endpoint.h. */
#include "flex_endpoint.h"

#include <math.h>
#include <string.h>

#include "polynomial.h"

int fe_scheme_of(const char *name)
{
    if (!strcmp(name, "jacobi"))
        return FE_JACOBI;
    if (!strcmp(name, "gauss_seidel_rigid_first"))
        return FE_GS_RIGID_FIRST;
    if (!strcmp(name, "gauss_seidel_flex_first"))
        return FE_GS_FLEX_FIRST;
    return -1;
}

void fe_setup(fe_endpoint *ep, gs_structure *body, fe_scheme scheme, int order, double H)
{
    memset(ep, 0, sizeof *ep);
    ep->body = body;
    ep->scheme = scheme;
    ep->order = order < 0 ? 0 : order > 2 ? 2 : order;
    ep->H = H;
}

void fe_rigid_input(const fe_endpoint *ep, double *wrench)
{
    gs_wrench(ep->body, wrench);
    if (ep->implicit_mass) {
        double acc[6];
        gs_frame_accelerations(ep->body, acc);
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 6; ++c)
                wrench[r] += ep->handed_mass[6 * r + c] * acc[c];
    }
}

int fe_initialize(fe_endpoint *ep, double t, const fe_motion *motion, const double *reference,
                  int want_added_mass, double *added_mass)
{
    int handover = 0;
    gs_initialize(ep->body, t, motion->v, reference);
    if (want_added_mass) {
        double mass[36], big = 0.0;
        int any = 0;
        gs_added_mass(ep->body, mass);
        for (int i = 0; i < 36; ++i)
            big = fmax(big, fabs(mass[i]));
        for (int i = 0; i < 36; ++i)
            any |= fabs(mass[i]) > 1e-12 * fmax(1.0, big);
        if (any) { /* a grounded structure's mass is in inertial axes */
            memcpy(ep->handed_mass, mass, sizeof mass);
            memcpy(added_mass, mass, sizeof mass);
            ep->implicit_mass = 1;
            handover = 1;
        }
    }
    ep->times[0] = t;
    fe_rigid_input(ep, ep->wrenches[0]);
    ep->count = 1;
    ep->n_motions = 0;
    ep->energy = 0.0;
    return handover;
}

void fe_report(const fe_endpoint *ep, double *kinematics, double *energy)
{
    gs_node_kinematics(ep->body, kinematics);
    *energy = ep->energy;
}

static int min_int(int a, int b) { return a < b ? a : b; }

int fe_polynomial(const fe_endpoint *ep, double t, const double *end, double *coeff)
{
    const double *w = &ep->wrenches[0][0];
    if (!end)
        return poly_exchange(t, ep->times, w, min_int(ep->order + 1, ep->count), 0, NULL, NULL,
                             coeff);
    double tau_end = ep->H;
    int count = min_int(ep->order > 1 ? ep->order : 1, ep->count);
    return poly_exchange(t, ep->times, w, count, 1, &tau_end, end, coeff);
}

/* Power (W) the structure's wrench delivers to the rigid side at the node now. */
static double power(const fe_endpoint *ep)
{
    double w[6], kin[13], p = 0.0;
    gs_wrench(ep->body, w);
    gs_node_kinematics(ep->body, kin);
    for (int i = 0; i < 6; ++i)
        p += w[i] * kin[7 + i];
    return p;
}

/* Step the structure over [t, t + H]; the accelerations follow the polynomial through the
 * motion at t and the past motions (or the motion at t + H and the newest past one). */
static int advance(fe_endpoint *ep, double t, const fe_motion *motion, const fe_motion *future)
{
    const fe_motion *past[2] = {NULL, NULL};
    int n = min_int(ep->order, ep->n_motions);
    for (int i = 0; i < n; ++i)
        past[i] = &ep->motions[i];
    if (future) {
        past[1] = n ? past[0] : NULL;
        past[0] = future;
        n = n ? 2 : 1;
    }
    double taus[2], rows[2 * 19];
    for (int i = 0; i < n; ++i) {
        taus[i] = past[i]->time - t;
        memcpy(rows + 19 * i, past[i]->v, sizeof past[i]->v);
    }
    ep->pending_power = power(ep);
    return gs_step(ep->body, t, ep->H, motion->v, n, taus, rows);
}

static void commit(fe_endpoint *ep, const fe_motion *motion)
{
    ep->energy += 0.5 * ep->H * (ep->pending_power + power(ep));
    memmove(ep->times + 1, ep->times, sizeof(double) * (FE_HISTORY - 1));
    memmove(ep->wrenches[1], ep->wrenches[0], sizeof(double) * 6 * (FE_HISTORY - 1));
    ep->times[0] = gs_time(ep->body);
    fe_rigid_input(ep, ep->wrenches[0]);
    ep->count = min_int(ep->count + 1, FE_HISTORY);
    ep->motions[1] = ep->motions[0];
    ep->motions[0] = *motion;
    ep->n_motions = min_int(ep->n_motions + 1, 2);
}

int fe_inputs(fe_endpoint *ep, double t, const fe_motion *motion, double *coeff)
{
    if (ep->scheme == FE_GS_FLEX_FIRST) {
        double end[6];
        if (advance(ep, t, motion, NULL))
            return -1;
        fe_rigid_input(ep, end);
        return fe_polynomial(ep, t, end, coeff);
    }
    return fe_polynomial(ep, t, NULL, coeff);
}

int fe_finish(fe_endpoint *ep, double t, const fe_motion *motion, const fe_motion *end)
{
    if (ep->scheme == FE_GS_RIGID_FIRST) {
        if (!end || advance(ep, t, motion, end))
            return -1;
    } else if (ep->scheme == FE_JACOBI) {
        if (advance(ep, t, motion, NULL))
            return -1;
    }
    commit(ep, motion);
    return 0;
}
