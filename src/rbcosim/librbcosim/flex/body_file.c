/* body_file.c: see body_file.h. */
#include "body_file.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "continuity.h"
#include "floating.h"
#include "frame.h"
#include "fx_vec.h"
#include "grounded.h"

#define HEADER 32
static const char TAG[8] = {'R', 'B', 'C', 'F', 'L', 'E', 'X', '2'};  /* 2: floating bodies carry moment invariants */
static const char FLOATING_TYPES[] = "dddddddddd";
static const char GROUNDED_TYPES[] = "ddldddddd";

void rbc_fx_body_file_free(rbc_fx_body_file *b) { rbc_model_file_free(&b->file); }

int rbc_fx_body_file_load(rbc_fx_body_file *b, const char *path, char *reason, size_t size) {
    char why[300];
    memset(b, 0, sizeof *b);
    if (rbc_model_file_open(&b->file, path, TAG, HEADER, reason, size) != 0) return -1;
    int32_t attachment;
    memcpy(&attachment, b->file.data + 12, 4);
    memcpy(&b->micro_steps, b->file.data + 16, 8);
    memcpy(&b->H, b->file.data + 24, 8);
    b->grounded = attachment == 1;
    int64_t members = b->grounded ? 9 : 10;
    rbc_arr *slots = b->grounded ? (rbc_arr *)(void *)&b->ground : (rbc_arr *)(void *)&b->floating;
    int ok = (attachment == 0 || attachment == 1) && b->micro_steps >= 1 &&
             b->file.n_arrays == (uint32_t)(members + 5);
    if (ok) {
        ok = rbc_model_file_arrays(&b->file, members, b->grounded ? GROUNDED_TYPES : FLOATING_TYPES,
                                   slots, why, sizeof why) == 0 &&
             rbc_model_file_arrays(&b->file, 5, "ddddd", &b->p, why, sizeof why) == 0;
    } else {
        snprintf(why, sizeof why, "bad header");
    }
    if (ok) {
        const rbc_arr *state = b->grounded ? &b->ground.state : &b->floating.state;
        b->k = (state->size - FX_ETA) / 2;
        b->nb = b->grounded ? b->ground.comps.size : 0;
        b->n_out = b->out_positions.size / 3;
        /* the output rows' columns: [u_b; eta] (floating: u_b = 0, n_b from the rows) */
        int64_t n = b->out_rows.ndim == 3 ? b->out_rows.shape[2] : -1;
        ok = n >= b->k + b->nb && n - b->k <= FX_MAX_BOUNDARY && b->k >= 0 && b->k <= FX_MAX_MODES && state->size == FX_ETA + 2 * b->k &&
             b->out_rows.shape[0] == b->n_out && b->out_rows.shape[1] == 3 &&
             (b->reference.size == 0 || b->reference.size == 3) &&
             (b->unstressed.size == 0 || b->unstressed.size == b->k * b->nb) &&
             (b->grounded || (b->floating.moment.size == 3 * (b->k + 1) * (12 + 13 * b->k) &&
                              b->floating.wmat.size == b->k * (20 * b->k + 15) &&
                              b->floating.s_e.size == 3 * b->k)) &&
             (!b->grounded || (b->p.size == 2 * b->k * (3 * b->k + 5 * b->nb) && b->H > 0.0 &&
                               b->nb >= 1 && b->nb <= FX_MAX_BOUNDARY));
        if (!ok) snprintf(why, sizeof why, "inconsistent sizes");
    }
    if (!ok) {
        snprintf(reason, size, "%.4000s is damaged or not a flexible body: %s", path, why);
        rbc_fx_body_file_free(b);
        return -1;
    }
    return 0;
}

