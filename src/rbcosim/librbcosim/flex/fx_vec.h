/* Small vector and quaternion helpers of the flexible side (static inline, no allocation); the
 * quaternion product is ../rbc_vec.h's q_mul.
 *
 * Quaternions are scalar first [q0, q1, q2, q3] and rotate a vector from a point's own frame to
 * the inertial frame: v_inertial = R(q) v_point.  Matrices are row-major double[9].
 * The arithmetic order follows the Python docstrings' formulas (results match bit for bit).
 */
#ifndef RBC_FX_VEC_H
#define RBC_FX_VEC_H

#include <math.h>
#include <stdint.h>

#include "../rbc_array.h"
#include "../rbc_vec.h"

/* out = R(q) (3x3 row-major) from a quaternion, normalised first (the operation order of
 * rbcosim.spatial.quaternion.rotation_matrix, bit for bit; q_matrix scales by 2/|q|^2). */
static inline void fx_rotation_matrix(const double *q, double *out) {
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    out[0] = 1.0 - 2.0 * (y * y + z * z);
    out[1] = 2.0 * (x * y - w * z);
    out[2] = 2.0 * (x * z + w * y);
    out[3] = 2.0 * (x * y + w * z);
    out[4] = 1.0 - 2.0 * (x * x + z * z);
    out[5] = 2.0 * (y * z - w * x);
    out[6] = 2.0 * (x * z - w * y);
    out[7] = 2.0 * (y * z + w * x);
    out[8] = 1.0 - 2.0 * (x * x + y * y);
}

/* out (3) = rotation vector (rad, angle in [0, pi]) of the unit quaternion q ⊗ conj(q_ref). */
static inline void fx_relative_rotation_vector(const double *q, const double *q_ref, double *out) {
    double conj[4] = {q_ref[0], -q_ref[1], -q_ref[2], -q_ref[3]}, r[4];
    q_mul(q, conj, r);
    if (r[0] < 0)
        for (int i = 0; i < 4; i++) r[i] = -r[i];
    double s = sqrt(r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
    if (s < 1e-12) {
        for (int i = 0; i < 3; i++) out[i] = 2.0 * r[1 + i];
        return;
    }
    double f = 2.0 * atan2(s, r[0]) / s;
    for (int i = 0; i < 3; i++) out[i] = r[1 + i] * f;
}

/* out (4) += scale * q', q' = [0, w] ⊗ q / 2 (w inertial angular velocity, rad/s). */
static inline void fx_add_quat_rate(const double *w, const double *q, double scale, double *out) {
    double c = 0.5 * scale;
    out[0] += c * (-w[0] * q[1] - w[1] * q[2] - w[2] * q[3]);
    out[1] += c * (w[0] * q[0] - w[2] * q[2] + w[1] * q[3]);
    out[2] += c * (w[1] * q[0] + w[2] * q[1] - w[0] * q[3]);
    out[3] += c * (w[2] * q[0] - w[1] * q[1] + w[0] * q[2]);
}

/* out (r) = m (r, c row-major) @ x (c), accumulated from 0 in column order. */
static inline void fx_matvec(const double *m, int64_t r, int64_t c, const double *x, double *out) {
    for (int64_t i = 0; i < r; i++) {
        double acc = 0.0;
        const double *row = m + i * c;
        for (int64_t j = 0; j < c; j++) acc += row[j] * x[j];
        out[i] = acc;
    }
}

#endif
