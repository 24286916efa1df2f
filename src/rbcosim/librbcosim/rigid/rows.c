/* Frames from a state vector, and the constraint rows: values, Phi_t, gamma and Jacobian
 * blocks (plane, dot1, dist; the contact rows of a rolling disk / knife edge on a ground plane;
 * the drivers).  Arithmetic in a fixed order (no FMA contraction). */
#include "maximal.h"
#include "expression.h"
#include "rotation.h"
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define ROW3(a, k) ((a)->d + 3 * (int64_t)(k))
#define ROW9(a, k) ((a)->d + 9 * (int64_t)(k))

void rbc_fill_frames(const double *y, rbc_frames *fr) {
    int64_t n = fr->r.shape[0] - 1;
    double *q = fr->q.d, *R = fr->R.d;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i + 1, o = 3 * n + 4 * i;
        double norm = sqrt(y[o] * y[o] + y[o + 1] * y[o + 1] + y[o + 2] * y[o + 2]
                           + y[o + 3] * y[o + 3]);
        double w = y[o] / norm, x = y[o + 1] / norm, yy = y[o + 2] / norm, z = y[o + 3] / norm;
        q[4 * b] = w; q[4 * b + 1] = x; q[4 * b + 2] = yy; q[4 * b + 3] = z;
        double *Rb = R + 9 * b;
        Rb[0] = 1.0 - 2.0 * (yy * yy + z * z);
        Rb[1] = 2.0 * (x * yy - w * z);
        Rb[2] = 2.0 * (x * z + w * yy);
        Rb[3] = 2.0 * (x * yy + w * z);
        Rb[4] = 1.0 - 2.0 * (x * x + z * z);
        Rb[5] = 2.0 * (yy * z - w * x);
        Rb[6] = 2.0 * (x * z - w * yy);
        Rb[7] = 2.0 * (yy * z + w * x);
        Rb[8] = 1.0 - 2.0 * (x * x + yy * yy);
        double *wb = fr->wb.d + 3 * b;
        for (int k = 0; k < 3; k++) {
            fr->r.d[3 * b + k] = y[3 * i + k];
            fr->v.d[3 * b + k] = y[7 * n + 3 * i + k];
            wb[k] = y[10 * n + 3 * i + k];
        }
        for (int k = 0; k < 3; k++)
            fr->wi.d[3 * b + k] = Rb[3 * k] * wb[0] + Rb[3 * k + 1] * wb[1] + Rb[3 * k + 2] * wb[2];
    }
}

/* last index i with a[i] <= x (numpy searchsorted side="right", minus one); -1 if none */
static int64_t search_right(const double *a, int64_t m, double x) {
    int64_t lo = 0, hi = m;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (x < a[mid]) hi = mid; else lo = mid + 1;
    }
    return lo - 1;
}

void rbc_motion_at(const rbc_rows *table, int64_t j, double t, double *out) {
    int64_t start = table->motion_start.i[j], stop = table->motion_start.i[j + 1];
    const double *data = table->motion_data.d + start;
    int64_t size = stop - start, kind = RBC_I2(&table->drivers, j, 3);
    if (kind == RBC_POLYNOMIAL) {
        double f = 0.0, fd = 0.0, fdd = 0.0;
        for (int64_t k = size - 1; k >= 0; k--) {
            fdd = fdd * t + 2.0 * fd;
            fd = fd * t + f;
            f = f * t + data[k];
        }
        out[0] = f; out[1] = fd; out[2] = fdd;
        return;
    }
    if (kind == RBC_HARMONIC) {
        double offset = data[0], amplitude = data[1], frequency = data[2], phase = data[3];
        double w = 2.0 * M_PI * frequency;
        double s = sin(w * t + phase), c = cos(w * t + phase);
        out[0] = offset + amplitude * s;
        out[1] = amplitude * w * c;
        out[2] = -amplitude * w * w * s;
        return;
    }
    if (kind == RBC_EXPRESSION) {
        rbc_program_jet(data, t, table->motion_stack.d, out);
        return;
    }
    int64_t k = (int64_t)data[0];
    const double *breaks = data + 1, *coef = data + k + 2;  /* coef (4, k) row-major */
    int64_t i = search_right(breaks, k + 1, t);
    if (i < 0) i = 0;
    if (i > k - 1) i = k - 1;
    double x = t - breaks[i];
    double c0 = coef[i], c1 = coef[k + i], c2 = coef[2 * k + i], c3 = coef[3 * k + i];
    out[0] = ((c0 * x + c1) * x + c2) * x + c3;
    out[1] = (3.0 * c0 * x + 2.0 * c1) * x + c2;
    out[2] = 6.0 * c0 * x + 2.0 * c1;
}

