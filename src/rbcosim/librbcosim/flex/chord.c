/* The chord-frame beam (see chord.h). */
#include "chord.h"

#include <math.h>
#include <string.h>

#include "frame.h"
#include "fx_vec.h"

void rbc_fx_chord_frame_inputs(const double *pa, const double *pb, const double *gravity,
                               double *out) {
    double d0 = pb[0] - pa[0], d1 = pb[2] - pa[2];
    double dd0 = pb[3] - pa[3], dd1 = pb[5] - pa[5];
    double ddd0 = pb[6] - pa[6], ddd1 = pb[8] - pa[8];
    double ell = hypot(d0, d1);
    double ex0 = d0 / ell, ex1 = d1 / ell;
    double ez0 = -ex1, ez1 = ex0;
    double sd = dd0 * ex0 + dd1 * ex1;
    double w = -(dd0 * ez0 + dd1 * ez1) / ell;
    double sdd = ddd0 * ex0 + ddd1 * ex1 + ell * w * w;
    double alpha = -(ddd0 * ez0 + ddd1 * ez1 + 2.0 * sd * w) / ell;
    double ax = pa[6] - gravity[0], az = pa[8] - gravity[2];
    out[0] = ex0, out[1] = ex1, out[2] = ell, out[3] = sd, out[4] = sdd;
    out[5] = w, out[6] = alpha;
    out[7] = ax * ex0 + az * ex1, out[8] = ax * ez0 + az * ez1;
}

void rbc_fx_chord_residual(const rbc_fx_chord_rows *rows, int64_t k, const double *params,
                           const double *inputs, const double *eta, const double *etad,
                           const double *etadd, double *out) {
    double length = params[0], ea_l = params[1], rho_a = params[2];
    double w = inputs[5], al = inputs[6], sdd = inputs[4];
    double y[FX_MAX_MODES + 1], yd[FX_MAX_MODES + 1], ydd[FX_MAX_MODES + 1];
    y[0] = inputs[2] - length, yd[0] = inputs[3], ydd[0] = sdd;
    memcpy(y + 1, eta, (size_t)k * sizeof(double));
    memcpy(yd + 1, etad, (size_t)k * sizeof(double));
    memcpy(ydd + 1, etadd, (size_t)k * sizeof(double));
    /* axial force N(x) = n0 + n1 (x - L/2)/L + n2 (x²/2 - L²/6)/L² (rbcosim.flex.modelling.chord) */
    double n0 = ea_l * y[0];
    double n1 = rho_a * inputs[7];
    double n2 = rho_a * (sdd / length - w * w);
    int64_t nr = rows->n_rows, c1 = k + 1;
    for (int64_t r = 0; r < nr; r++) {
        double acc = (rows->load_b[2 * r] * inputs[7] + rows->load_b[2 * r + 1] * inputs[8]
                      + al * rows->load_alpha[r] - w * w * rows->load_w2[r]);
        for (int64_t c = 0; c < c1; c++)
            acc += (rows->mass[r * c1 + c] * (ydd[c] - w * w * y[c])
                    + rows->gyro[r * c1 + c] * (2.0 * w * yd[c] + al * y[c])
                    + rows->stiffness[r * c1 + c] * y[c]);
        for (int64_t c = 0; c < k; c++)
            acc += (n0 * rows->geometric[r * k + c] + n1 * rows->geometric[(nr + r) * k + c]
                    + n2 * rows->geometric[(2 * nr + r) * k + c]) * eta[c];
        out[r] = acc;
    }
}

void rbc_fx_chord_modal_acceleration(const rbc_fx_chord_rows *rows, int64_t k, const double *minv,
                                     const double *params, const double *inputs,
                                     const double *eta, const double *etad, double *out) {
    double zero[FX_MAX_MODES] = {0.0}, r[FX_MAX_MODES + 1];
    rbc_fx_chord_residual(rows, k, params, inputs, eta, etad, zero, r);
    for (int64_t i = 0; i < k; i++) {
        out[i] = 0.0;
        for (int64_t j = 0; j < k; j++) out[i] -= minv[i * k + j] * r[j];
    }
}

static void pins_at(const double *pins, int64_t stride, const double *coeffs, int64_t rows,
                    double tau, const double *gravity, double *inputs) {
    double out[2][18];
    for (int i = 0; i < 2; i++)
        rbc_fx_frame_at(pins + i * stride, coeffs + i * rows * 6, rows, tau, out[i]);
    rbc_fx_chord_frame_inputs(out[0], out[1], gravity, inputs);
}

