/* interface_frame.c: see interface_frame.h. */
#include "interface_frame.h"

#include <math.h>
#include <string.h>

#include "polynomial.h"

void frame_acceleration_polynomial(const double *motion, int m, const double *past_taus,
                                   const double *past, double *coeff)
{
    double taus[3], values[3 * 6];
    taus[0] = 0.0;
    memcpy(values, motion + FR_A, 6 * sizeof(double));
    for (int i = 0; i < m; ++i) {
        taus[i + 1] = past_taus[i];
        memcpy(values + 6 * (i + 1), past + FR_SIZE * i + FR_A, 6 * sizeof(double));
    }
    poly_through(m + 1, 6, taus, values, coeff);
}

void frame_at(const double *s, int n_coeff, const double *coeff, double tau, double *out)
{
    for (int i = 0; i < 3; ++i) {
        out[i] = s[FR_R + i] + s[FR_V + i] * tau;
        out[3 + i] = s[FR_V + i];
        out[6 + i] = 0.0;
        out[9 + i] = s[FR_W + i] * tau;
        out[12 + i] = s[FR_W + i];
        out[15 + i] = 0.0;
    }
    double p = 1.0; /* tau^j */
    for (int j = 0; j < n_coeff; ++j) {
        double iv = p * tau / (j + 1);
        double ix = iv * tau / (j + 2);
        for (int i = 0; i < 3; ++i) {
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

/* out += scale q', q' = [0, w] (x) q / 2 */
static void add_quat_rate(const double *w, const double *q, double scale, double *out)
{
    double c = 0.5 * scale;
    out[0] += c * (-w[0] * q[1] - w[1] * q[2] - w[2] * q[3]);
    out[1] += c * (w[0] * q[0] - w[2] * q[2] + w[1] * q[3]);
    out[2] += c * (w[1] * q[0] + w[2] * q[1] - w[0] * q[3]);
    out[3] += c * (w[2] * q[0] - w[1] * q[1] + w[0] * q[2]);
}

/* One classic RK4 step of q' = [0, w] (x) q / 2 with w at the step's start, middle, end. */
static void quaternion_rk4(double *q, const double *w0, const double *wm, const double *w1,
                           double h)
{
    const double *ws[4] = {w0, wm, wm, w1};
    const double lead[4] = {0.0, 0.5 * h, 0.5 * h, h};
    double rates[4][4] = {{0}};
    for (int j = 0; j < 4; ++j) {
        double stage[4];
        for (int i = 0; i < 4; ++i)
            stage[i] = q[i] + (j ? lead[j] * rates[j - 1][i] : 0.0);
        add_quat_rate(ws[j], stage, 1.0, rates[j]);
    }
    for (int i = 0; i < 4; ++i)
        q[i] += (h / 6.0) * (rates[0][i] + 2.0 * (rates[1][i] + rates[2][i]) + rates[3][i]);
}

void frame_end_orientation(const double *s, int n_coeff, const double *coeff, double H, int n,
                           double *q)
{
    double h = H / n, k0[18], km[18], k1[18];
    memcpy(q, s + FR_Q, 4 * sizeof(double));
    for (int i = 0; i < n; ++i) {
        frame_at(s, n_coeff, coeff, i * h, k0);
        frame_at(s, n_coeff, coeff, (i + 0.5) * h, km);
        frame_at(s, n_coeff, coeff, (i + 1) * h, k1);
        quaternion_rk4(q, k0 + 12, km + 12, k1 + 12, h);
    }
    double norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; ++i)
        q[i] /= norm;
}

void frame_write_end(double *s, int n_coeff, const double *coeff, double H, const double *q)
{
    double end[18];
    frame_at(s, n_coeff, coeff, H, end);
    memcpy(s + FR_R, end, 3 * sizeof(double));
    memcpy(s + FR_Q, q, 4 * sizeof(double));
    memcpy(s + FR_V, end + 3, 3 * sizeof(double));
    memcpy(s + FR_W, end + 12, 3 * sizeof(double));
    memcpy(s + FR_A, end + 6, 3 * sizeof(double));
    memcpy(s + FR_AL, end + 15, 3 * sizeof(double));
}

void frame_set(double *s, const double *motion)
{
    const double *q = motion + FR_Q;
    double norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    memcpy(s, motion, FR_SIZE * sizeof(double));
    for (int i = 0; i < 4; ++i)
        s[FR_Q + i] /= norm;
}

void frame_relative_rotation(const double *q, const double *p, double *theta)
{
    /* r = q (x) conj(p) */
    double r[4] = {
        q[0] * p[0] + q[1] * p[1] + q[2] * p[2] + q[3] * p[3],
        -q[0] * p[1] + q[1] * p[0] - q[2] * p[3] + q[3] * p[2],
        -q[0] * p[2] + q[1] * p[3] + q[2] * p[0] - q[3] * p[1],
        -q[0] * p[3] - q[1] * p[2] + q[2] * p[1] + q[3] * p[0],
    };
    if (r[0] < 0)
        for (int i = 0; i < 4; ++i)
            r[i] = -r[i];
    double s = sqrt(r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
    double f = s < 1e-12 ? 2.0 : 2.0 * atan2(s, r[0]) / s;
    for (int i = 0; i < 3; ++i)
        theta[i] = f * r[1 + i];
}
