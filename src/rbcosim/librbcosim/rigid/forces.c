/* Applied forces (see forces.h); arithmetic in a fixed order (no FMA contraction). */
#include "forces.h"
#include "rotation.h"

#define ROW3(a, k) ((a)->d + 3 * (int64_t)(k))
#define ROW9(a, k) ((a)->d + 9 * (int64_t)(k))

double rbc_load_interp(const rbc_arr *table, int64_t row0, int64_t row1, int k, double t) {
    int64_t m = row1 - row0;
    const double *T = table->d + 7 * row0;
    if (m == 1 || t <= T[0]) return T[k];
    if (t >= T[7 * (m - 1)]) return T[7 * (m - 1) + k];
    /* last row whose time is <= t (numpy searchsorted side="right", minus one) */
    int64_t lo = 0, hi = m;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (t < T[7 * mid]) hi = mid; else lo = mid + 1;
    }
    int64_t i = lo - 1;
    double s = (t - T[7 * i]) / (T[7 * (i + 1)] - T[7 * i]);
    return T[7 * i + k] + s * (T[7 * (i + 1) + k] - T[7 * i + k]);
}

/* (angle about marker 1's z, rate, z axis) of torsion spring i. */
static double revolute_angle(const rbc_forces *f, int64_t i, const rbc_arr *R, const rbc_arr *w,
                             double *rate, rbc_v3 *axis) {
    int64_t b1 = RBC_I2(&f->torsion_body, i, 0), b2 = RBC_I2(&f->torsion_body, i, 1);
    const double *a1 = f->torsion_axes.d + 18 * i, *a2 = a1 + 9;
    const double *R1 = ROW9(R, b1), *R2 = ROW9(R, b2);
    rbc_v3 x1 = m3_mul(R1, m3_col(a1, 0)), y1 = m3_mul(R1, m3_col(a1, 1));
    rbc_v3 z1 = m3_mul(R1, m3_col(a1, 2)), x2 = m3_mul(R2, m3_col(a2, 0));
    double angle = atan2(v3_dot(x2, y1), v3_dot(x2, x1));
    *rate = v3_dot(v3_sub(v3_at(ROW3(w, b2)), v3_at(ROW3(w, b1))), z1);
    *axis = z1;
    return angle;
}

typedef struct { rbc_v3 rho1, rho2, e; double length, rate; } spring_geo;

static spring_geo spring_geometry(const rbc_forces *f, int64_t i, const rbc_arr *r,
                                  const rbc_arr *R, const rbc_arr *v, const rbc_arr *w) {
    spring_geo g;
    int64_t b1 = RBC_I2(&f->spring_body, i, 0), b2 = RBC_I2(&f->spring_body, i, 1);
    const double *p = f->spring_point.d + 6 * i;
    g.rho1 = m3_mul(ROW9(R, b1), v3_at(p));
    g.rho2 = m3_mul(ROW9(R, b2), v3_at(p + 3));
    rbc_v3 d = v3_sub(v3_add(v3_at(ROW3(r, b2)), g.rho2), v3_add(v3_at(ROW3(r, b1)), g.rho1));
    g.length = sqrt(v3_dot(d, d));
    g.e = v3_scaled(1.0 / g.length, d);
    rbc_v3 rel = v3_sub(v3_add(v3_at(ROW3(v, b2)), v3_cross(v3_at(ROW3(w, b2)), g.rho2)),
                        v3_add(v3_at(ROW3(v, b1)), v3_cross(v3_at(ROW3(w, b1)), g.rho1)));
    g.rate = v3_dot(g.e, rel);
    return g;
}

static void load_at(const rbc_forces *f, int64_t i, double t, rbc_v3 *force, rbc_v3 *torque) {
    int64_t r0 = RBC_I2(&f->load_index, i, 1), r1 = RBC_I2(&f->load_index, i + 1, 1);
    *force = v3(rbc_load_interp(&f->load_table, r0, r1, 1, t),
                rbc_load_interp(&f->load_table, r0, r1, 2, t),
                rbc_load_interp(&f->load_table, r0, r1, 3, t));
    *torque = v3(rbc_load_interp(&f->load_table, r0, r1, 4, t),
                 rbc_load_interp(&f->load_table, r0, r1, 5, t),
                 rbc_load_interp(&f->load_table, r0, r1, 6, t));
}

void rbc_applied_forces(const rbc_forces *f, double t, const rbc_arr *r, const rbc_arr *R,
                        const rbc_arr *v, const rbc_arr *w, rbc_arr *force, rbc_arr *torque) {
    rbc_applied_forces_at(f, t, r, R, v, w, force->shape[0], force->d, torque->d, 3);
}

