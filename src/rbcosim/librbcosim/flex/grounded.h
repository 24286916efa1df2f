/* The grounded flexible body: boundary DOFs that follow the interface point, the interior
 * advanced by its exact discrete propagator (rbcosim.flex.runtime.grounded).
 *
 * s: the state (frame.h), k modes; r0 (3x3 row-major): structure -> inertial; comps (n_b,):
 * the boundary's structure-frame components (0-2 translations m, 3-5 small rotations rad).
 */
#ifndef RBC_FX_GROUNDED_H
#define RBC_FX_GROUNDED_H

#include <stdint.h>

/* out (n_b) = (r0^T [x; rx])[comps]: a translation-rotation pair in the selected structure-frame
 * components. */
void rbc_fx_to_structure(const double *r0, const double *x, const double *rx,
                         const int64_t *comps, int64_t nb, double *out);

/* out (3, n_b): rows u_b (m, rad), u_b' (m/s, rad/s), u_b'' (m/s², rad/s²) at the state's frame
 * (rotation: the rotation vector of q ⊗ conj(q_ref)). */
void rbc_fx_boundary(const double *s, const double *r0, const int64_t *comps, int64_t nb,
                     double *out);

/* Move the frame to motion (19,) keeping the interior's physical position and velocity:
 * eta -= S du_b, eta' -= S du_b', S = M_ee^-1 M_eb (shift, (k, n_b)). */
void rbc_fx_regrounded_frame(double *s, int64_t k, const double *motion, const double *r0,
                             const int64_t *comps, int64_t nb, const double *shift);

/* One macro step of s in place (time left to the caller): frame to motion, accelerations the
 * polynomial through it and the m past motions (m, 19) at past_taus (s), modes
 * y <- P [y; d, v, c_0.., g_e] (P (2k, 3k + 5 n_b), gacc (k) the modal acceleration of gravity),
 * orientation by n RK4 steps.  Returns 0 if the result is not finite (s then holds the
 * re-synchronised frame and the old modes), 1 otherwise.  k <= FX_MAX_MODES. */
int rbc_fx_grounded_step(double *s, int64_t k, const double *motion, int64_t m,
                         const double *past_taus, const double *past, double H, int64_t n,
                         const double *r0, const int64_t *comps, int64_t nb, const double *shift,
                         const double *p, const double *gacc);

/* out (6) = [force N, moment N·m] on the rigid body, inertial: minus the boundary rows
 * f_b = FB [u_b, u_b', u_b'', eta, eta', eta''] - gb (eta'' = W z + gacc; wmat (k, 2k + 3 n_b),
 * fb_matrix (n_b, 3 n_b + 3k), gacc (k), gb (n_b)). */
void rbc_fx_grounded_wrench(const double *s, int64_t k, const double *r0, const int64_t *comps,
                            int64_t nb, const double *wmat, const double *fb_matrix,
                            const double *gacc, const double *gb, double *out);

#endif
