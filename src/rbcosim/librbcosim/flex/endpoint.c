/* One macro step of a flexible body and its side of the exchange (see endpoint.h). */
#include "endpoint.h"

#include <string.h>

#include "continuity.h"
#include "floating.h"
#include "frame.h"
#include "grounded.h"
#include "polynomial.h"

void rbc_fx_floating_body_wrench(rbc_fx_floating_body *b) {
    int64_t k = (b->state.size - FX_ETA) / 2;
    rbc_fx_floating_wrench(b->state.d, k, b->gravity.d, b->axis.d, b->wmat.d,
                           b->total_mass.d[0], b->first_moment.d, b->s_e.d, b->spin_inertia.d,
                           b->moment.d, b->wrench.d);
}

void rbc_fx_grounded_body_wrench(rbc_fx_grounded_body *b) {
    int64_t k = (b->state.size - FX_ETA) / 2;
    rbc_fx_grounded_wrench(b->state.d, k, b->r0.d, b->comps.i, b->comps.size, b->wmat.d,
                           b->fb.d, b->gacc.d, b->gb.d, b->wrench.d);
}

void rbc_fx_rigid_input(const rbc_fx_exchange *x, const double *state, const double *wrench,
                        int floating, double *out) {
    memcpy(out, wrench, 6 * sizeof(double));
    if (!x->implicit.i[0]) return;
    double rotated[36];
    const double *mass = x->handed_mass.d;
    if (floating) {
        rbc_fx_point_frame_mass(mass, state + FX_Q, 1, rotated);
        mass = rotated;
    }
    const double *acc = state + FX_A; /* [a; alpha], contiguous in the layout */
    for (int i = 0; i < 6; i++) {
        double s = 0.0;
        for (int j = 0; j < 6; j++) s += mass[6 * i + j] * acc[j];
        out[i] += s;
    }
}

void rbc_fx_exchange_polynomial(const rbc_fx_exchange *x, double t, int64_t count, int64_t m,
                                const double *known_taus, const double *known, double *coef) {
    double taus[RBC_MAX_POLY_POINTS], values[RBC_MAX_POLY_POINTS * 6];
    for (int64_t i = 0; i < m; i++) {
        taus[i] = known_taus[i];
        memcpy(values + 6 * i, known + 6 * i, 6 * sizeof(double));
    }
    for (int64_t i = 0; i < count; i++) {
        taus[m + i] = x->times.d[i] - t;
        memcpy(values + 6 * (m + i), x->wrenches.d + 6 * i, 6 * sizeof(double));
    }
    rbc_polynomial_through(m + count, 6, taus, values, coef);
}

static double power(const double *wrench, const double *state) {
    const double *v = state + FX_V; /* [v; w], contiguous in the layout */
    double s = 0.0;
    for (int i = 0; i < 6; i++) s += wrench[i] * v[i];
    return s;
}

/* The common end of a step: rigid input, polynomial, energy and history. */
static void commit(rbc_fx_exchange *x, const double *state, const double *wrench, int floating,
                   double pending, double t, double H, int64_t order, double *coef,
                   int64_t *rows) {
    double *in = x->rigid_input.d;
    rbc_fx_rigid_input(x, state, wrench, floating, in);
    int64_t count = x->count.i[0];
    if (coef) {
        int64_t use = order > 1 ? order : 1;
        if (use > count) use = count;
        rbc_fx_exchange_polynomial(x, t, use, 1, &H, in, coef);
        *rows = use + 1;
    }
    x->energy.d[0] += 0.5 * H * (pending + power(wrench, state));
    for (int64_t i = FX_HISTORY - 1; i > 0; i--) {
        x->times.d[i] = x->times.d[i - 1];
        memcpy(x->wrenches.d + 6 * i, x->wrenches.d + 6 * (i - 1), 6 * sizeof(double));
    }
    x->times.d[0] = state[FX_T];
    memcpy(x->wrenches.d, in, 6 * sizeof(double));
    x->count.i[0] = count + 1 < FX_HISTORY ? count + 1 : FX_HISTORY;
}

int rbc_fx_floating_exchange_step(rbc_fx_floating_body *b, rbc_fx_exchange *x,
                                  const double *motion, int64_t m, const double *past_taus,
                                  const double *past, double t, double H, int64_t n,
                                  int64_t order, double *coef, int64_t *rows) {
    double *s = b->state.d;
    int64_t k = (b->state.size - FX_ETA) / 2;
    double pending = power(b->wrench.d, s);
    x->pending.d[0] = pending;
    if (!rbc_fx_floating_step(s, k, motion, m, past_taus, past, H, n, b->gravity.d, b->axis.d,
                              b->wmat.d))
        return 0;
    s[FX_T] = t + H;
    rbc_fx_floating_body_wrench(b);
    commit(x, s, b->wrench.d, 1, pending, t, H, order, coef, rows);
    return 1;
}

int rbc_fx_grounded_exchange_step(rbc_fx_grounded_body *b, rbc_fx_exchange *x,
                                  const double *motion, int64_t m, const double *past_taus,
                                  const double *past, double t, double H, int64_t n,
                                  const double *p, int64_t order, double *coef, int64_t *rows) {
    double *s = b->state.d;
    int64_t k = (b->state.size - FX_ETA) / 2;
    double pending = power(b->wrench.d, s);
    x->pending.d[0] = pending;
    if (!rbc_fx_grounded_step(s, k, motion, m, past_taus, past, H, n, b->r0.d, b->comps.i,
                              b->comps.size, b->shift.d, p, b->gacc.d))
        return 0;
    s[FX_T] = t + H;
    rbc_fx_grounded_body_wrench(b);
    commit(x, s, b->wrench.d, 0, pending, t, H, order, coef, rows);
    return 1;
}
