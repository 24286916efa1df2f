/* The chord-frame beam between two pins (rbcosim.flex.modelling.chord, rbcosim.flex.runtime.chord_kernels).
 *
 * inputs (9): the frame's motion [e_x (x, z), l m, s' m/s, s'' m/s², w rad/s, alpha rad/s²,
 * b (x, z) m/s²].  A set of rows (the modal rows or the pin rows) on y = [s; eta] is
 * rbc_fx_chord_rows; params (3) = [L m, EA/L N/m, rho A kg/m].
 */
#ifndef RBC_FX_CHORD_H
#define RBC_FX_CHORD_H

#include <stdint.h>

typedef struct rbc_fx_chord_rows {
    int64_t n_rows;          /* rows of the set */
    const double *mass;      /* (n_rows, k + 1) */
    const double *gyro;      /* (n_rows, k + 1) */
    const double *stiffness; /* (n_rows, k + 1) */
    const double *load_b;    /* (n_rows, 2) */
    const double *load_alpha, *load_w2; /* (n_rows) */
    const double *geometric; /* (3, n_rows, k) */
} rbc_fx_chord_rows;

/* out (9): the frame's motion from the pins' rows pa, pb (3x3: position m, velocity m/s,
 * acceleration m/s², inertial, x and z used); gravity (3) m/s². */
void rbc_fx_chord_frame_inputs(const double *pa, const double *pb, const double *gravity,
                               double *out);

/* out (n_rows): M y'' + 2 w G y' + (K - w² M + alpha G + K_g) y + P b + alpha e - w² c on the rows'
 * DOFs, y = [s; eta] (s'' from the inputs, eta'' given), K_g by the axial force. */
void rbc_fx_chord_residual(const rbc_fx_chord_rows *rows, int64_t k, const double *params,
                           const double *inputs, const double *eta, const double *etad,
                           const double *etadd, double *out);

/* out (k) = eta'': the modal rows' residual at eta'' = 0, solved with minv = M_ee^-1 (k, k). */
void rbc_fx_chord_modal_acceleration(const rbc_fx_chord_rows *rows, int64_t k, const double *minv,
                                     const double *params, const double *inputs,
                                     const double *eta, const double *etad, double *out);

/* Advance modes (eta, eta') (2k) in place over [0, H] by n RK4 steps, the pins' kinematics from
 * their frames pins (2, state layout of pin_stride values) and acceleration polynomials coeffs
 * (2, rows, 6).  Returns 0 (modes unchanged) if the result is not finite.  k <= FX_MAX_MODES. */
int rbc_fx_chord_step(const double *pins, int64_t pin_stride, const double *coeffs, int64_t rows,
                      double H, int64_t n, double *modes, int64_t k,
                      const rbc_fx_chord_rows *modal_rows, const double *minv,
                      const double *params, const double *gravity);

/* The chord body's macro step (rbcosim.flex.runtime.chord_body.ChordBody.step): each pin's
 * frame set at its motion now (2, 19) at t, its acceleration polynomial through now and m <= 2
 * past motions past (m, 2, 19) at taus (m) s relative to t, the modes (2k) advanced in place by
 * rbc_fx_chord_step; end (2, 19): the pins' motions at t + H as the body assumes them.
 * Returns 0 (modes and end unchanged) if the modes are not finite. */
int rbc_fx_chord_body_step(const double *now, int64_t m, const double *past, const double *taus,
                           double H, int64_t n, double *modes, int64_t k,
                           const rbc_fx_chord_rows *modal_rows, const double *minv,
                           const double *params, const double *gravity, double *end);

/* forces (2, 3) N on the rigid bodies at the pins (inertial, y component 0, without the
 * stretch's spring) from the pins' motions (2, 19) and the modes (2k): the pin rows' residual
 * with eta'' from the modal rows, along e_x and e_z (ChordBody.pin_forces). */
void rbc_fx_chord_pin_forces(const double *motions, const double *modes, int64_t k,
                             const rbc_fx_chord_rows *modal_rows,
                             const rbc_fx_chord_rows *pin_rows, const double *minv,
                             const double *params, const double *gravity, double *forces);

#endif
