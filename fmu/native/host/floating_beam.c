/* floating_beam.c: see floating_beam.h. Each function names the Python function it ports. */
#include "floating_beam.h"

#include <math.h>
#include <string.h>

enum { R = 0, Q = 3, V = 7, W = 10, A = 13, AL = 16 }; /* offsets in a motion (19) */

/* R(q) (3 x 3, row-major), q normalised here (kinematics.rotation_matrix_of). */
static void rotation_matrix_of(const double *q, double *out) {
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    out[0] = 1 - 2 * (y * y + z * z);
    out[1] = 2 * (x * y - w * z);
    out[2] = 2 * (x * z + w * y);
    out[3] = 2 * (x * y + w * z);
    out[4] = 1 - 2 * (x * x + z * z);
    out[5] = 2 * (y * z - w * x);
    out[6] = 2 * (x * z - w * y);
    out[7] = 2 * (y * z + w * x);
    out[8] = 1 - 2 * (x * x + y * y);
}

/* out += scale q', q' = [0, w] (x) q / 2 (kinematics.add_quat_rate). */
static void add_quat_rate(const double *w, const double *q, double scale, double *out) {
    double c = 0.5 * scale;
    out[0] += c * (-w[0] * q[1] - w[1] * q[2] - w[2] * q[3]);
    out[1] += c * (w[0] * q[0] - w[2] * q[2] + w[1] * q[3]);
    out[2] += c * (w[1] * q[0] + w[2] * q[1] - w[0] * q[3]);
    out[3] += c * (w[2] * q[0] - w[1] * q[1] + w[0] * q[2]);
}

void polynomial_through(int m, int n, const double *taus, const double *values, double *c) {
    double d[4 * 6];
    memcpy(d, values, sizeof(double) * m * n);
    for (int j = 1; j < m; ++j) {
        for (int i = m - 1; i > j - 1; --i) {
            for (int l = 0; l < n; ++l) {
                d[i * n + l] = (d[i * n + l] - d[(i - 1) * n + l]) / (taus[i] - taus[i - j]);
            }
        }
    }
    memset(c, 0, sizeof(double) * m * n);
    memcpy(c, d + (m - 1) * n, sizeof(double) * n);
    for (int j = m - 2; j >= 0; --j) {
        for (int i = m - 1; i > 0; --i) {
            for (int l = 0; l < n; ++l) c[i * n + l] = c[(i - 1) * n + l] - taus[j] * c[i * n + l];
        }
        for (int l = 0; l < n; ++l) c[l] = d[j * n + l] - taus[j] * c[l];
    }
}

/* out (18) = [r, v, a, theta, w, alpha] at tau from the frame f and the acceleration
 * polynomial coeff (rows x 6) (frame.frame_at). */
static void frame_at(const double *f, const double *coeff, int rows, double tau, double *out) {
    for (int i = 0; i < 3; ++i) {
        out[i] = f[R + i] + f[V + i] * tau;
        out[3 + i] = f[V + i];
        out[6 + i] = 0.0;
        out[9 + i] = f[W + i] * tau;
        out[12 + i] = f[W + i];
        out[15 + i] = 0.0;
    }
    double p = 1.0;
    for (int j = 0; j < rows; ++j) {
        double iv = p * tau / (j + 1);
        double ix = iv * tau / (j + 2);
        for (int i = 0; i < 3; ++i) {
            double ca = coeff[j * 6 + i], cal = coeff[j * 6 + 3 + i];
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

/* One RK4 step of q' = [0, w] (x) q / 2; the four stage arguments go to stages (4 x 4)
 * (frame.quaternion_stages). */
static void quaternion_stages(const double *q, const double *w0, const double *wm,
                              const double *w1, double h, double *stages, double *q_next) {
    double rates[4][4] = {{0.0}};
    const double *ws[4] = {w0, wm, wm, w1};
    const double lead[4] = {0.0, 0.5 * h, 0.5 * h, h};
    for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
            stages[4 * j + i] = q[i];
            if (j) stages[4 * j + i] += lead[j] * rates[j - 1][i];
        }
        add_quat_rate(ws[j], stages + 4 * j, 1.0, rates[j]);
    }
    for (int i = 0; i < 4; ++i) {
        q_next[i] = q[i] + (h / 6.0) * (rates[0][i] + 2.0 * (rates[1][i] + rates[2][i])
                                        + rates[3][i]);
    }
}

void beam_set_frame(beam_state *s, const double *motion) {
    double sum = 0.0;
    memcpy(s->frame, motion, sizeof s->frame);
    for (int i = 0; i < 4; ++i) sum += motion[Q + i] * motion[Q + i];
    double norm = sqrt(sum);
    for (int i = 0; i < 4; ++i) s->frame[Q + i] /= norm;
}

/* R_s = R(q) axis and the structure-frame w, alpha, b = a - g (floating._frame_inputs). */
static void frame_inputs(const double *q, const double *axis, const double *w, const double *al,
                         const double *a, const double *g, double *rs, double *ws, double *als,
                         double *bs) {
    double rq[9];
    rotation_matrix_of(q, rq);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            rs[3 * i + j] = rq[3 * i] * axis[j] + rq[3 * i + 1] * axis[3 + j]
                + rq[3 * i + 2] * axis[6 + j];
        }
    }
    for (int j = 0; j < 3; ++j) {
        ws[j] = rs[j] * w[0] + rs[3 + j] * w[1] + rs[6 + j] * w[2];
        als[j] = rs[j] * al[0] + rs[3 + j] * al[1] + rs[6 + j] * al[2];
        bs[j] = (rs[j] * (a[0] - g[0]) + rs[3 + j] * (a[1] - g[1]) + rs[6 + j] * (a[2] - g[2]));
    }
}