int rbc_fx_chord_step(const double *pins, int64_t pin_stride, const double *coeffs, int64_t rows,
                      double H, int64_t n, double *modes, int64_t k,
                      const rbc_fx_chord_rows *modal_rows, const double *minv,
                      const double *params, const double *gravity) {
    int64_t d = 2 * k;
    double h = H / (double)n;
    double y[2 * FX_MAX_MODES], ya[2 * FX_MAX_MODES], rates[4 * 2 * FX_MAX_MODES];
    double f0[9], fm[9], f1[9];
    const double lead[4] = {0.0, 0.5 * h, 0.5 * h, h};
    memcpy(y, modes, (size_t)d * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        pins_at(pins, pin_stride, coeffs, rows, (double)i * h, gravity, f0);
        pins_at(pins, pin_stride, coeffs, rows, ((double)i + 0.5) * h, gravity, fm);
        pins_at(pins, pin_stride, coeffs, rows, (double)(i + 1) * h, gravity, f1);
        for (int j = 0; j < 4; j++) {
            for (int64_t c = 0; c < d; c++)
                ya[c] = j ? y[c] + lead[j] * rates[(j - 1) * d + c] : y[c];
            const double *f = j == 0 ? f0 : (j == 3 ? f1 : fm);
            memcpy(rates + j * d, ya + k, (size_t)k * sizeof(double));
            rbc_fx_chord_modal_acceleration(modal_rows, k, minv, params, f, ya, ya + k,
                                            rates + j * d + k);
        }
        for (int64_t c = 0; c < d; c++)
            y[c] += (h / 6.0) * (rates[c] + 2.0 * (rates[d + c] + rates[2 * d + c])
                                 + rates[3 * d + c]);
    }
    if (!rbc_all_finite(y, d)) return 0;
    memcpy(modes, y, (size_t)d * sizeof(double));
    return 1;
}

int rbc_fx_chord_body_step(const double *now, int64_t m, const double *past, const double *taus,
                           double H, int64_t n, double *modes, int64_t k,
                           const rbc_fx_chord_rows *modal_rows, const double *minv,
                           const double *params, const double *gravity, double *end) {
    double pins[2 * FX_ETA] = {0}, coeffs[2 * 6 * (FX_MAX_PAST + 1)], rows[19 * FX_MAX_PAST];
    for (int i = 0; i < 2; i++) {
        rbc_fx_set_frame(pins + FX_ETA * i, now + 19 * i);
        for (int64_t j = 0; j < m; j++)
            memcpy(rows + 19 * j, past + 19 * (2 * j + i), 19 * sizeof(double));
        rbc_fx_acceleration_polynomial(now + 19 * i, m, taus, rows, coeffs + 6 * (m + 1) * i);
    }
    if (!rbc_fx_chord_step(pins, FX_ETA, coeffs, m + 1, H, n, modes, k, modal_rows, minv, params,
                           gravity))
        return 0;
    for (int i = 0; i < 2; i++) {
        const double *s = pins + FX_ETA * i, *c = coeffs + 6 * (m + 1) * i;
        double out[18], *e = end + 19 * i;
        rbc_fx_frame_at(s, c, m + 1, H, out);
        memcpy(e, out, 3 * sizeof(double));           /* position */
        memcpy(e + 7, out + 3, 3 * sizeof(double));   /* velocity */
        rbc_fx_end_of_step(s, c, m + 1, H, n, e + 3); /* orientation */
        memcpy(e + 10, out + 12, 3 * sizeof(double)); /* angular velocity */
        memcpy(e + 13, out + 6, 3 * sizeof(double));  /* acceleration */
        memcpy(e + 16, out + 15, 3 * sizeof(double)); /* angular acceleration */
    }
    return 1;
}

void rbc_fx_chord_pin_forces(const double *motions, const double *modes, int64_t k,
                             const rbc_fx_chord_rows *modal_rows,
                             const rbc_fx_chord_rows *pin_rows, const double *minv,
                             const double *params, const double *gravity, double *forces) {
    static const int columns[9] = {0, 1, 2, 7, 8, 9, 13, 14, 15}; /* r, v, a */
    double pa[9], pb[9], inputs[9], etadd[FX_MAX_MODES], on_beam[4];
    for (int c = 0; c < 9; c++) {
        pa[c] = motions[columns[c]];
        pb[c] = motions[19 + columns[c]];
    }
    rbc_fx_chord_frame_inputs(pa, pb, gravity, inputs);
    rbc_fx_chord_modal_acceleration(modal_rows, k, minv, params, inputs, modes, modes + k, etadd);
    rbc_fx_chord_residual(pin_rows, k, params, inputs, modes, modes + k, etadd, on_beam);
    const double ex[2] = {inputs[0], inputs[1]}, ez[2] = {-inputs[1], inputs[0]};
    for (int p = 0; p < 2; p++) {
        double *f = forces + 3 * p;
        f[0] = -(on_beam[2 * p] * ex[0] + on_beam[2 * p + 1] * ez[0]);
        f[1] = 0.0;
        f[2] = -(on_beam[2 * p] * ex[1] + on_beam[2 * p + 1] * ez[1]);
    }
}
