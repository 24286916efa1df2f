/* Small 3-vector, 3x3-matrix and quaternion helpers shared by the rigid, minimal and flexible
 * kernels (static inline, values on the stack).
 *
 * Quaternions are scalar first (w, x, y, z); rotation matrices map body (or point) frame ->
 * inertial and are row-major double[9].  The arithmetic order of each helper is fixed (compiled
 * with -ffp-contract=off: no FMA), so results are the same bits on every build; the Python
 * twins in rbcosim.spatial follow the same order.
 */
#ifndef RBC_VEC_H
#define RBC_VEC_H

typedef struct { double x[3]; } rbc_v3;

static inline rbc_v3 v3(double a, double b, double c) { rbc_v3 o = {{a, b, c}}; return o; }
/* The 3-vector at p[0..2]. */
static inline rbc_v3 v3_at(const double *p) { return v3(p[0], p[1], p[2]); }
static inline void v3_store(rbc_v3 a, double *p) { p[0] = a.x[0]; p[1] = a.x[1]; p[2] = a.x[2]; }
static inline rbc_v3 v3_add(rbc_v3 a, rbc_v3 b) {
    return v3(a.x[0] + b.x[0], a.x[1] + b.x[1], a.x[2] + b.x[2]);
}
static inline rbc_v3 v3_sub(rbc_v3 a, rbc_v3 b) {
    return v3(a.x[0] - b.x[0], a.x[1] - b.x[1], a.x[2] - b.x[2]);
}
static inline rbc_v3 v3_scaled(double s, rbc_v3 a) { return v3(s * a.x[0], s * a.x[1], s * a.x[2]); }
static inline double v3_dot(rbc_v3 a, rbc_v3 b) {
    return a.x[0] * b.x[0] + a.x[1] * b.x[1] + a.x[2] * b.x[2];
}
/* a x b */
static inline rbc_v3 v3_cross(rbc_v3 a, rbc_v3 b) {
    return v3(a.x[1] * b.x[2] - a.x[2] * b.x[1], a.x[2] * b.x[0] - a.x[0] * b.x[2],
              a.x[0] * b.x[1] - a.x[1] * b.x[0]);
}
/* R x for R row-major (3, 3) at R[0..8]. */
static inline rbc_v3 m3_mul(const double *R, rbc_v3 x) {
    return v3(R[0] * x.x[0] + R[1] * x.x[1] + R[2] * x.x[2],
              R[3] * x.x[0] + R[4] * x.x[1] + R[5] * x.x[2],
              R[6] * x.x[0] + R[7] * x.x[1] + R[8] * x.x[2]);
}
/* R^T x for R row-major (3, 3). */
static inline rbc_v3 m3_tmul(const double *R, rbc_v3 x) {
    return v3(R[0] * x.x[0] + R[3] * x.x[1] + R[6] * x.x[2],
              R[1] * x.x[0] + R[4] * x.x[1] + R[7] * x.x[2],
              R[2] * x.x[0] + R[5] * x.x[1] + R[8] * x.x[2]);
}
/* Column c of R (3, 3) row-major, as a vector (a marker's axis c in its body's frame). */
static inline rbc_v3 m3_col(const double *R, int c) { return v3(R[c], R[3 + c], R[6 + c]); }

/* Hamilton product p (x) q of quaternions (4,) into out (may not alias p or q). */
static inline void q_mul(const double *p, const double *q, double *out) {
    double p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3];
    double q0 = q[0], q1 = q[1], q2 = q[2], q3 = q[3];
    out[0] = p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3;
    out[1] = p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2;
    out[2] = p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1;
    out[3] = p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0;
}

/* Rotation matrix (row-major, into R[0..8]) of a quaternion q (need not be unit: the quadratic
 * form is scaled by 2 / |q|^2). */
static inline void q_matrix(const double *q, double *R) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double s = 2.0 / (w * w + x * x + y * y + z * z);
    double xx = s * x * x, yy = s * y * y, zz = s * z * z;
    double xy = s * x * y, xz = s * x * z, yz = s * y * z;
    double wx = s * w * x, wy = s * w * y, wz = s * w * z;
    R[0] = 1.0 - yy - zz; R[1] = xy - wz;       R[2] = xz + wy;
    R[3] = xy + wz;       R[4] = 1.0 - xx - zz; R[5] = yz - wx;
    R[6] = xz - wy;       R[7] = yz + wx;       R[8] = 1.0 - xx - yy;
}

#endif
