/* dense.c: see dense.h. */
#include "dense.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void dense_matmul(int n, int p, int m, const double *a, const double *b, double *c)
{
    for (int i = 0; i < n; ++i) {
        double *ci = c + (size_t)i * m;
        for (int j = 0; j < m; ++j)
            ci[j] = 0.0;
        for (int l = 0; l < p; ++l) {
            double ail = a[(size_t)i * p + l];
            if (ail == 0.0)
                continue;
            const double *bl = b + (size_t)l * m;
            for (int j = 0; j < m; ++j)
                ci[j] += ail * bl[j];
        }
    }
}

void dense_matvec(int n, int m, const double *a, const double *x, double *y)
{
    for (int i = 0; i < n; ++i) {
        double acc = 0.0;
        for (int j = 0; j < m; ++j)
            acc += a[(size_t)i * m + j] * x[j];
        y[i] = acc;
    }
}

static void swap_rows(double *a, int cols, int r1, int r2)
{
    for (int j = 0; j < cols; ++j) {
        double t = a[(size_t)r1 * cols + j];
        a[(size_t)r1 * cols + j] = a[(size_t)r2 * cols + j];
        a[(size_t)r2 * cols + j] = t;
    }
}

int dense_solve(int n, int m, double *a, double *b)
{
    for (int c = 0; c < n; ++c) {
        int piv = c;
        for (int r = c + 1; r < n; ++r)
            if (fabs(a[(size_t)r * n + c]) > fabs(a[(size_t)piv * n + c]))
                piv = r;
        if (a[(size_t)piv * n + c] == 0.0)
            return -1;
        if (piv != c) {
            swap_rows(a, n, c, piv);
            swap_rows(b, m, c, piv);
        }
        double d = a[(size_t)c * n + c];
        for (int r = c + 1; r < n; ++r) {
            double f = a[(size_t)r * n + c] / d;
            if (f == 0.0)
                continue;
            for (int j = c; j < n; ++j)
                a[(size_t)r * n + j] -= f * a[(size_t)c * n + j];
            for (int j = 0; j < m; ++j)
                b[(size_t)r * m + j] -= f * b[(size_t)c * m + j];
        }
    }
    for (int c = n - 1; c >= 0; --c) {
        double d = a[(size_t)c * n + c];
        for (int j = 0; j < m; ++j) {
            double acc = b[(size_t)c * m + j];
            for (int l = c + 1; l < n; ++l)
                acc -= a[(size_t)c * n + l] * b[(size_t)l * m + j];
            b[(size_t)c * m + j] = acc / d;
        }
    }
    return 0;
}

static double norm1(int n, const double *a)
{
    double best = 0.0;
    for (int j = 0; j < n; ++j) {
        double s = 0.0;
        for (int i = 0; i < n; ++i)
            s += fabs(a[(size_t)i * n + j]);
        if (s > best)
            best = s;
    }
    return best;
}

/* Pade 13 coefficients b_0..b_13 (Higham 2005, table 10.4 of "Functions of Matrices"). */
static const double PADE13[14] = {
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0};

int dense_expm(int n, const double *a, double *e)
{
    const double theta13 = 5.371920351148152;
    size_t nn = (size_t)n * n;
    double *w = calloc(8 * nn, sizeof *w);
    if (!w)
        return -1;
    double *x = w, *x2 = w + nn, *x4 = w + 2 * nn, *x6 = w + 3 * nn;
    double *u = w + 4 * nn, *v = w + 5 * nn, *t = w + 6 * nn, *q = w + 7 * nn;
    double nrm = norm1(n, a);
    int s = nrm > theta13 ? (int)ceil(log2(nrm / theta13)) : 0;
    double scale = ldexp(1.0, -s);
    for (size_t i = 0; i < nn; ++i)
        x[i] = a[i] * scale;
    dense_matmul(n, n, n, x, x, x2);
    dense_matmul(n, n, n, x2, x2, x4);
    dense_matmul(n, n, n, x4, x2, x6);
    const double *b = PADE13;
    /* U = X [X6 (b13 X6 + b11 X4 + b9 X2) + b7 X6 + b5 X4 + b3 X2 + b1 I] */
    for (size_t i = 0; i < nn; ++i)
        t[i] = b[13] * x6[i] + b[11] * x4[i] + b[9] * x2[i];
    dense_matmul(n, n, n, x6, t, q);
    for (size_t i = 0; i < nn; ++i)
        q[i] += b[7] * x6[i] + b[5] * x4[i] + b[3] * x2[i];
    for (int i = 0; i < n; ++i)
        q[(size_t)i * n + i] += b[1];
    dense_matmul(n, n, n, x, q, u);
    /* V = X6 (b12 X6 + b10 X4 + b8 X2) + b6 X6 + b4 X4 + b2 X2 + b0 I */
    for (size_t i = 0; i < nn; ++i)
        t[i] = b[12] * x6[i] + b[10] * x4[i] + b[8] * x2[i];
    dense_matmul(n, n, n, x6, t, v);
    for (size_t i = 0; i < nn; ++i)
        v[i] += b[6] * x6[i] + b[4] * x4[i] + b[2] * x2[i];
    for (int i = 0; i < n; ++i)
        v[(size_t)i * n + i] += b[0];
    /* (V - U) R = V + U */
    for (size_t i = 0; i < nn; ++i) {
        t[i] = v[i] - u[i];
        e[i] = v[i] + u[i];
    }
    int rc = dense_solve(n, n, t, e);
    for (int k = 0; rc == 0 && k < s; ++k) {
        dense_matmul(n, n, n, e, e, t);
        memcpy(e, t, nn * sizeof *e);
    }
    free(w);
    return rc;
}
