/* rigid_beam.c: see rigid_beam.h. */
#include "rigid_beam.h"

#include <math.h>
#include <string.h>

#include "interface_frame.h"

void rb_setup(rb_beam *b, double length, double width, double density, const double *gravity,
              int micro_steps)
{
    memset(b, 0, sizeof *b);
    b->length = length;
    b->width = width;
    b->mass = density * width * width * length;
    b->r_point[0] = 0.5 * length;
    double m = b->mass, bend = m * length * length / 3.0; /* Euler-Bernoulli: no rotary */
    b->i_point[0] = m * width * width / 6.0;
    b->i_point[4] = b->i_point[8] = bend;
    memcpy(b->gravity, gravity, sizeof b->gravity);
    b->micro_steps = micro_steps < 1 ? 1 : micro_steps;
    b->frame[FR_Q] = 1.0;
}

void rb_initialize(rb_beam *b, double t, const double *motion)
{
    b->t = t;
    frame_set(b->frame, motion);
}

static void rotation_of(const double *q, double *r)
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    r[0] = 1 - 2 * (y * y + z * z), r[1] = 2 * (x * y - w * z), r[2] = 2 * (x * z + w * y);
    r[3] = 2 * (x * y + w * z), r[4] = 1 - 2 * (x * x + z * z), r[5] = 2 * (y * z - w * x);
    r[6] = 2 * (x * z - w * y), r[7] = 2 * (y * z + w * x), r[8] = 1 - 2 * (x * x + y * y);
}

static void cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static void mat3_vec(const double *m, const double *v, double *out)
{
    for (int i = 0; i < 3; ++i)
        out[i] = m[3 * i] * v[0] + m[3 * i + 1] * v[1] + m[3 * i + 2] * v[2];
}

void rb_tip(const rb_beam *b, double *p)
{
    double r[9];
    rotation_of(b->frame + FR_Q, r);
    for (int i = 0; i < 3; ++i)
        p[i] = b->frame[FR_R + i] + b->length * r[3 * i];
}

/* Newton-Euler of the beam at its frame (see rigid_beam.h). */
static void wrench(const void *self, double *out)
{
    const rb_beam *b = self;
    const double *f = b->frame, *a = f + FR_A, *al = f + FR_AL, *w = f + FR_W;
    double rot[9], r[3], ip_w[3], ip_al[3], tmp[3], tmp2[3], wr[3], wwr[3], alr[3], am[3];
    rotation_of(f + FR_Q, rot);
    mat3_vec(rot, b->r_point, r);
    /* I_p v in inertial axes = R I_point R^T v */
    for (int i = 0; i < 3; ++i)
        tmp[i] = rot[i] * w[0] + rot[3 + i] * w[1] + rot[6 + i] * w[2];
    mat3_vec(b->i_point, tmp, tmp2);
    mat3_vec(rot, tmp2, ip_w);
    for (int i = 0; i < 3; ++i)
        tmp[i] = rot[i] * al[0] + rot[3 + i] * al[1] + rot[6 + i] * al[2];
    mat3_vec(b->i_point, tmp, tmp2);
    mat3_vec(rot, tmp2, ip_al);
    cross(w, r, wr);
    cross(w, wr, wwr);
    cross(al, r, alr);
    for (int i = 0; i < 3; ++i) {
        out[i] = -b->mass * (a[i] + alr[i] + wwr[i] - b->gravity[i]);
        am[i] = a[i] - b->gravity[i];
    }
    cross(r, am, tmp);
    cross(w, ip_w, tmp2);
    for (int i = 0; i < 3; ++i)
        out[3 + i] = -(b->mass * tmp[i] + ip_al[i] + tmp2[i]);
}

static int step(void *self, double t, double H, const double *motion, int n_past,
                const double *taus, const double *past)
{
    rb_beam *b = self;
    double coeff[18], q[4];
    if (!(H > 0.0) || n_past < 0 || n_past > 2)
        return -1;
    frame_set(b->frame, motion);
    frame_acceleration_polynomial(motion, n_past, taus, past, coeff);
    frame_end_orientation(b->frame, n_past + 1, coeff, H, b->micro_steps, q);
    for (int i = 0; i < 4; ++i)
        if (!isfinite(q[i]))
            return -2;
    frame_write_end(b->frame, n_past + 1, coeff, H, q);
    b->t = t + H;
    return 0;
}

static void kinematics(const void *self, double *k)
{
    memcpy(k, ((const rb_beam *)self)->frame, 13 * sizeof(double));
}

static void accelerations(const void *self, double *a)
{
    memcpy(a, ((const rb_beam *)self)->frame + FR_A, 6 * sizeof(double));
}

static void added_mass(const void *self, double *m, int *point_frame)
{
    const rb_beam *b = self;
    const double *r = b->r_point;
    double mr[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0}; /* [r]x */
    memset(m, 0, 36 * sizeof(double));
    for (int i = 0; i < 3; ++i) {
        m[6 * i + i] = b->mass;
        for (int j = 0; j < 3; ++j) {
            m[6 * i + 3 + j] = -b->mass * mr[3 * i + j];
            m[6 * (3 + i) + j] = b->mass * mr[3 * i + j];
            m[6 * (3 + i) + 3 + j] = b->i_point[3 * i + j];
        }
    }
    *point_frame = 1;
}

static double time_of(const void *self) { return ((const rb_beam *)self)->t; }

static const fe_body_ops RB_OPS = {step, wrench, kinematics, accelerations, added_mass, time_of};

fe_body rb_body(rb_beam *b)
{
    fe_body body = {b, &RB_OPS};
    return body;
}
