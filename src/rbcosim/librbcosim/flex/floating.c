/* The floating flexible body (see floating.h). */
#include "floating.h"

#include <math.h>
#include <string.h>

#include "frame.h"
#include "fx_vec.h"

void rbc_fx_modal_acceleration(const double *wmat, int64_t k, const double *ws, const double *als,
                               const double *bs, const double *eta, const double *etad,
                               double *out) {
    int64_t cols = 20 * k + 15;
    int64_t o_b = 2 * k, o_al = 2 * k + 3, o_ww = 2 * k + 6;
    int64_t o_g2 = 2 * k + 15, o_g1 = 5 * k + 15, o_h = 8 * k + 15, o_gb = 17 * k + 15;
    for (int64_t r = 0; r < k; r++) {
        const double *wr = wmat + r * cols;
        double acc = 0.0;
        for (int64_t l = 0; l < k; l++) acc += wr[l] * eta[l] + wr[k + l] * etad[l];
        for (int i = 0; i < 3; i++) {
            acc += wr[o_b + i] * bs[i] + wr[o_al + i] * als[i];
            double wi = ws[i], ai = als[i], bi = bs[i];
            for (int64_t l = 0; l < k; l++)
                acc += (wr[o_g2 + i * k + l] * wi * etad[l] + wr[o_g1 + i * k + l] * ai * eta[l]
                        + wr[o_gb + i * k + l] * bi * eta[l]);
            for (int j = 0; j < 3; j++) {
                double c = wi * ws[j];
                int64_t mm = 3 * i + j;
                acc += wr[o_ww + mm] * c;
                for (int64_t l = 0; l < k; l++) acc += wr[o_h + mm * k + l] * c * eta[l];
            }
        }
        out[r] = acc;
    }
}

/* R_s (3x3) and the structure-frame components of w, alpha and b = a - g. */
static void frame_inputs(const double *q, const double *axis_rotation, const double *w,
                         const double *al, const double *a, const double *gravity, double *rs,
                         double *ws, double *als, double *bs) {
    double rq[9];
    fx_rotation_matrix(q, rq);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            rs[3 * i + j] = rq[3 * i] * axis_rotation[j] + rq[3 * i + 1] * axis_rotation[3 + j]
                            + rq[3 * i + 2] * axis_rotation[6 + j];
    for (int j = 0; j < 3; j++) {
        ws[j] = rs[j] * w[0] + rs[3 + j] * w[1] + rs[6 + j] * w[2];
        als[j] = rs[j] * al[0] + rs[3 + j] * al[1] + rs[6 + j] * al[2];
        bs[j] = (rs[j] * (a[0] - gravity[0]) + rs[3 + j] * (a[1] - gravity[1])
                 + rs[6 + j] * (a[2] - gravity[2]));
    }
}

int rbc_fx_floating_step(double *s, int64_t k, const double *motion, int64_t m,
                         const double *past_taus, const double *past, double H, int64_t n,
                         const double *gravity, const double *axis_rotation, const double *wmat) {
    double coeff[(FX_MAX_PAST + 1) * 6];
    double y[2 * FX_MAX_MODES], ya[2 * FX_MAX_MODES], rates[4 * 2 * FX_MAX_MODES];
    double rs[9], ws[3], als[3], bs[3], kin[3 * 18], stages[16], q[4], q_next[4];
    rbc_fx_set_frame(s, motion);
    rbc_fx_acceleration_polynomial(motion, m, past_taus, past, coeff);
    double h = H / (double)n;
    memcpy(q, s + FX_Q, sizeof q);
    memcpy(y, s + FX_ETA, (size_t)(2 * k) * sizeof(double));
    const double lead[4] = {0.0, 0.5 * h, 0.5 * h, h};
    const int at[4] = {0, 1, 1, 2};
    int64_t d = 2 * k;
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < 3; j++)
            rbc_fx_frame_at(s, coeff, m + 1, ((double)i + 0.5 * (double)j) * h, kin + 18 * j);
        rbc_fx_quaternion_stages(q, kin + 12, kin + 18 + 12, kin + 36 + 12, h, stages, q_next);
        if (k) {
            for (int j = 0; j < 4; j++) {
                for (int64_t c = 0; c < d; c++)
                    ya[c] = j ? y[c] + lead[j] * rates[(j - 1) * d + c] : y[c];
                const double *f = kin + 18 * at[j];
                frame_inputs(stages + 4 * j, axis_rotation, f + 12, f + 15, f + 6, gravity, rs,
                             ws, als, bs);
                memcpy(rates + j * d, ya + k, (size_t)k * sizeof(double));
                rbc_fx_modal_acceleration(wmat, k, ws, als, bs, ya, ya + k, rates + j * d + k);
            }
            for (int64_t c = 0; c < d; c++)
                y[c] += (h / 6.0) * (rates[c] + 2.0 * (rates[d + c] + rates[2 * d + c])
                                     + rates[3 * d + c]);
        }
        memcpy(q, q_next, sizeof q);
    }
    double norm = sqrt(0.0 + q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(rbc_all_finite(q, 4) && norm > 0.0 && rbc_all_finite(y, d))) return 0;
    for (int c = 0; c < 4; c++) q[c] /= norm;
    rbc_fx_write_end_frame(s, coeff, m + 1, H, q);
    memcpy(s + FX_ETA, y, (size_t)d * sizeof(double));
    return 1;
}

