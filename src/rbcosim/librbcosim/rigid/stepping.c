/* Fixed-step integration loops: many micro steps in one call (see maximal.h).
 *
 * Each step: the method's stages, renormalised quaternions (the largest | |q| - 1 | before is
 * kept in stats[0]), a finiteness check, optional projection onto the constraint manifold, and
 * another check.  stats[1] accumulates the work W (J) of the non-conservative power P as a
 * quadrature state of the same method, W += h sum b_i P(stage i), so that E - E0 - W vanishes
 * at the method's order (RK4: 4, SDIRK2: 2).  Stage vectors are allocated once per call. */
#include "maximal.h"
#include "rotation.h"
#include <stdlib.h>
#include <string.h>

/* Renormalise, check and project the candidate `cand`; copy it into y when it is good. */
static int finish(rbc_maximal *h, double *y, double *cand, int64_t size, double t_new,
                  int do_project, double *stats, double *failed) {
    int64_t n = size / 13;
    for (int64_t i = 0; i < n; i++) {
        double err = q_normalize(cand + 3 * n + 4 * i);
        if (err > stats[0] || isnan(err)) stats[0] = err;
    }
    if (!rbc_all_finite(cand, size)) {
        memcpy(failed, cand, (size_t)size * sizeof(double));
        return RBC_NOT_FINITE;
    }
    if (do_project) {
        double worst;
        int status = rbc_project(h, t_new, cand, 1e-12, 8, &worst);
        if (status != RBC_OK) {
            memcpy(failed, cand, (size_t)size * sizeof(double));
            return status;
        }
        if (!rbc_all_finite(cand, size)) {
            memcpy(failed, cand, (size_t)size * sizeof(double));
            return RBC_NOT_FINITE;
        }
    }
    memcpy(y, cand, (size_t)size * sizeof(double));
    return RBC_OK;
}

static void axpy(const double *y, double a, const double *k, double *out, int64_t size) {
    for (int64_t i = 0; i < size; i++) out[i] = y[i] + a * k[i];
}

int rbc_rk4_steps(rbc_maximal *h, double *y, const double *times, int64_t n_times, double step,
                  int do_project, double *stats, double *failed, int64_t *done) {
    int64_t size = 13 * (h->sys.mass_blocks.shape[0] - 1);
    double *buf = malloc((size_t)(6 * size + 1) * sizeof(double));
    *done = n_times - 1;
    if (!buf) return -1;
    double *k1 = buf, *k2 = k1 + size, *k3 = k2 + size, *k4 = k3 + size, *yt = k4 + size;
    double *cand = yt + size;
    int status = RBC_OK;
    for (int64_t s = 0; s + 1 < n_times; s++) {
        double t = times[s];
        status = rbc_derivative(h, t, y, k1);  /* reuses the projection's factor */
        double work = rbc_stage_power(h, t);
        axpy(y, 0.5 * step, k1, yt, size);
        status |= rbc_derivative(h, t + 0.5 * step, yt, k2);
        work += 2.0 * rbc_stage_power(h, t + 0.5 * step);
        axpy(y, 0.5 * step, k2, yt, size);
        status |= rbc_derivative(h, t + 0.5 * step, yt, k3);
        work += 2.0 * rbc_stage_power(h, t + 0.5 * step);
        axpy(y, step, k3, yt, size);
        status |= rbc_derivative(h, t + step, yt, k4);
        work += rbc_stage_power(h, t + step);
        if (status != RBC_OK) {
            memcpy(failed, y, (size_t)size * sizeof(double));
            *done = s;
            break;
        }
        for (int64_t i = 0; i < size; i++)
            cand[i] = y[i] + step / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        status = finish(h, y, cand, size, times[s + 1], do_project, stats, failed);
        if (status != RBC_OK) { *done = s; break; }
        stats[1] += step / 6.0 * work;
    }
    free(buf);
    return status;
}

/* LU factorisation with partial pivoting of a (size, size) in place; piv the row swaps.
 * Returns 0 when a pivot is zero. */
static int lu_factor(double *a, int64_t size, int64_t *piv) {
    for (int64_t k = 0; k < size; k++) {
        int64_t p = k;
        double big = fabs(a[k * size + k]);
        for (int64_t r = k + 1; r < size; r++)
            if (fabs(a[r * size + k]) > big) { big = fabs(a[r * size + k]); p = r; }
        piv[k] = p;
        if (big == 0.0) return 0;
        if (p != k)
            for (int64_t c = 0; c < size; c++) {
                double x = a[k * size + c];
                a[k * size + c] = a[p * size + c];
                a[p * size + c] = x;
            }
        double inv = 1.0 / a[k * size + k];
        for (int64_t r = k + 1; r < size; r++) {
            double f = a[r * size + k] * inv;
            a[r * size + k] = f;
            if (f != 0.0)
                for (int64_t c = k + 1; c < size; c++) a[r * size + c] -= f * a[k * size + c];
        }
    }
    return 1;
}

/* x (in place, the right-hand side on entry) with LU x = b. */
static void lu_solve(const double *a, int64_t size, const int64_t *piv, double *x) {
    for (int64_t k = 0; k < size; k++)
        if (piv[k] != k) { double t = x[k]; x[k] = x[piv[k]]; x[piv[k]] = t; }
    for (int64_t r = 1; r < size; r++) {
        double s = x[r];
        for (int64_t c = 0; c < r; c++) s -= a[r * size + c] * x[c];
        x[r] = s;
    }
    for (int64_t r = size - 1; r >= 0; r--) {
        double s = x[r];
        for (int64_t c = r + 1; c < size; c++) s -= a[r * size + c] * x[c];
        x[r] = s / a[r * size + r];
    }
}