/* Jacobian blocks of a row into jac (2, rows, 6) at `slot`. */
static void store_jac(rbc_arr *jac, int64_t slot, rbc_v3 ta, rbc_v3 tb, rbc_v3 wa, rbc_v3 wb) {
    double *ja = jac->d + 6 * slot, *jb = jac->d + 6 * (jac->shape[1] + slot);
    for (int k = 0; k < 3; k++) {
        ja[k] = ta.x[k];
        jb[k] = tb.x[k];
        ja[3 + k] = wa.x[k];
        jb[3 + k] = wb.x[k];
    }
}

/* (Phi, gamma) of contact row i (body a the ground, carrying the plane). */
static double contact_row(const rbc_rows *tb, const rbc_frames *fr, int64_t i, rbc_arr *jac,
                          int64_t slot, double *gamma) {
    int64_t kind = RBC_I2(&tb->index, i, 0), b = RBC_I2(&tb->index, i, 2);
    const double *Rb = ROW9(&fr->R, b), *vec = tb->vectors.d + 15 * i;
    rbc_v3 e = v3_at(vec), n = v3_at(vec + 12);
    rbc_v3 u = m3_mul(Rb, v3_at(vec + 3));
    rbc_v3 rho0 = m3_mul(Rb, v3_at(vec + 9));
    rbc_v3 w = v3_at(ROW3(&fr->wi, b));
    double phi = 0.0;
    rbc_v3 rho;
    if (kind == RBC_KNIFE) {
        rho = rho0;
        e = v3_cross(n, u);
        rbc_v3 v_p = v3_add(v3_at(ROW3(&fr->v, b)), v3_cross(w, rho));
        *gamma = -(v3_dot(v3_cross(n, v3_cross(w, u)), v_p) + v3_dot(e, v3_cross(w, v3_cross(w, rho))));
    } else {
        double radius = tb->length.d[i];
        double na = v3_dot(n, u);
        rbc_v3 p = v3_sub(n, v3_scaled(na, u));
        double s = sqrt(v3_dot(p, p));
        rbc_v3 d = v3_scaled(-1.0 / s, p);
        rho = v3_add(rho0, v3_scaled(radius, d));
        rbc_v3 u_dot = v3_cross(w, u);
        rbc_v3 p_dot = v3_scaled(-1.0, v3_add(v3_scaled(v3_dot(n, u_dot), u), v3_scaled(na, u_dot)));
        double s_dot = v3_dot(p, p_dot) / s;
        rbc_v3 d_dot = v3_scaled(-1.0 / s, v3_sub(p_dot, v3_scaled(s_dot / s, p)));
        rbc_v3 rho_dot = v3_add(v3_cross(w, rho0), v3_scaled(radius, d_dot));
        *gamma = -v3_dot(e, v3_cross(w, rho_dot));
        if (kind == RBC_CONTACT_HEIGHT)
            phi = v3_dot(n, v3_sub(v3_add(v3_at(ROW3(&fr->r, b)), rho), v3_at(vec + 6)));
    }
    rbc_v3 rot = m3_tmul(Rb, v3_cross(rho, e));
    store_jac(jac, slot, v3(0.0, 0.0, 0.0), e, v3(0.0, 0.0, 0.0), rot);
    return phi;
}

/* What consecutive rows of one joint share at the same frames: the point pair (bodies a, b and
 * the two points, compared bit for bit) and the axis u1 (body f and its vector).  Reused values
 * are the same expressions of the same inputs, so no bit changes. */
typedef struct {
    int point_valid, axis_valid;
    int64_t a, b, f;
    double point_key[6], axis_key[3];
    rbc_v3 rho_a, rho_b, d, dd, cc;  /* cc = w_b x (w_b x rho_b) - w_a x (w_a x rho_a) */
    rbc_v3 u1, wf_u1, wf_wf_u1;
} row_cache;