/* out (k) = eta'' = W z (floating.modal_acceleration). */
static void modal_acceleration(const beam_model *m, const double *ws, const double *als,
                               const double *bs, const double *eta, const double *etad,
                               double *out) {
    int k = m->k, cols = 20 * k + 15;
    int o_b = 2 * k, o_al = 2 * k + 3, o_ww = 2 * k + 6;
    int o_g2 = 2 * k + 15, o_g1 = 5 * k + 15, o_h = 8 * k + 15, o_gb = 17 * k + 15;
    for (int r = 0; r < k; ++r) {
        const double *wr = m->ode + r * cols;
        double acc = 0.0;
        for (int l = 0; l < k; ++l) acc += wr[l] * eta[l] + wr[k + l] * etad[l];
        for (int i = 0; i < 3; ++i) {
            acc += wr[o_b + i] * bs[i] + wr[o_al + i] * als[i];
            double wi = ws[i], ai = als[i], bi = bs[i];
            for (int l = 0; l < k; ++l) {
                acc += (wr[o_g2 + i * k + l] * wi * etad[l] + wr[o_g1 + i * k + l] * ai * eta[l]
                        + wr[o_gb + i * k + l] * bi * eta[l]);
            }
            for (int j = 0; j < 3; ++j) {
                double c = wi * ws[j];
                int mm = 3 * i + j;
                acc += wr[o_ww + mm] * c;
                for (int l = 0; l < k; ++l) acc += wr[o_h + mm * k + l] * c * eta[l];
            }
        }
        out[r] = acc;
    }
}

int beam_step(const beam_model *m, beam_state *s, const double *motion, int n_past,
              const double *past_taus, const double *past, double H) {
    int k = m->k, n = m->micro_steps;
    double taus[3], values[3 * 6], coeff[3 * 6];
    beam_set_frame(s, motion);
    /* frame.acceleration_polynomial: through the motion's accelerations and the past ones */
    taus[0] = 0.0;
    memcpy(values, motion + A, 6 * sizeof(double));
    for (int i = 0; i < n_past; ++i) {
        taus[i + 1] = past_taus[i];
        memcpy(values + 6 * (i + 1), past + 19 * i + A, 6 * sizeof(double));
    }
    polynomial_through(n_past + 1, 6, taus, values, coeff);
    double h = H / n, q[4], q_next[4];
    double y[2 * BEAM_MAXK], ya[2 * BEAM_MAXK], rates[4][2 * BEAM_MAXK];
    double rs[9], ws[3], als[3], bs[3], kin[3][18], stages[16];
    const double lead[4] = {0.0, 0.5 * h, 0.5 * h, h};
    const int at[4] = {0, 1, 1, 2};
    memcpy(q, s->frame + Q, sizeof q);
    memcpy(y, s->y, 2 * k * sizeof(double));
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < 3; ++j) {
            frame_at(s->frame, coeff, n_past + 1, (i + 0.5 * j) * h, kin[j]);
        }
        quaternion_stages(q, kin[0] + 12, kin[1] + 12, kin[2] + 12, h, stages, q_next);
        for (int j = 0; j < 4; ++j) {
            for (int l = 0; l < 2 * k; ++l) ya[l] = j ? y[l] + lead[j] * rates[j - 1][l] : y[l];
            const double *f = kin[at[j]];
            frame_inputs(stages + 4 * j, m->axis, f + 12, f + 15, f + 6, m->gravity, rs, ws, als,
                         bs);
            memcpy(rates[j], ya + k, k * sizeof(double));
            modal_acceleration(m, ws, als, bs, ya, ya + k, rates[j] + k);
        }
        for (int l = 0; l < 2 * k; ++l) {
            y[l] += (h / 6.0) * (rates[0][l] + 2.0 * (rates[1][l] + rates[2][l]) + rates[3][l]);
        }
        memcpy(q, q_next, sizeof q);
    }
    double sum = 0.0, end[18];
    for (int i = 0; i < 4; ++i) sum += q[i] * q[i];
    double norm = sqrt(sum);
    int finite = isfinite(norm) && norm > 0.0;
    for (int l = 0; l < 2 * k; ++l) finite = finite && isfinite(y[l]);
    if (!finite) return 0;
    /* frame.write_end_frame */
    frame_at(s->frame, coeff, n_past + 1, H, end);
    memcpy(s->frame + R, end, 3 * sizeof(double));
    for (int i = 0; i < 4; ++i) s->frame[Q + i] = q[i] / norm;
    memcpy(s->frame + V, end + 3, 3 * sizeof(double));
    memcpy(s->frame + W, end + 12, 3 * sizeof(double));
    memcpy(s->frame + A, end + 6, 3 * sizeof(double));
    memcpy(s->frame + AL, end + 15, 3 * sizeof(double));
    memcpy(s->y, y, 2 * k * sizeof(double));
    return 1;
}

