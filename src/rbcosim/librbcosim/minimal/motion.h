/* Tree kinematics in joint coordinates: body poses, spatial velocities, motion subspaces,
 * velocity products and q' from the coordinates q and rates v (layout in rbcosim.minimal.tree,
 * joint data in rbcosim.minimal.tables).
 *
 * Spatial vectors are in inertial axes at the inertial origin O (see spatial.h).  With S_k the
 * motion-subspace column of rate k, fixed in the parent (S_P) or in the child (S_C):
 *     V_i = V_p + S_i v_i,    a_i = a_p + S_i v'_i + c_i,
 *     c_i = V_p xm (S_i v_i) + (S_P v_P) xm (S_C v_C).
 */
#ifndef RBC_MINIMAL_MOTION_H
#define RBC_MINIMAL_MOTION_H

#include "../rbc_array.h"

/* rate_kind and rate_side values (rbcosim.minimal.tables) */
enum { RBC_ROTATION = 0, RBC_TRANSLATION = 1 };
enum { RBC_SIDE_PARENT = 0, RBC_SIDE_CHILD = 1 };

/* Mirrors rbcosim.minimal.tables.TreeTables (19 members, SI units).  Joints (nj,) in tree order,
 * rates (nv,), bodies (n+1,) with the ground at row 0. */
typedef struct rbc_tree_tables {
    rbc_arr joint_body, joint_parent;   /* int (nj,) body indices */
    rbc_arr joint_v0, joint_nv;         /* int (nj,) slice of v */
    rbc_arr joint_quat;                 /* int (nj,) index in q of the joint quaternion, -1: none */
    rbc_arr body_joint;                 /* int (n+1,) joint of every body, -1 for the ground */
    rbc_arr marker_a, marker_b;         /* (nj, 4) L = A (x) e(q) (x) B */
    rbc_arr marker_parent;              /* (nj, 3) parent marker origin, parent body frame, m */
    rbc_arr marker_child;               /* (nj, 3) child marker origin, child body frame, m */
    rbc_arr fixed_shift;                /* (nj, 3) t_fix, parent body frame, m */
    rbc_arr rate_kind, rate_side;       /* int (nv,) RBC_ROTATION/TRANSLATION, RBC_SIDE_* */
    rbc_arr rate_axis;                  /* (nv, 3) unit axis in the side's body frame */
    rbc_arr rate_u;                     /* (nv, 3) the same axis in the joint's marker frame */
    rbc_arr rate_q;                     /* int (nv,) coordinate of the rate in q, -1: none */
    rbc_arr mass;                       /* (n+1,) kg */
    rbc_arr inertia;                    /* (n+1, 3, 3) kg m^2 about the centre, body axes */
    rbc_arr base_acceleration;          /* (6,) (0; -g) m/s^2, the gravity of the recursions */
} rbc_tree_tables;

#define RBC_TREE_TABLES_SLOTS 19
#define RBC_TREE_TABLES_TYPES "lllllldddddllddlddd"

/* Mirrors rbcosim.minimal.motion.BodyKinematics (6 members), by body (ground row 0) and rate:
 * q (n+1, 4) attitude quaternions body -> inertial (as composed, not renormalised); R (n+1, 3, 3)
 * their rotation matrices; r (n+1, 3) centres of mass, inertial, m; V (n+1, 6) spatial
 * velocities (omega; v_O) rad/s, m/s; c (n+1, 6) velocity-product accelerations; S (nv, 6) the
 * motion-subspace column of every rate. */
typedef struct rbc_body_kin {
    rbc_arr q, R, r, V, c, S;
} rbc_body_kin;

#define RBC_BODY_KIN_SLOTS 6
#define RBC_BODY_KIN_TYPES "dddddd"

/* Fill kin from joint coordinates q (nq,) and rates v (nv,); returns the multiplications done
 * (the operation counts of the tests).  The ground row of kin is left as it is (identity, at
 * rest). */
int64_t rbc_tree_kinematics(const rbc_tree_tables *tab, const double *q, const double *v,
                            rbc_body_kin *kin);

/* Spatial accelerations (omega'; v'_O) (n+1, 6) into acc from v' (nv,) and the base
 * acceleration base (6,) of the ground (zero, or (0; -g) to include gravity). */
void rbc_tree_body_accelerations(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                                 const double *vdot, const double *base, double *acc);

/* q' (nq,) into qdot: equal to the rate for ordinary coordinates, 1/2 e (x) (0, omega) for a
 * joint quaternion e (omega in the child marker's axes, rad/s). */
void rbc_tree_coordinate_rates(const rbc_tree_tables *tab, const double *q, const double *v,
                               double *qdot);

#endif
