/* Equations of motion of a tree, y = [q (nq), v (nv)] -> y', and runs of fixed steps (classic
 * RK4, Alexander's L-stable two-stage SDIRK2) in one call.  The steps also integrate the work
 * of loads and dampers with their own stages (work.done).
 *
 * Forces: gravity as the base acceleration of the recursions; body loads, spring-dampers and
 * torsion springs from rbc_applied_forces (rigid/forces.h) with a table built without gravity,
 * entering the articulated-body algorithm as spatial body forces at O (inertial, moment about
 * O N m; force N).  Times in s.
 */
#ifndef RBC_MINIMAL_STEPPER_H
#define RBC_MINIMAL_STEPPER_H

#include "../rigid/forces.h"
#include "recursions.h"

/* Mirrors rbcosim.minimal.stepper.TreeWork (23 members): kinematics, recursion scratch, spatial
 * body forces f_ext (n+1, 6) at O, zero joint forces tau (nv,), the applied-force kernel's
 * inputs (centre velocities vc, angular velocities w (n+1, 3), inertial, m/s and rad/s) and
 * outputs (force, torque (n, 3), inertial, N and N m); RK4 / SDIRK2 stages (5, ny); done (1,):
 * work W (J) of the loads and dampers over the steps so far; scratch (3, ny) of SDIRK2's Newton
 * iteration. */
typedef struct rbc_tree_work {
    rbc_body_kin kin;
    rbc_dyn_work dyn;
    rbc_arr f_ext, tau, vc, w, force, torque, stages, done, scratch;
} rbc_tree_work;

/* A tree and its data: tables, applied forces (a table built without gravity), work, and
 * has_forces (0-d int: 0 when gravity is the only force; the force table is then not read). */
typedef struct rbc_tree_system {
    rbc_tree_tables tab;
    rbc_forces forces;
    rbc_tree_work work;
    rbc_arr has_forces;
} rbc_tree_system;

#define RBC_TREE_SYSTEM_SLOTS (RBC_TREE_TABLES_SLOTS + RBC_FORCES_SLOTS + 23 + 1)

/* SDIRK2's Newton data, kept between calls: matrix (ny, ny) the LU factors (partial pivoting)
 * of I - gamma h df/dy, pivot (ny,) its row interchanges, valid (1,) 0 until formed; the
 * tolerance on |dz| <= tol (1 + |z|) and the iteration limit per attempt. */
typedef struct rbc_newton {
    double *matrix;
    int64_t *pivot, *valid;
    double tol;
    int64_t max_newton;
} rbc_newton;

/* Applied forces at time t on the bodies of kin into work.f_ext (n+1, 6), inertial at O. */
void rbc_tree_external_forces(rbc_tree_system *sys, double t, const rbc_body_kin *kin);

/* y' = [q', v'] into ydot at time t and state y (ny,), by the articulated-body algorithm on
 * work.kin; returns the multiplications done. */
int64_t rbc_tree_derivative(rbc_tree_system *sys, double t, const double *y, double *ydot);

/* Power (W) of the loads and dampers at time t and state y (ny,). */
double rbc_tree_power(rbc_tree_system *sys, double t, const double *y);

/* Renormalise the joint quaternions of y (ny,) in place.  Returns the largest |(|e| - 1)|
 * before, or NaN when y has a non-finite entry. */
double rbc_tree_normalize(const rbc_tree_tables *tab, double *y, int64_t ny);

/* n RK4 steps of h s on y (ny,) in place, step i from t0 + (k0 + i) h, each followed by
 * rbc_tree_normalize.  Returns the largest quaternion error over the steps; *done = steps
 * completed (a step whose state is not finite stops the run: NaN returned, *done its index). */
double rbc_tree_rk4_steps(rbc_tree_system *sys, double *y, double t0, double h, int64_t k0,
                          int64_t n, int64_t *done);

/* The same by SDIRK2 (as rbcosim.maximal.integrators.SDIRK2: forward-difference Jacobian, reused
 * while Newton converges).  When Newton fails at a stage, NaN is returned with *failed_at the
 * stage time (else NaN in *failed_at). */
double rbc_tree_sdirk2_steps(rbc_tree_system *sys, rbc_newton *newton, double *y, double t0,
                             double h, int64_t k0, int64_t n, int64_t *done, double *failed_at);

/* Dense LU with partial pivoting of the n x n row-major a in place (pivot: the row exchanged
 * with row k at step k).  Returns 0 when a pivot is zero (singular). */
int rbc_lu_factor(double *a, int64_t n, int64_t *pivot);

/* Solve (LU) x = b in place of b (n,) with the factors of rbc_lu_factor. */
void rbc_lu_solve(const double *lu, int64_t n, const int64_t *pivot, double *b);

#endif
