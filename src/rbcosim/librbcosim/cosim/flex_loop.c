/* A flexible solver's macro-step loop over the wire (see flex_loop.h). */
#define _POSIX_C_SOURCE 200809L
#include "flex_loop.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../flex/frame.h"
#include "../wire/msgpack_lite.h"
#include "../wire/zmq_link.h"

#define POLL_SLICE_MS 50 /* signals are looked at between slices of a wait */
#define SIGNAL_EVERY 64  /* and every this many steps (taking the GIL for it costs ~3 µs) */
#define MAX_ID 384       /* bytes of a msg_id (prefix and counter) */

static size_t id_text(const rbc_fl_pieces *pc, int64_t id, char *s) {
    memcpy(s, pc->prefix, pc->prefix_n);
    char digits[24];
    int n = 0;
    uint64_t v = (uint64_t)id;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++) s[pc->prefix_n + i] = digits[n - 1 - i];
    return pc->prefix_n + (size_t)n;
}

int rbc_fl_encode(rbc_fl_wire *w, int64_t id, int64_t k, int64_t nj, const double *kinematics,
                  const double *energies, int64_t m, const double *poly) {
    const rbc_fl_pieces *pc = &w->pieces;
    if (m < 1 || m > FX_HISTORY || pc->prefix_n + 24 > MAX_ID) return 0;
    size_t need = pc->head_n + MAX_ID + 5 + pc->envelope_n + 9 + pc->kinematics_n
                  + pc->energy_n + pc->poly_n[m - 1] + 8 * (size_t)nj * (14 + 6 * m);
    if (need > w->out_cap) return 0;
    char s[MAX_ID];
    size_t sn = id_text(pc, id, s);
    unsigned char *o = w->out;
    o += rbc_put_bytes(o, pc->head, pc->head_n);
    o += rbc_mp_put_str(o, s, sn);
    o += rbc_put_bytes(o, pc->envelope, pc->envelope_n);
    o += rbc_mp_put_uint(o, (uint64_t)k);
    o += rbc_put_bytes(o, pc->kinematics, pc->kinematics_n);
    o += rbc_le_put_f64s(o, kinematics, 13 * nj);
    o += rbc_put_bytes(o, pc->energy, pc->energy_n);
    o += rbc_le_put_f64s(o, energies, nj);
    o += rbc_put_bytes(o, pc->poly[m - 1], pc->poly_n[m - 1]);
    o += rbc_le_put_f64s(o, poly, 6 * m * nj);
    w->out_n = (size_t)(o - w->out);
    return 1;
}

/* --- the reply --------------------------------------------------------------------------- */

typedef struct reply {
    uint64_t step;
    double time;                   /* s */
    const unsigned char *motions;  /* (nj, 19) little-endian float64 */
} reply;

#define KEY(r, s) rbc_mp_str_is(r, s, sizeof(s) - 1)

/* An array descriptor {dtype "<f8", shape [...], data bin | frame i} of float64 bytes, inline
 * or in buffer frame i (parts[2 + i]); rows/cols: its shape must be exactly (rows, cols) when
 * rows >= 0.  Its bytes to *data. */
static int descriptor(rbc_mp_reader *r, rbc_fl_wire *w, int64_t rows, int64_t cols,
                      const unsigned char **data) {
    uint32_t n, dims = 0;
    int seen = 0;
    uint64_t count = 1, shape[4] = {0}, size = 0;
    if (!rbc_mp_map(r, &n) || n != 3) return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!(seen & 1) && KEY(r, "dtype")) {
            if (!KEY(r, "<f8")) return 0;
            seen |= 1;
        } else if (!(seen & 2) && KEY(r, "shape")) {
            if (!rbc_mp_array(r, &dims) || dims > 4) return 0;
            for (uint32_t d = 0; d < dims; d++) {
                if (!rbc_mp_uint(r, &shape[d]) || shape[d] > (1u << 30)) return 0;
                count *= shape[d];
                if (count > ((uint64_t)1 << 40)) return 0; /* (no wrap-around) */
            }
            seen |= 2;
        } else if (!(seen & 4) && KEY(r, "data")) {
            uint32_t len;
            if (!rbc_mp_bin(r, data, &len)) return 0;
            size = len;
            seen |= 4;
        } else if (!(seen & 4) && KEY(r, "frame")) {
            uint64_t f;
            if (!rbc_mp_uint(r, &f) || f + 2 >= (uint64_t)w->n_parts) return 0;
            *data = w->z->msg_data(&w->parts[2 + f]);
            size = w->z->msg_size(&w->parts[2 + f]);
            seen |= 4;
        } else {
            return 0;
        }
    }
    if (seen != 7 || size != 8 * count) return 0;
    return rows < 0 || (dims == 2 && shape[0] == (uint64_t)rows && shape[1] == (uint64_t)cols);
}

