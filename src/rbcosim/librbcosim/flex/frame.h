/* The interface frame over one macro step: what the grounded, floating and chord bodies share.
 *
 * State layout (float64, rbcosim.flex.runtime.layout): [t | r (3) q (4) v (3) w (3) a (3) alpha (3) |
 * p_ref (3) q_ref (4) | initialised | eta (k) eta_dot (k)]: time s; the frame at the interface
 * point (inertial position m, quaternion scalar first point -> inertial, velocity m/s, angular
 * velocity rad/s, acceleration m/s², angular acceleration rad/s²); a grounded body's boundary
 * reference pose; 1.0 once initialised; modal coordinates and rates.
 *
 * Inside a step [t, t + H] the interface accelerations are a polynomial in tau = time - t,
 * coeff (m, 6): rows c_j of [a (3) m/s², alpha (3) rad/s²] = sum_j c_j tau^j, inertial.
 * Motions are (19,): position, quaternion, velocity, w, acceleration, alpha (inertial, SI).
 */
#ifndef RBC_FX_FRAME_H
#define RBC_FX_FRAME_H

#include <stdint.h>

enum { FX_T = 0, FX_R = 1, FX_Q = 4, FX_V = 8, FX_W = 11, FX_A = 14, FX_AL = 17, FX_PREF = 20,
       FX_QREF = 23, FX_INIT = 27, FX_ETA = 28 };

/* Largest number of past motions of the acceleration polynomial (its rows: past + 1). */
#define FX_MAX_PAST 2
/* Largest number of modes the step kernels take (their scratch is on the stack). */
#define FX_MAX_MODES 128
/* Largest number of boundary DOFs of one grounded interface. */
#define FX_MAX_BOUNDARY 6

/* coeff (m + 1, 6) through the accelerations of motion (19,) at tau = 0 and of the past motions
 * (m, 19) at past_taus (s, relative to the step's start; m <= FX_MAX_PAST). */
void rbc_fx_acceleration_polynomial(const double *motion, int64_t m, const double *past_taus,
                                    const double *past, double *coeff);

/* out (18) = [r, v, a, theta, w, alpha] at tau: position m, velocity m/s, acceleration m/s², the
 * rotation vector turned since tau = 0 (small-rotation model, theta' = w) rad, angular velocity
 * rad/s, angular acceleration rad/s²; all inertial.  s: the state (its frame at tau = 0). */
void rbc_fx_frame_at(const double *s, const double *coeff, int64_t rows, double tau, double *out);

/* One classic RK4 step of q' = [0, w] ⊗ q / 2 with w at the step's start, middle and end:
 * q_new (4, unnormalised) and stages (4, 4): the stage arguments q, q + h/2 k1, q + h/2 k2,
 * q + h k3. */
void rbc_fx_quaternion_stages(const double *q, const double *w0, const double *wm,
                              const double *w1, double h, double *stages, double *q_new);

/* q (4): the frame's orientation at tau = H, integrated with n RK4 steps and normalised. */
void rbc_fx_end_of_step(const double *s, const double *coeff, int64_t rows, double H, int64_t n,
                        double *q);

/* Store the frame at tau = H (orientation q) in the state s; time is left to the caller. */
void rbc_fx_write_end_frame(double *s, const double *coeff, int64_t rows, double H,
                            const double *q);

/* Put the state's frame at motion (19,), quaternion normalised. */
void rbc_fx_set_frame(double *s, const double *motion);

#endif