void rbc_applied_forces_at(const rbc_forces *f, double t, const rbc_arr *r, const rbc_arr *R,
                           const rbc_arr *v, const rbc_arr *w, int64_t n, double *force,
                           double *torque, int64_t stride) {
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            force[stride * i + k] = f->gravity_force.d[3 * i + k];
            torque[stride * i + k] = 0.0;
        }
    for (int64_t i = 0; i < f->load_point.shape[0]; i++) {
        int64_t body = RBC_I2(&f->load_index, i, 0);
        rbc_v3 fl, tl;
        load_at(f, i, t, &fl, &tl);
        rbc_v3 tq = v3_add(tl, v3_cross(m3_mul(ROW9(R, body), v3_at(ROW3(&f->load_point, i))), fl));
        for (int k = 0; k < 3; k++) {
            force[stride * (body - 1) + k] += fl.x[k];
            torque[stride * (body - 1) + k] += tq.x[k];
        }
    }
    for (int64_t i = 0; i < f->spring_body.shape[0]; i++) {
        spring_geo g = spring_geometry(f, i, r, R, v, w);
        const double *c = f->spring_constants.d + 3 * i;
        rbc_v3 pull = v3_scaled(c[0] * (g.length - c[2]) + c[1] * g.rate, g.e);
        int64_t b1 = RBC_I2(&f->spring_body, i, 0), b2 = RBC_I2(&f->spring_body, i, 1);
        rbc_v3 t1 = v3_cross(g.rho1, pull), t2 = v3_cross(g.rho2, pull);
        for (int k = 0; k < 3; k++) {
            if (b1 > 0) {
                force[stride * (b1 - 1) + k] += pull.x[k];
                torque[stride * (b1 - 1) + k] += t1.x[k];
            }
            if (b2 > 0) {
                force[stride * (b2 - 1) + k] -= pull.x[k];
                torque[stride * (b2 - 1) + k] -= t2.x[k];
            }
        }
    }
    for (int64_t i = 0; i < f->torsion_body.shape[0]; i++) {
        int64_t b1 = RBC_I2(&f->torsion_body, i, 0), b2 = RBC_I2(&f->torsion_body, i, 1);
        double rate;
        rbc_v3 axis;
        double angle = revolute_angle(f, i, R, w, &rate, &axis);
        const double *c = f->torsion_constants.d + 3 * i;
        double moment = -c[0] * (angle - c[2]) - c[1] * rate;
        for (int k = 0; k < 3; k++) {
            if (b2 > 0) torque[stride * (b2 - 1) + k] += moment * axis.x[k];
            if (b1 > 0) torque[stride * (b1 - 1) + k] -= moment * axis.x[k];
        }
    }
}

double rbc_potential_energy(const rbc_forces *f, const rbc_arr *r, const rbc_arr *R,
                            const rbc_arr *v, const rbc_arr *w) {
    double energy = 0.0;
    for (int64_t i = 0; i < f->gravity_force.shape[0]; i++)
        energy -= v3_dot(v3_at(ROW3(&f->gravity_force, i)), v3_at(ROW3(r, i + 1)));
    for (int64_t i = 0; i < f->spring_body.shape[0]; i++) {
        spring_geo g = spring_geometry(f, i, r, R, v, w);
        double stretch = g.length - f->spring_constants.d[3 * i + 2];
        energy += 0.5 * f->spring_constants.d[3 * i] * stretch * stretch;
    }
    for (int64_t i = 0; i < f->torsion_body.shape[0]; i++) {
        double rate;
        rbc_v3 axis;
        double d = revolute_angle(f, i, R, w, &rate, &axis) - f->torsion_constants.d[3 * i + 2];
        energy += 0.5 * f->torsion_constants.d[3 * i] * d * d;
    }
    return energy;
}

double rbc_force_power(const rbc_forces *f, double t, const rbc_arr *r, const rbc_arr *R,
                       const rbc_arr *v, const rbc_arr *w) {
    double loads = 0.0;
    for (int64_t i = 0; i < f->load_point.shape[0]; i++) {
        int64_t body = RBC_I2(&f->load_index, i, 0);
        rbc_v3 fl, tl;
        load_at(f, i, t, &fl, &tl);
        rbc_v3 wi = v3_at(ROW3(w, body));
        rbc_v3 vp = v3_add(v3_at(ROW3(v, body)),
                           v3_cross(wi, m3_mul(ROW9(R, body), v3_at(ROW3(&f->load_point, i)))));
        loads += v3_dot(fl, vp) + v3_dot(tl, wi);
    }
    double dampers = 0.0;
    for (int64_t i = 0; i < f->spring_body.shape[0]; i++) {
        spring_geo g = spring_geometry(f, i, r, R, v, w);
        dampers -= f->spring_constants.d[3 * i + 1] * g.rate * g.rate;
    }
    for (int64_t i = 0; i < f->torsion_body.shape[0]; i++) {
        double rate;
        rbc_v3 axis;
        revolute_angle(f, i, R, w, &rate, &axis);
        dampers -= f->torsion_constants.d[3 * i + 1] * rate * rate;
    }
    return loads + dampers;
}
