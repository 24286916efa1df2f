/* A session worker's step path in C (see served_loop.h). */
#define _POSIX_C_SOURCE 200809L
#include "served_loop.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "../wire/msgpack_lite.h"
#include "../wire/zmq_link.h"
#include "served.h"

#define POLL_SLICE_MS 50  /* signals are looked at between slices of a wait */
#define SIGNAL_EVERY 64   /* and every this many requests (taking the GIL for it costs ~3 µs) */
#define MAX_MSG_ID 256    /* bytes of a msg_id string C answers (Python: characters) */
#define POLY_ROWS 4       /* rows of a point's wrench polynomial (rigid_side MAX_POLY_ORDER + 1) */
#define MAX_ROWS 3        /* rows of a step's wrench_polynomial the protocol takes */

/* --- little helpers ----------------------------------------------------------------------- */

static double now_s(void) {  /* CLOCK_MONOTONIC, as Python's time.monotonic */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void copy_le(double *out, const unsigned char *bytes, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = rbc_le_get_f64(bytes + 8 * i);
}

/* --- the request ---------------------------------------------------------------------------- */

typedef struct request {
    const char *msg_id;          /* a string msg_id (n bytes), or NULL: the integer id */
    uint32_t msg_id_n;
    uint64_t id, step;
    const unsigned char *flex, *energy, *wrench; /* little-endian float64 bytes, or NULL */
    int64_t m;                   /* rows of the wrench polynomial (a held wrench: 1) */
} request;

#define KEY(r, s) rbc_mp_str_is(r, s, sizeof(s) - 1)

/* An inline array descriptor {dtype "<f8", shape dims[0..n), data bin} (nothing else); its
 * bytes to *data. */
static int descriptor(rbc_mp_reader *r, const int64_t *dims, uint32_t n,
                      const unsigned char **data) {
    uint32_t keys, got, len;
    uint64_t count = 1, d;
    int seen = 0;
    if (!rbc_mp_map(r, &keys) || keys != 3) return 0;
    for (uint32_t i = 0; i < keys; i++) {
        if (!(seen & 1) && KEY(r, "dtype")) {
            if (!KEY(r, "<f8")) return 0;
            seen |= 1;
        } else if (!(seen & 2) && KEY(r, "shape")) {
            if (!rbc_mp_array(r, &got) || got != n) return 0;
            for (uint32_t k = 0; k < n; k++) {
                if (!rbc_mp_uint(r, &d) || d != (uint64_t)dims[k]) return 0;
                count *= d;
            }
            seen |= 2;
        } else if (!(seen & 4) && KEY(r, "data")) {
            if (!rbc_mp_bin(r, data, &len)) return 0;
            seen |= 4;
        } else {
            return 0;
        }
    }
    return seen == 7 && len == 8 * count;
}

/* The content of an ordinary step: client, step, the reports (flex_kinematics, optional
 * flex_energy) when the client has joints, the wrench (or wrench_polynomial) when it has
 * points; nothing else. */
static int content(rbc_mp_reader *r, const rbc_sl_session *s, request *q) {
    uint32_t n;
    int seen = 0;
    if (!rbc_mp_map(r, &n)) return 0;
    for (uint32_t i = 0; i < n; i++) {
        int bit;
        if (KEY(r, "client")) {
            bit = 1;
            if (!rbc_mp_str_is(r, s->client_id, s->client_n)) return 0;
        } else if (KEY(r, "step")) {
            bit = 2;
            if (!rbc_mp_uint(r, &q->step)) return 0;
        } else if (s->nj && KEY(r, "flex_kinematics")) {
            bit = 4;
            int64_t dims[] = {s->nj, 13};
            if (!descriptor(r, dims, 2, &q->flex)) return 0;
        } else if (s->nj && KEY(r, "flex_energy")) {
            bit = 8;
            if (!descriptor(r, &s->nj, 1, &q->energy)) return 0;
        } else if (s->np && KEY(r, "wrench")) {
            bit = 16;
            int64_t dims[] = {s->np, 6};
            if (!descriptor(r, dims, 2, &q->wrench)) return 0;
            q->m = 1;
        } else if (s->np && KEY(r, "wrench_polynomial")) {
            bit = 16;
            int ok = 0;
            for (int64_t m = 1; m <= MAX_ROWS && !ok; m++) {
                rbc_mp_reader t = *r;
                int64_t dims[] = {s->np, m, 6};
                if (descriptor(&t, dims, 3, &q->wrench)) {
                    *r = t;
                    q->m = m;
                    ok = 1;
                }
            }
            if (!ok) return 0;
        } else {
            return 0;
        }
        if (seen & bit) return 0;
        seen |= bit;
    }
    int need = 3 | (s->nj ? 4 : 0) | (s->np ? 16 : 0);
    return (seen & need) == need;
}

/* A version string "1.<digits>" (the major version this server speaks). */
static int version(rbc_mp_reader *r) {
    const char *v;
    uint32_t n;
    if (!rbc_mp_str(r, &v, &n) || n < 3 || v[0] != '1' || v[1] != '.') return 0;
    for (uint32_t i = 2; i < n; i++)
        if (v[i] < '0' || v[i] > '9') return 0;
    return 1;
}

static int msg_id(rbc_mp_reader *r, request *q) {
    const char *id;
    uint32_t n;
    if (rbc_mp_uint(r, &q->id)) {
        q->msg_id = NULL;
        return 1;
    }
    if (!rbc_mp_str(r, &id, &n) || n > MAX_MSG_ID) return 0;
    for (uint32_t i = 0; i < n; i++)
        if ((unsigned char)id[i] >= 0x80) return 0; /* (UTF-8: Python counts characters) */
    q->msg_id = id;
    q->msg_id_n = n;
    return 1;
}

/* The header frame is an ordinary step request of this session's client: exactly the
 * envelope fields version, msg_id, msg_type "step", session and content, nothing after. */
static int read_request(const unsigned char *h, size_t size, const rbc_sl_session *s,
                        request *q) {
    rbc_mp_reader r = {h, h + size};
    uint32_t n;
    int seen = 0;
    memset(q, 0, sizeof *q);
    if (!rbc_mp_map(&r, &n) || n != 5) return 0;
    for (uint32_t i = 0; i < n; i++) {
        int bit;
        if (KEY(&r, "version")) {
            bit = 1;
            if (!version(&r)) return 0;
        } else if (KEY(&r, "msg_id")) {
            bit = 2;
            if (!msg_id(&r, q)) return 0;
        } else if (KEY(&r, "msg_type")) {
            bit = 4;
            if (!KEY(&r, "step")) return 0;
        } else if (KEY(&r, "session")) {
            bit = 8;
            if (!rbc_mp_str_is(&r, s->session_id, s->session_n)) return 0;
        } else if (KEY(&r, "content")) {
            bit = 16;
            if (!content(&r, s, q)) return 0;
        } else {
            return 0;
        }
        if (seen & bit) return 0;
        seen |= bit;
    }
    return seen == 31 && r.p == r.end;
}

/* --- the step ------------------------------------------------------------------------------- */

int64_t rbc_sl_scratch_size(int64_t np, int64_t nj, int64_t ny) {
    return 14 * nj + 2 * POLY_ROWS * 6 * np + ny + 2 + 4 * nj + 13 * np;
}

typedef struct scratch {
    double *flex, *energy, *poly, *kept_poly, *kept_y, *kept_stats, *gaps, *outputs;
} scratch;

static scratch carve(const rbc_sl_session *s, int64_t ny) {
    scratch c;
    c.flex = s->scratch;
    c.energy = c.flex + 13 * s->nj;
    c.poly = c.energy + s->nj;
    c.kept_poly = c.poly + POLY_ROWS * 6 * s->np;
    c.kept_y = c.kept_poly + POLY_ROWS * 6 * s->np;
    c.kept_stats = c.kept_y + ny;
    c.gaps = c.kept_stats + 2;
    c.outputs = c.gaps + 4 * s->nj;
    return c;
}

/* The request's arrays as doubles; 0 when one is not finite (Python names it). */
static int inputs(const rbc_sl_session *s, const request *q, scratch *c) {
    copy_le(c->flex, q->flex, 13 * s->nj);
    if (!rbc_all_finite(c->flex, 13 * s->nj)) return 0;
    if (q->energy) {
        copy_le(c->energy, q->energy, s->nj);
        if (!rbc_all_finite(c->energy, s->nj)) return 0;
    }
    for (int64_t i = 0; i < s->np; i++)  /* (np, 4, 6): the rows sent, then zeros */
        for (int64_t k = 0; k < POLY_ROWS * 6; k++)
            c->poly[POLY_ROWS * 6 * i + k] =
                k < 6 * q->m ? rbc_le_get_f64(q->wrench + 8 * (6 * q->m * i + k)) : 0.0;
    return rbc_all_finite(c->poly, POLY_ROWS * 6 * s->np);
}

/* The points' outputs (np, 13) at the state y (as kernel.point_outputs_of). */
static void point_outputs(rbc_sl_session *s, double *out) {
    rbc_fill_frames(s->y, &s->h->w.frames);
    rbc_point_outputs(&s->h->sys.points, &s->h->w.frames, out, 13);
}

/* The macro step with the new wrenches; 0 (every input and the state as before) when it does
 * not end normally (Python takes the request again and reports it). */
static int macro_step(rbc_sl_session *s, scratch *c, int64_t ny, double *t) {
    rbc_points *pts = &s->h->sys.points;
    double *poly = pts->poly.d, t0 = pts->t0.d[0];
    size_t poly_n = (size_t)(POLY_ROWS * 6 * s->np) * sizeof(double);
    memcpy(c->kept_poly, poly, poly_n);
    memcpy(c->kept_y, s->y, (size_t)ny * sizeof(double));
    memcpy(c->kept_stats, s->io.stats, 2 * sizeof(double));
    if (s->np) {
        memcpy(poly, c->poly, poly_n);
        pts->t0.d[0] = *t;
    }
    int phase;
    int64_t done;
    int status = rbc_macro_step(s->h, &s->st, s->y, *t, s->H, s->micro, &s->io, &phase, &done);
    if (status != RBC_OK || phase != RBC_PHASE_DONE) {
        memcpy(poly, c->kept_poly, poly_n);
        pts->t0.d[0] = t0;
        memcpy(s->y, c->kept_y, (size_t)ny * sizeof(double));
        memcpy(s->io.stats, c->kept_stats, 2 * sizeof(double));
        return 0;
    }
    double t_end = s->io.times[s->micro];
    s->ints[RBC_SL_MICRO_DONE] += (int64_t)nearbyint((t_end - s->io.times[0]) / (s->H / (double)s->micro));
    *t = t_end;
    return 1;
}

/* After the step: the reports of t_k, the work, the motions and the history row. */
static void commit(rbc_sl_session *s, const request *q, const scratch *c, int64_t n) {
    for (int64_t j = 0; j < s->nj; j++) {
        memcpy(s->flex + 13 * j, c->flex + 13 * j, 13 * sizeof(double));
        if (q->energy) s->energy_flex[j] = c->energy[j];
        s->energy_rigid[j] += s->io.energy[s->joint_point[j]];
        for (int k = 0; k < 4; k++) {
            double g = c->gaps[4 * j + k], *most = s->gap_max + 4 * j + k;
            s->gaps[4 * j + k] = s->last_gaps[4 * j + k] = g;
            if (!isnan(*most) && (isnan(g) || g > *most)) *most = g;  /* (np.maximum) */
        }
    }
    double *kin = s->hist_kin + 13 * s->np * n;
    if (s->motions_asked) {
        for (int64_t i = 0; i < s->np; i++) {
            memcpy(s->motions + 19 * i, s->io.end + 19 * i, 13 * sizeof(double));
            memcpy(s->motions + 19 * i + 13, s->io.acc + 6 * i, 6 * sizeof(double));
            memcpy(kin + 13 * i, s->io.end + 19 * i, 13 * sizeof(double));
        }
    } else {
        point_outputs(s, kin);
    }
    if (s->nj) memcpy(s->hist_gaps + 4 * s->nj * (n - 1), c->gaps, 4 * (size_t)s->nj * sizeof(double));
    for (int64_t k = 0; k < 4 * s->nj; k++) s->hist_gaps[4 * s->nj * n + k] = NAN;
    s->hist_time[n] = s->floats[RBC_SL_TIME];
    s->ints[RBC_SL_HIST_N] = n + 1;
    s->ints[RBC_SL_STEP] += 1;
    s->ints[RBC_SL_DONE] += 1;
}

/* msgpack's str "r-N": the reply's msg_id (requests._reply_ids' numbering) */
static size_t put_reply_id(unsigned char *o, uint64_t id) {
    char text[24] = "r-";
    char digits[21];
    int n = 0;
    do {
        digits[n++] = (char)('0' + id % 10);
        id /= 10;
    } while (id);
    for (int i = 0; i < n; i++) text[2 + i] = digits[n - 1 - i];
    return rbc_mp_put_str(o, text, 2 + (size_t)n);
}

/* The reply's header frame into w->out: the bytes wire.encode gives for stepping's reply. */
static void encode(rbc_sl_wire *w, const rbc_sl_session *s, const request *q) {
    const rbc_sl_pieces *pc = &w->pieces;
    unsigned char *o = w->out;
    int64_t n = s->ints[RBC_SL_HIST_N] - 1;
    o += rbc_put_bytes(o, pc->head, pc->head_n);
    o += put_reply_id(o, (uint64_t)s->ints[RBC_SL_REPLY_ID]);
    o += rbc_put_bytes(o, pc->mid, pc->mid_n);
    o += q->msg_id ? rbc_mp_put_str(o, q->msg_id, q->msg_id_n) : rbc_mp_put_uint(o, q->id);
    o += rbc_put_bytes(o, pc->tail, pc->tail_n);
    o += rbc_mp_put_uint(o, (uint64_t)s->ints[RBC_SL_STEP]);
    o += rbc_put_bytes(o, pc->time, pc->time_n);
    o += rbc_mp_put_f64(o, s->floats[RBC_SL_TIME]);
    o += rbc_put_bytes(o, pc->kin, pc->kin_n);
    o += rbc_le_put_f64s(o, s->hist_kin + 13 * s->np * n, 13 * s->np);
    o += rbc_put_bytes(o, pc->gaps, pc->gaps_n);
    o += rbc_le_put_f64s(o, s->gaps, 4 * s->nj);
    if (pc->motions_n) {
        o += rbc_put_bytes(o, pc->motions, pc->motions_n);
        o += rbc_le_put_f64s(o, s->motions, 19 * s->np);
    }
    w->out_n = (size_t)(o - w->out);
}

/* The bytes encode may write at most. */
static size_t reply_size(const rbc_sl_pieces *pc, const rbc_sl_session *s) {
    return pc->head_n + pc->mid_n + pc->tail_n + pc->time_n + pc->kin_n + pc->gaps_n
           + pc->motions_n + 64 + MAX_MSG_ID + 8 * (size_t)(32 * s->np + 4 * s->nj);
}

int rbc_sl_step(rbc_sl_wire *w, rbc_sl_session *s, const unsigned char *header, size_t size) {
    request q;
    int64_t step = s->ints[RBC_SL_STEP], n = s->ints[RBC_SL_HIST_N];
    int64_t ny = 13 * (s->h->sys.mass_blocks.shape[0] - 1);
    if (!read_request(header, size, s, &q) || q.step != (uint64_t)step
        || (s->nj && s->ints[RBC_SL_REPORTED] == step) || n < 1 || n >= s->hist_cap
        || reply_size(&w->pieces, s) > w->out_cap || s->h->sys.points.switches.i[0] != 0)
        return 0;
    if ((s->nj && step % s->output_every == 0)                       /* a result row */
        || (s->snapshot_every && step % s->snapshot_every == 0))      /* a snapshot */
        return 0;
    scratch c = carve(s, ny);
    if (!inputs(s, &q, &c)) return 0;
    if (s->nj) {
        const double *rows[RBC_SL_MAX_JOINTS];  /* (nj <= RBC_SL_MAX_JOINTS: the binding) */
        for (int64_t j = 0; j < s->nj; j++) rows[j] = c.flex + 13 * j;
        point_outputs(s, c.outputs);
        if (rbc_sv_gaps(c.outputs, s->joint_point, rows, s->nj, s->tol, c.gaps)) return 0;
    }
    double t = s->floats[RBC_SL_TIME];
    if (!macro_step(s, &c, ny, &t)) return 0;
    s->floats[RBC_SL_TIME] = t;
    if (s->nj) s->ints[RBC_SL_REPORTED] = step;
    commit(s, &q, &c, n);
    encode(w, s, &q);
    s->ints[RBC_SL_REPLY_ID] += 1;
    return 1;
}

/* --- the socket ----------------------------------------------------------------------------- */

enum { WAIT_READY = 1, WAIT_IDLE = 0, WAIT_OTHER = 2, WAIT_SIGNAL = -1, WAIT_ERROR = -2 };

/* Wait for a request (the idle time from the last one), in slices with signals looked at. */
static int wait_request(rbc_sl_wire *w, const rbc_sl_session *s) {
    for (;;) {
        long slice = POLL_SLICE_MS;
        if (w->idle_s >= 0) {  /* as worker_process._wait_ms: max(1, int(left ms) + 1) */
            double left = s->floats[RBC_SL_LAST_END] + w->idle_s - now_s();
            long ms = left <= 0 ? 1 : (long)(left * 1000.0) + 1;
            if (ms < 1) ms = 1;
            if (ms < slice) slice = ms;
        }
        int got = rbc_zmq_wait_input(w->z, w->sock, w->other, slice);
        if (got < 0) return WAIT_ERROR;
        if (got == 1) return WAIT_READY;
        if (got == 2) return WAIT_OTHER;
        if (w->interrupted && w->interrupted(w->ctx)) return WAIT_SIGNAL;
        if (w->idle_s >= 0 && now_s() >= s->floats[RBC_SL_LAST_END] + w->idle_s)
            return WAIT_IDLE;
    }
}

static void timer(double seconds) {
    struct itimerval it = {{0, 0}, {0, 0}};
    if (seconds > 0) {
        it.it_value.tv_sec = (time_t)seconds;
        it.it_value.tv_usec = (suseconds_t)((seconds - (double)it.it_value.tv_sec) * 1e6);
        if (!it.it_value.tv_sec && !it.it_value.tv_usec) it.it_value.tv_usec = 1;
    }
    setitimer(ITIMER_REAL, &it, NULL);
}

/* The request in w->parts, if it is one header frame from a client: [identity, (empty,) header]. */
static const unsigned char *header_of(rbc_sl_wire *w, size_t *size) {
    const rbc_zmq *z = w->z;
    w->delimited = w->n_parts > 1 && z->msg_size(&w->parts[1]) == 0;
    int at = w->delimited ? 2 : 1;
    if (w->more || w->n_parts != at + 1) return NULL;
    *size = z->msg_size(&w->parts[at]);
    if (*size == 0 || *size > (size_t)w->max_message) return NULL;
    return z->msg_data(&w->parts[at]);
}

/* Send the reply to the request's identity; 0 when ZeroMQ does not take it at once. */
static int send_reply(rbc_sl_wire *w) {
    const rbc_zmq *z = w->z;
    if (z->send(w->sock, z->msg_data(&w->parts[0]), z->msg_size(&w->parts[0]),
                RBC_ZMQ_SNDMORE | RBC_ZMQ_DONTWAIT) < 0)
        return 0;
    if (w->delimited) z->send(w->sock, "", 0, RBC_ZMQ_SNDMORE);
    z->send(w->sock, w->out, w->out_n, 0);  /* (the parts of a message are queued as one) */
    return 1;
}

int rbc_sl_run(rbc_sl_wire *w, rbc_sl_session *s) {
    w->n_parts = 0;
    for (int64_t n = 1;; n++) {
        if (n % SIGNAL_EVERY == 0 && w->interrupted && w->interrupted(w->ctx))
            return RBC_SL_SIGNAL;
        int got = wait_request(w, s);
        if (got != WAIT_READY)
            return got == WAIT_IDLE ? RBC_SL_IDLE : got == WAIT_OTHER ? RBC_SL_OTHER
                 : got == WAIT_SIGNAL ? RBC_SL_SIGNAL : RBC_SL_ERROR;
        if (w->timer_s > 0) timer(w->timer_s);
        if (!rbc_zmq_receive(w->z, w->sock, w->parts, RBC_SL_PARTS, &w->n_parts, &w->more)) {
            if (w->timer_s > 0) timer(0.0);
            continue;
        }
        size_t size;
        const unsigned char *header = header_of(w, &size);
        double start = now_s();
        if (w->status) w->status[0] = start;
        if (!header || !rbc_sl_step(w, s, header, size)) {
            if (w->timer_s > 0) timer(0.0);  /* (Python's handling sets its own) */
            if (w->status) w->status[0] = 0.0;
            return RBC_SL_HANDOVER;
        }
        s->floats[RBC_SL_LAST_SEEN] = start;
        if (w->timer_s > 0) timer(0.0);
        if (w->status) {
            w->status[1] = (double)s->ints[RBC_SL_STEP];
            w->status[2] = s->floats[RBC_SL_TIME];
            w->status[0] = 0.0;
        }
        s->floats[RBC_SL_LAST_END] = now_s();  /* (the worker's idle time counts from here) */
        if (!send_reply(w)) return RBC_SL_UNSENT;
        rbc_zmq_close_parts(w->z, w->parts, &w->n_parts);
    }
}
