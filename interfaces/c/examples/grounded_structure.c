/* grounded_structure.c: see grounded_structure.h. */
#include "grounded_structure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dense.h"
#include "interface_frame.h"
#include "matrix_market.h"

#define DEGREE 4 /* of u_b(tau): positions through twice-integrated quadratic accelerations */

struct gs_structure {
    int nb, ni, micro;
    int comps[6];
    double *w;     /* [ni][2 ni + 3 nb]: x'' = W [x, x', u_b, u_b', u_b''] */
    double *fb;    /* [nb][3 nb + 3 ni]: f_b = FB [u_b, u_b', u_b'', x, x', x''] */
    double *shift; /* [ni][nb]: M_ii^-1 M_ib */
    double *prop;  /* [2 ni][2 ni + 5 nb]: y(H) = P [y(0); u]; NULL until the first step */
    double prop_h; /* s, the step P is for */
    /* scratch of the calls (so they allocate nothing; not for concurrent calls) */
    double *scratch_in;  /* [2 ni + 5 nb]: the propagator's [y; u], or the wrench's inputs */
    double *scratch_out; /* [2 ni + 3 nb]: the propagated y, shifts, the wrench's ODE row */
    /* state */
    double t;
    double frame[FR_SIZE];
    double pref[3], qref[4];
    double *y; /* [2 ni]: x, x' */
};

static const char *const COMPONENTS[6] = {"x", "y", "z", "rx", "ry", "rz"};

int gs_component_index(const char *name)
{
    for (int i = 0; i < 6; ++i)
        if (!strcmp(name, COMPONENTS[i]))
            return i;
    return -1;
}

int gs_n_boundary(const gs_structure *s) { return s->nb; }
int gs_n_interior(const gs_structure *s) { return s->ni; }
double gs_time(const gs_structure *s) { return s->t; }
const double *gs_interior(const gs_structure *s) { return s->y; }

void gs_destroy(gs_structure *s)
{
    if (!s)
        return;
    free(s->w);
    free(s->fb);
    free(s->shift);
    free(s->prop);
    free(s->y);
    free(s->scratch_in);
    free(s->scratch_out);
    free(s);
}

/* dst[r][c0 + j] = src[r0 + r][s0 + j] for a rows x cols block of an n x n matrix */
static void put_block(double *dst, int dst_cols, int c0, const double *src, int n, int r0,
                      int s0, int rows, int cols, double factor)
{
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < cols; ++j)
            dst[(size_t)r * dst_cols + c0 + j] = src ? factor * src[(size_t)(r0 + r) * n + s0 + j]
                                                     : 0.0;
}

