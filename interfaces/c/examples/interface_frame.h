/* interface_frame.h: the interface frame over one macro step (as rbcosim.flex.runtime.frame).
 *
 * A frame is 19 doubles, inertial, SI: r (3) m, q (4) unit quaternion scalar first (point
 * frame -> inertial), v (3) m/s, w (3) rad/s, a (3) m/s^2, alpha (3) rad/s^2 - the layout of
 * the protocol's motion rows. Inside a step [t, t + H] the accelerations [a; alpha] are a
 * polynomial in tau = time - t with coefficient rows coeff[j][6]; velocities and positions
 * are its exact integrals from the frame at tau = 0; the orientation follows
 * q' = [0, w] (x) q / 2 by classic RK4 with n micro steps.
 */
#ifndef RBC_EXAMPLES_INTERFACE_FRAME_H
#define RBC_EXAMPLES_INTERFACE_FRAME_H

enum { FR_R = 0, FR_Q = 3, FR_V = 7, FR_W = 10, FR_A = 13, FR_AL = 16, FR_SIZE = 19 };

/* coeff [1 + m][6] through the accelerations of `motion` at tau = 0 and of the m past
 * motions (rows of 19) at past_taus (s, relative to the step's start; m <= 2). */
void frame_acceleration_polynomial(const double *motion, int m, const double *past_taus,
                                   const double *past, double *coeff);

/* out[18] = [r, v, a, theta, w, alpha] at tau (theta: rotation vector turned since tau = 0,
 * small-rotation model theta' = w, rad). */
void frame_at(const double *frame, int n_coeff, const double *coeff, double tau, double *out);

/* Orientation at tau = H after n RK4 steps, normalised, q_out[4]. */
void frame_end_orientation(const double *frame, int n_coeff, const double *coeff, double H,
                           int n, double *q_out);

/* Move `frame` to tau = H (orientation q_end). */
void frame_write_end(double *frame, int n_coeff, const double *coeff, double H,
                     const double *q_end);

/* frame = motion, quaternion normalised. */
void frame_set(double *frame, const double *motion);

/* Rotation vector (rad, angle in [0, pi]) of q (x) conj(q_ref). */
void frame_relative_rotation(const double *q, const double *q_ref, double *theta);

#endif
