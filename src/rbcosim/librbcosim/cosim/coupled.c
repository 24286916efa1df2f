/* Coupled macro steps of the in-process co-simulation master (see coupled.h).  Every value is
 * computed by the same C functions, with the same arguments and in the same order, as the
 * step-by-step Python master calls them, so the two give the same bits. */
#include "coupled.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../flex/continuity.h"
#include "../flex/frame.h"

/* The arrays one macro step may write, saved at its start and put back if it falls back. */
typedef struct region {
    void *p;
    size_t bytes;
} region;

#define MAX_REGIONS (8 + 14 * RBC_CS_MAX_JOINTS)

typedef struct saved {
    region r[MAX_REGIONS];
    int n;
    size_t bytes;
    unsigned char *buf;
} saved;

static void add(saved *s, void *p, size_t bytes) {
    s->r[s->n].p = p;
    s->r[s->n].bytes = bytes;
    s->n++;
    s->bytes += bytes;
}

static void save(saved *s) {
    unsigned char *b = s->buf;
    for (int i = 0; i < s->n; i++) {
        memcpy(b, s->r[i].p, s->r[i].bytes);
        b += s->r[i].bytes;
    }
}

static void restore(const saved *s) {
    const unsigned char *b = s->buf;
    for (int i = 0; i < s->n; i++) {
        memcpy(s->r[i].p, b, s->r[i].bytes);
        b += s->r[i].bytes;
    }
}

#define ARR(a) (a).d, (size_t)(a).size * sizeof(double)
#define IARR(a) (a).i, (size_t)(a).size * sizeof(int64_t)

static double *body_state(const rbc_cs_joint *j) {
    return j->floating ? ((rbc_fx_floating_body *)j->body)->state.d
                       : ((rbc_fx_grounded_body *)j->body)->state.d;
}

static int64_t body_size(const rbc_cs_joint *j) {
    return j->floating ? ((rbc_fx_floating_body *)j->body)->state.size
                       : ((rbc_fx_grounded_body *)j->body)->state.size;
}

/* The checks of FlexBody._past: the body at t, past motions at distinct times. */
static int past_ok(const double *s, double t, double H, int64_t m, const double *taus) {
    if (fabs(t - s[FX_T]) > 1e-9 * fmax(1.0, fabs(t))) return 0;
    double ordered[FX_MAX_PAST + 1] = {0.0};
    int64_t c = 1;
    for (int64_t i = 0; i < m; i++) {
        double v = taus[i];
        int64_t at = c;
        while (at > 0 && ordered[at - 1] > v) {
            ordered[at] = ordered[at - 1];
            at--;
        }
        ordered[at] = v;
        c++;
    }
    for (int64_t i = 1; i < c; i++)
        if (!(ordered[i] - ordered[i - 1] > 1e-12 * H)) return 0;
    return 1;
}

/* One body's exchange step from `motion` (19) at t through m past motions (rows of 20: values,
 * time; a NaN time: i + 1 steps back), coef/rows as endpoint.h.  Then its motion history takes
 * `motion` (time motion_time) and the range checks of FlexEndpoint._after_commit run, quiet
 * with a margin.  Returns an RBC_CS_STEP_* code (coupled.h). */
