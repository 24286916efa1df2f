/* The multiplier system (J M^-1 J^T) mu = rhs as a banded LDL^T factorisation (see maximal.h);
 * arithmetic in a fixed order (no FMA contraction). */
#include "maximal.h"
#include <math.h>

/* 1 when every M^-1 block (n+1, 6, 6) is [[diag, 0], [0, 3x3]] with exact zeros (no added
 * mass): then M^-1 j^T skips the terms that are exactly zero.  s = 0 + a + (+-0) ... equals
 * s = 0 + a for finite a (a running sum that starts at +0 never holds -0), so the skipped
 * terms do not change a bit. */
static int block_diagonal(const rbc_arr *minv) {
    int64_t nb = minv->shape[0];
    const double *M = minv->d;
    for (int64_t b = 0; b < nb; b++, M += 36) {
        int nz = (M[1] != 0.0) | (M[2] != 0.0) | (M[3] != 0.0) | (M[4] != 0.0) | (M[5] != 0.0)
                 | (M[6] != 0.0) | (M[8] != 0.0) | (M[9] != 0.0) | (M[10] != 0.0)
                 | (M[11] != 0.0) | (M[12] != 0.0) | (M[13] != 0.0) | (M[15] != 0.0)
                 | (M[16] != 0.0) | (M[17] != 0.0) | (M[18] != 0.0) | (M[19] != 0.0)
                 | (M[20] != 0.0) | (M[24] != 0.0) | (M[25] != 0.0) | (M[26] != 0.0)
                 | (M[30] != 0.0) | (M[31] != 0.0) | (M[32] != 0.0);
        if (nz) return 0;
    }
    return 1;
}

/* The LDL^T update of band row i (after scaling); t (w,) scratch for L[i,k] D[k] (the same
 * product, left to right, as L[i,k] * D[k] * L[j,k]).  Columns before row i's first nonzero
 * (its profile) stay +0 and are skipped: their terms are exact zeros, and a difference that
 * starts at +0 or a nonzero value is not changed by subtracting them (finite values, D > 0). */
static int ldl_row(double *restrict B, int64_t i, int64_t w, int64_t W, double *restrict t) {
    int64_t lo = i - w > 0 ? i - w : 0;
    double *Bi = B + W * i;
    while (lo < i && Bi[i - lo] == 0.0 && !signbit(Bi[i - lo])) lo++;
    for (int64_t j = lo; j < i; j++) {
        const double *Bj = B + W * j;
        double s = Bi[i - j];
        for (int64_t k = lo; k < j; k++) s -= t[k - lo] * Bj[j - k];
        double l = s / Bj[0];
        Bi[i - j] = l;
        t[j - lo] = l * Bj[0];
    }
    double s = Bi[0];
    for (int64_t k = lo; k < i; k++) s -= t[k - lo] * Bi[i - k];
    if (s == 0.0 || !isfinite(s)) return 0;
    Bi[0] = s;
    return 1;
}

#define RBC_LDL_STACK 64

int rbc_factor(const rbc_pattern *pat, const rbc_arr *kept, const rbc_arr *minv, rbc_arr *mj,
               rbc_arr *band, double *scale) {
    int64_t m = pat->rows.shape[0], w = pat->width.i[0], W = w + 1;
    const double *ka = kept->d, *kb = kept->d + 6 * m;
    double *restrict B = band->d;
    double *restrict MJ = mj->d;
    const int64_t *prow = pat->rows.i;
    int structured = block_diagonal(minv);
    for (int64_t i = 0; i < m; i++)
        for (int side = 0; side < 2; side++) {
            int64_t body = prow[3 * i + 1 + side];
            const double *j = (side ? kb : ka) + 6 * i;
            double *out = MJ + 12 * i + 6 * side;
            if (body <= 0) {
                for (int r = 0; r < 6; r++) out[r] = 0.0;
            } else if (structured) {
                const double *M = minv->d + 36 * body;
                double j0 = j[0], j1 = j[1], j2 = j[2], j3 = j[3], j4 = j[4], j5 = j[5];
                double s;
                s = 0.0; s += M[0] * j0; out[0] = s;
                s = 0.0; s += M[7] * j1; out[1] = s;
                s = 0.0; s += M[14] * j2; out[2] = s;
                for (int r = 3; r < 6; r++) {
                    const double *Mr = M + 6 * r;
                    s = 0.0;
                    s += Mr[3] * j3;
                    s += Mr[4] * j4;
                    s += Mr[5] * j5;
                    out[r] = s;
                }
            } else {
                const double *M = minv->d + 36 * body;
                for (int r = 0; r < 6; r++) {
                    double s = 0.0;
                    for (int c = 0; c < 6; c++) s += M[6 * r + c] * j[c];
                    out[r] = s;
                }
            }
        }
    for (int64_t k = 0; k < m * W; k++) B[k] = 0.0;
    const int64_t *pairs = pat->pairs.i;
    int64_t np = pat->pairs.shape[0];
    for (int64_t p = 0; p < np; p++) {
        const int64_t *q = pairs + 4 * p;
        int64_t i = q[0], j = q[2];
        const double *x = ka + 6 * (q[1] * m + i), *y = MJ + 6 * (2 * j + q[3]);
        double s = 0.0;
        s += x[0] * y[0];
        s += x[1] * y[1];
        s += x[2] * y[2];
        s += x[3] * y[3];
        s += x[4] * y[4];
        s += x[5] * y[5];
        B[W * i + i - j] += s;
    }
    for (int64_t i = 0; i < m; i++) {
        double d = B[W * i];
        if (!(d > 0.0)) return 0;
        scale[i] = 1.0 / sqrt(d);
    }
    for (int64_t i = 0; i < m; i++) {
        double si = scale[i], *Bi = B + W * i;
        int64_t top = w < i ? w : i;
        for (int64_t k = 0; k <= top; k++) Bi[k] *= si * scale[i - k];
    }
    if (w < RBC_LDL_STACK) {
        double t[RBC_LDL_STACK];
        for (int64_t i = 0; i < m; i++)
            if (!ldl_row(B, i, w, W, t)) return 0;
        return 1;
    }
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
    const double *restrict B = band->d;
    for (int64_t i = 0; i < m; i++) {
        double s = rhs[i] * scale[i];
        const double *Bi = B + W * i;
        for (int64_t k = (i - w > 0 ? i - w : 0); k < i; k++) s -= Bi[i - k] * out[k];
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
    const int64_t *prow = pat->rows.i;
    const double *restrict MJ = mj->d;
    double *restrict A = acc;
    for (int64_t i = 0; i < m; i++) {
        double mi = mu[i];
        for (int side = 0; side < 2; side++) {
            int64_t body = prow[3 * i + 1 + side];
            if (body > 0) {
                const double *x = MJ + 12 * i + 6 * side;
                double *o = A + 6 * (body - 1);
                o[0] -= x[0] * mi;
                o[1] -= x[1] * mi;
                o[2] -= x[2] * mi;
                o[3] -= x[3] * mi;
                o[4] -= x[4] * mi;
                o[5] -= x[5] * mi;
            }
        }
    }
}
