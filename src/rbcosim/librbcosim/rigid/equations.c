/* Newton-Euler with Lagrange multipliers in maximal coordinates (see maximal.h), and the power
 * of the non-conservative forces.  Arithmetic in a fixed order (no FMA contraction). */
#include "maximal.h"
#include "rotation.h"
#include <string.h>

#define ROW3(a, k) ((a)->d + 3 * (int64_t)(k))
#define ROW9(a, k) ((a)->d + 9 * (int64_t)(k))

/* Body b's inertia (kg m^2, body axes) times x. */
static rbc_v3 inertia_times(const rbc_arr *mass_blocks, int64_t b, rbc_v3 x) {
    const double *M = mass_blocks->d + 36 * b;
    return v3(M[21] * x.x[0] + M[22] * x.x[1] + M[23] * x.x[2],
              M[27] * x.x[0] + M[28] * x.x[1] + M[29] * x.x[2],
              M[33] * x.x[0] + M[34] * x.x[1] + M[35] * x.x[2]);
}

/* Inverse of a symmetric positive definite (6, 6) matrix a into out (Gauss-Jordan); m scratch. */
static void spd_inverse(const double *a, double *out, double *m) {
    for (int k = 0; k < 36; k++) {
        m[k] = a[k];
        out[k] = (k / 6 == k % 6) ? 1.0 : 0.0;
    }
    for (int p = 0; p < 6; p++) {
        double inv = 1.0 / m[7 * p];
        for (int c = 0; c < 6; c++) {
            m[6 * p + c] *= inv;
            out[6 * p + c] *= inv;
        }
        for (int r = 0; r < 6; r++)
            if (r != p) {
                double f = m[6 * r + p];
                for (int c = 0; c < 6; c++) {
                    m[6 * r + c] -= f * m[6 * p + c];
                    out[6 * r + c] -= f * out[6 * p + c];
                }
            }
    }
}

/* G^T M_a G into the bodies' mass blocks (n+1, 6, 6) and -G^T M_a [w x (w x rho); 0] into
 * bias (n, 6), [a_p; alpha_p] = G [v'; w'^b] + [w x (w x rho); 0], G = [[I, -[rho]x R], [0, R]];
 * scratch (3, 6, 6). */
static void add_added_mass(const rbc_points *pts, const rbc_frames *fr, double *blocks,
                           double *bias, double *scratch) {
    double *G = scratch, *ma = scratch + 36, *gt_ma = scratch + 72;
    for (int64_t k = 0; k < pts->body.size; k++) {
        for (int r = 0; r < 36; r++) G[r] = 0.0;
        int64_t b = pts->body.i[k];
        const double *R = ROW9(&fr->R, b);
        rbc_v3 rho = m3_mul(R, v3_at(pts->geometry.d + 7 * k));
        for (int i = 0; i < 3; i++) {
            G[7 * i] = 1.0;
            for (int j = 0; j < 3; j++) {
                G[6 * i + 3 + j] = -(rho.x[(i + 1) % 3] * R[3 * ((i + 2) % 3) + j]
                                     - rho.x[(i + 2) % 3] * R[3 * ((i + 1) % 3) + j]);
                G[6 * (3 + i) + 3 + j] = R[3 * i + j];
            }
        }
        rbc_inertial_added_mass(pts, fr, k, ma);
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) {
                double s = 0.0;
                for (int i = 0; i < 6; i++) s += G[6 * i + r] * ma[6 * i + c];
                gt_ma[6 * r + c] = s;
            }
        rbc_v3 w = v3_at(ROW3(&fr->wi, b));
        rbc_v3 cen = v3_cross(w, v3_cross(w, rho));
        for (int r = 0; r < 6; r++) {
            for (int c = 0; c < 6; c++) {
                double s = 0.0;
                for (int i = 0; i < 6; i++) s += gt_ma[6 * r + i] * G[6 * i + c];
                blocks[36 * b + 6 * r + c] += s;
            }
            bias[6 * (b - 1) + r] -= gt_ma[6 * r] * cen.x[0] + gt_ma[6 * r + 1] * cen.x[1]
                                     + gt_ma[6 * r + 2] * cen.x[2];
        }
    }
}