/* out (rows) = mat (rows x cols) x (linalg.matvec). */
static void matvec(const double *mat, int rows, int cols, const double *x, double *out) {
    for (int i = 0; i < rows; ++i) {
        double acc = 0.0;
        for (int j = 0; j < cols; ++j) acc += mat[i * cols + j] * x[j];
        out[i] = acc;
    }
}

/* out += scale rotation_dofs(b [v]x) (floating._add_rotation_dofs_of_product). */
static void add_rotation_dofs_of_product(const double b[3][3], const double *v, double scale,
                                         double *out) {
    double p21 = b[2][2] * v[0] - b[2][0] * v[2];
    double p12 = b[1][0] * v[1] - b[1][1] * v[0];
    double p20 = b[2][1] * v[2] - b[2][2] * v[1];
    double p10 = b[1][1] * v[2] - b[1][2] * v[1];
    out[0] += scale * 0.5 * (p21 - p12);
    out[1] -= scale * p20;
    out[2] += scale * p10;
}

void beam_wrench(const beam_model *m, const double *frame, const double *y, double *out) {
    int k = m->k, nn = m->n_nodes, dof = 6 * nn;
    const double *eta = y, *etad = y + k;
    double rs[9], ws[3], als[3], bs[3], big_a[3][3], wx[3][3] = {{0.0}};
    frame_inputs(frame + Q, m->axis, frame + W, frame + AL, frame + A, m->gravity, rs, ws, als,
                 bs);
    wx[0][1] = -ws[2], wx[0][2] = ws[1], wx[1][2] = -ws[0];
    wx[1][0] = ws[2], wx[2][0] = -ws[1], wx[2][1] = ws[0];
    double w2 = ws[0] * ws[0] + ws[1] * ws[1] + ws[2] * ws[2];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) big_a[i][j] = ws[i] * ws[j] - (i == j ? w2 : 0.0);
    }
    big_a[0][1] -= als[2];
    big_a[0][2] += als[1];
    big_a[1][2] -= als[0];
    big_a[1][0] += als[2];
    big_a[2][0] -= als[1];
    big_a[2][1] += als[0];
    double etadd[BEAM_MAXK], u[BEAM_MAXDOF], ud[BEAM_MAXDOF], udd[BEAM_MAXDOF];
    double acc[BEAM_MAXDOF], f[BEAM_MAXDOF];
    modal_acceleration(m, ws, als, bs, eta, etad, etadd);
    matvec(m->modes, dof, k, eta, u);
    matvec(m->modes, dof, k, etad, ud);
    matvec(m->modes, dof, k, etadd, udd);
    for (int i = 0; i < nn; ++i) {
        int o = 6 * i;
        double lever[3];
        for (int j = 0; j < 3; ++j) lever[j] = m->nodes[3 * i + j] + u[o + j];
        for (int j = 0; j < 3; ++j) {
            acc[o + j] = (bs[j] + big_a[j][0] * lever[0] + big_a[j][1] * lever[1]
                          + big_a[j][2] * lever[2] + udd[o + j]
                          + 2.0 * (wx[j][0] * ud[o] + wx[j][1] * ud[o + 1] + wx[j][2] * ud[o + 2]));
        }
        acc[o + 3] = 0.5 * (big_a[2][1] - big_a[1][2]) + udd[o + 3];
        acc[o + 4] = -big_a[2][0] + udd[o + 4];
        acc[o + 5] = big_a[1][0] + udd[o + 5];
        add_rotation_dofs_of_product((const double(*)[3])wx, ud + o + 3, 2.0, acc + o + 3);
        add_rotation_dofs_of_product((const double(*)[3])big_a, u + o + 3, 1.0, acc + o + 3);
    }
    matvec(m->mass, dof, dof, acc, f);
    double force[3], moment[3], jw[3], se[3], sed[3], sedd[3], first[3];
    matvec(m->spin, 3, 3, ws, jw);
    matvec(m->modal_first, 3, k, eta, se);
    matvec(m->modal_first, 3, k, etad, sed);
    matvec(m->modal_first, 3, k, etadd, sedd);
    for (int j = 0; j < 3; ++j) first[j] = m->first_moment[j] + se[j];
    for (int j = 0; j < 3; ++j) {
        force[j] = -(m->total_mass * bs[j] + big_a[j][0] * first[0] + big_a[j][1] * first[1]
                     + big_a[j][2] * first[2] + sedd[j]
                     + 2.0 * (wx[j][0] * sed[0] + wx[j][1] * sed[1] + wx[j][2] * sed[2]));
    }
    moment[0] = -(ws[1] * jw[2] - ws[2] * jw[1]);
    moment[1] = -(ws[2] * jw[0] - ws[0] * jw[2]);
    moment[2] = -(ws[0] * jw[1] - ws[1] * jw[0]);
    for (int i = 0; i < nn; ++i) {
        int o = 6 * i;
        double x = m->nodes[3 * i] + u[o], yy = m->nodes[3 * i + 1] + u[o + 1];
        double z = m->nodes[3 * i + 2] + u[o + 2];
        moment[0] -= yy * f[o + 2] - z * f[o + 1] + f[o + 3];
        moment[1] -= z * f[o] - x * f[o + 2] + f[o + 4];
        moment[2] -= x * f[o + 1] - yy * f[o] + f[o + 5];
    }
    for (int i = 0; i < 6; ++i) out[i] = 0.0;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            out[i] += rs[3 * i + j] * force[j];
            out[3 + i] += rs[3 * i + j] * moment[j];
        }
    }
}