/* W, FB and the regrounding shift from the physical matrices. */
static int build_operators(gs_structure *s, int n, const double *m, const double *k,
                           const double *c)
{
    int nb = s->nb, ni = s->ni, wc = 2 * ni + 3 * nb, fc = 3 * nb + 3 * ni;
    s->w = calloc((size_t)ni * wc + 1, sizeof(double));
    s->fb = calloc((size_t)nb * fc, sizeof(double));
    s->shift = calloc((size_t)ni * nb + 1, sizeof(double));
    s->y = calloc((size_t)2 * ni + 1, sizeof(double));
    s->scratch_in = calloc((size_t)fc + 2 * nb, sizeof(double)); /* >= 2 ni + 5 nb */
    s->scratch_out = calloc((size_t)wc, sizeof(double));         /* >= 2 ni */
    double *mii = calloc((size_t)ni * ni + 1, sizeof(double));
    double *mii2 = calloc((size_t)ni * ni + 1, sizeof(double));
    int rc = -1;
    if (!s->w || !s->fb || !s->shift || !s->y || !s->scratch_in || !s->scratch_out || !mii ||
        !mii2)
        goto done;
    /* FB = [K_bb, C_bb, M_bb, K_bi, C_bi, M_bi] */
    put_block(s->fb, fc, 0, k, n, 0, 0, nb, nb, 1.0);
    put_block(s->fb, fc, nb, c, n, 0, 0, nb, nb, 1.0);
    put_block(s->fb, fc, 2 * nb, m, n, 0, 0, nb, nb, 1.0);
    put_block(s->fb, fc, 3 * nb, k, n, 0, nb, nb, ni, 1.0);
    put_block(s->fb, fc, 3 * nb + ni, c, n, 0, nb, nb, ni, 1.0);
    put_block(s->fb, fc, 3 * nb + 2 * ni, m, n, 0, nb, nb, ni, 1.0);
    if (ni == 0) {
        rc = 0;
        goto done;
    }
    /* W = -M_ii^-1 [K_ii, C_ii, K_ib, C_ib, M_ib] */
    put_block(s->w, wc, 0, k, n, nb, nb, ni, ni, -1.0);
    put_block(s->w, wc, ni, c, n, nb, nb, ni, ni, -1.0);
    put_block(s->w, wc, 2 * ni, k, n, nb, 0, ni, nb, -1.0);
    put_block(s->w, wc, 2 * ni + nb, c, n, nb, 0, ni, nb, -1.0);
    put_block(s->w, wc, 2 * ni + 2 * nb, m, n, nb, 0, ni, nb, -1.0);
    put_block(mii, ni, 0, m, n, nb, nb, ni, ni, 1.0);
    memcpy(mii2, mii, sizeof(double) * (size_t)ni * ni);
    put_block(s->shift, nb, 0, m, n, nb, 0, ni, nb, 1.0);
    if (dense_solve(ni, wc, mii, s->w) || dense_solve(ni, nb, mii2, s->shift))
        goto done;
    rc = 0;
done:
    free(mii);
    free(mii2);
    return rc;
}

gs_structure *gs_create(int n, const double *m, const double *k, const double *c, int nb,
                        const int *comps, int micro_steps, char *err, size_t err_size)
{
    if (nb < 1 || nb > 6 || nb > n || micro_steps < 1) {
        snprintf(err, err_size, "structure: need 1 <= n_boundary <= min(6, n) and micro_steps "
                 ">= 1 (n = %d, n_boundary = %d, micro_steps = %d)", n, nb, micro_steps);
        return NULL;
    }
    gs_structure *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "structure: no memory");
        return NULL;
    }
    s->nb = nb;
    s->ni = n - nb;
    s->micro = micro_steps;
    for (int i = 0; i < nb; ++i) {
        if (comps[i] < 0 || comps[i] > 5) {
            snprintf(err, err_size, "structure: boundary component %d out of 0..5", comps[i]);
            gs_destroy(s);
            return NULL;
        }
        s->comps[i] = comps[i];
    }
    if (build_operators(s, n, m, k, c)) {
        snprintf(err, err_size, "structure: no memory, or the interior mass block M_ii is "
                 "singular (every interior DOF needs mass)");
        gs_destroy(s);
        return NULL;
    }
    s->qref[0] = s->frame[FR_Q] = 1.0;
    return s;
}

static double *read_square(const char *path, int *n, char *err, size_t err_size)
{
    double *a = NULL;
    int rows, cols;
    if (mm_read_dense(path, &a, &rows, &cols, err, err_size))
        return NULL;
    if (rows != cols || (*n && rows != *n)) {
        snprintf(err, err_size, "%s: expected a square %dx%d matrix, got %dx%d", path,
                 *n ? *n : rows, *n ? *n : rows, rows, cols);
        free(a);
        return NULL;
    }
    *n = rows;
    return a;
}