/* Unconstrained [v', w'^b] of every body into w.body[ACC]; returns the M^-1 blocks in use
 * (with added mass: w.blocks[1], else sys.minv). */
static const rbc_arr *free_accelerations(rbc_maximal *h, double t, rbc_arr *minv_view) {
    rbc_maximal_tables *sys = &h->sys;
    rbc_workspace *w = &h->w;
    rbc_frames *fr = &w->frames;
    int64_t n = sys->mass_blocks.shape[0] - 1;
    double *loads = w->body.d, *acc = w->body.d + 6 * n, *bias = w->body.d + 12 * n;
    rbc_applied_forces_at(&sys->forces, t, &fr->r, &fr->R, &fr->v, &fr->wi, n, loads, loads + 3, 6);
    const rbc_points *pts = &sys->points;
    const double *minv = sys->minv.d;
    const rbc_arr *minv_arr = &sys->minv;
    int added = pts->body.size > 0 && pts->switches.i[1] != 0;
    if (pts->body.size) {
        rbc_point_wrenches(pts, t, fr, w->wrench.d, 6);
        rbc_add_point_loads(pts, fr, w->wrench.d, loads, loads + 3, 6);
    }
    if (added) {
        int64_t nb = 36 * (n + 1);
        double *blocks = w->blocks.d, *mi = w->blocks.d + nb;
        for (int64_t k = 0; k < nb; k++) {
            blocks[k] = sys->mass_blocks.d[k];
            mi[k] = sys->minv.d[k];
        }
        for (int64_t k = 0; k < 6 * n; k++) bias[k] = 0.0;
        add_added_mass(pts, fr, blocks, bias, w->scratch.d);
        for (int64_t k = 0; k < pts->body.size; k++) {
            int64_t b = pts->body.i[k];
            spd_inverse(blocks + 36 * b, mi + 36 * b, w->scratch.d + 108);
        }
        minv = mi;
        *minv_view = sys->minv;
        minv_view->d = mi;
        minv_arr = minv_view;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i + 1;
        rbc_v3 wb = v3_at(ROW3(&fr->wb, b));
        rbc_v3 iw = inertia_times(&sys->mass_blocks, b, wb);
        rbc_v3 tb = v3_sub(m3_tmul(ROW9(&fr->R, b), v3_at(loads + 6 * i + 3)), v3_cross(wb, iw));
        double gen[6] = {loads[6 * i], loads[6 * i + 1], loads[6 * i + 2], tb.x[0], tb.x[1], tb.x[2]};
        const double *M = minv + 36 * b;
        for (int r = 0; r < 6; r++) {
            double s = 0.0;
            for (int c = 0; c < 6; c++) s += M[6 * r + c] * gen[c];
            if (added)
                for (int c = 0; c < 6; c++) s += M[6 * r + c] * bias[6 * i + c];
            acc[6 * i + r] = s;
        }
    }
    return minv_arr;
}

/* Every constraint row at w.frames, the kept rows gathered in band order and J M^-1 J^T
 * factorised with minv; 0 when it is singular. */
static int rows_and_factor(rbc_maximal *h, double t, const rbc_arr *minv) {
    rbc_workspace *w = &h->w;
    w->factored.d[0] = 0.0;
    rbc_evaluate_rows(&h->sys.rows, t, &w->frames, &w->rows, &w->jac, &w->aux);
    const rbc_arr *order = &h->sys.pattern.rows;
    int64_t m = order->shape[0], rows = w->jac.shape[1];
    for (int64_t i = 0; i < m; i++) {
        int64_t r = order->i[3 * i];
        for (int c = 0; c < 6; c++) {
            w->kept.d[6 * i + c] = w->jac.d[6 * r + c];
            w->kept.d[6 * (m + i) + c] = w->jac.d[6 * (rows + r) + c];
        }
    }
    return rbc_factor(&h->sys.pattern, &w->kept, minv, &w->mj, &w->band, w->solve.d + 2 * m);
}

/* 1 when the workspace holds rbc_project's factor at time t and the positions of y. */
static int factor_of(const rbc_maximal *h, double t, const double *y) {
    const double *f = h->w.factored.d;
    int64_t n = h->sys.mass_blocks.shape[0] - 1;
    return f[0] == 1.0 && f[1] == t && memcmp(f + 2, y, (size_t)(7 * n) * sizeof(double)) == 0;
}

