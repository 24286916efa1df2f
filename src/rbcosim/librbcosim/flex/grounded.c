/* The grounded flexible body (see grounded.h). */
#include "grounded.h"

#include <string.h>

#include "frame.h"
#include "fx_vec.h"

void rbc_fx_to_structure(const double *r0, const double *x, const double *rx,
                         const int64_t *comps, int64_t nb, double *out) {
    for (int64_t i = 0; i < nb; i++) {
        int64_t c = comps[i];
        const double *v = c < 3 ? x : rx;
        int64_t j = c % 3;
        out[i] = r0[j] * v[0] + r0[3 + j] * v[1] + r0[6 + j] * v[2];
    }
}

void rbc_fx_boundary(const double *s, const double *r0, const int64_t *comps, int64_t nb,
                     double *out) {
    double theta[3], d[3];
    fx_relative_rotation_vector(s + FX_Q, s + FX_QREF, theta);
    for (int i = 0; i < 3; i++) d[i] = s[FX_R + i] - s[FX_PREF + i];
    rbc_fx_to_structure(r0, d, theta, comps, nb, out);
    rbc_fx_to_structure(r0, s + FX_V, s + FX_W, comps, nb, out + nb);
    rbc_fx_to_structure(r0, s + FX_A, s + FX_AL, comps, nb, out + 2 * nb);
}

void rbc_fx_regrounded_frame(double *s, int64_t k, const double *motion, const double *r0,
                             const int64_t *comps, int64_t nb, const double *shift) {
    double before[3 * FX_MAX_BOUNDARY], after[3 * FX_MAX_BOUNDARY], du[2 * FX_MAX_BOUNDARY];
    rbc_fx_boundary(s, r0, comps, nb, before);
    rbc_fx_set_frame(s, motion);
    if (!k) return;
    rbc_fx_boundary(s, r0, comps, nb, after);
    for (int64_t i = 0; i < 2 * nb; i++) du[i] = after[i] - before[i];
    for (int64_t r = 0; r < 2; r++) {
        double *y = s + FX_ETA + r * k;
        for (int64_t i = 0; i < k; i++) {
            double acc = 0.0;
            for (int64_t j = 0; j < nb; j++) acc += shift[i * nb + j] * du[r * nb + j];
            y[i] -= acc;
        }
    }
}

int rbc_fx_grounded_step(double *s, int64_t k, const double *motion, int64_t m,
                         const double *past_taus, const double *past, double H, int64_t n,
                         const double *r0, const int64_t *comps, int64_t nb, const double *shift,
                         const double *p, const double *gacc) {
    double coeff[(FX_MAX_PAST + 1) * 6], q[4];
    double x[3 * FX_MAX_MODES + 5 * FX_MAX_BOUNDARY], y[2 * FX_MAX_MODES];
    double rows[3 * FX_MAX_BOUNDARY];
    rbc_fx_regrounded_frame(s, k, motion, r0, comps, nb, shift);
    rbc_fx_acceleration_polynomial(motion, m, past_taus, past, coeff);
    rbc_fx_end_of_step(s, coeff, m + 1, H, n, q);
    memcpy(y, s + FX_ETA, (size_t)(2 * k) * sizeof(double));
    if (k) {
        int64_t nx = 3 * k + 5 * nb;
        memset(x, 0, (size_t)nx * sizeof(double));
        memcpy(x, y, (size_t)(2 * k) * sizeof(double));
        memcpy(x + 2 * k + 5 * nb, gacc, (size_t)k * sizeof(double));
        rbc_fx_boundary(s, r0, comps, nb, rows);
        memcpy(x + 2 * k, rows, (size_t)(2 * nb) * sizeof(double));
        for (int64_t j = 0; j <= m; j++)
            rbc_fx_to_structure(r0, coeff + 6 * j, coeff + 6 * j + 3, comps, nb,
                                x + 2 * k + (2 + j) * nb);
        fx_matvec(p, 2 * k, nx, x, y);
    }
    if (!(rbc_all_finite(q, 4) && rbc_all_finite(y, 2 * k))) return 0;
    rbc_fx_write_end_frame(s, coeff, m + 1, H, q);
    memcpy(s + FX_ETA, y, (size_t)(2 * k) * sizeof(double));
    return 1;
}

void rbc_fx_grounded_wrench(const double *s, int64_t k, const double *r0, const int64_t *comps,
                            int64_t nb, const double *wmat, const double *fb_matrix,
                            const double *gacc, const double *gb, double *out) {
    double x[3 * FX_MAX_BOUNDARY + 3 * FX_MAX_MODES], z[2 * FX_MAX_MODES + 3 * FX_MAX_BOUNDARY];
    double fb[FX_MAX_BOUNDARY], six[6] = {0.0};
    rbc_fx_boundary(s, r0, comps, nb, x);
    memcpy(x + 3 * nb, s + FX_ETA, (size_t)(2 * k) * sizeof(double));
    if (k) {
        memcpy(z, s + FX_ETA, (size_t)(2 * k) * sizeof(double));
        memcpy(z + 2 * k, x, (size_t)(3 * nb) * sizeof(double));
        double *etadd = x + 3 * nb + 2 * k;
        fx_matvec(wmat, k, 2 * k + 3 * nb, z, etadd);
        for (int64_t i = 0; i < k; i++) etadd[i] += gacc[i];
    }
    fx_matvec(fb_matrix, nb, 3 * nb + 3 * k, x, fb);
    for (int64_t i = 0; i < nb; i++) six[comps[i]] = -(fb[i] - gb[i]);
    for (int i = 0; i < 6; i++) out[i] = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            out[i] += r0[3 * i + j] * six[j];
            out[3 + i] += r0[3 * i + j] * six[3 + j];
        }
}