gs_structure *gs_load(const char *m_path, const char *k_path, const char *c_path, int nb,
                      const char *const *components, int micro_steps, char *err,
                      size_t err_size)
{
    int n = 0, comps[6];
    gs_structure *s = NULL;
    double *m = NULL, *k = NULL, *c = NULL;
    for (int i = 0; i < nb && i < 6; ++i) {
        comps[i] = gs_component_index(components[i]);
        if (comps[i] < 0) {
            snprintf(err, err_size, "boundary_dofs: %s is not one of x y z rx ry rz",
                     components[i]);
            return NULL;
        }
    }
    if ((m = read_square(m_path, &n, err, err_size)) &&
        (k = read_square(k_path, &n, err, err_size)) &&
        (!c_path || (c = read_square(c_path, &n, err, err_size))))
        s = gs_create(n, m, k, c, nb, comps, micro_steps, err, err_size);
    free(m);
    free(k);
    free(c);
    return s;
}

/* rows [3][nb] = (u_b, u_b', u_b'') at `frame` (inertial structure axes). */
static void boundary_rows(const gs_structure *s, const double *frame, double *rows)
{
    double theta[3];
    frame_relative_rotation(frame + FR_Q, s->qref, theta);
    for (int i = 0; i < s->nb; ++i) {
        int c = s->comps[i], j = c % 3;
        rows[i] = c < 3 ? frame[FR_R + j] - s->pref[j] : theta[j];
        rows[s->nb + i] = frame[(c < 3 ? FR_V : FR_W) + j];
        rows[2 * s->nb + i] = frame[(c < 3 ? FR_A : FR_AL) + j];
    }
}

void gs_set_motion(gs_structure *s, const double *motion)
{
    int nb = s->nb, ni = s->ni;
    double before[18], after[18];
    double *shift_x = s->scratch_out, *shift_v = s->scratch_out + ni;
    boundary_rows(s, s->frame, before);
    frame_set(s->frame, motion);
    if (!ni)
        return;
    boundary_rows(s, s->frame, after);
    for (int i = 0; i < 2 * nb; ++i)
        after[i] -= before[i];
    dense_matvec(ni, nb, s->shift, after, shift_x);      /* du_b */
    dense_matvec(ni, nb, s->shift, after + nb, shift_v); /* du_b' */
    for (int i = 0; i < ni; ++i) {
        s->y[i] -= shift_x[i];
        s->y[ni + i] -= shift_v[i];
    }
}

void gs_initialize(gs_structure *s, double t0, const double *motion, const double *reference)
{
    double start[FR_SIZE] = {0};
    memcpy(start, motion, sizeof start);
    if (reference) { /* at rest at the reference position, with the motion's orientation */
        memset(start, 0, sizeof start);
        memcpy(start + FR_R, reference, 3 * sizeof(double));
        memcpy(start + FR_Q, motion + FR_Q, 4 * sizeof(double));
    }
    s->t = t0;
    frame_set(s->frame, start);
    memcpy(s->pref, s->frame + FR_R, sizeof s->pref);
    memcpy(s->qref, s->frame + FR_Q, sizeof s->qref);
    memset(s->y, 0, sizeof(double) * (size_t)(2 * s->ni));
    if (reference)
        gs_set_motion(s, motion);
}

/* The tau^j coefficient of [u_b; u_b'; u_b''] from u = [d, v, c0, c1, c2] (each nb):
 * u_b = d + v tau + c0 tau^2/2 + c1 tau^3/6 + c2 tau^4/12 and its two derivatives.
 * Entries {j, row block, column block, factor}. */
static const struct { int j, row, col; double f; } INPUT_MAP[] = {
    {0, 0, 0, 1.0}, {0, 1, 1, 1.0}, {0, 2, 2, 1.0},
    {1, 0, 1, 1.0}, {1, 1, 2, 1.0}, {1, 2, 3, 1.0},
    {2, 0, 2, 0.5}, {2, 1, 3, 0.5}, {2, 2, 4, 1.0},
    {3, 0, 3, 1.0 / 6.0}, {3, 1, 4, 1.0 / 3.0},
    {4, 0, 4, 1.0 / 12.0},
};

