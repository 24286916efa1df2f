/* The multiplier system (J M^-1 J^T) mu = rhs as a banded LDL^T factorisation (see maximal.h);
 * arithmetic in a fixed order (no FMA contraction). */
#include "maximal.h"
#include <math.h>

int rbc_factor(const rbc_pattern *pat, const rbc_arr *kept, const rbc_arr *minv, rbc_arr *mj,
               rbc_arr *band, double *scale) {
    int64_t m = pat->rows.shape[0], w = pat->width.i[0], W = w + 1;
    const double *ka = kept->d, *kb = kept->d + 6 * m;
    double *B = band->d;
    for (int64_t i = 0; i < m; i++)
        for (int side = 0; side < 2; side++) {
            int64_t body = RBC_I2(&pat->rows, i, 1 + side);
            const double *j = (side ? kb : ka) + 6 * i;
            double *out = mj->d + 12 * i + 6 * side;
            for (int r = 0; r < 6; r++) {
                double s = 0.0;
                if (body > 0) {
                    const double *M = minv->d + 36 * body + 6 * r;
                    for (int c = 0; c < 6; c++) s += M[c] * j[c];
                }
                out[r] = s;
            }
        }
    for (int64_t k = 0; k < m * W; k++) B[k] = 0.0;
    const int64_t *pairs = pat->pairs.i;
    for (int64_t p = 0; p < pat->pairs.shape[0]; p++) {
        int64_t i = pairs[4 * p], side_i = pairs[4 * p + 1], j = pairs[4 * p + 2];
        int64_t side_j = pairs[4 * p + 3];
        const double *x = (side_i ? kb : ka) + 6 * i, *y = mj->d + 12 * j + 6 * side_j;
        double s = 0.0;
        for (int c = 0; c < 6; c++) s += x[c] * y[c];
        B[W * i + i - j] += s;
    }
    for (int64_t i = 0; i < m; i++) {
        if (!(B[W * i] > 0.0)) return 0;
        scale[i] = 1.0 / sqrt(B[W * i]);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t k = 0; k < (w < i ? w : i) + 1; k++) B[W * i + k] *= scale[i] * scale[i - k];
    for (int64_t i = 0; i < m; i++) {
        int64_t lo = i - w > 0 ? i - w : 0;
        for (int64_t j = lo; j < i + 1; j++) {
            double s = B[W * i + i - j];
            for (int64_t k = lo; k < j; k++) s -= B[W * i + i - k] * B[W * k] * B[W * j + j - k];
            if (i == j) {
                if (s == 0.0 || !isfinite(s)) return 0;
                B[W * i] = s;
            } else {
                B[W * i + i - j] = s / B[W * j];
            }
        }
    }
    return 1;
}

void rbc_solve(const rbc_pattern *pat, const rbc_arr *band, const double *scale,
               const double *rhs, double *out) {
    int64_t m = pat->rows.shape[0], w = pat->width.i[0], W = w + 1;
    const double *B = band->d;
    for (int64_t i = 0; i < m; i++) {
        double s = rhs[i] * scale[i];
        for (int64_t k = (i - w > 0 ? i - w : 0); k < i; k++) s -= B[W * i + i - k] * out[k];
        out[i] = s;
    }
    for (int64_t i = 0; i < m; i++) out[i] /= B[W * i];
    for (int64_t i = m - 1; i >= 0; i--) {
        double s = out[i];
        int64_t hi = i + w + 1 < m ? i + w + 1 : m;
        for (int64_t k = i + 1; k < hi; k++) s -= B[W * k + k - i] * out[k];
        out[i] = s;
    }
    for (int64_t i = 0; i < m; i++) out[i] *= scale[i];
}

void rbc_apply_correction(const rbc_pattern *pat, const rbc_arr *mj, const double *mu,
                          double *acc) {
    int64_t m = pat->rows.shape[0];
    for (int64_t i = 0; i < m; i++)
        for (int side = 0; side < 2; side++) {
            int64_t body = RBC_I2(&pat->rows, i, 1 + side);
            if (body > 0) {
                const double *x = mj->d + 12 * i + 6 * side;
                for (int r = 0; r < 6; r++) acc[6 * (body - 1) + r] -= x[r] * mu[i];
            }
        }
}
