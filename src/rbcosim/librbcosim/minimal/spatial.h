/* Small value-level helpers of the tree recursions: quaternion values, spatial cross products
 * (static inline, values on the stack); 3-vectors, 3x3 matrices and the quaternion product
 * and matrix are ../rbc_vec.h's.
 *
 * Spatial vectors (Featherstone) are in inertial axes at the inertial origin O, angular part
 * first: a motion (omega; v_O) rad/s and m/s, a force (n_O; F) N m and N.  Quaternions are
 * scalar first (w, x, y, z).  The arithmetic order of each helper is fixed (compiled with
 * -ffp-contract=off: no FMA), so results are the same bits on every build.
 */
#ifndef RBC_MINIMAL_SPATIAL_H
#define RBC_MINIMAL_SPATIAL_H

#include <math.h>
#include <stdint.h>

#include "../rbc_vec.h"

typedef struct { double x[4]; } mn_q4;
typedef struct { double x[6]; } mn_s6;

/* The 4 or 6 numbers at p (3: v3_at). */
static inline mn_q4 mn_q4_at(const double *p) {
    mn_q4 o = {{p[0], p[1], p[2], p[3]}};
    return o;
}
static inline mn_s6 mn_s6_at(const double *p) {
    mn_s6 o = {{p[0], p[1], p[2], p[3], p[4], p[5]}};
    return o;
}

/* Hamilton product p (x) q (q_mul). */
static inline mn_q4 mn_qmul(mn_q4 p, mn_q4 q) {
    mn_q4 o;
    q_mul(p.x, q.x, o.x);
    return o;
}

/* The unit quaternion exp(1/2 angle u) of a rotation by `angle` rad about unit axis u. */
static inline mn_q4 mn_half_turn(rbc_v3 u, double angle) {
    double s = sin(0.5 * angle);
    mn_q4 o = {{cos(0.5 * angle), s * u.x[0], s * u.x[1], s * u.x[2]}};
    return o;
}

/* Spatial motion cross product a xm b. */
static inline mn_s6 mn_crm(mn_s6 a, mn_s6 b) {
    double w0 = a.x[0], w1 = a.x[1], w2 = a.x[2], v0 = a.x[3], v1 = a.x[4], v2 = a.x[5];
    double x0 = b.x[0], x1 = b.x[1], x2 = b.x[2], y0 = b.x[3], y1 = b.x[4], y2 = b.x[5];
    mn_s6 o = {{w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0,
                w1 * y2 - w2 * y1 + v1 * x2 - v2 * x1,
                w2 * y0 - w0 * y2 + v2 * x0 - v0 * x2,
                w0 * y1 - w1 * y0 + v0 * x1 - v1 * x0}};
    return o;
}

/* Spatial force cross product a x* f. */
static inline mn_s6 mn_crf(mn_s6 a, mn_s6 f) {
    double w0 = a.x[0], w1 = a.x[1], w2 = a.x[2], v0 = a.x[3], v1 = a.x[4], v2 = a.x[5];
    double n0 = f.x[0], n1 = f.x[1], n2 = f.x[2], f0 = f.x[3], f1 = f.x[4], f2 = f.x[5];
    mn_s6 o = {{w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1,
                w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2,
                w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0,
                w1 * f2 - w2 * f1, w2 * f0 - w0 * f2, w0 * f1 - w1 * f0}};
    return o;
}

/* a . b of two 6-vectors. */
static inline double mn_dot6(mn_s6 a, mn_s6 b) {
    return a.x[0] * b.x[0] + a.x[1] * b.x[1] + a.x[2] * b.x[2] + a.x[3] * b.x[3]
         + a.x[4] * b.x[4] + a.x[5] * b.x[5];
}

/* I x for a row-major 6x6 matrix at I. */
static inline mn_s6 mn_times(const double *I, mn_s6 x) {
    mn_s6 o;
    for (int r = 0; r < 6; r++)
        o.x[r] = I[6 * r] * x.x[0] + I[6 * r + 1] * x.x[1] + I[6 * r + 2] * x.x[2]
               + I[6 * r + 3] * x.x[3] + I[6 * r + 4] * x.x[4] + I[6 * r + 5] * x.x[5];
    return o;
}

/* Spatial inertia (row-major 6x6 at out) at O, inertial axes, of a body of mass m kg, inertia
 * I (3x3 at I, kg m^2, body axes, about the centre of mass), rotation R (3x3, body ->
 * inertial), centre of mass r (3, m).  Returns the multiplications done. */
static inline int64_t mn_spatial_inertia(double m, const double *I, const double *R,
                                         const double *r, double *out) {
    double I00 = I[0], I01 = I[1], I02 = I[2], I11 = I[4], I12 = I[5], I22 = I[8];
    for (int i = 0; i < 3; i++) { /* row i of R I, then its products with the rows of R */
        double t0 = R[3 * i] * I00 + R[3 * i + 1] * I01 + R[3 * i + 2] * I02;
        double t1 = R[3 * i] * I01 + R[3 * i + 1] * I11 + R[3 * i + 2] * I12;
        double t2 = R[3 * i] * I02 + R[3 * i + 1] * I12 + R[3 * i + 2] * I22;
        for (int j = i; j < 3; j++) {
            double s = t0 * R[3 * j] + t1 * R[3 * j + 1] + t2 * R[3 * j + 2];
            out[6 * i + j] = s;
            out[6 * j + i] = s;
        }
    }
    double cx = r[0], cy = r[1], cz = r[2];
    double mx = m * cx, my = m * cy, mz = m * cz;
    out[0] += my * cy + mz * cz;
    out[7] += mx * cx + mz * cz;
    out[14] += mx * cx + my * cy;
    out[1] -= mx * cy;
    out[6] -= mx * cy;
    out[2] -= mx * cz;
    out[12] -= mx * cz;
    out[8] -= my * cz;
    out[13] -= my * cz;
    /* upper right m [c]x, lower left its transpose, lower right m 1 */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            out[6 * i + 3 + j] = 0.0;
            out[6 * (3 + i) + j] = 0.0;
            out[6 * (3 + i) + 3 + j] = i == j ? m : 0.0;
        }
    out[4] = -mz; out[5] = my; out[11] = -mx;
    out[9] = mz; out[15] = -my; out[16] = mx;
    out[24] = -mz; out[30] = my; out[31] = -mx;
    out[19] = mz; out[20] = -my; out[26] = mx;
    return 27 + 18 + 9;
}

#endif