/* P = [Phi, Psi] for step H: y' = A y + w_0, w_j' = w_{j+1}, w_4' = 0 (Van Loan): the top
 * block row of expm(M H) holds Phi and Phi_j = int_0^H e^{A(H-s)} s^j / j! ds. */
static int build_propagator(gs_structure *s, double H)
{
    int ni = s->ni, nb = s->nb, d = 2 * ni, big = (DEGREE + 2) * d, wc = 2 * ni + 3 * nb;
    int pc = d + 5 * nb;
    double *mbig = calloc((size_t)big * big, sizeof(double));
    double *e = calloc((size_t)big * big, sizeof(double));
    double *g = calloc((size_t)d * 3 * nb, sizeof(double));
    double *p = calloc((size_t)d * pc, sizeof(double));
    int rc = -1;
    if (!mbig || !e || !g || !p)
        goto done;
    for (int i = 0; i < ni; ++i) {
        mbig[(size_t)i * big + ni + i] = H; /* x' */
        for (int j = 0; j < d; ++j)
            mbig[(size_t)(ni + i) * big + j] = H * s->w[(size_t)i * wc + j];
    }
    for (int b = 0; b <= DEGREE; ++b)
        for (int i = 0; i < d; ++i)
            mbig[(size_t)(b * d + i) * big + (b + 1) * d + i] = H;
    if (dense_expm(big, mbig, e))
        goto done;
    for (int i = 0; i < d; ++i)
        memcpy(p + (size_t)i * pc, e + (size_t)i * big, sizeof(double) * d);
    double factorial = 1.0;
    for (int j = 0; j <= DEGREE; ++j) {
        if (j)
            factorial *= j;
        /* g = Phi_j B, B = [0; W_b] (d x 3 nb): only the x' rows of B are non-zero */
        for (int i = 0; i < d; ++i)
            for (int c = 0; c < 3 * nb; ++c) {
                double acc = 0.0;
                for (int l = 0; l < ni; ++l)
                    acc += e[(size_t)i * big + (j + 1) * d + ni + l] *
                           s->w[(size_t)l * wc + d + c];
                g[(size_t)i * 3 * nb + c] = acc;
            }
        for (size_t m = 0; m < sizeof INPUT_MAP / sizeof INPUT_MAP[0]; ++m) {
            if (INPUT_MAP[m].j != j)
                continue;
            for (int i = 0; i < d; ++i)
                for (int c = 0; c < nb; ++c)
                    p[(size_t)i * pc + d + INPUT_MAP[m].col * nb + c] +=
                        factorial * INPUT_MAP[m].f * g[(size_t)i * 3 * nb + INPUT_MAP[m].row * nb + c];
        }
    }
    free(s->prop);
    s->prop = p;
    s->prop_h = H;
    p = NULL;
    rc = 0;
done:
    free(mbig);
    free(e);
    free(g);
    free(p);
    return rc;
}

int gs_step(gs_structure *s, double t, double H, const double *motion, int n_past,
            const double *past_taus, const double *past)
{
    int ni = s->ni, nb = s->nb, d = 2 * ni, n_coeff = n_past + 1;
    double coeff[3 * 6], q_end[4], rows[18];
    double *x = s->scratch_in, *y = s->scratch_out;
    if (!(H > 0.0) || !isfinite(H) || n_past < 0 || n_past > 2)
        return -1;
    if (ni && (!s->prop || s->prop_h != H) && build_propagator(s, H))
        return -1;
    gs_set_motion(s, motion);
    frame_acceleration_polynomial(motion, n_past, past_taus, past, coeff);
    frame_end_orientation(s->frame, n_coeff, coeff, H, s->micro, q_end);
    if (ni) { /* y <- P [y; u_b(0); u_b'(0); c_0; c_1; c_2] on the boundary components */
        memset(x, 0, sizeof(double) * (size_t)(d + 5 * nb));
        memcpy(x, s->y, sizeof(double) * d);
        boundary_rows(s, s->frame, rows);
        memcpy(x + d, rows, sizeof(double) * 2 * nb);
        for (int j = 0; j < n_coeff; ++j)
            for (int i = 0; i < nb; ++i)
                x[d + (2 + j) * nb + i] = coeff[6 * j + s->comps[i]];
        dense_matvec(d, d + 5 * nb, s->prop, x, y);
    }
    for (int i = 0; i < 4; ++i)
        if (!isfinite(q_end[i]))
            return -2;
    for (int i = 0; i < d; ++i)
        if (!isfinite(y[i]))
            return -2;
    frame_write_end(s->frame, n_coeff, coeff, H, q_end);
    memcpy(s->y, y, sizeof(double) * d);
    s->t = t + H;
    return 0;
}

