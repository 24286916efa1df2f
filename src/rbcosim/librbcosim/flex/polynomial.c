/* Polynomials in time through a few sampled values (see polynomial.h). */
#include "polynomial.h"

#include <string.h>

void rbc_polynomial_through(int64_t m, int64_t n, const double *taus, const double *values,
                            double *coef) {
    double d[RBC_MAX_POLY_POINTS * 64];
    memcpy(d, values, sizeof(double) * (size_t)(m * n));
    for (int64_t j = 1; j < m; j++)
        for (int64_t i = m - 1; i >= j; i--)
            for (int64_t c = 0; c < n; c++)
                d[i * n + c] = (d[i * n + c] - d[(i - 1) * n + c]) / (taus[i] - taus[i - j]);
    /* p = d_{m-1}; p = p (tau - taus[j]) + d_j, j = m-2..0, on monomial coefficient rows. */
    memset(coef, 0, sizeof(double) * (size_t)(m * n));
    for (int64_t c = 0; c < n; c++) coef[c] = d[(m - 1) * n + c];
    for (int64_t j = m - 2; j >= 0; j--) {
        for (int64_t i = m - 1; i > 0; i--)
            for (int64_t c = 0; c < n; c++)
                coef[i * n + c] = coef[(i - 1) * n + c] - taus[j] * coef[i * n + c];
        for (int64_t c = 0; c < n; c++) coef[c] = d[j * n + c] - taus[j] * coef[c];
    }
}
