/* Continuity of rigid–flexible joints (see continuity.h). */
#include "continuity.h"

#include <math.h>

#include "fx_vec.h"

void rbc_fx_joint_gaps(const double *rigid, const double *flex, double *gaps) {
    static const int first[3] = {0, 7, 10}, slot[3] = {0, 2, 3};
    for (int k = 0; k < 3; k++) {
        double s = 0.0;
        for (int c = first[k]; c < first[k] + 3; c++) {
            double d = rigid[c] - flex[c];
            s += d * d;
        }
        gaps[slot[k]] = sqrt(s);
    }
    const double *a = rigid + 3, *b = flex + 3;
    double na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2] + a[3] * a[3]);
    double nb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2] + b[3] * b[3]);
    double p[4], q[4];
    for (int i = 0; i < 4; i++) p[i] = a[i] / na, q[i] = b[i] / nb;
    double d0 = p[0] * q[0] + p[1] * q[1] + p[2] * q[2] + p[3] * q[3]; /* scalar of p ⊗ q* */
    double d1 = -p[0] * q[1] + p[1] * q[0] - p[2] * q[3] + p[3] * q[2];
    double d2 = -p[0] * q[2] + p[1] * q[3] + p[2] * q[0] - p[3] * q[1];
    double d3 = -p[0] * q[3] - p[1] * q[2] + p[2] * q[1] + p[3] * q[0];
    gaps[1] = 2.0 * atan2(sqrt(d1 * d1 + d2 * d2 + d3 * d3), fabs(d0));
}

void rbc_fx_point_frame_mass(const double *mass, const double *q, int inverse, double *out) {
    double rot[9], t6[36] = {0.0}, tmp[36];
    fx_rotation_matrix(q, rot);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) t6[6 * i + j] = t6[6 * (3 + i) + 3 + j] = rot[3 * i + j];
    /* inverse: out = T M T^T, else T^T M T; as (A M) B with A, B the two factors. */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double acc = 0.0;
            for (int l = 0; l < 6; l++)
                acc += (inverse ? t6[6 * i + l] : t6[6 * l + i]) * mass[6 * l + j];
            tmp[6 * i + j] = acc;
        }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double acc = 0.0;
            for (int l = 0; l < 6; l++)
                acc += tmp[6 * i + l] * (inverse ? t6[6 * j + l] : t6[6 * l + j]);
            out[6 * i + j] = acc;
        }
}