/* rbc_accelerations; the kept rows' blocks and the factor are kept when they are those of the
 * same positions and time (the last rbc_project call: same numbers). */
static int accelerations(rbc_maximal *h, double t, const double *y) {
    rbc_workspace *w = &h->w;
    rbc_fill_frames(y, &w->frames);
    rbc_arr minv_view;
    const rbc_arr *minv = free_accelerations(h, t, &minv_view);
    const rbc_pattern *pat = &h->sys.pattern;
    int64_t m = pat->rows.shape[0];
    if (m == 0) return RBC_OK;
    if (minv == &h->sys.minv && factor_of(h, t, y))
        rbc_evaluate_rows(&h->sys.rows, t, &w->frames, &w->rows, &w->jac, &w->aux);
    else if (!rows_and_factor(h, t, minv))
        return RBC_SINGULAR;
    rbc_velocity_errors(&h->sys.rows, &w->frames, &w->rows, &w->jac);
    int64_t n = h->sys.mass_blocks.shape[0] - 1, rows = w->rows.shape[1];
    const double *acc = w->body.d + 6 * n;
    double *rhs = w->solve.d, *mu = w->solve.d + m;
    const double *phi = w->rows.d + RBC_PHI * rows, *gamma = w->rows.d + RBC_GAMMA * rows;
    const double *phidot = w->rows.d + RBC_PHIDOT * rows;
    double alpha = h->sys.alpha.d[0], beta = h->sys.beta.d[0];
    const int64_t *prow = pat->rows.i;
    for (int64_t i = 0; i < m; i++) {
        int64_t r = prow[3 * i], a = prow[3 * i + 1], b = prow[3 * i + 2];
        const double *ka = w->kept.d + 6 * i, *kb = w->kept.d + 6 * (m + i);
        double s = 0.0;
        if (a > 0 && b > 0) {
            const double *xa = acc + 6 * (a - 1), *xb = acc + 6 * (b - 1);
            for (int c = 0; c < 6; c++) {
                s += ka[c] * xa[c];
                s += kb[c] * xb[c];
            }
        } else if (a > 0) {
            const double *xa = acc + 6 * (a - 1);
            for (int c = 0; c < 6; c++) s += ka[c] * xa[c];
        } else if (b > 0) {
            const double *xb = acc + 6 * (b - 1);
            for (int c = 0; c < 6; c++) s += kb[c] * xb[c];
        }
        rhs[i] = s - (gamma[r] - 2.0 * alpha * phidot[r] - beta * beta * phi[r]);
    }
    rbc_solve(pat, &w->band, w->solve.d + 2 * m, rhs, mu);
    rbc_apply_correction(pat, &w->mj, mu, w->body.d + 6 * n);
    return RBC_OK;
}

int rbc_accelerations(rbc_maximal *h, double t, const double *y) {
    return accelerations(h, t, y);
}

int rbc_derivative(rbc_maximal *h, double t, const double *y, double *out) {
    int status = accelerations(h, t, y);
    const rbc_frames *fr = &h->w.frames;
    int64_t n = h->sys.mass_blocks.shape[0] - 1;
    const double *acc = h->w.body.d + 6 * n;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i + 1;
        for (int c = 0; c < 3; c++) {
            out[3 * i + c] = fr->v.d[3 * b + c];
            out[7 * n + 3 * i + c] = acc[6 * i + c];
            out[10 * n + 3 * i + c] = acc[6 * i + 3 + c];
        }
        const double *q = fr->q.d + 4 * b, *wb = fr->wb.d + 3 * b;
        double q0 = q[0], q1 = q[1], q2 = q[2], q3 = q[3], wx = wb[0], wy = wb[1], wz = wb[2];
        int64_t o = 3 * n + 4 * i;  /* q' = 1/2 q (x) [0, w^b] */
        out[o] = 0.5 * (-q1 * wx - q2 * wy - q3 * wz);
        out[o + 1] = 0.5 * (q0 * wx - q3 * wy + q2 * wz);
        out[o + 2] = 0.5 * (q3 * wx + q0 * wy - q1 * wz);
        out[o + 3] = 0.5 * (-q2 * wx + q1 * wy + q0 * wz);
    }
    return status;
}

