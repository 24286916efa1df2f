/* Tree equations of motion and fixed steps (see stepper.h). */
#include "stepper.h"

#include <math.h>
#include <string.h>

/* SDIRK2's diagonal coefficient gamma = 1 - 1/sqrt(2) */
#define SDIRK_GAMMA (1.0 - 1.0 / sqrt(2.0))

void rbc_tree_external_forces(rbc_tree_system *sys, double t, const rbc_body_kin *kin) {
    rbc_tree_work *work = &sys->work;
    const double *r = kin->r.d, *V = kin->V.d;
    double *w = work->w.d, *vc = work->vc.d, *force = work->force.d, *torque = work->torque.d;
    double *f_ext = work->f_ext.d;
    int64_t nb = kin->r.shape[0];
    for (int64_t b = 0; b < nb; b++) {
        const double *Vb = V + 6 * b, *rb = r + 3 * b;
        w[3 * b] = Vb[0]; w[3 * b + 1] = Vb[1]; w[3 * b + 2] = Vb[2];
        vc[3 * b] = Vb[3] + Vb[1] * rb[2] - Vb[2] * rb[1];
        vc[3 * b + 1] = Vb[4] + Vb[2] * rb[0] - Vb[0] * rb[2];
        vc[3 * b + 2] = Vb[5] + Vb[0] * rb[1] - Vb[1] * rb[0];
    }
    rbc_applied_forces(&sys->forces, t, &kin->r, &kin->R, &work->vc, &work->w, &work->force,
                       &work->torque);
    for (int64_t b = 1; b < nb; b++) {
        const double *rb = r + 3 * b;
        double F0 = force[3 * (b - 1)], F1 = force[3 * (b - 1) + 1], F2 = force[3 * (b - 1) + 2];
        const double *tq = torque + 3 * (b - 1);
        f_ext[6 * b] = tq[0] + rb[1] * F2 - rb[2] * F1;
        f_ext[6 * b + 1] = tq[1] + rb[2] * F0 - rb[0] * F2;
        f_ext[6 * b + 2] = tq[2] + rb[0] * F1 - rb[1] * F0;
        f_ext[6 * b + 3] = F0; f_ext[6 * b + 4] = F1; f_ext[6 * b + 5] = F2;
    }
}

int64_t rbc_tree_derivative(rbc_tree_system *sys, double t, const double *y, double *ydot) {
    rbc_tree_work *work = &sys->work;
    int64_t nv = sys->tab.rate_kind.size, nq = work->stages.shape[1] - nv;
    const double *q = y, *v = y + nq;
    int64_t ops = rbc_tree_kinematics(&sys->tab, q, v, &work->kin);
    if (sys->has_forces.i[0]) rbc_tree_external_forces(sys, t, &work->kin);
    ops += rbc_tree_aba(&sys->tab, &work->kin, work->tau.d, work->f_ext.d,
                        sys->tab.base_acceleration.d, &work->dyn, ydot + nq);
    rbc_tree_coordinate_rates(&sys->tab, q, v, ydot);
    return ops;
}

/* Power (W) of the loads and dampers at the state of the last derivative call. */
static double stage_power(rbc_tree_system *sys, double t) {
    if (!sys->has_forces.i[0]) return 0.0;
    rbc_tree_work *work = &sys->work;
    return rbc_force_power(&sys->forces, t, &work->kin.r, &work->kin.R, &work->vc, &work->w);
}

double rbc_tree_power(rbc_tree_system *sys, double t, const double *y) {
    rbc_arr *stages = &sys->work.stages;
    rbc_tree_derivative(sys, t, y, stages->d + 4 * stages->shape[1]);
    return stage_power(sys, t);
}

double rbc_tree_normalize(const rbc_tree_tables *tab, double *y, int64_t ny) {
    for (int64_t i = 0; i < ny; i++)
        if (!isfinite(y[i])) return NAN;
    double err = 0.0;
    for (int64_t j = 0; j < tab->joint_quat.size; j++) {
        int64_t i = tab->joint_quat.i[j];
        if (i < 0) continue;
        double norm = sqrt(y[i] * y[i] + y[i + 1] * y[i + 1] + y[i + 2] * y[i + 2]
                           + y[i + 3] * y[i + 3]);
        double e = fabs(norm - 1.0);
        if (e > err) err = e;
        for (int m = 0; m < 4; m++) y[i + m] /= norm;
    }
    return err;
}