/* The step reply's content: step, time, kinematics, gaps, motions (nj, 19), nothing else. */
static int content(rbc_mp_reader *r, rbc_fl_wire *w, int64_t nj, reply *out) {
    uint32_t n;
    int seen = 0;
    const unsigned char *ignored;
    if (!rbc_mp_map(r, &n) || n != 5) return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!(seen & 1) && KEY(r, "step")) {
            if (!rbc_mp_uint(r, &out->step)) return 0;
            seen |= 1;
        } else if (!(seen & 2) && KEY(r, "time")) {
            if (!rbc_mp_f64(r, &out->time)) return 0;
            seen |= 2;
        } else if (!(seen & 4) && KEY(r, "kinematics")) {
            if (!descriptor(r, w, -1, 0, &ignored)) return 0;
            seen |= 4;
        } else if (!(seen & 8) && KEY(r, "gaps")) {
            if (!descriptor(r, w, -1, 0, &ignored)) return 0;
            seen |= 8;
        } else if (!(seen & 16) && KEY(r, "motions")) {
            if (!descriptor(r, w, nj, 19, &out->motions)) return 0;
            seen |= 16;
        } else {
            return 0;
        }
    }
    return seen == 31;
}

/* The reply in w->parts ([empty, header, buffers...]) is an ok reply to msg_id `id` (n bytes)
 * with exactly the envelope fields version, msg_id, msg_type, session, parent_id, status and
 * content (step_reply's); its values to *out. */
static int read_reply(rbc_fl_wire *w, const char *id, size_t id_n, int64_t nj, reply *out) {
    const rbc_zmq *z = w->z;
    if (w->more || w->n_parts < 2 || z->msg_size(&w->parts[0]) != 0) return 0;
    const unsigned char *h = z->msg_data(&w->parts[1]);
    rbc_mp_reader r = {h, h + z->msg_size(&w->parts[1])};
    uint32_t n, len;
    const char *s;
    uint64_t u;
    int seen = 0;
    if (!rbc_mp_map(&r, &n) || n != 7) return 0;
    for (uint32_t i = 0; i < n; i++) {
        int bit;
        if (KEY(&r, "version")) {
            bit = 1;
            if (!rbc_mp_str(&r, &s, &len)) return 0;
        } else if (KEY(&r, "msg_id")) {
            bit = 2;
            if (!rbc_mp_str(&r, &s, &len) && !rbc_mp_uint(&r, &u)) return 0;
        } else if (KEY(&r, "msg_type")) {
            bit = 4;
            if (!KEY(&r, "step_reply")) return 0;
        } else if (KEY(&r, "session")) {
            bit = 8;
            if (!rbc_mp_str(&r, &s, &len) && !rbc_mp_nil(&r)) return 0;
        } else if (KEY(&r, "parent_id")) {
            bit = 16;
            if (!rbc_mp_str_is(&r, id, id_n)) return 0;
        } else if (KEY(&r, "status")) {
            bit = 32;
            if (!KEY(&r, "ok")) return 0;
        } else if (KEY(&r, "content")) {
            bit = 64;
            if (!content(&r, w, nj, out)) return 0;
        } else {
            return 0;
        }
        if (seen & bit) return 0;
        seen |= bit;
    }
    return seen == 127 && r.p == r.end;
}

