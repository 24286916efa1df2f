/* Tree dynamics on the kinematics of motion.h.
 *
 *  - rbc_tree_aba: articulated-body algorithm, O(n): a backward sweep builds articulated
 *    inertias I^A_p += I^A - U D^-1 U^T (U = I^A S, D = S^T U) and bias forces
 *    p^A_p += p^A + I^a c + U D^-1 u; a forward sweep gives v' = D^-1 (u - U^T (a_p + c)).
 *  - rbc_tree_mass_matrix / rbc_tree_bias: composite-rigid-body M(q) (dense, O(n depth)) and
 *    recursive Newton-Euler C(q, v), with M v' = tau - C.
 *
 * Spatial quantities are inertial at the inertial origin O.  Joint forces tau (nv,) N or N m per
 * rate; external spatial forces f_ext (n+1, 6) = (moment about O N m; force N) per body (row 0,
 * the ground, unused); gravity as the base acceleration base (6,) = (0; -g) or zero, m/s^2.
 * Every kernel returns the number of multiplications it did.
 */
#ifndef RBC_MINIMAL_RECURSIONS_H
#define RBC_MINIMAL_RECURSIONS_H

#include "motion.h"

/* Mirrors rbcosim.minimal.recursions.DynamicsWork (8 members): scratch of the recursions.
 * I (n+1, 6, 6) inertias, p (n+1, 6) forces, acc (n+1, 6) spatial accelerations; per rate
 * U (nv, 6), u (nv,), Dinv (nv, 6) (row of its joint's D^-1); block (6, 12), F (6, 6). */
typedef struct rbc_dyn_work {
    rbc_arr I, p, acc, U, u, Dinv, block, F;
} rbc_dyn_work;

#define RBC_DYN_WORK_SLOTS 8
#define RBC_DYN_WORK_TYPES "dddddddd"

/* Joint accelerations v' (nv,) into vdot by the articulated-body algorithm. */
int64_t rbc_tree_aba(const rbc_tree_tables *tab, const rbc_body_kin *kin, const double *tau,
                     const double *f_ext, const double *base, rbc_dyn_work *work, double *vdot);

/* Joint-space mass matrix M(q) (nv, nv) into M (composite-rigid-body algorithm). */
int64_t rbc_tree_mass_matrix(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                             rbc_dyn_work *work, double *M);

/* C(q, v) (nv,) into C: the joint forces that hold v' = 0 against velocity products, gravity
 * (base) and f_ext (recursive Newton-Euler). */
int64_t rbc_tree_bias(const rbc_tree_tables *tab, const rbc_body_kin *kin, const double *f_ext,
                      const double *base, rbc_dyn_work *work, double *C);

/* Both M and C, the body inertias computed once. */
int64_t rbc_tree_mass_matrix_and_bias(const rbc_tree_tables *tab, const rbc_body_kin *kin,
                                      const double *f_ext, const double *base,
                                      rbc_dyn_work *work, double *M, double *C);

#endif
