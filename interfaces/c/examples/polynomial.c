/* polynomial.c: see polynomial.h. */
#include "polynomial.h"

#include <string.h>

void poly_through(int m, int width, const double *taus, const double *values, double *c)
{
    double d[POLY_MAX_POINTS][6];
    if (m < 1 || m > POLY_MAX_POINTS || width < 1 || width > 6)
        return;
    for (int i = 0; i < m; ++i)
        for (int k = 0; k < width; ++k)
            d[i][k] = values[i * width + k];
    for (int j = 1; j < m; ++j)
        for (int i = m - 1; i >= j; --i)
            for (int k = 0; k < width; ++k)
                d[i][k] = (d[i][k] - d[i - 1][k]) / (taus[i] - taus[i - j]);
    /* p = d_{m-1}; p = p (tau - taus[j]) + d_j, j = m-2..0, on monomial coefficient rows */
    memset(c, 0, sizeof(double) * (size_t)(m * width));
    for (int k = 0; k < width; ++k)
        c[k] = d[m - 1][k];
    for (int j = m - 2; j >= 0; --j) {
        for (int i = m - 1; i > 0; --i)
            for (int k = 0; k < width; ++k)
                c[i * width + k] = c[(i - 1) * width + k] - taus[j] * c[i * width + k];
        for (int k = 0; k < width; ++k)
            c[k] = d[j][k] - taus[j] * c[k];
    }
}

int poly_exchange(double t, const double *times, const double *wrenches, int count,
                  int n_known, const double *known_taus, const double *known, double *c)
{
    double taus[POLY_MAX_POINTS], values[POLY_MAX_POINTS * 6];
    int m = n_known + count;
    for (int i = 0; i < n_known; ++i) {
        taus[i] = known_taus[i];
        memcpy(values + 6 * i, known + 6 * i, 6 * sizeof(double));
    }
    for (int i = 0; i < count; ++i) {
        taus[n_known + i] = times[i] - t;
        memcpy(values + 6 * (n_known + i), wrenches + 6 * i, 6 * sizeof(double));
    }
    poly_through(m, 6, taus, values, c);
    return m;
}