/* --- the socket --------------------------------------------------------------------------- */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

enum { WAIT_READY = 1, WAIT_TIMEOUT = 0, WAIT_OTHER = 2, WAIT_SIGNAL = -1, WAIT_ERROR = -2 };

/* Wait until w->sock has a message (WAIT_READY) or the server's socket has one (WAIT_OTHER),
 * for at most the timeout, in slices with w->interrupted looked at between them. */
static int wait_reply(rbc_fl_wire *w) {
    double start = now_ms();
    for (;;) {
        long slice = POLL_SLICE_MS;
        if (w->timeout_ms >= 0) {
            double left = (double)w->timeout_ms - (now_ms() - start);
            slice = left <= 0 ? 0 : left < slice ? (long)ceil(left) : slice;
        }
        int got = rbc_zmq_wait_input(w->z, w->sock, w->other, slice);
        if (got < 0) return WAIT_ERROR;
        if (got == 1) return WAIT_READY;
        if (got == 2) return WAIT_OTHER;
        if (w->interrupted && w->interrupted(w->ctx)) return WAIT_SIGNAL;
        if (w->timeout_ms >= 0 && slice == 0) return WAIT_TIMEOUT;
    }
}

/* --- undoing a body's step ---------------------------------------------------------------- */

static rbc_arr *state_of(rbc_cs_joint *j) {
    return j->floating ? &((rbc_fx_floating_body *)j->body)->state
                       : &((rbc_fx_grounded_body *)j->body)->state;
}

static rbc_arr *wrench_of(rbc_cs_joint *j) {
    return j->floating ? &((rbc_fx_floating_body *)j->body)->wrench
                       : &((rbc_fx_grounded_body *)j->body)->wrench;
}

/* What a body's exchange step writes, copied to (back = 0) or from (back = 1) buf; its size in
 * doubles (buf NULL: only the size). */
static size_t keep(rbc_cs_joint *j, double *buf, int back) {
    rbc_fx_exchange *x = j->x;
    rbc_arr *a[] = {state_of(j), wrench_of(j), &x->times, &x->wrenches, &x->energy, &x->pending,
                    &x->rigid_input};
    double *values[] = {a[0]->d, a[1]->d, a[2]->d, a[3]->d, a[4]->d, a[5]->d, a[6]->d,
                        (double *)x->count.i, (double *)j->n_motions, j->motions};
    size_t sizes[] = {(size_t)a[0]->size, (size_t)a[1]->size, (size_t)a[2]->size,
                      (size_t)a[3]->size, (size_t)a[4]->size, (size_t)a[5]->size,
                      (size_t)a[6]->size, 1, 1, 40};  /* (int64 counts: 8 bytes as a double) */
    size_t at = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (buf) {
            void *mine = values[i], *kept = buf + at;
            memcpy(back ? mine : kept, back ? kept : mine, sizes[i] * sizeof(double));
        }
        at += sizes[i];
    }
    return at;
}

static void keep_all(rbc_cs_joint *joints, int64_t nj, double *buf, int back) {
    for (int64_t i = 0; i < nj; i++) buf += keep(joints + i, buf, back);
}

/* --- the compiled bodies ------------------------------------------------------------------ */

/* A motion's row as a body's step takes it: the 19 values, then their time s. */
static const double *timed(const double *values, double t, double *row) {
    memcpy(row, values, 19 * sizeof(double));
    row[19] = t;
    return row;
}

static int compiled_undo(rbc_fl_bodies *b) {
    rbc_fl_compiled *c = b->ctx;
    keep_all(c->joints, b->nj, c->kept, 1);
    return RBC_FL_TOP;
}

/* The reports (before the step) and the polynomials the rigid side applies over the step
 * (flexible side first: the bodies step now); 0 when a body's step is not certainly quiet
 * (every body then as before). */