/* (Phi, gamma) of primitive row i; Jacobian blocks into jac[0, slot], jac[1, slot]. */
static double primitive_row(const rbc_rows *tb, const rbc_frames *fr, int64_t i, rbc_arr *jac,
                            int64_t slot, double *gamma, row_cache *cache) {
    int64_t kind = RBC_I2(&tb->index, i, 0), a = RBC_I2(&tb->index, i, 1);
    int64_t b = RBC_I2(&tb->index, i, 2), f = RBC_I2(&tb->index, i, 3);
    if (kind >= RBC_CONTACT_HEIGHT) return contact_row(tb, fr, i, jac, slot, gamma);
    const double *Ra = ROW9(&fr->R, a), *Rb = ROW9(&fr->R, b), *vec = tb->vectors.d + 15 * i;
    rbc_v3 wb = v3_at(ROW3(&fr->wi, b));
    rbc_v3 zero = v3(0.0, 0.0, 0.0), trans, w_a, w_b;
    double phi;
    if (kind != RBC_DOT1 && !(cache->point_valid && cache->a == a && cache->b == b
                              && memcmp(cache->point_key, vec + 6, 6 * sizeof(double)) == 0)) {
        rbc_v3 rho_a = m3_mul(Ra, v3_at(vec + 6)), rho_b = m3_mul(Rb, v3_at(vec + 9));
        rbc_v3 wa = v3_at(ROW3(&fr->wi, a));
        rbc_v3 wa_rho = v3_cross(wa, rho_a), wb_rho = v3_cross(wb, rho_b);
        cache->rho_a = rho_a;
        cache->rho_b = rho_b;
        cache->d = v3_sub(v3_add(v3_at(ROW3(&fr->r, b)), rho_b), v3_add(v3_at(ROW3(&fr->r, a)), rho_a));
        cache->dd = v3_sub(v3_add(v3_at(ROW3(&fr->v, b)), wb_rho), v3_add(v3_at(ROW3(&fr->v, a)), wa_rho));
        cache->cc = v3_sub(v3_cross(wb, wb_rho), v3_cross(wa, wa_rho));
        cache->a = a;
        cache->b = b;
        memcpy(cache->point_key, vec + 6, 6 * sizeof(double));
        cache->point_valid = 1;
    }
    if (kind != RBC_DIST && !(cache->axis_valid && cache->f == f
                              && memcmp(cache->axis_key, vec, 3 * sizeof(double)) == 0)) {
        rbc_v3 u1 = m3_mul(ROW9(&fr->R, f), v3_at(vec));
        rbc_v3 wf = v3_at(ROW3(&fr->wi, f));
        cache->u1 = u1;
        cache->wf_u1 = v3_cross(wf, u1);
        cache->wf_wf_u1 = v3_cross(wf, cache->wf_u1);
        cache->f = f;
        memcpy(cache->axis_key, vec, 3 * sizeof(double));
        cache->axis_valid = 1;
    }
    if (kind == RBC_DIST) {
        rbc_v3 d = cache->d, dd = cache->dd, rho_a = cache->rho_a, rho_b = cache->rho_b;
        double L = tb->length.d[i];
        phi = 0.5 * (v3_dot(d, d) - L * L);
        *gamma = -(v3_dot(dd, dd) + v3_dot(d, cache->cc));
        trans = d;
        w_a = v3_scaled(-1.0, v3_cross(rho_a, d));
        w_b = v3_cross(rho_b, d);
    } else {
        rbc_v3 u1 = cache->u1, wf_u1 = cache->wf_u1, wf_wf_u1 = cache->wf_wf_u1;
        if (kind == RBC_PLANE) {
            rbc_v3 d = cache->d, dd = cache->dd;
            phi = v3_dot(u1, d);
            *gamma = -(v3_dot(wf_wf_u1, d) + 2.0 * v3_dot(wf_u1, dd) + v3_dot(u1, cache->cc));
            trans = u1;
            w_a = v3_cross(u1, cache->rho_a);
            w_b = v3_cross(cache->rho_b, u1);
            if (f == a) w_a = v3_add(w_a, v3_cross(u1, d));
        } else {
            rbc_v3 u2 = m3_mul(Rb, v3_at(vec + 3));
            phi = v3_dot(u1, u2);
            rbc_v3 wb_u2 = v3_cross(wb, u2);
            *gamma = -(v3_dot(wf_wf_u1, u2) + 2.0 * v3_dot(wf_u1, wb_u2)
                       + v3_dot(u1, v3_cross(wb, wb_u2)));
            rbc_v3 u1_u2 = v3_cross(u1, u2);
            trans = zero;
            w_a = f == a ? u1_u2 : zero;
            w_b = v3_scaled(-1.0, u1_u2);
        }
    }
    store_jac(jac, slot, v3(-trans.x[0], -trans.x[1], -trans.x[2]), trans, m3_tmul(Ra, w_a),
              m3_tmul(Rb, w_b));
    return phi;
}