/* One classic RK4 step of h from time t, y updated in place and renormalised. */
static double rk4_step(rbc_tree_system *sys, double t, double *y, double h) {
    int64_t ny = sys->work.stages.shape[1];
    double *k = sys->work.stages.d, *z = k + 4 * ny;
    memcpy(z, y, (size_t)ny * sizeof(double));
    double done = 0.0;
    for (int s = 0; s < 4; s++) { /* stages at t, t + h/2, t + h/2, t + h */
        double ts = s == 0 ? t : s < 3 ? t + h / 2 : t + h;
        double *ks = k + s * ny;
        rbc_tree_derivative(sys, ts, z, ks);
        done += (s == 0 || s == 3 ? 1.0 : 2.0) * stage_power(sys, ts);
        double c = s < 2 ? h / 2 : h;
        for (int64_t i = 0; i < ny; i++) z[i] = y[i] + c * ks[i];
    }
    const double *k0 = k, *k1 = k + ny, *k2 = k + 2 * ny, *k3 = k + 3 * ny;
    for (int64_t i = 0; i < ny; i++)
        y[i] = y[i] + h / 6 * (k0[i] + 2 * k1[i] + 2 * k2[i] + k3[i]);
    sys->work.done.d[0] += h / 6 * done;
    return rbc_tree_normalize(&sys->tab, y, ny);
}

double rbc_tree_rk4_steps(rbc_tree_system *sys, double *y, double t0, double h, int64_t k0,
                          int64_t n, int64_t *done) {
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double err = rk4_step(sys, t0 + (double)(k0 + i) * h, y, h);
        if (isnan(err)) {
            *done = i;
            return NAN;
        }
        if (err > worst) worst = err;
    }
    *done = n;
    return worst;
}

int rbc_lu_factor(double *a, int64_t n, int64_t *pivot) {
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        double big = fabs(a[n * k + k]);
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(a[n * i + k]) > big) {
                big = fabs(a[n * i + k]);
                p = i;
            }
        pivot[k] = p;
        if (a[n * p + k] == 0.0) return 0;
        if (p != k)
            for (int64_t j = 0; j < n; j++) {
                double x = a[n * k + j];
                a[n * k + j] = a[n * p + j];
                a[n * p + j] = x;
            }
        double d = a[n * k + k];
        for (int64_t i = k + 1; i < n; i++) {
            double l = a[n * i + k] / d;
            a[n * i + k] = l;
            if (l != 0.0)
                for (int64_t j = k + 1; j < n; j++) a[n * i + j] -= l * a[n * k + j];
        }
    }
    return 1;
}

void rbc_lu_solve(const double *lu, int64_t n, const int64_t *pivot, double *b) {
    for (int64_t k = 0; k < n; k++)
        if (pivot[k] != k) {
            double x = b[k];
            b[k] = b[pivot[k]];
            b[pivot[k]] = x;
        }
    for (int64_t i = 1; i < n; i++) {
        double s = b[i];
        for (int64_t j = 0; j < i; j++) s -= lu[n * i + j] * b[j];
        b[i] = s;
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int64_t j = i + 1; j < n; j++) s -= lu[n * i + j] * b[j];
        b[i] = s / lu[n * i + i];
    }
}