static int flex_step(rbc_cs_joint *j, const double *motion, double motion_time, double t,
                     double H, int64_t m, const double *past20[FX_MAX_PAST], int64_t order,
                     double *coef, int64_t *rows) {
    double taus[FX_MAX_PAST], past[19 * FX_MAX_PAST];
    for (int64_t i = 0; i < m; i++) {
        taus[i] = isnan(past20[i][19]) ? -(double)(i + 1) * H : past20[i][19] - t;
        memcpy(past + 19 * i, past20[i], 19 * sizeof(double));
    }
    double *s = body_state(j);
    if (!past_ok(s, t, H, m, taus)) return RBC_CS_STEP_REFUSED;
    int ok;
    if (j->floating)
        ok = rbc_fx_floating_exchange_step(j->body, j->x, motion, m, taus, past, t, H,
                                           j->micro_steps, order, coef, rows);
    else
        ok = rbc_fx_grounded_exchange_step(j->body, j->x, motion, m, taus, past, t, H,
                                           j->micro_steps, j->p, order, coef, rows);
    if (!ok) return RBC_CS_STEP_NOT_FINITE;
    /* _motions = [motion, *_motions[:1]] */
    memcpy(j->motions + 20, j->motions, 20 * sizeof(double));
    memcpy(j->motions, motion, 19 * sizeof(double));
    j->motions[19] = motion_time;
    j->n_motions[0] = j->n_motions[0] < 1 ? 1 : 2;
    /* the spin and deformation checks, quiet with a margin (else Python decides) */
    const double *w = s + FX_W;
    double w2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    if (!(w2 * (1.0 + 1e-9) * (1.0 + 1e-12) < j->spin_floor * (1.0 - 1e-12)))
        return RBC_CS_STEP_CHECK;
    if (j->rotation_gain > 0.0) {
        int64_t k = (body_size(j) - FX_ETA) / 2;
        const double *eta = s + FX_ETA;
        double e = 0.0;
        for (int64_t i = 0; i < k; i++) e += eta[i] * eta[i];
        if (!((1.0 + 1e-9) * j->rotation_gain * sqrt(e) * (1.0 + 1e-12)
              <= j->rotation_limit * (1.0 - 1e-12))) {
            /* DeformationRange.rotation: the largest nodal rotation, quiet below the limit
             * with a margin far above the rounding of its sums */
            if (j->n_rotations == 0) return RBC_CS_STEP_CHECK;
            double largest = 0.0;
            for (int64_t node = 0; node + 3 <= j->n_rotations; node += 3) {
                double s2 = 0.0;
                for (int c = 0; c < 3; c++) {
                    const double *row = j->rotations + (node + c) * k;
                    double u = 0.0;
                    for (int64_t i = 0; i < k; i++) u += row[i] * eta[i];
                    s2 += u * u;
                }
                if (!(s2 <= largest)) largest = s2;
            }
            if (!(sqrt(largest) < j->rotation_limit * (1.0 - 1e-9))) return RBC_CS_STEP_CHECK;
        }
    }
    return RBC_CS_STEP_QUIET;
}

/* RigidSide.set_wrench_polynomial: the point's coefficients, the inputs' time origin t. */
static int set_polynomial(rbc_points *pts, int64_t point, const double *coef, int64_t rows,
                          double t) {
    int64_t order = pts->poly.shape[1];
    if (rows < 1 || rows > order || !rbc_all_finite(coef, 6 * rows)) return 0;
    double *P = pts->poly.d + 6 * order * point;
    memset(P, 0, 6 * order * sizeof(double));
    memcpy(P, coef, 6 * rows * sizeof(double));
    pts->t0.d[0] = t;
    return 1;
}

/* The past motions a step extrapolates through: the newest `order` (with `future` first and
 * one of them, rigid side first). */
static int64_t past_motions(const rbc_cs_joint *j, int64_t order, const double *future,
                            const double *past20[FX_MAX_PAST]) {
    int64_t m = order < j->n_motions[0] ? order : j->n_motions[0];
    if (future == NULL) {
        for (int64_t i = 0; i < m; i++) past20[i] = j->motions + 20 * i;
        return m;
    }
    past20[0] = future;
    if (m > 0) past20[1] = j->motions;
    return 1 + (m > 0);
}

int rbc_cs_flex_step(rbc_cs_joint *j, const double *motion, const double *future, double t,
                     double H, int64_t order, int64_t poly_order, double *coef, int64_t *rows) {
    const double *past20[FX_MAX_PAST];
    int64_t m = past_motions(j, order, future, past20);
    *rows = 0;
    return flex_step(j, motion, motion[19], t, H, m, past20, poly_order, coef, rows);
}

