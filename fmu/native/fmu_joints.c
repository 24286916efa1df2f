/* fmu_joints.c: the joints' relative coordinates of the native rbcosim FMU (RBF_JOINT outputs),
 * from its body outputs, as rbcosim.joint_coordinates computes `rbcosim run
 * --joint-coordinates`'s columns (and the Python FMU its outputs):
 *
 *   revolute     angle (rad) from x1 to x2 about z1, rate (rad/s) = (w2 - w1).z1
 *   prismatic    disp (m) of origin 2 from origin 1 along z1, speed (m/s) its rate
 *   cylindrical  angle, rate, disp, speed as above
 *   universal    angle1 = atan2(rel_21, rel_11), rate1 = w_rel.x1, angle2 = atan2(rel_02,
 *                rel_00), rate2 = w_rel.(rel's column 1), rel = marker 2's axes in marker 1's
 *   spherical    rotation vector of rel (rad, |.| <= pi), w2 - w1 in marker 1's axes (rad/s)
 *
 * x1, y1, z1 are marker 1's axes, w the bodies' inertial angular velocities. Markers are the
 * exported scenario's (rbf_joint: position from the body's origin, axes as columns, body
 * frame). Angles are continued from the previous communication point's output (angle, rate,
 * time) as rbcosim.joint_coordinates.unwrap continues them over rows; the first values after
 * initialization are taken as they are.
 */
#include "rbcosim_fmu.h"

#include <math.h>
#include <string.h>

static const double PI = 3.141592653589793; /* numpy's pi */

/* A body's pose and velocities, inertial: ground (body 0) at rest at the origin. */
typedef struct pose { double R[3][3], r[3], v[3], w[3]; } pose;

static pose body_pose(const double *bodies, int body) {
    pose p;
    memset(&p, 0, sizeof p);
    if (body == 0) {
        for (int i = 0; i < 3; ++i) p.R[i][i] = 1.0;
        return p;
    }
    const double *b = bodies + 13 * (body - 1);
    double n = sqrt(b[3] * b[3] + b[4] * b[4] + b[5] * b[5] + b[6] * b[6]);
    double w = b[3] / n, x = b[4] / n, y = b[5] / n, z = b[6] / n;
    double s = w * w + x * x + y * y + z * z;
    double R[3][3] = {{w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)},
                      {2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)},
                      {2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z}};
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) p.R[i][j] = R[i][j] / s;
        p.r[i] = b[i];
        p.v[i] = b[7 + i];
    }
    for (int i = 0; i < 3; ++i) {
        p.w[i] = p.R[i][0] * b[10] + p.R[i][1] * b[11] + p.R[i][2] * b[12];
    }
    return p;
}

static double dot(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross(const double *a, const double *b, double *out) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* axes[c] = column c of R A (a marker's axes, inertial); A row-major 3x3. */
static void marker_axes(const pose *p, const double *A, double axes[3][3]) {
    for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < 3; ++i) {
            axes[c][i] = p->R[i][0] * A[c] + p->R[i][1] * A[3 + c] + p->R[i][2] * A[6 + c];
        }
    }
}

/* Marker origin (inertial, m) and its velocity (m/s). */
static void marker_point(const pose *p, const double *position, double *at, double *vel) {
    double arm[3], turn[3];
    for (int i = 0; i < 3; ++i) arm[i] = dot(p->R[i], position);
    cross(p->w, arm, turn);
    for (int i = 0; i < 3; ++i) {
        at[i] = p->r[i] + arm[i];
        vel[i] = p->v[i] + turn[i];
    }
}

/* Quaternion of a rotation matrix, q0 >= 0, normalized (Shepperd's method). */
static void from_matrix(double m[3][3], double *q) {
    double tr = m[0][0] + m[1][1] + m[2][2];
    double cand[4] = {tr, m[0][0], m[1][1], m[2][2]};
    int k = 0;
    for (int i = 1; i < 4; ++i) {
        if (cand[i] > cand[k]) k = i;
    }
    double s;
    if (k == 0) {
        s = 2.0 * sqrt(1.0 + tr);
        q[0] = 0.25 * s, q[1] = (m[2][1] - m[1][2]) / s, q[2] = (m[0][2] - m[2][0]) / s,
        q[3] = (m[1][0] - m[0][1]) / s;
    } else if (k == 1) {
        s = 2.0 * sqrt(1.0 + 2 * m[0][0] - tr);
        q[0] = (m[2][1] - m[1][2]) / s, q[1] = 0.25 * s, q[2] = (m[0][1] + m[1][0]) / s,
        q[3] = (m[0][2] + m[2][0]) / s;
    } else if (k == 2) {
        s = 2.0 * sqrt(1.0 + 2 * m[1][1] - tr);
        q[0] = (m[0][2] - m[2][0]) / s, q[1] = (m[0][1] + m[1][0]) / s, q[2] = 0.25 * s,
        q[3] = (m[1][2] + m[2][1]) / s;
    } else {
        s = 2.0 * sqrt(1.0 + 2 * m[2][2] - tr);
        q[0] = (m[1][0] - m[0][1]) / s, q[1] = (m[0][2] + m[2][0]) / s,
        q[2] = (m[1][2] + m[2][1]) / s, q[3] = 0.25 * s;
    }
    double sign = q[0] >= 0 ? 1.0 : -1.0;
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i) q[i] = sign * q[i] / n;
}