void rbc_fx_exchange_init(rbc_fx_exchange_store *s) {
    memset(s, 0, sizeof *s);
    rbc_arr *v = (rbc_arr *)(void *)&s->x;
    struct { double *d; int64_t *i; int64_t n, rows; } m[8] = {
        {s->times, NULL, FX_HISTORY, 0}, {s->wrenches, NULL, FX_HISTORY, 6},
        {NULL, &s->count, 1, 0},         {&s->energy, NULL, 1, 0},
        {&s->pending, NULL, 1, 0},       {s->handed, NULL, 6, 6},
        {NULL, &s->implicit, 1, 0},      {s->input, NULL, 6, 0}};
    for (int j = 0; j < 8; ++j) {
        v[j].d = m[j].d;
        v[j].i = m[j].i;
        v[j].ndim = m[j].rows ? 2 : 1;
        v[j].shape[0] = m[j].n;
        v[j].shape[1] = m[j].rows;
        v[j].size = m[j].rows ? m[j].n * m[j].rows : m[j].n;
    }
}

double *rbc_fx_body_state(rbc_fx_body_file *b) {
    return b->grounded ? b->ground.state.d : b->floating.state.d;
}

double *rbc_fx_body_wrench_at_state(rbc_fx_body_file *b) {
    return b->grounded ? b->ground.wrench.d : b->floating.wrench.d;
}

void rbc_fx_body_wrench(rbc_fx_body_file *b) {
    if (b->grounded) rbc_fx_grounded_body_wrench(&b->ground);
    else rbc_fx_floating_body_wrench(&b->floating);
}

/* The wrench at the state s (this body's, or a copy with other accelerations). */
static void wrench_at(rbc_fx_body_file *b, const double *s, double *out) {
    if (b->grounded) {
        const rbc_fx_grounded_body *g = &b->ground;
        rbc_fx_grounded_wrench(s, b->k, g->r0.d, g->comps.i, b->nb, g->wmat.d, g->fb.d,
                               g->gacc.d, g->gb.d, out);
    } else {
        const rbc_fx_floating_body *f = &b->floating;
        rbc_fx_floating_wrench(s, b->k, f->gravity.d, f->axis.d, f->wmat.d, f->total_mass.d[0],
                               f->first_moment.d, f->s_e.d, f->spin_inertia.d, f->moment.d, out);
    }
}

void rbc_fx_body_added_mass(rbc_fx_body_file *b, double *scratch, double *out) {
    int64_t n = FX_ETA + 2 * b->k;
    double base[6], w[6], m[36];
    memcpy(scratch, rbc_fx_body_state(b), sizeof(double) * (size_t)n);
    for (int i = 0; i < 6; ++i) scratch[FX_A + i] = 0.0;
    wrench_at(b, scratch, base);
    for (int c = 0; c < 6; ++c) {
        for (int i = 0; i < 6; ++i) scratch[FX_A + i] = 0.0;
        scratch[FX_A + c] = 1.0;
        wrench_at(b, scratch, w);
        for (int r = 0; r < 6; ++r) m[6 * r + c] = base[r] - w[r];
    }
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c) out[6 * r + c] = 0.5 * (m[6 * r + c] + m[6 * c + r]);
}

void rbc_fx_body_output_nodes(const rbc_fx_body_file *b, double *out) {
    const double *s = b->grounded ? b->ground.state.d : b->floating.state.d;
    int64_t n = b->out_rows.shape[2], nb = n - b->k;
    double coords[FX_MAX_BOUNDARY + FX_MAX_MODES] = {0.0}, rot[9], rows[3 * FX_MAX_BOUNDARY];
    const double *origin;
    if (b->grounded) {
        rbc_fx_boundary(s, b->ground.r0.d, b->ground.comps.i, b->nb, rows);
        for (int64_t i = 0; i < b->nb; ++i) coords[i] = rows[i];
        origin = s + FX_PREF;
        memcpy(rot, b->ground.r0.d, sizeof rot);
    } else {
        double rq[9];
        const double *axis = b->floating.axis.d;
        fx_rotation_matrix(s + FX_Q, rq);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) {
                double acc = 0.0;
                for (int j = 0; j < 3; ++j) acc += rq[3 * r + j] * axis[3 * j + c];
                rot[3 * r + c] = acc;
            }
        origin = s + FX_R;
    }
    for (int64_t i = 0; i < b->k; ++i) coords[nb + i] = s[FX_ETA + i];
    for (int64_t o = 0; o < b->n_out; ++o) {
        double local[3];
        for (int r = 0; r < 3; ++r) {
            const double *row = b->out_rows.d + (3 * o + r) * n;
            double acc = 0.0;
            for (int64_t j = 0; j < n; ++j) acc += row[j] * coords[j];
            local[r] = b->out_positions.d[3 * o + r] + acc;
        }
        for (int r = 0; r < 3; ++r)
            out[3 * o + r] = origin[r] + (local[0] * rot[3 * r] + local[1] * rot[3 * r + 1] +
                                          local[2] * rot[3 * r + 2]);
    }
}