/* The moment's input vector c (12 + 13k): [b, A (row-major), eta'', kron(w, eta'),
 * kron(A, eta)] (rbcosim.flex.modelling.model.moment_invariants). */
static void moment_inputs(const double *bs, const double *big_a, const double *ws, int64_t k,
                          const double *eta, const double *etad, const double *etadd, double *c) {
    for (int i = 0; i < 3; i++) c[i] = bs[i];
    for (int i = 0; i < 9; i++) c[3 + i] = big_a[i];
    double *p = c + 12;
    for (int64_t l = 0; l < k; l++) *p++ = etadd[l];
    for (int i = 0; i < 3; i++)
        for (int64_t l = 0; l < k; l++) *p++ = ws[i] * etad[l];
    for (int i = 0; i < 9; i++)
        for (int64_t l = 0; l < k; l++) *p++ = big_a[i] * eta[l];
}

void rbc_fx_floating_wrench(const double *s, int64_t k, const double *gravity,
                            const double *axis_rotation, const double *wmat, double total_mass,
                            const double *first_moment, const double *s_e,
                            const double *spin_inertia, const double *moment_inv, double *out) {
    const double *eta = s + FX_ETA, *etad = s + FX_ETA + k;
    double rs[9], ws[3], als[3], bs[3], big_a[9], wx[9] = {0.0};
    double etadd[FX_MAX_MODES], c[12 + 13 * FX_MAX_MODES];
    frame_inputs(s + FX_Q, axis_rotation, s + FX_W, s + FX_AL, s + FX_A, gravity, rs, ws, als, bs);
    /* A = [alpha]x + [w]x [w]x = [alpha]x + w w^T - (w.w) I */
    wx[1] = -ws[2], wx[2] = ws[1], wx[5] = -ws[0];
    wx[3] = ws[2], wx[6] = -ws[1], wx[7] = ws[0];
    double w2 = ws[0] * ws[0] + ws[1] * ws[1] + ws[2] * ws[2];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) big_a[3 * i + j] = ws[i] * ws[j] - (i == j ? w2 : 0.0);
    big_a[1] -= als[2];
    big_a[2] += als[1];
    big_a[5] -= als[0];
    big_a[3] += als[2];
    big_a[6] -= als[1];
    big_a[7] += als[0];
    if (k) rbc_fx_modal_acceleration(wmat, k, ws, als, bs, eta, etad, etadd);
    double jw[3], force[3], moment[3], se[3] = {0.0}, sed[3] = {0.0}, sedd[3] = {0.0}, first[3];
    fx_matvec(spin_inertia, 3, 3, ws, jw);
    if (k) {
        fx_matvec(s_e, 3, k, eta, se);
        fx_matvec(s_e, 3, k, etad, sed);
        fx_matvec(s_e, 3, k, etadd, sedd);
    }
    for (int j = 0; j < 3; j++) first[j] = first_moment[j] + se[j];
    /* F = -(m b + A m r_cm + S eta'' + 2 w x S eta' + A S eta) */
    for (int j = 0; j < 3; j++)
        force[j] = -(total_mass * bs[j] + big_a[3 * j] * first[0] + big_a[3 * j + 1] * first[1]
                     + big_a[3 * j + 2] * first[2] + sedd[j]
                     + 2.0 * (wx[3 * j] * sed[0] + wx[3 * j + 1] * sed[1] + wx[3 * j + 2] * sed[2]));
    /* M = -(w x J w + (Y_0 + sum_m eta_m Y_m) c): the nodal moment sum_i lever_i x f_t,i +
     * f_r,i of f = M_phys acc, with acc linear in c and the lever arms affine in eta. */
    moment[0] = -(ws[1] * jw[2] - ws[2] * jw[1]);
    moment[1] = -(ws[2] * jw[0] - ws[0] * jw[2]);
    moment[2] = -(ws[0] * jw[1] - ws[1] * jw[0]);
    int64_t nc = 12 + 13 * k;
    moment_inputs(bs, big_a, ws, k, eta, etad, etadd, c);
    for (int j = 0; j < 3; j++) {
        double acc = 0.0;
        const double *y0 = moment_inv + j * nc;
        for (int64_t t = 0; t < nc; t++) acc += y0[t] * c[t];
        for (int64_t m = 0; m < k; m++) {
            const double *ym = moment_inv + (3 * (m + 1) + j) * nc;
            double a = 0.0;
            for (int64_t t = 0; t < nc; t++) a += ym[t] * c[t];
            acc += eta[m] * a;
        }
        moment[j] -= acc;
    }
    for (int i = 0; i < 6; i++) out[i] = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            out[i] += rs[3 * i + j] * force[j];
            out[3 + i] += rs[3 * i + j] * moment[j];
        }
}