void beam_added_mass(const beam_model *m, const beam_state *s, double *out) {
    double frame[19], base[6], col[6][6];
    memcpy(frame, s->frame, sizeof frame);
    for (int i = 0; i < 6; ++i) frame[A + i] = 0.0;
    beam_wrench(m, frame, s->y, base);
    for (int i = 0; i < 6; ++i) {
        double w[6];
        for (int j = 0; j < 6; ++j) frame[A + j] = 0.0;
        frame[A + i] = 1.0;
        beam_wrench(m, frame, s->y, w);
        for (int r = 0; r < 6; ++r) col[i][r] = base[r] - w[r];
    }
    for (int r = 0; r < 6; ++r) {
        for (int c = 0; c < 6; ++c) out[6 * r + c] = 0.5 * (col[c][r] + col[r][c]);
    }
}

void point_frame_mass(const double *mass, const double *q, int inverse, double *out) {
    double rot[9], t6[36] = {0.0}, left[36];
    rotation_matrix_of(q, rot);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) t6[6 * i + j] = t6[6 * (3 + i) + 3 + j] = rot[3 * i + j];
    }
    /* inverse: (T M) T^T, else (T^T M) T */
    for (int i = 0; i < 6; ++i) {
        for (int j = 0; j < 6; ++j) {
            double acc = 0.0;
            for (int l = 0; l < 6; ++l) {
                acc += (inverse ? t6[6 * i + l] : t6[6 * l + i]) * mass[6 * l + j];
            }
            left[6 * i + j] = acc;
        }
    }
    for (int i = 0; i < 6; ++i) {
        for (int j = 0; j < 6; ++j) {
            double acc = 0.0;
            for (int l = 0; l < 6; ++l) {
                acc += left[6 * i + l] * (inverse ? t6[6 * j + l] : t6[6 * l + j]);
            }
            out[6 * i + j] = acc;
        }
    }
}

void beam_output_node(const beam_model *m, const beam_state *s, double *out) {
    double rq[9], rot[9], local[3];
    rotation_matrix_of(s->frame + Q, rq);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            rot[3 * i + j] = rq[3 * i] * m->axis[j] + rq[3 * i + 1] * m->axis[3 + j]
                + rq[3 * i + 2] * m->axis[6 + j];
        }
    }
    for (int i = 0; i < 3; ++i) {
        double acc = 0.0;
        for (int l = 0; l < m->k; ++l) acc += m->out_rows[i * m->k + l] * s->y[l];
        local[i] = m->out_position[i] + acc;
    }
    for (int i = 0; i < 3; ++i) {
        out[i] = s->frame[R + i] + local[0] * rot[3 * i] + local[1] * rot[3 * i + 1]
            + local[2] * rot[3 * i + 2];
    }
}