int rbc_cs_steps(rbc_maximal *h, const rbc_stepper *st, double *y, double *t, double H,
                 int64_t n, int scheme, int64_t order, rbc_cs_joint *joints, int64_t nj,
                 int64_t K, rbc_macro_io *io, int64_t *done, int64_t *micro) {
    rbc_points *pts = &h->sys.points;
    int64_t k = pts->body.size, ny = 13 * (h->sys.mass_blocks.shape[0] - 1);
    *done = 0;
    *micro = 0;
    saved sv = {.n = 0, .bytes = 0};
    add(&sv, y, (size_t)ny * sizeof(double));
    add(&sv, ARR(pts->poly));
    add(&sv, ARR(pts->t0));
    add(&sv, io->stats, 2 * sizeof(double));
    add(&sv, io->start, 19 * (size_t)k * sizeof(double));
    add(&sv, io->end, 19 * (size_t)k * sizeof(double));
    if (st->method == RBC_METHOD_SDIRK2) {
        add(&sv, st->newton_matrix, (size_t)ny * ny * sizeof(double));
        add(&sv, st->valid, sizeof(int64_t));
    }
    for (int64_t i = 0; i < nj; i++) {
        rbc_cs_joint *j = joints + i;
        rbc_fx_exchange *x = j->x;
        add(&sv, body_state(j), (size_t)body_size(j) * sizeof(double));
        add(&sv, j->floating ? ((rbc_fx_floating_body *)j->body)->wrench.d
                             : ((rbc_fx_grounded_body *)j->body)->wrench.d, 6 * sizeof(double));
        add(&sv, ARR(x->times));
        add(&sv, ARR(x->wrenches));
        add(&sv, IARR(x->count));
        add(&sv, ARR(x->energy));
        add(&sv, ARR(x->pending));
        add(&sv, ARR(x->rigid_input));
        add(&sv, j->motions, 40 * sizeof(double));
        add(&sv, j->n_motions, sizeof(int64_t));
        add(&sv, j->ledger, RBC_CS_LEDGER * sizeof(double));
    }
    /* the points' motions (k, 19) at t and at t + H: outputs and accelerations */
    double *now = malloc(sv.bytes + 38 * (size_t)k * sizeof(double));
    if (!now) return -1;
    double *next = now + 19 * k;
    sv.buf = (unsigned char *)(next + 19 * k);
    int have_now = 0, code = RBC_CS_DONE;
    double coef[6 * FX_HISTORY];
    int64_t rows;

    for (int64_t step = 0; step < K; step++) {
        double t0 = *t;
        save(&sv);
        if (!have_now) { /* CosimMaster.motions() */
            if (rbc_point_state(h, t0, y, io->end) != RBC_OK) goto fallback;
            for (int64_t p = 0; p < k; p++) {
                memcpy(now + 19 * p, io->end + 19 * p, 13 * sizeof(double));
                memcpy(now + 19 * p + 13, h->w.point_acc.d + 6 * p, 6 * sizeof(double));
            }
            have_now = 1;
        }
        for (int64_t i = 0; i < nj; i++)
            if (!rbc_all_finite(now + 19 * joints[i].point, 19)) goto fallback;

        /* the inputs of the rigid side */
        for (int64_t i = 0; i < nj; i++) {
            rbc_cs_joint *j = joints + i;
            if (scheme == RBC_CS_FLEX_FIRST) {
                const double *past20[FX_MAX_PAST];
                int64_t m = past_motions(j, order, NULL, past20);
                if (flex_step(j, now + 19 * j->point, t0, t0, H, m, past20, order, coef, &rows)
                    != RBC_CS_STEP_QUIET)
                    goto fallback;
            } else {
                int64_t count = order + 1 < j->x->count.i[0] ? order + 1 : j->x->count.i[0];
                rbc_fx_exchange_polynomial(j->x, t0, count, 0, NULL, NULL, coef);
                rows = count;
            }
            if (!set_polynomial(pts, j->point, coef, rows, t0)) goto fallback;
        }

        /* the rigid macro step (RigidSide.step) */
        int phase;
        int64_t steps_done;
        int status = rbc_macro_step(h, st, y, t0, H, n, io, &phase, &steps_done);
        if (status < 0) {
            code = -1;
            goto fallback;
        }
        if (status != RBC_OK || phase != RBC_PHASE_DONE) goto fallback;
        double t1 = io->times[n];
        int64_t counted = (int64_t)nearbyint((t1 - io->times[0]) / (H / (double)n));
        for (int64_t i = 0; i < nj; i++)
            joints[i].ledger[RBC_CS_E_RIGID] += io->energy[joints[i].point];
        /* the motions at t + H: the end state of the macro step (the same function of the same
         * state, time and inputs as CosimMaster.motions() after it) */
        for (int64_t p = 0; p < k; p++) {
            memcpy(next + 19 * p, io->end + 19 * p, 13 * sizeof(double));
            memcpy(next + 19 * p + 13, io->acc + 6 * p, 6 * sizeof(double));
        }

        /* the flexible side after the rigid one */
        if (scheme != RBC_CS_FLEX_FIRST) {
            double future[20];
            for (int64_t i = 0; i < nj; i++) {
                rbc_cs_joint *j = joints + i;
                const double *past20[FX_MAX_PAST];
                const double *f = NULL;
                if (scheme == RBC_CS_RIGID_FIRST) {
                    if (!rbc_all_finite(next + 19 * j->point, 19)) goto fallback;
                    memcpy(future, next + 19 * j->point, 19 * sizeof(double));
                    future[19] = t1;
                    f = future;
                }
                int64_t m = past_motions(j, order, f, past20);
                if (flex_step(j, now + 19 * j->point, t0, t0, H, m, past20, -1, NULL, NULL)
                    != RBC_CS_STEP_QUIET)
                    goto fallback;
            }
        }

        /* the reports and the continuity gaps (CosimMaster.exchange_reports) */
        double gaps[RBC_CS_MAX_JOINTS][4];
        for (int64_t i = 0; i < nj; i++) {
            rbc_cs_joint *j = joints + i;
            const double *kin = body_state(j) + FX_R;
            if (!rbc_all_finite(kin, 13) || !isfinite(j->x->energy.d[0])) goto fallback;
        }
        for (int64_t i = 0; i < nj; i++) {
            rbc_cs_joint *j = joints + i;
            rbc_fx_joint_gaps(io->end + 19 * j->point, body_state(j) + FX_R, gaps[i]);
            for (int c = 0; c < 4; c++)
                if (!(gaps[i][c] <= j->tol[c]) || !isfinite(gaps[i][c])) goto fallback;
        }
        for (int64_t i = 0; i < nj; i++) {
            rbc_cs_joint *j = joints + i;
            double *L = j->ledger;
            L[RBC_CS_E_FLEX] = j->x->energy.d[0];
            memcpy(L + RBC_CS_KIN, body_state(j) + FX_R, 13 * sizeof(double));
            for (int c = 0; c < 4; c++) {
                L[RBC_CS_GAPS + c] = gaps[i][c];
                if (gaps[i][c] > L[RBC_CS_GAP_MAX + c]) L[RBC_CS_GAP_MAX + c] = gaps[i][c];
            }
        }
        double *swap = now;
        now = next;
        next = swap;
        *micro += counted;
        *t = t1;
        (*done)++;
        continue;
    fallback:
        restore(&sv);
        *t = t0;
        if (code == RBC_CS_DONE) code = RBC_CS_FALLBACK;
        break;
    }
    free(now < next ? now : next);
    return code;
}
