/* Interface points of a co-simulation: outputs, wrench inputs, added mass (see maximal.h).
 * Inside a macro step the wrench at point k is W(t) = sum_j c_kj (t - t0)^j (+ K_x dx + K_v dv
 * with interface-Jacobian feedback), inertial or turned by the body's attitude when given in the
 * body frame.  Arithmetic in a fixed order (no FMA contraction). */
#include "maximal.h"
#include "rotation.h"

#include <string.h>

/* points whose last rotated added mass is kept (rbc_inertial_added_mass), per thread */
#define ADDED_MASS_CACHE 8
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define RBC_THREAD_LOCAL _Thread_local
#elif defined(__GNUC__)
#define RBC_THREAD_LOCAL __thread
#else
#error "rigid/interface.c needs C11 _Thread_local or GCC's __thread"
#endif

#define ROW3(a, k) ((a)->d + 3 * (int64_t)(k))
#define ROW9(a, k) ((a)->d + 9 * (int64_t)(k))

/* Body quaternion (x) the point's relative axes, as stored (not normalised). */
static void point_q(const rbc_points *pts, const rbc_frames *fr, int64_t k, double *q) {
    int64_t b = pts->body.i[k];
    q_mul(fr->q.d + 4 * b, pts->geometry.d + 7 * k + 3, q);
}

void rbc_point_outputs(const rbc_points *pts, const rbc_frames *fr, double *out, int64_t stride) {
    for (int64_t k = 0; k < pts->body.size; k++) {
        int64_t b = pts->body.i[k];
        double *o = out + stride * k;
        rbc_v3 rho = m3_mul(ROW9(&fr->R, b), v3_at(pts->geometry.d + 7 * k));
        rbc_v3 vel = v3_cross(v3_at(ROW3(&fr->wi, b)), rho);
        for (int c = 0; c < 3; c++) {
            o[c] = fr->r.d[3 * b + c] + rho.x[c];
            o[7 + c] = fr->v.d[3 * b + c] + vel.x[c];
            o[10 + c] = fr->wi.d[3 * b + c];
        }
        point_q(pts, fr, k, o + 3);
        q_normalize(o + 3);
    }
}

void rbc_point_accelerations(const rbc_points *pts, const rbc_frames *fr, const double *acc,
                             double *out) {
    for (int64_t k = 0; k < pts->body.size; k++) {
        int64_t b = pts->body.i[k];
        const double *R = ROW9(&fr->R, b), *ab = acc + 6 * (b - 1);
        rbc_v3 rho = m3_mul(R, v3_at(pts->geometry.d + 7 * k));
        rbc_v3 alpha = m3_mul(R, v3_at(ab + 3));
        rbc_v3 w = v3_at(ROW3(&fr->wi, b));
        rbc_v3 a = v3_add(v3_add(v3_at(ab), v3_cross(alpha, rho)), v3_cross(w, v3_cross(w, rho)));
        for (int c = 0; c < 3; c++) {
            out[6 * k + c] = a.x[c];
            out[6 * k + 3 + c] = alpha.x[c];
        }
    }
}

/* K_x dx + K_v dv into the wrenches: d of the point outputs since t0, the rotation as the
 * small inertial rotation vector 2 vec(q (x) q_ref*) (sign of q0 >= 0). */
static void add_feedback(const rbc_points *pts, const rbc_frames *fr, double *out,
                         int64_t stride) {
    for (int64_t k = 0; k < pts->body.size; k++) {
        int64_t b = pts->body.i[k];
        const double *ref = pts->reference.d + 13 * k, *geo = pts->geometry.d + 7 * k;
        rbc_v3 rho = m3_mul(ROW9(&fr->R, b), v3_at(geo));
        rbc_v3 wi = v3_at(ROW3(&fr->wi, b));
        rbc_v3 pos = v3_add(v3_at(ROW3(&fr->r, b)), rho);
        rbc_v3 vel = v3_add(v3_at(ROW3(&fr->v, b)), v3_cross(wi, rho));
        double q[4], d[4];
        q_mul(fr->q.d + 4 * b, geo + 3, q);
        double nq = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        double qn[4] = {q[0] / nq, q[1] / nq, q[2] / nq, q[3] / nq};
        double qr[4] = {ref[3], -ref[4], -ref[5], -ref[6]};
        q_mul(qn, qr, d);
        double sign = d[0] < 0 ? -2.0 : 2.0;
        double delta[12] = {pos.x[0] - ref[0], pos.x[1] - ref[1], pos.x[2] - ref[2],
                            sign * d[1], sign * d[2], sign * d[3],
                            vel.x[0] - ref[7], vel.x[1] - ref[8], vel.x[2] - ref[9],
                            wi.x[0] - ref[10], wi.x[1] - ref[11], wi.x[2] - ref[12]};
        const double *kx = pts->gains.d + 72 * k, *kv = kx + 36;
        for (int r = 0; r < 6; r++) {
            double s = 0.0;
            for (int c = 0; c < 6; c++) s += kx[6 * r + c] * delta[c] + kv[6 * r + c] * delta[6 + c];
            out[stride * k + r] += s;
        }
    }
}