static double norm2(const double *x, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* I - gh df/dy at (t, z) by forward differences (steps 1e-7 max(1, |z_k|)), LU-factored into
 * newton->matrix; f(t, z) into f0.  Returns 0 when the matrix is singular. */
static int newton_matrix(rbc_tree_system *sys, rbc_newton *newton, double t, const double *z,
                         double gh, double *f0) {
    int64_t ny = sys->work.stages.shape[1];
    double *yp = sys->work.scratch.d, *fp = yp + ny, *jac = newton->matrix;
    rbc_tree_derivative(sys, t, z, f0);
    memcpy(yp, z, (size_t)ny * sizeof(double));
    for (int64_t k = 0; k < ny; k++) {
        double dy = 1e-7 * fmax(1.0, fabs(z[k]));
        yp[k] = z[k] + dy;
        rbc_tree_derivative(sys, t, yp, fp);
        for (int64_t i = 0; i < ny; i++) jac[ny * i + k] = (fp[i] - f0[i]) / dy;
        yp[k] = z[k];
    }
    for (int64_t i = 0; i < ny; i++)
        for (int64_t k = 0; k < ny; k++)
            jac[ny * i + k] = (i == k ? 1.0 : 0.0) - gh * jac[ny * i + k];
    return rbc_lu_factor(jac, ny, newton->pivot);
}

/* Solve z = base + gh f(t, z) by Newton's method from the guess in z; f(t, z) into out.
 * Returns 0 when it did not converge. */
static int sdirk_stage(rbc_tree_system *sys, rbc_newton *newton, double t, const double *base,
                       double gh, double *z, double *out) {
    int64_t ny = sys->work.stages.shape[1];
    double *fz = sys->work.stages.d + 4 * ny, *dz = sys->work.scratch.d + 2 * ny;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (newton->valid[0] == 0 || attempt == 1) {
            newton->valid[0] = 0;
            if (!newton_matrix(sys, newton, t, z, gh, fz)) continue;
            newton->valid[0] = 1;
        }
        for (int64_t it = 0; it < newton->max_newton; it++) {
            rbc_tree_derivative(sys, t, z, fz);
            for (int64_t i = 0; i < ny; i++) dz[i] = -(z[i] - base[i] - gh * fz[i]);
            rbc_lu_solve(newton->matrix, ny, newton->pivot, dz);
            for (int64_t i = 0; i < ny; i++) z[i] += dz[i];
            if (norm2(dz, ny) <= newton->tol * (1.0 + norm2(z, ny))) {
                rbc_tree_derivative(sys, t, z, out);
                return 1;
            }
        }
    }
    return 0;
}

/* One SDIRK2 step; NaN with *failed_at the stage time when Newton fails. */
static double sdirk2_step(rbc_tree_system *sys, rbc_newton *newton, double t, double *y,
                          double h, double *failed_at) {
    const double g = SDIRK_GAMMA;
    int64_t ny = sys->work.stages.shape[1];
    double *k1 = sys->work.stages.d, *k2 = k1 + ny, *z = k1 + 2 * ny, *base = k1 + 3 * ny;
    memcpy(z, y, (size_t)ny * sizeof(double));
    if (!sdirk_stage(sys, newton, t + g * h, y, g * h, z, k1)) {
        *failed_at = t + g * h;
        return NAN;
    }
    double done = (1 - g) * stage_power(sys, t + g * h);
    for (int64_t i = 0; i < ny; i++) {
        base[i] = y[i] + (1 - g) * h * k1[i];
        z[i] = y[i] + h * k1[i];
    }
    if (!sdirk_stage(sys, newton, t + h, base, g * h, z, k2)) {
        *failed_at = t + h;
        return NAN;
    }
    done += g * stage_power(sys, t + h);
    for (int64_t i = 0; i < ny; i++) y[i] = y[i] + h * ((1 - g) * k1[i] + g * k2[i]);
    sys->work.done.d[0] += h * done;
    return rbc_tree_normalize(&sys->tab, y, ny);
}

double rbc_tree_sdirk2_steps(rbc_tree_system *sys, rbc_newton *newton, double *y, double t0,
                             double h, int64_t k0, int64_t n, int64_t *done, double *failed_at) {
    double worst = 0.0;
    *failed_at = NAN;
    for (int64_t i = 0; i < n; i++) {
        double err = sdirk2_step(sys, newton, t0 + (double)(k0 + i) * h, y, h, failed_at);
        if (isnan(err)) {
            *done = i;
            return NAN;
        }
        if (err > worst) worst = err;
    }
    *done = n;
    return worst;
}
