/* grounded_structure.h: a linear structure tied to ground, driven at one interface point.
 *
 * The C counterpart of rbcosim's grounded FlexBody (rbcosim.flex.body / grounded.py) for a
 * structure given as matrices M, K, C on coordinates [boundary (n_b); interior (n_i)], read
 * from Matrix Market files. Physics and discretisation are the Python body's:
 *
 * - Boundary DOF i follows the interface point's component comps[i] (0..5 = x y z rx ry rz):
 *   translation from the reference position (m) or small rotation from the reference
 *   orientation (rotation vector of q (x) conj(q_ref), rad), along/about the INERTIAL axes
 *   (imported matrices: structure axes = inertial). u_b' and u_b'' are the point's velocity
 *   and acceleration components.
 * - Interior: M_ii x'' + C_ii x' + K_ii x = -(M_ib u_b'' + C_ib u_b' + K_ib u_b), in PHYSICAL
 *   interior coordinates x (the Python body uses Craig-Bampton modes; with all modes kept
 *   the reduction is a change of basis and the responses agree to round-off).
 * - Inside a macro step the interface accelerations are a polynomial of degree <= 2 (through
 *   the current and past accelerations, interface_frame.h), so u_b(tau) is a polynomial of
 *   degree <= 4 and the interior's step is exact: y(H) = Phi y(0) + Psi u,
 *   y = [x; x'], u = [u_b(0), u_b'(0), c_0, c_1, c_2], from the matrix exponential of the
 *   ODE augmented with the polynomial input (Van Loan), computed once per step size H.
 * - At each step's start the frame is regrounded to the rigid side's motion; the interior
 *   keeps its physical position and velocity apart from the inertial coupling:
 *   x -= M_ii^-1 M_ib du_b, x' -= M_ii^-1 M_ib du_b'.
 * - Wrench on the rigid body (N, N m, inertial) = minus the boundary rows
 *   f_b = M_bb u_b'' + M_bi x'' + C_bb u_b' + C_bi x' + K_bb u_b + K_bi x, placed on comps.
 */
#ifndef RBC_EXAMPLES_GROUNDED_STRUCTURE_H
#define RBC_EXAMPLES_GROUNDED_STRUCTURE_H

#include <stddef.h>

#include "flex_body.h"

typedef struct gs_structure gs_structure;

/* Component index of "x" "y" "z" "rx" "ry" "rz", or -1. */
int gs_component_index(const char *name);

/* A structure from dense row-major n x n matrices (c may be NULL: undamped); comps[n_b].
 * micro_steps: RK4 steps of the frame's orientation per macro step. NULL on error (err). */
gs_structure *gs_create(int n, const double *m, const double *k, const double *c, int n_b,
                        const int *comps, int micro_steps, char *err, size_t err_size);

/* The same from Matrix Market files (c_path may be NULL) and component names. */
gs_structure *gs_load(const char *m_path, const char *k_path, const char *c_path, int n_b,
                      const char *const *components, int micro_steps, char *err,
                      size_t err_size);
void gs_destroy(gs_structure *s);

int gs_n_boundary(const gs_structure *s);
int gs_n_interior(const gs_structure *s);

/* Start at t0 with the frame at `motion` (19 values, interface_frame.h). reference: the
 * interface position (m) where the structure is unstressed (rbcosim's grounded_reference),
 * or NULL for the motion's own position; the reference orientation is the motion's. The
 * interior starts at rest where it is with the boundary at the reference, then the boundary
 * is regrounded to the motion. */
void gs_initialize(gs_structure *s, double t0, const double *motion, const double *reference);

/* Reground the frame to the rigid side's motion now (no advance). */
void gs_set_motion(gs_structure *s, const double *motion);

/* One macro step t -> t + H from the rigid side's motion at t and n_past (<= 2) further
 * motions (rows of 19) at past_taus (s, relative to t; may be > 0 for a motion at t + H).
 * Returns 0, -1 if H is not positive or the propagator fails, -2 on a non-finite result. */
int gs_step(gs_structure *s, double t, double H, const double *motion, int n_past,
            const double *past_taus, const double *past);

double gs_time(const gs_structure *s);
void gs_wrench(const gs_structure *s, double *wrench);       /* [6] on the rigid body */
void gs_node_kinematics(const gs_structure *s, double *kin); /* [13] r q v w of the node */
void gs_frame_accelerations(const gs_structure *s, double *acc); /* [6] a, alpha assumed */
/* Instantaneous added mass M_a [6][6] (inertial): -d(wrench)/d[a; alpha], symmetrised. */
void gs_added_mass(const gs_structure *s, double *mass);
const double *gs_interior(const gs_structure *s); /* [2 n_i]: x (m, rad), x' */

/* The structure as an endpoint's body (added mass in inertial axes). */
fe_body gs_body(gs_structure *s);

#endif