void rbc_point_wrenches(const rbc_points *pts, double t, const rbc_frames *fr, double *out,
                        int64_t stride) {
    double tau = t - pts->t0.d[0];
    int64_t order = pts->poly.shape[1];
    for (int64_t k = 0; k < pts->body.size; k++) {
        const double *P = pts->poly.d + 6 * order * k;
        for (int c = 0; c < 6; c++) {
            double s = P[6 * (order - 1) + c];
            for (int64_t j = order - 2; j >= 0; j--) s = P[6 * j + c] + tau * s;
            out[stride * k + c] = s;
        }
    }
    if (pts->switches.i[0]) add_feedback(pts, fr, out, stride);
    for (int64_t k = 0; k < pts->body.size; k++)
        if (RBC_I2(&pts->flags, k, 0)) {
            const double *R = ROW9(&fr->R, pts->body.i[k]);
            double *o = out + stride * k;
            rbc_v3 f = m3_mul(R, v3_at(o)), m = m3_mul(R, v3_at(o + 3));
            v3_store(f, o);
            v3_store(m, o + 3);
        }
}

void rbc_add_point_loads(const rbc_points *pts, const rbc_frames *fr, const double *wrenches,
                         double *force, double *torque, int64_t stride) {
    for (int64_t k = 0; k < pts->body.size; k++) {
        int64_t b = pts->body.i[k];
        const double *W = wrenches + 6 * k;
        rbc_v3 tmp = v3_cross(m3_mul(ROW9(&fr->R, b), v3_at(pts->geometry.d + 7 * k)), v3_at(W));
        for (int c = 0; c < 3; c++) {
            force[stride * (b - 1) + c] += W[c];
            torque[stride * (b - 1) + c] += W[3 + c] + tmp.x[c];
        }
    }
}

void rbc_inertial_added_mass(const rbc_points *pts, const rbc_frames *fr, int64_t k, double *out) {
    const double *ma = pts->added.d + 36 * k;
    if (!RBC_I2(&pts->flags, k, 1)) {
        for (int r = 0; r < 36; r++) out[r] = ma[r];
        return;
    }
    double q[4], Rp[9];
    point_q(pts, fr, k, q);
    /* The result is a function of q and M_a only, and a step asks for it several times at the
     * same frames (accelerations, then the stage power or the point state): the last inputs
     * and result per point slot are kept (per thread), and an exact match of the bits returns
     * the same bits without the 324 products. */
    static RBC_THREAD_LOCAL struct {
        double key[40], out[36];
        int valid;
    } cache[ADDED_MASS_CACHE];
    int slot = (int)(k % ADDED_MASS_CACHE);
    double key[40];
    memcpy(key, q, sizeof q);
    memcpy(key + 4, ma, 36 * sizeof(double));
    if (cache[slot].valid && memcmp(cache[slot].key, key, sizeof key) == 0) {
        memcpy(out, cache[slot].out, 36 * sizeof(double));
        return;
    }
    q_matrix(q, Rp);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            double s = 0.0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    s += Rp[3 * (r % 3) + i] * ma[6 * (3 * (r / 3) + i) + 3 * (c / 3) + j]
                         * Rp[3 * (c % 3) + j];
            out[6 * r + c] = s;
        }
    memcpy(cache[slot].key, key, sizeof key);
    memcpy(cache[slot].out, out, 36 * sizeof(double));
    cache[slot].valid = 1;
}