static int compiled_inputs(rbc_fl_bodies *b, double t, const double *now, rbc_fl_inputs *in) {
    rbc_fl_compiled *c = b->ctx;
    rbc_cs_joint *joints = c->joints;
    int64_t nj = b->nj, m = 0;
    double row[20];
    for (int64_t i = 0; i < nj; i++) {
        rbc_cs_joint *j = joints + i;
        memcpy(c->kinematics + 13 * i, state_of(j)->d + FX_R, 13 * sizeof(double));
        c->energies[i] = j->x->energy.d[0];
    }
    keep_all(joints, nj, c->kept, 0);
    for (int64_t i = 0; i < nj; i++) {
        rbc_cs_joint *j = joints + i;
        double *coef = c->coef + 6 * FX_HISTORY * i;
        if (c->scheme == RBC_CS_FLEX_FIRST) {
            if (rbc_cs_flex_step(j, timed(now + 19 * i, t, row), NULL, t, c->H, c->order,
                                 c->order, coef, &c->rows[i]) != RBC_CS_STEP_QUIET) {
                compiled_undo(b);
                return 0;
            }
        } else {
            int64_t count = j->x->count.i[0];
            c->rows[i] = c->order + 1 < count ? c->order + 1 : count;
            rbc_fx_exchange_polynomial(j->x, t, c->rows[i], 0, NULL, NULL, coef);
        }
        if (c->rows[i] > m) m = c->rows[i];
    }
    for (int64_t i = 0; i < nj; i++)  /* (nj, m, 6), a lower order padded with zeros */
        for (int64_t r = 0; r < m; r++)
            for (int k = 0; k < 6; k++)
                c->poly[(i * m + r) * 6 + k] =
                    r < c->rows[i] ? c->coef[6 * FX_HISTORY * i + 6 * r + k] : 0.0;
    if (m < 1) {
        compiled_undo(b);
        return 0;
    }
    *in = (rbc_fl_inputs){c->kinematics, c->energies, c->poly, m};
    return 1;
}

/* Every body's step from `now` at t (rigid side first: to `end` at t_end); 0 when one is not
 * certainly quiet (every body then as before the step). */
static int compiled_step(rbc_fl_bodies *b, double t, const double *now, const double *end,
                         double t_end) {
    rbc_fl_compiled *c = b->ctx;
    double row[20], future[20];
    int64_t rows;
    for (int64_t i = 0; i < b->nj; i++)
        if (rbc_cs_flex_step(c->joints + i, timed(now + 19 * i, t, row),
                             end ? timed(end + 19 * i, t_end, future) : NULL, t, c->H, c->order,
                             -1, NULL, &rows) != RBC_CS_STEP_QUIET) {
            compiled_undo(b);
            return 0;
        }
    return 1;
}

int rbc_fl_compiled_init(rbc_fl_compiled *c, rbc_cs_joint *joints, int64_t nj, int scheme,
                         int64_t order, double H) {
    size_t kept = 0, h = 6 * FX_HISTORY;
    for (int64_t i = 0; i < nj; i++) kept += keep(joints + i, NULL, 0);
    c->buf = malloc((kept + (size_t)nj * (14 + 2 * h)) * sizeof(double));
    if (!c->buf) return 0;
    c->kept = c->buf;
    c->kinematics = c->kept + kept;
    c->energies = c->kinematics + 13 * nj;
    c->coef = c->energies + nj;
    c->poly = c->coef + h * nj;
    c->joints = joints;
    c->scheme = scheme;
    c->order = order;
    c->H = H;
    c->bodies = (rbc_fl_bodies){nj, compiled_inputs, compiled_step, compiled_undo, c};
    return 1;
}

void rbc_fl_compiled_free(rbc_fl_compiled *c) {
    free(c->buf);
    c->buf = NULL;
}

/* --- the loop ----------------------------------------------------------------------------- */

/* Why the bodies' `inputs` or `step` (done: 1, 0 or RBC_FL_RAISED) ends the macro step: 0 when
 * it does not (done), RBC_FL_RAISED, or `otherwise` when they did nothing. */
