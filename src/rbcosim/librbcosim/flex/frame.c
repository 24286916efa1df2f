/* The interface frame over one macro step (see frame.h). */
#include "frame.h"

#include <math.h>
#include <string.h>

#include "fx_vec.h"
#include "polynomial.h"

void rbc_fx_acceleration_polynomial(const double *motion, int64_t m, const double *past_taus,
                                    const double *past, double *coeff) {
    double taus[FX_MAX_PAST + 1], values[(FX_MAX_PAST + 1) * 6];
    taus[0] = 0.0;
    memcpy(values, motion + 13, 6 * sizeof(double));
    for (int64_t i = 0; i < m; i++) {
        taus[i + 1] = past_taus[i];
        memcpy(values + 6 * (i + 1), past + 19 * i + 13, 6 * sizeof(double));
    }
    rbc_polynomial_through(m + 1, 6, taus, values, coeff);
}

void rbc_fx_frame_at(const double *s, const double *coeff, int64_t rows, double tau, double *out) {
    for (int i = 0; i < 3; i++) {
        out[i] = s[FX_R + i] + s[FX_V + i] * tau;
        out[3 + i] = s[FX_V + i];
        out[6 + i] = 0.0;
        out[9 + i] = s[FX_W + i] * tau;
        out[12 + i] = s[FX_W + i];
        out[15 + i] = 0.0;
    }
    double p = 1.0; /* tau^j */
    for (int64_t j = 0; j < rows; j++) {
        double iv = p * tau / (double)(j + 1);
        double ix = iv * tau / (double)(j + 2);
        for (int i = 0; i < 3; i++) {
            double ca = coeff[6 * j + i], cal = coeff[6 * j + 3 + i];
            out[i] += ix * ca;
            out[3 + i] += iv * ca;
            out[6 + i] += p * ca;
            out[9 + i] += ix * cal;
            out[12 + i] += iv * cal;
            out[15 + i] += p * cal;
        }
        p *= tau;
    }
}

void rbc_fx_quaternion_stages(const double *q, const double *w0, const double *wm,
                              const double *w1, double h, double *stages, double *q_new) {
    double rates[16] = {0.0};
    const double *ws[4] = {w0, wm, wm, w1};
    const double lead[4] = {0.0, 0.5 * h, 0.5 * h, h};
    for (int j = 0; j < 4; j++) {
        for (int c = 0; c < 4; c++)
            stages[4 * j + c] = j ? q[c] + lead[j] * rates[4 * (j - 1) + c] : q[c];
        fx_add_quat_rate(ws[j], stages + 4 * j, 1.0, rates + 4 * j);
    }
    for (int c = 0; c < 4; c++)
        q_new[c] = q[c] + (h / 6.0) * (rates[c] + 2.0 * (rates[4 + c] + rates[8 + c])
                                       + rates[12 + c]);
}

void rbc_fx_end_of_step(const double *s, const double *coeff, int64_t rows, double H, int64_t n,
                        double *q) {
    double h = H / (double)n, k0[18], km[18], k1[18], stages[16], next[4];
    memcpy(q, s + FX_Q, 4 * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        rbc_fx_frame_at(s, coeff, rows, (double)i * h, k0);
        rbc_fx_frame_at(s, coeff, rows, ((double)i + 0.5) * h, km);
        rbc_fx_frame_at(s, coeff, rows, (double)(i + 1) * h, k1);
        rbc_fx_quaternion_stages(q, k0 + 12, km + 12, k1 + 12, h, stages, next);
        memcpy(q, next, sizeof next);
    }
    double norm = sqrt(0.0 + q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int c = 0; c < 4; c++) q[c] /= norm;
}

void rbc_fx_write_end_frame(double *s, const double *coeff, int64_t rows, double H,
                            const double *q) {
    double end[18];
    rbc_fx_frame_at(s, coeff, rows, H, end);
    for (int i = 0; i < 3; i++) {
        s[FX_R + i] = end[i];
        s[FX_V + i] = end[3 + i];
        s[FX_W + i] = end[12 + i];
        s[FX_A + i] = end[6 + i];
        s[FX_AL + i] = end[15 + i];
    }
    memcpy(s + FX_Q, q, 4 * sizeof(double));
}

void rbc_fx_set_frame(double *s, const double *motion) {
    memcpy(s + FX_R, motion, 19 * sizeof(double));
    const double *m = motion + 3;
    double norm = sqrt(0.0 + m[0] * m[0] + m[1] * m[1] + m[2] * m[2] + m[3] * m[3]);
    for (int c = 0; c < 4; c++) s[FX_Q + c] /= norm;
}
