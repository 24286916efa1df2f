/* The rigid kernels' own quaternion steps (static inline); the shared vector, matrix and
 * quaternion helpers are in ../rbc_vec.h.
 *
 * Quaternions are scalar first (w, x, y, z); rotation matrices map body -> inertial and are
 * row-major double[9] (or rows of an (n, 3, 3) array).  The arithmetic order of each helper is
 * fixed (compiled with -ffp-contract=off: no FMA), so results are the same bits on every build.
 */
#ifndef RBC_RIGID_ROTATION_H
#define RBC_RIGID_ROTATION_H

#include <math.h>

#include "../rbc_vec.h"

/* Scale q (4,) to unit length in place; returns | |q| - 1 | before. */
static inline double q_normalize(double *q) {
    double norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; i++) q[i] /= norm;
    return fabs(norm - 1.0);
}

/* q <- normalise(q (x) exp(theta/2)) for a small body-frame rotation vector theta (3,) rad. */
static inline void q_rotate_by_vector(double *q, const double *theta) {
    double angle = sqrt(theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]);
    double half = 0.5 * angle;
    double scale = angle > 1e-12 ? sin(half) / angle : 0.5;
    double d[4] = {cos(half), scale * theta[0], scale * theta[1], scale * theta[2]}, p[4];
    q_mul(q, d, p);
    for (int i = 0; i < 4; i++) q[i] = p[i];
    q_normalize(q);
}

#endif