static int ends(int done, int otherwise) {
    return done == 1 ? 0 : done == RBC_FL_RAISED ? RBC_FL_RAISED : otherwise;
}

/* One macro step from *k at *t; RBC_FL_STOP when it is done (the next one may follow). */
static int one_step(rbc_fl_wire *w, rbc_fl_bodies *b, int scheme, double *next, int64_t *k,
                    double *t, double *now, int64_t *next_id, int *stepped) {
    const rbc_zmq *z = w->z;
    int64_t nj = b->nj;
    for (int64_t i = 0; i < nj; i++)
        if (!rbc_all_finite(now + 19 * i, 19)) return RBC_FL_TOP;
    rbc_fl_inputs in;
    int why = ends(b->inputs(b, *t, now, &in), RBC_FL_TOP);
    if (why) return why;
    if (!rbc_fl_encode(w, *next_id, *k, nj, in.kinematics, in.energies, in.m, in.poly))
        return b->undo(b);
    int64_t id = (*next_id)++;
    if (z->send(w->sock, "", 0, RBC_ZMQ_SNDMORE | RBC_ZMQ_DONTWAIT) < 0) return RBC_FL_UNSENT;
    z->send(w->sock, w->out, w->out_n, 0);  /* (the parts of a message are queued as one) */
    if (scheme == RBC_CS_JACOBI) {          /* while the rigid side steps */
        why = ends(b->step(b, *t, now, NULL, 0.0), RBC_FL_SENT);
        if (why) return why;
        *stepped = 1;
    }
    int got = wait_reply(w);
    if (got != WAIT_READY)
        return got == WAIT_SIGNAL ? RBC_FL_SIGNAL : got == WAIT_TIMEOUT ? RBC_FL_TIMEOUT
                                                                        : RBC_FL_SENT;
    if (!rbc_zmq_receive(w->z, w->sock, w->parts, RBC_FL_PARTS, &w->n_parts, &w->more))
        return RBC_FL_SENT;
    char text[MAX_ID];
    size_t n = id_text(&w->pieces, id, text);
    reply r;
    if (!read_reply(w, text, n, nj, &r) || r.step != (uint64_t)*k + 1) return RBC_FL_REPLY;
    for (int64_t i = 0; i < 19 * nj; i++) next[i] = rbc_le_get_f64(r.motions + 8 * i);
    if (scheme == RBC_CS_RIGID_FIRST) {
        for (int64_t i = 0; i < nj; i++)
            if (!rbc_all_finite(next + 19 * i, 19)) return RBC_FL_REPLY;
        why = ends(b->step(b, *t, now, next, r.time), RBC_FL_REPLY);
        if (why == RBC_FL_RAISED)  /* (the reply was taken, as Python takes it) */
            rbc_zmq_close_parts(w->z, w->parts, &w->n_parts);
        if (why) return why;
    }
    rbc_zmq_close_parts(w->z, w->parts, &w->n_parts);
    memcpy(now, next, 19 * (size_t)nj * sizeof(double));
    *k = (int64_t)r.step;
    *t = r.time;
    *stepped = 0;
    return RBC_FL_STOP;
}

int rbc_fl_run(rbc_fl_wire *w, rbc_fl_bodies *b, int scheme, int64_t *k, double *t,
               double *now, int64_t stop, int64_t *next_id, int *stepped) {
    double *next = malloc(19 * (size_t)b->nj * sizeof(double));
    if (!next) return RBC_FL_NOMEM;
    int code = RBC_FL_STOP;
    w->n_parts = 0;
    *stepped = 0;
    for (int64_t n = 0; code == RBC_FL_STOP && *k < stop; n++) {
        if (n % SIGNAL_EVERY == 0 && w->interrupted && w->interrupted(w->ctx)) {
            code = RBC_FL_SIGNAL;
            break;
        }
        code = one_step(w, b, scheme, next, k, t, now, next_id, stepped);
    }
    free(next);
    return code;
}
