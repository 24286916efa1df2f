/* Continuity of rigid–flexible joints and the endpoint's small frame changes. */
#ifndef RBC_FX_CONTINUITY_H
#define RBC_FX_CONTINUITY_H

/* gaps (4) between two 13-vectors of joint kinematics [position m, quaternion, velocity m/s,
 * angular velocity rad/s]: position m, rotation angle rad (of the rotation taking one attitude
 * to the other, by atan2, accurate for small angles), velocity m/s, angular velocity rad/s. */
void rbc_fx_joint_gaps(const double *rigid, const double *flex, double *gaps);

/* out (6x6) = T^T M T (inverse: T M T^T), T = diag(R(q), R(q)): a mass between inertial and
 * point-frame axes (R(q): point frame -> inertial); mass and out row-major, not aliased. */
void rbc_fx_point_frame_mass(const double *mass, const double *q, int inverse, double *out);

#endif