/* The joint's fields (FIELDS order of rbcosim.joint_coordinates) into out[6]. */
static void joint_values(const rbf_joint *j, const double *bodies, double *out) {
    pose p1 = body_pose(bodies, j->body1), p2 = body_pose(bodies, j->body2);
    double a1[3][3], a2[3][3], dw[3];
    marker_axes(&p1, j->axes1, a1);
    marker_axes(&p2, j->axes2, a2);
    for (int i = 0; i < 3; ++i) dw[i] = p2.w[i] - p1.w[i];
    int n = 0;
    if (j->kind == RBF_REVOLUTE || j->kind == RBF_CYLINDRICAL) {
        out[n++] = atan2(dot(a2[0], a1[1]), dot(a2[0], a1[0]));
        out[n++] = dot(dw, a1[2]);
    }
    if (j->kind == RBF_PRISMATIC || j->kind == RBF_CYLINDRICAL) {
        double o1[3], o2[3], u1[3], u2[3], d[3], du[3], wz[3];
        marker_point(&p1, j->position1, o1, u1);
        marker_point(&p2, j->position2, o2, u2);
        for (int i = 0; i < 3; ++i) d[i] = o2[i] - o1[i], du[i] = u2[i] - u1[i];
        cross(p1.w, a1[2], wz);
        out[n++] = dot(a1[2], d);
        out[n++] = dot(wz, d) + dot(a1[2], du);
    }
    if (j->kind == RBF_UNIVERSAL || j->kind == RBF_SPHERICAL) {
        double rel[3][3], w_rel[3];
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) rel[r][c] = dot(a1[r], a2[c]);
            w_rel[r] = dot(a1[r], dw);
        }
        if (j->kind == RBF_UNIVERSAL) {
            double column1[3] = {rel[0][1], rel[1][1], rel[2][1]};
            out[n++] = atan2(rel[2][1], rel[1][1]);
            out[n++] = w_rel[0];
            out[n++] = atan2(rel[0][2], rel[0][0]);
            out[n++] = dot(w_rel, column1);
        } else {
            double q[4];
            from_matrix(rel, q);
            double s = sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            double scale = s > 1e-300 ? 2 * atan2(s, q[0]) / s : 2.0;
            for (int i = 0; i < 3; ++i) out[n++] = q[1 + i] * scale;
            for (int i = 0; i < 3; ++i) out[n++] = w_rel[i];
        }
    }
}

/* Number of fields of a joint of `kind`. */
static int n_fields(rbf_joint_kind kind) {
    return kind == RBF_REVOLUTE || kind == RBF_PRISMATIC ? 2 : kind == RBF_SPHERICAL ? 6 : 4;
}

/* 1 when field `index` of a joint of `kind` is an angle continued over the run (its rate is
 * the next field). */
static int is_angle(rbf_joint_kind kind, int index) {
    return ((kind == RBF_REVOLUTE || kind == RBF_CYLINDRICAL) && index == 0) ||
           (kind == RBF_UNIVERSAL && (index == 0 || index == 2));
}

void rbf_joint_outputs(rbf_instance *inst, double previous_time, int first) {
    const rbf_model *m = inst->m;
    double values[6];
    for (int k = 0; k < m->n_coordinate_joints; ++k) {
        const rbf_joint *j = &m->coordinate_joints[k];
        joint_values(j, inst->bodies, values);
        for (int f = 0; f < n_fields(j->kind); ++f) {
            if (!first && is_angle(j->kind, f)) {
                double angle0 = inst->reals[j->vr[f]], rate0 = inst->reals[j->vr[f + 1]];
                double guess = angle0 + 0.5 * (rate0 + values[f + 1]) *
                                            (inst->reals[0] - previous_time);
                values[f] += 2 * PI * nearbyint((guess - values[f]) / (2 * PI));
            }
        }
        for (int f = 0; f < n_fields(j->kind); ++f) inst->reals[j->vr[f]] = values[f];
    }
}