int rbc_fx_endpoint_start(rbc_fx_body_file *b, rbc_fx_exchange_store *st, double t,
                          const double *motion, int added_mass, double *scratch, double *handed) {
    double *s = rbc_fx_body_state(b);
    int64_t n = FX_ETA + 2 * b->k;
    memset(s, 0, sizeof(double) * (size_t)n);
    s[FX_T] = t;
    if (b->grounded && b->reference.size == 3) { /* at rest at the reference, q of the motion */
        double rest[19] = {0.0};
        memcpy(rest, b->reference.d, 3 * sizeof(double));
        memcpy(rest + 3, motion + 3, 4 * sizeof(double));
        rbc_fx_set_frame(s, rest);
    } else {
        rbc_fx_set_frame(s, motion);
    }
    memcpy(s + FX_PREF, s + FX_R, 3 * sizeof(double));
    memcpy(s + FX_QREF, s + FX_Q, 4 * sizeof(double));
    s[FX_INIT] = 1.0;
    if (b->grounded && b->reference.size == 3) {
        const rbc_fx_grounded_body *g = &b->ground;
        rbc_fx_regrounded_frame(s, b->k, motion, g->r0.d, g->comps.i, b->nb, g->shift.d);
        if (b->unstressed.size > 0 && b->k > 0) { /* start_unstressed_interior */
            double rows[3 * FX_MAX_BOUNDARY];
            rbc_fx_boundary(s, g->r0.d, g->comps.i, b->nb, rows);
            for (int64_t i = 0; i < b->k; ++i) {
                double acc = 0.0;
                for (int64_t j = 0; j < b->nb; ++j) acc += b->unstressed.d[i * b->nb + j] * rows[j];
                s[FX_ETA + i] = acc;
                s[FX_ETA + b->k + i] = 0.0;
            }
        }
    }
    rbc_fx_body_wrench(b);
    int handover = 0;
    if (added_mass) {
        double m[36], largest = 0.0;
        rbc_fx_body_added_mass(b, scratch, m);
        for (int i = 0; i < 36; ++i) largest = fmax(largest, fabs(m[i]));
        for (int i = 0; i < 36; ++i) handover |= fabs(m[i]) > 1e-12 * fmax(1.0, largest);
        if (handover) {
            st->implicit = 1;
            if (b->grounded) memcpy(st->handed, m, sizeof m);
            else rbc_fx_point_frame_mass(m, motion + 3, 0, st->handed);
            memcpy(handed, st->handed, sizeof m);
        }
    }
    st->times[0] = t;
    rbc_fx_rigid_input(&st->x, s, rbc_fx_body_wrench_at_state(b), !b->grounded, st->wrenches);
    st->count = 1;
    return handover;
}

int rbc_fx_endpoint_step(rbc_fx_body_file *b, rbc_fx_exchange_store *st, const double *motion,
                         int64_t m, const double *past_taus, const double *past, double t,
                         double H, int64_t order, double *coef, int64_t *rows) {
    if (b->grounded) {
        if (H != b->H) return -1;
        return rbc_fx_grounded_exchange_step(&b->ground, &st->x, motion, m, past_taus, past, t,
                                             H, b->micro_steps, b->p.d, order, coef, rows);
    }
    return rbc_fx_floating_exchange_step(&b->floating, &st->x, motion, m, past_taus, past, t, H,
                                         b->micro_steps, order, coef, rows);
}
