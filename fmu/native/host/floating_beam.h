/* floating_beam.h: rbcosim's reference floating flexible body in C (linear floating frame of
 * reference; src/rbcosim/flex/floating.py, frame.py, polynomial.py, body.py), for the C host of
 * the rigid-flexible pendulum (pendulum_host.c). Same operations in the same order as the
 * compiled kernels, so the two agree to round-off. All vectors inertial unless named
 * structure-frame; SI units. */
#ifndef RBCOSIM_FLOATING_BEAM_H
#define RBCOSIM_FLOATING_BEAM_H

#define BEAM_MAXK 32     /* modes at most */
#define BEAM_MAXDOF 600  /* 6 n_nodes at most */

/* The reduced model: k fixed-interface modes, n_nodes beam nodes (6 DOFs each). */
typedef struct {
    int k, n_nodes, micro_steps;
    double gravity[3];       /* m/s^2 */
    double axis[9];          /* axis_rotation: structure -> point frame, row-major */
    double *ode;             /* W (k x (20k + 15)): eta'' = W z (floating.py) */
    double *nodes;           /* (n_nodes x 3) node positions from the interface node, m */
    double *modes;           /* Phi (6 n_nodes x k) */
    double *mass;            /* consistent mass (6 n_nodes x 6 n_nodes), kg, kg m, kg m^2 */
    double total_mass;       /* kg */
    double first_moment[3];  /* m r_cm, kg m */
    double *modal_first;     /* S (3 x k), kg m per unit eta */
    double spin[9];          /* the sections' torsional inertia J (3 x 3), kg m^2 */
    double out_position[3];  /* the output node's undeformed position, structure frame, m */
    double *out_rows;        /* (3 x k): its displacement = out_rows eta, structure frame */
} beam_model;

/* A motion (19): position (3), quaternion (4, scalar first, point -> inertial), velocity (3),
 * angular velocity (3), acceleration (3), angular acceleration (3). The state: the frame at
 * the interface point as a motion, and y = [eta (k), eta' (k)]. */
typedef struct {
    double frame[19];
    double *y;
} beam_state;

/* Frame at `motion`, quaternion normalised (flex/frame.py set_frame). */
void beam_set_frame(beam_state *s, const double *motion);
/* One macro step of H from the rigid `motion` at t: the frame moves to it, the accelerations
 * follow the polynomial through it and the n_past motions (n_past x 19, newest first) at
 * past_taus (s, relative to t), (q, eta, eta') advance by micro_steps RK4 steps and the frame
 * goes to the end of the step (floating_step). Returns 0 when the result is not finite. */
int beam_step(const beam_model *m, beam_state *s, const double *motion, int n_past,
              const double *past_taus, const double *past, double H);
/* [force (3) N, moment (3) N m] on the rigid body at the point (floating_wrench). */
void beam_wrench(const beam_model *m, const double *frame, const double *y, double *out);
/* The instantaneous added mass M_a (6 x 6, row-major), inertial: minus the wrench's
 * derivative by the frame's [a; alpha], symmetrised (FlexBody.added_mass). */
void beam_added_mass(const beam_model *m, const beam_state *s, double *out);
/* T^T M T (inverse: T M T^T), T = diag(R(q), R(q)) (flex_endpoint._point_frame_mass). */
void point_frame_mass(const double *mass, const double *q, int inverse, double *out);
/* The output node's inertial position (3), m (FlexBody.output_nodes). */
void beam_output_node(const beam_model *m, const beam_state *s, double *out);
/* Coefficients c (m x n, row-major) of the polynomial through (taus[i], values[i]), m <= 4,
 * Newton's divided differences expanded to monomials (flex/polynomial.py). */
void polynomial_through(int m, int n, const double *taus, const double *values, double *c);

#endif