typedef struct {
    double *matrix;  /* I - gamma h df/dy (the caller's, kept between calls) */
    int64_t *valid;
    double *lu;      /* its LU factors (this call's scratch) */
    int64_t *piv;
    int factored;    /* lu holds the factors of matrix */
    double *z, *f0, *f1, *zp, *dz;
} newton_work;

/* df/dy by forward differences into the Newton matrix; returns a status. */
static int fd_jacobian(rbc_maximal *h, double t, const double *z, int64_t size, newton_work *nw) {
    double *f0 = nw->f0, *f1 = nw->f1, *zp = nw->zp, *jac = nw->matrix;
    memcpy(zp, z, (size_t)size * sizeof(double));
    int status = rbc_derivative(h, t, z, f0);
    for (int64_t k = 0; k < size; k++) {
        double dy = 1e-7 * (fabs(z[k]) > 1.0 ? fabs(z[k]) : 1.0);
        zp[k] = z[k] + dy;
        status |= rbc_derivative(h, t, zp, f1);
        zp[k] = z[k];
        for (int64_t r = 0; r < size; r++) jac[r * size + k] = (f1[r] - f0[r]) / dy;
    }
    return status;
}

/* Solve z = base + gh f(t, z); f(t, z) into fz.  Returns a status. */
static int stage(rbc_maximal *h, double t, const double *base, double gh, const double *guess,
                 newton_work *nw, double *fz, int64_t size, double tol, int64_t max_newton) {
    double *z = nw->z, *dz = nw->dz;
    memcpy(z, guess, (size_t)size * sizeof(double));
    for (int attempt = 0; attempt < 2; attempt++) {
        if (nw->valid[0] == 0 || attempt == 1) {
            int status = fd_jacobian(h, t, z, size, nw);
            if (status != RBC_OK) return status;
            for (int64_t k = 0; k < size * size; k++) nw->matrix[k] = -gh * nw->matrix[k];
            for (int64_t k = 0; k < size; k++) nw->matrix[k * size + k] += 1.0;
            nw->valid[0] = 1;
            nw->factored = 0;
        }
        if (!nw->factored) {
            memcpy(nw->lu, nw->matrix, (size_t)(size * size) * sizeof(double));
            if (!lu_factor(nw->lu, size, nw->piv)) return RBC_SINGULAR;
            nw->factored = 1;
        }
        for (int64_t it = 0; it < max_newton; it++) {
            int status = rbc_derivative(h, t, z, fz);
            if (status != RBC_OK) return status;
            for (int64_t i = 0; i < size; i++) dz[i] = -(z[i] - base[i] - gh * fz[i]);
            lu_solve(nw->lu, size, nw->piv, dz);
            double ndz = 0.0, nz = 0.0;
            for (int64_t i = 0; i < size; i++) {
                z[i] += dz[i];
                ndz += dz[i] * dz[i];
                nz += z[i] * z[i];
            }
            if (sqrt(ndz) <= tol * (1.0 + sqrt(nz))) return rbc_derivative(h, t, z, fz);
        }
    }
    return RBC_NO_CONVERGENCE;
}

int rbc_sdirk2_steps(rbc_maximal *h, double *y, const double *times, int64_t n_times,
                     double step, int do_project, double *stats, double *failed,
                     double *newton_matrix, int64_t *valid, double tol, int64_t max_newton,
                     int64_t *done) {
    double g = 1.0 - 1.0 / sqrt(2.0);
    int64_t size = 13 * (h->sys.mass_blocks.shape[0] - 1);
    double *buf = malloc((size_t)(10 * size + size * size + 1) * sizeof(double));
    int64_t *piv = malloc((size_t)(size + 1) * sizeof(int64_t));
    *done = n_times - 1;
    if (!buf || !piv) { free(buf); free(piv); return -1; }
    double *k1 = buf, *k2 = k1 + size, *cand = k2 + size, *base = cand + size, *guess = base + size;
    newton_work nw;
    nw.matrix = newton_matrix;
    nw.valid = valid;
    nw.piv = piv;
    nw.factored = 0;
    nw.z = guess + size; nw.f0 = nw.z + size; nw.f1 = nw.f0 + size; nw.zp = nw.f1 + size;
    nw.dz = nw.zp + size; nw.lu = nw.dz + size;
    int status = RBC_OK;
    for (int64_t s = 0; s + 1 < n_times; s++) {
        double t = times[s];
        double work = 0.0;
        status = stage(h, t + g * step, y, g * step, y, &nw, k1, size, tol, max_newton);
        if (status == RBC_OK) {
            work = (1.0 - g) * rbc_stage_power(h, t + g * step);
            for (int64_t i = 0; i < size; i++) {
                base[i] = y[i] + (1.0 - g) * step * k1[i];
                guess[i] = y[i] + step * k1[i];
            }
            status = stage(h, t + step, base, g * step, guess, &nw, k2, size, tol, max_newton);
            work += g * rbc_stage_power(h, t + step);
        }
        if (status != RBC_OK) {
            memcpy(failed, y, (size_t)size * sizeof(double));
            *done = s;
            break;
        }
        for (int64_t i = 0; i < size; i++) cand[i] = y[i] + step * ((1.0 - g) * k1[i] + g * k2[i]);
        status = finish(h, y, cand, size, times[s + 1], do_project, stats, failed);
        if (status != RBC_OK) { *done = s; break; }
        stats[1] += step * work;
    }
    free(buf);
    free(piv);
    return status;
}