static double kept_violation(const rbc_maximal *h) {
    double worst = 0.0;
    const rbc_arr *order = &h->sys.pattern.rows;
    for (int64_t i = 0; i < order->shape[0]; i++) {
        double x = fabs(h->w.rows.d[RBC_PHI * h->w.rows.shape[1] + order->i[3 * i]]);
        if (x > worst) worst = x;
    }
    return worst;
}

int rbc_project(rbc_maximal *h, double t, double *y, double tol, int64_t max_iter, double *worst) {
    const rbc_pattern *pat = &h->sys.pattern;
    int64_t m = pat->rows.shape[0];
    *worst = 0.0;
    if (m == 0) return RBC_OK;
    rbc_workspace *w = &h->w;
    rbc_frames *fr = &w->frames;
    int64_t n = h->sys.mass_blocks.shape[0] - 1, rows = w->rows.shape[1];
    double *rhs = w->solve.d, *mu = w->solve.d + m, *scale = w->solve.d + 2 * m;
    double *step = w->body.d + 6 * n * RBC_STEP;
    rbc_fill_frames(y, fr);
    if (!rows_and_factor(h, t, &h->sys.minv)) { *worst = NAN; return RBC_SINGULAR; }
    *worst = kept_violation(h);
    for (int64_t it = 0; it < max_iter; it++) {
        if (!(*worst > tol)) break;
        for (int64_t i = 0; i < m; i++) rhs[i] = w->rows.d[RBC_PHI * rows + pat->rows.i[3 * i]];
        rbc_solve(pat, &w->band, scale, rhs, mu);
        for (int64_t k = 0; k < 6 * n; k++) step[k] = 0.0;
        rbc_apply_correction(pat, &w->mj, mu, step);
        for (int64_t i = 0; i < n; i++) {
            for (int c = 0; c < 3; c++) y[3 * i + c] += step[6 * i + c];
            q_rotate_by_vector(y + 3 * n + 4 * i, step + 6 * i + 3);
        }
        rbc_fill_frames(y, fr);
        if (!rows_and_factor(h, t, &h->sys.minv)) { *worst = NAN; return RBC_SINGULAR; }
        *worst = kept_violation(h);
    }
    rbc_velocity_errors(&h->sys.rows, fr, &w->rows, &w->jac);
    for (int64_t i = 0; i < m; i++) rhs[i] = w->rows.d[RBC_PHIDOT * rows + pat->rows.i[3 * i]];
    rbc_solve(pat, &w->band, scale, rhs, mu);
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            step[6 * i + c] = fr->v.d[3 * (i + 1) + c];
            step[6 * i + 3 + c] = fr->wb.d[3 * (i + 1) + c];
        }
    rbc_apply_correction(pat, &w->mj, mu, step);
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            y[7 * n + 3 * i + c] = step[6 * i + c];
            y[10 * n + 3 * i + c] = step[6 * i + 3 + c];
        }
    double *f = w->factored.d;  /* the factor of these positions at t (rows_and_factor above) */
    memcpy(f + 2, y, (size_t)(7 * n) * sizeof(double));
    f[1] = t;
    f[0] = 1.0;
    return RBC_OK;
}

void rbc_drift(rbc_maximal *h, double t, const double *y, double *out) {
    rbc_workspace *w = &h->w;
    rbc_fill_frames(y, &w->frames);
    rbc_evaluate_rows(&h->sys.rows, t, &w->frames, &w->rows, &w->jac, &w->aux);
    rbc_velocity_errors(&h->sys.rows, &w->frames, &w->rows, &w->jac);
    double a = 0.0, b = 0.0;
    int64_t rows = w->rows.shape[1];
    for (int64_t i = 0; i < rows; i++) {
        double x = fabs(w->rows.d[RBC_PHI * rows + i]), z = fabs(w->rows.d[RBC_PHIDOT * rows + i]);
        if (x > a) a = x;
        if (z > b) b = z;
    }
    out[0] = a;
    out[1] = b;
}

