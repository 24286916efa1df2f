/* The floating flexible body, linear floating frame of reference (rbcosim.flex.runtime.floating).
 *
 * Structure-frame inputs are w (rad/s), alpha (rad/s²) and b = a_p - g (m/s²) rotated by
 * R_s = R(q) axis_rotation (structure -> inertial).  The modes obey eta'' = W z with W the
 * model's ode_matrix (k, 20k + 15) and z = [eta, eta', b, alpha, kron(w, w), kron(w, eta'),
 * kron(alpha, eta), kron(kron(w, w), eta), kron(b, eta)].
 */
#ifndef RBC_FX_FLOATING_H
#define RBC_FX_FLOATING_H

#include <stdint.h>

/* out (k) = eta'' = W z for structure-frame ws, als, bs (3 each). */
void rbc_fx_modal_acceleration(const double *wmat, int64_t k, const double *ws, const double *als,
                               const double *bs, const double *eta, const double *etad,
                               double *out);

/* One macro step of the state s in place (time left to the caller): frame to motion (19,),
 * accelerations the polynomial through it and the m past motions (m, 19) at past_taus, and
 * (q, eta, eta') over [0, H] by n RK4 steps.  gravity (3) m/s², axis_rotation (3x3), wmat as
 * above.  Returns 0 if the result is not finite (s then holds the re-synchronised frame and the
 * old modes), 1 otherwise.  k <= FX_MAX_MODES. */
int rbc_fx_floating_step(double *s, int64_t k, const double *motion, int64_t m,
                         const double *past_taus, const double *past, double H, int64_t n,
                         const double *gravity, const double *axis_rotation, const double *wmat);

/* out (6) = [force N, moment N·m] on the rigid body at the point, inertial, at the state s.
 * total_mass kg, first_moment (3) kg·m, s_e (3, k) modal first moment, spin_inertia (3, 3)
 * kg·m², moment_inv (3 (k + 1), 12 + 13k) the moment's inertia invariants
 * (rbcosim.flex.modelling.model.moment_invariants).  Cost O(k²), independent of the FE mesh. */
void rbc_fx_floating_wrench(const double *s, int64_t k, const double *gravity,
                            const double *axis_rotation, const double *wmat, double total_mass,
                            const double *first_moment, const double *s_e,
                            const double *spin_inertia, const double *moment_inv, double *out);

#endif