/* The wrench [6] at (frame, y): -f_b on the components, inertial. */
static void wrench_at(const gs_structure *s, const double *frame, const double *y, double *out)
{
    int nb = s->nb, ni = s->ni, wc = 2 * ni + 3 * nb, fc = 3 * nb + 3 * ni;
    double *x = s->scratch_in, *z = s->scratch_out, fb[6];
    boundary_rows(s, frame, x); /* x = [u_b, u_b', u_b'', y, y''] */
    memcpy(x + 3 * nb, y, sizeof(double) * 2 * ni);
    if (ni) { /* x'' = W [x, x', u_b, u_b', u_b''] */
        memcpy(z, y, sizeof(double) * 2 * ni);
        memcpy(z + 2 * ni, x, sizeof(double) * 3 * nb);
        dense_matvec(ni, wc, s->w, z, x + 3 * nb + 2 * ni);
    }
    dense_matvec(nb, fc, s->fb, x, fb);
    memset(out, 0, 6 * sizeof(double));
    for (int i = 0; i < nb; ++i)
        out[s->comps[i]] = -fb[i];
}

void gs_wrench(const gs_structure *s, double *wrench) { wrench_at(s, s->frame, s->y, wrench); }

void gs_node_kinematics(const gs_structure *s, double *kin)
{
    memcpy(kin, s->frame, 13 * sizeof(double));
}

void gs_frame_accelerations(const gs_structure *s, double *acc)
{
    memcpy(acc, s->frame + FR_A, 6 * sizeof(double));
}

void gs_added_mass(const gs_structure *s, double *mass)
{
    double frame[FR_SIZE], base[6], col[6], m[36];
    memcpy(frame, s->frame, sizeof frame);
    memset(frame + FR_A, 0, 6 * sizeof(double));
    wrench_at(s, frame, s->y, base);
    for (int i = 0; i < 6; ++i) {
        memset(frame + FR_A, 0, 6 * sizeof(double));
        frame[FR_A + i] = 1.0;
        wrench_at(s, frame, s->y, col);
        for (int r = 0; r < 6; ++r)
            m[6 * r + i] = base[r] - col[r];
    }
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c)
            mass[6 * r + c] = 0.5 * (m[6 * r + c] + m[6 * c + r]);
}

/* --- as an endpoint's body ----------------------------------------------------------------- */

static int ops_step(void *b, double t, double H, const double *motion, int n_past,
                    const double *taus, const double *past)
{
    return gs_step(b, t, H, motion, n_past, taus, past);
}
static void ops_wrench(const void *b, double *w) { gs_wrench(b, w); }
static void ops_kinematics(const void *b, double *k) { gs_node_kinematics(b, k); }
static void ops_accelerations(const void *b, double *a) { gs_frame_accelerations(b, a); }
static double ops_time(const void *b) { return gs_time(b); }
static void ops_added_mass(const void *b, double *m, int *point_frame)
{
    gs_added_mass(b, m);
    *point_frame = 0;
}

static const fe_body_ops GS_OPS = {ops_step, ops_wrench, ops_kinematics, ops_accelerations,
                                   ops_added_mass, ops_time};

fe_body gs_body(gs_structure *s)
{
    fe_body b = {s, &GS_OPS};
    return b;
}