double rbc_energy(rbc_maximal *h, const double *y, double *kinetic_out) {
    rbc_frames *fr = &h->w.frames;
    rbc_fill_frames(y, fr);
    double kinetic = 0.0;
    int64_t n = h->sys.mass_blocks.shape[0] - 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i + 1;
        rbc_v3 v = v3_at(ROW3(&fr->v, b)), wb = v3_at(ROW3(&fr->wb, b));
        rbc_v3 iw = inertia_times(&h->sys.mass_blocks, b, wb);
        kinetic += 0.5 * h->sys.mass_blocks.d[36 * b] * (v.x[0] * v.x[0] + v.x[1] * v.x[1] + v.x[2] * v.x[2]);
        kinetic += 0.5 * (wb.x[0] * iw.x[0] + wb.x[1] * iw.x[1] + wb.x[2] * iw.x[2]);
    }
    *kinetic_out = kinetic;
    return kinetic + rbc_potential_energy(&h->sys.forces, &fr->r, &fr->R, &fr->v, &fr->wi);
}

int rbc_point_state(rbc_maximal *h, double t, const double *y, double *out) {
    int status = rbc_accelerations(h, t, y);
    const rbc_points *pts = &h->sys.points;
    rbc_workspace *w = &h->w;
    const rbc_frames *fr = &w->frames;
    int64_t n = h->sys.mass_blocks.shape[0] - 1;
    rbc_point_outputs(pts, fr, out, 19);
    rbc_point_accelerations(pts, fr, w->body.d + 6 * n, w->point_acc.d);
    rbc_point_wrenches(pts, t, fr, out + 13, 19);
    if (pts->switches.i[1]) {
        double *ma = w->scratch.d;
        for (int64_t k = 0; k < pts->body.size; k++) {
            rbc_inertial_added_mass(pts, fr, k, ma);
            for (int r = 0; r < 6; r++) {
                double s = 0.0;
                for (int c = 0; c < 6; c++) s += ma[6 * r + c] * w->point_acc.d[6 * k + c];
                out[19 * k + 13 + r] -= s;
            }
        }
    }
    return status;
}

/* sum over the interface points of their total wrench . [v_p, w], W. */
static double interface_power(rbc_maximal *h) {
    const rbc_points *pts = &h->sys.points;
    rbc_workspace *w = &h->w;
    const rbc_frames *fr = &w->frames;
    int64_t n = h->sys.mass_blocks.shape[0] - 1;
    int added = pts->switches.i[1] != 0;
    if (added) rbc_point_accelerations(pts, fr, w->body.d + 6 * n, w->point_acc.d);
    double *ma = w->scratch.d;
    double p = 0.0;
    for (int64_t k = 0; k < pts->body.size; k++) {
        int64_t b = pts->body.i[k];
        rbc_v3 wi = v3_at(ROW3(&fr->wi, b));
        rbc_v3 vp = v3_add(v3_at(ROW3(&fr->v, b)),
                           v3_cross(wi, m3_mul(ROW9(&fr->R, b), v3_at(pts->geometry.d + 7 * k))));
        double velocity[6] = {vp.x[0], vp.x[1], vp.x[2], wi.x[0], wi.x[1], wi.x[2]};
        if (added) rbc_inertial_added_mass(pts, fr, k, ma);
        for (int r = 0; r < 6; r++) {
            double f = w->wrench.d[6 * k + r];
            if (added)
                for (int c = 0; c < 6; c++) f -= ma[6 * r + c] * w->point_acc.d[6 * k + c];
            p += f * velocity[r];
        }
    }
    return p;
}

double rbc_stage_power(rbc_maximal *h, double t) {
    rbc_frames *fr = &h->w.frames;
    double p = rbc_force_power(&h->sys.forces, t, &fr->r, &fr->R, &fr->v, &fr->wi);
    if (h->sys.points.body.size) p += interface_power(h);
    const rbc_arr *order = &h->sys.pattern.rows;
    int64_t m = order->shape[0], rows = h->w.rows.shape[1];
    for (int64_t i = 0; i < m; i++)
        p += h->w.solve.d[m + i] * h->w.rows.d[RBC_PHI_T * rows + order->i[3 * i]];
    return p;
}
