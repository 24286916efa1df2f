/* Applied forces of a model: gravity, body loads (tables linear in time), translational
 * spring-dampers, torsion spring-dampers on revolute joints; their potential energy and power.
 *
 * Arrays over bodies carry the ground at row 0: centres r (n+1, 3) m, centre velocities
 * v (n+1, 3) m/s and angular velocities w (n+1, 3) rad/s, inertial; rotation matrices
 * R (n+1, 3, 3), body -> inertial.  Forces act at the centres of mass of the moving bodies
 * 1..n: force (n, 3) N and torque (n, 3) N m, inertial.
 */
#ifndef RBC_RIGID_FORCES_H
#define RBC_RIGID_FORCES_H

#include "../rbc_array.h"

/* Mirrors rbcosim.maximal.kernels.forces.ForceTable, field by field (10 members, types "dlddlddldd"). */
typedef struct rbc_forces {
    rbc_arr gravity_force;     /* (n, 3) N, m g of each body (zeros when built without gravity) */
    rbc_arr load_index;        /* int (l+1, 2) body of each load; first row of its table */
    rbc_arr load_point;        /* (l, 3) point of application, body frame, m */
    rbc_arr load_table;        /* (rows, 7) [t s, fx fy fz N, tx ty tz N m], inertial */
    rbc_arr spring_body;       /* int (s, 2) bodies of the two markers */
    rbc_arr spring_point;      /* (s, 2, 3) marker origins, body frames, m */
    rbc_arr spring_constants;  /* (s, 3) stiffness N/m, damping N s/m, free length m */
    rbc_arr torsion_body;      /* int (k, 2) bodies of the revolute joint's markers */
    rbc_arr torsion_axes;      /* (k, 2, 3, 3) marker axes (columns x, y, z), body frames */
    rbc_arr torsion_constants; /* (k, 3) stiffness N m/rad, damping N m s/rad, rest angle rad */
} rbc_forces;

#define RBC_FORCES_SLOTS 10
#define RBC_FORCES_TYPES "dlddlddldd"

/* Column k (1..6) of the load-table rows [row0, row1) at time t s (column 0): linear between
 * rows, held constant outside. */
double rbc_load_interp(const rbc_arr *load_table, int64_t row0, int64_t row1, int k, double t);

/* Gravity, loads, springs and torsion springs at time t s into force, torque (n, 3),
 * overwritten (n = force->shape[0]). */
void rbc_applied_forces(const rbc_forces *f, double t, const rbc_arr *r, const rbc_arr *R,
                        const rbc_arr *v, const rbc_arr *w, rbc_arr *force, rbc_arr *torque);

/* The same into the rows of force[stride * i + k], torque[stride * i + k] for bodies i < n (the
 * (n, 6) [F, tau] blocks of the maximal route's workspace: stride 6). */
void rbc_applied_forces_at(const rbc_forces *f, double t, const rbc_arr *r, const rbc_arr *R,
                           const rbc_arr *v, const rbc_arr *w, int64_t n, double *force,
                           double *torque, int64_t stride);

/* Gravitational (-sum m g . r) plus spring and torsion-spring potential energy, J. */
double rbc_potential_energy(const rbc_forces *f, const rbc_arr *r, const rbc_arr *R,
                            const rbc_arr *v, const rbc_arr *w);

/* Power (W) of the loads (f . v_point + tau . w) and dampers (-c l'^2, -c theta'^2) at time t s. */
double rbc_force_power(const rbc_forces *f, double t, const rbc_arr *r, const rbc_arr *R,
                       const rbc_arr *v, const rbc_arr *w);

#endif