/* ja nu_a + jb nu_b of jac[:, slot] with nu = [v, w^b]. */
static double rate(const rbc_arr *jac, int64_t slot, const rbc_frames *fr, int64_t a, int64_t b) {
    const double *ja = jac->d + 6 * slot, *jb = jac->d + 6 * (jac->shape[1] + slot);
    const double *va = ROW3(&fr->v, a), *wa = ROW3(&fr->wb, a);
    const double *vb = ROW3(&fr->v, b), *wb = ROW3(&fr->wb, b);
    double s = 0.0;
    for (int k = 0; k < 3; k++) {
        s += ja[k] * va[k] + ja[3 + k] * wa[k];
        s += jb[k] * vb[k] + jb[3 + k] * wb[k];
    }
    return s;
}

static void driver_rows(const rbc_rows *tb, double t, const rbc_frames *fr, rbc_arr *values,
                        rbc_arr *jac, rbc_arr *aux, row_cache *cache) {
    int64_t n = tb->n_main.i[0], rows = values->shape[1], jrows = jac->shape[1];
    double *phi = values->d, *phi_t = phi + rows, *gam = phi + 2 * rows;
    for (int64_t j = 0; j < tb->drivers.shape[0]; j++) {
        double m[3];
        rbc_motion_at(tb, j, t, m);
        double f = m[0], fd = m[1], fdd = m[2];
        int64_t i1 = RBC_I2(&tb->drivers, j, 1), i2 = RBC_I2(&tb->drivers, j, 2);
        int64_t a = RBC_I2(&tb->index, i1, 1), b = RBC_I2(&tb->index, i1, 2);
        int64_t out = n + j;
        double gam_a, gam_b;
        double phi_a = primitive_row(tb, fr, i1, aux, 0, &gam_a, cache);
        double *ja = jac->d + 6 * out, *jb = jac->d + 6 * (jrows + out);
        const double *x = aux->d;  /* aux (2 sides, 2 slots, 6) */
        if (RBC_I2(&tb->drivers, j, 0)) {
            double phi_b = primitive_row(tb, fr, i2, aux, 1, &gam_b, cache);
            double rate_a = rate(aux, 0, fr, a, b), rate_b = rate(aux, 1, fr, a, b);
            double c = cos(f), s = sin(f);
            phi[out] = phi_a * c - phi_b * s;
            phi_t[out] = -(phi_a * s + phi_b * c) * fd;
            gam[out] = c * gam_a - s * gam_b + 2.0 * (rate_a * s + rate_b * c) * fd
                       + (phi_a * c - phi_b * s) * fd * fd + (phi_a * s + phi_b * c) * fdd;
            for (int k = 0; k < 6; k++) {
                ja[k] = c * x[k] - s * x[6 + k];
                jb[k] = c * x[12 + k] - s * x[18 + k];
            }
        } else {
            phi[out] = phi_a - f;
            phi_t[out] = -fd;
            gam[out] = gam_a + fdd;
            for (int k = 0; k < 6; k++) {
                ja[k] = x[k];
                jb[k] = x[12 + k];
            }
        }
    }
}

void rbc_evaluate_rows(const rbc_rows *table, double t, const rbc_frames *fr, rbc_arr *values,
                       rbc_arr *jac, rbc_arr *aux) {
    int64_t n = table->n_main.i[0], rows = values->shape[1];
    row_cache cache;
    cache.point_valid = 0;
    cache.axis_valid = 0;
    for (int64_t i = 0; i < n; i++) {
        values->d[i] = primitive_row(table, fr, i, jac, i, &values->d[2 * rows + i], &cache);
        values->d[rows + i] = 0.0;
    }
    if (table->drivers.shape[0]) driver_rows(table, t, fr, values, jac, aux, &cache);
}

void rbc_velocity_errors(const rbc_rows *table, const rbc_frames *fr, rbc_arr *values,
                         const rbc_arr *jac) {
    int64_t rows = values->shape[1];
    for (int64_t i = 0; i < rows; i++)
        values->d[3 * rows + i] = rate(jac, i, fr, RBC_I2(&table->row_bodies, i, 0),
                                       RBC_I2(&table->row_bodies, i, 1))
                                  + values->d[rows + i];
}
