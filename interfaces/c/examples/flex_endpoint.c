/* flex_endpoint.c: see flex_endpoint.h. */
#include "flex_endpoint.h"

#include <math.h>
#include <string.h>

#include "polynomial.h"

void fe_motion_from(fe_motion *m, const double *values, double time)
{
    memcpy(m->v, values, sizeof m->v);
    m->time = time;
}

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

void fe_setup(fe_endpoint *ep, fe_body body, fe_scheme scheme, int order, double H)
{
    memset(ep, 0, sizeof *ep);
    ep->body = body;
    ep->scheme = scheme;
    ep->order = order < 0 ? 0 : order > 2 ? 2 : order;
    ep->H = H;
}

/* R(q) [3][3], point frame -> inertial, q normalised here. */
static void rotation_of(const double *q, double *r)
{
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    r[0] = 1 - 2 * (y * y + z * z), r[1] = 2 * (x * y - w * z), r[2] = 2 * (x * z + w * y);
    r[3] = 2 * (x * y + w * z), r[4] = 1 - 2 * (x * x + z * z), r[5] = 2 * (y * z - w * x);
    r[6] = 2 * (x * z - w * y), r[7] = 2 * (y * z + w * x), r[8] = 1 - 2 * (x * x + y * y);
}

/* out = T m T^T (inverse 0: T^T m T), T = diag(R(q), R(q)): a (6, 6) mass between point-frame
 * and inertial axes. */
static void rotate_mass(const double *m, const double *q, int inverse, double *out)
{
    double r[9], t6[36] = {0}, tmp[36];
    rotation_of(q, r);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double v = inverse ? r[3 * i + j] : r[3 * j + i]; /* T or T^T */
            t6[6 * i + j] = t6[6 * (i + 3) + j + 3] = v;
        }
    for (int i = 0; i < 6; ++i) /* tmp = t6 m */
        for (int j = 0; j < 6; ++j) {
            double acc = 0.0;
            for (int l = 0; l < 6; ++l)
                acc += t6[6 * i + l] * m[6 * l + j];
            tmp[6 * i + j] = acc;
        }
    for (int i = 0; i < 6; ++i) /* out = tmp t6^T */
        for (int j = 0; j < 6; ++j) {
            double acc = 0.0;
            for (int l = 0; l < 6; ++l)
                acc += tmp[6 * i + l] * t6[6 * j + l];
            out[6 * i + j] = acc;
        }
}

void fe_rigid_input(const fe_endpoint *ep, double *wrench)
{
    const fe_body_ops *ops = ep->body.ops;
    ops->wrench(ep->body.self, wrench);
    if (ep->implicit_mass) { /* W + M_a [a; alpha]: the rigid side applies -M_a [a_p; alpha_p] */
        double acc[6], mass[36], kin[13];
        const double *m = ep->handed_mass;
        ops->frame_accelerations(ep->body.self, acc);
        if (ep->point_frame) {
            ops->node_kinematics(ep->body.self, kin);
            rotate_mass(ep->handed_mass, kin + 3, 1, mass);
            m = mass;
        }
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < 6; ++c)
                wrench[r] += m[6 * r + c] * acc[c];
    }
}

int fe_initialize(fe_endpoint *ep, double t, int want_added_mass, double *added_mass,
                  const char **frame)
{
    int handover = 0;
    if (want_added_mass) {
        double mass[36], big = 0.0;
        int any = 0, point_frame = 0;
        ep->body.ops->added_mass(ep->body.self, mass, &point_frame);
        for (int i = 0; i < 36; ++i)
            big = fmax(big, fabs(mass[i]));
        for (int i = 0; i < 36; ++i)
            any |= fabs(mass[i]) > 1e-12 * fmax(1.0, big);
        if (any) {
            memcpy(ep->handed_mass, mass, sizeof mass);
            memcpy(added_mass, mass, sizeof mass);
            ep->implicit_mass = 1;
            ep->point_frame = point_frame;
            *frame = point_frame ? "point" : "inertial";
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
    ep->body.ops->node_kinematics(ep->body.self, kinematics);
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
    ep->body.ops->wrench(ep->body.self, w);
    ep->body.ops->node_kinematics(ep->body.self, kin);
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
    return ep->body.ops->step(ep->body.self, t, ep->H, motion->v, n, taus, rows);
}

static void commit(fe_endpoint *ep, const fe_motion *motion)
{
    ep->energy += 0.5 * ep->H * (ep->pending_power + power(ep));
    memmove(ep->times + 1, ep->times, sizeof(double) * (FE_HISTORY - 1));
    memmove(ep->wrenches[1], ep->wrenches[0], sizeof(double) * 6 * (FE_HISTORY - 1));
    ep->times[0] = ep->body.ops->time(ep->body.self);
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
