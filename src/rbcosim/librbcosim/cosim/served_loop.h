/* A session worker's step path in C (rbcosim.service.served_path, issue 26).
 *
 * While a session of one client stands at a step barrier with nothing pending, its worker's
 * Python loop hands the wait to rbc_sl_run: it polls the session's direct ROUTER socket (and
 * the server's DEALER socket), and for each ordinary `step` request it recognises completely
 * it does what rbcosim.service.stepping does for it, with the same C functions in the same
 * order (so the same bits): the checks of _collect, the flexible side's reports at t_k and
 * their gaps (rbc_sv_gaps), the wrench polynomials, the rigid macro step (rbc_macro_step, RK4),
 * the interface work, the motions, the session's history, the reply (the bytes
 * rbcosim.service.wire.encode gives) and the worker's status file.  Whatever it does not
 * recognise, or what needs Python (a result row, a snapshot, a gap over its tolerance, a failed
 * step, a full history, a reply ZeroMQ does not take at once) returns to Python with no state
 * changed for that request (the request's frames, or the reply, kept for Python).  Nothing is
 * allocated per step: every buffer is the caller's.  SI units, inertial frame. */
#ifndef RBC_COSIM_SERVED_LOOP_H
#define RBC_COSIM_SERVED_LOOP_H

#include <stdint.h>

#include "../rigid/macro.h"
#include "../wire/zmq_abi.h"

#define RBC_SL_PARTS 4 /* parts of a request kept: identity, (delimiter,) header, one more */

/* The reply's constant msgpack pieces, packed once by Python
 * (rbcosim.service.wire.MessageEncoder.step_reply_pieces): the map header, version and "msg_id" key; msg_type, session and "parent_id" key; status,
 * "content" and its map header, "step" key; "time" key; then each array's key and descriptor
 * up to its bytes: kinematics (np, 13), gaps (nj, 4), motions (np, 19) (motions_n 0: none). */
typedef struct rbc_sl_pieces {
    const unsigned char *head, *mid, *tail, *time, *kin, *gaps, *motions;
    size_t head_n, mid_n, tail_n, time_n, kin_n, gaps_n, motions_n;
} rbc_sl_pieces;

/* Indices of rbc_sl_session.ints (int64, read and written) and .floats (double). */
enum {
    RBC_SL_STEP = 0,     /* the session's step index */
    RBC_SL_REPORTED,     /* the step index whose reports are in, -1: none */
    RBC_SL_HIST_N,       /* rows of the history written */
    RBC_SL_REPLY_ID,     /* the next reply's number (msg_id "r-N") */
    RBC_SL_DONE,         /* steps this call took (in) */
    RBC_SL_MICRO_DONE,   /* micro steps they counted (the diagnostics' steps) */
    RBC_SL_N_INTS
};
/* floats: the session's time s; the monotonic time (s) of the last request taken (the client's
 * last_seen) and of the end of its handling (the worker's idle time counts from there). */
enum { RBC_SL_TIME = 0, RBC_SL_LAST_SEEN, RBC_SL_LAST_END, RBC_SL_N_FLOATS };
#define RBC_SL_MAX_JOINTS 16

typedef struct rbc_sl_session {
    rbc_maximal *h;
    double *y;                      /* (13 nb,) the rigid state, in place */
    rbc_stepper st;                 /* RK4 only */
    rbc_macro_io io;                /* the macro step's scratch (rigid/macro.h) */
    int64_t micro, np, nj, output_every, snapshot_every;
    double H;                       /* macro step, s */
    const char *session_id, *client_id;
    size_t session_n, client_n;
    int motions_asked;              /* the client asked for motions in its replies */
    const int64_t *joint_point;     /* (nj,) each joint's point row */
    const double *tol;              /* (nj, 4) */
    double *flex;                   /* (nj, 13) the joints' reported kinematics */
    double *energy_flex, *energy_rigid; /* (nj,) J */
    double *last_gaps, *gap_max;    /* (nj, 4) */
    double *gaps;                   /* (nj, 4) the gaps of the last reports */
    double *motions;                /* (np, 19) after the last step */
    double *hist_time, *hist_kin, *hist_gaps; /* (cap,), (cap, np, 13), (cap, nj, 4) */
    int64_t hist_cap;
    double *scratch;                /* rbc_sl_scratch_size doubles */
    int64_t *ints;                  /* RBC_SL_N_INTS */
    double *floats;                 /* RBC_SL_N_FLOATS */
} rbc_sl_session;

/* Doubles of rbc_sl_session.scratch for np points, nj joints, ny state entries. */
int64_t rbc_sl_scratch_size(int64_t np, int64_t nj, int64_t ny);

typedef struct rbc_sl_wire {
    const rbc_zmq *z;
    void *sock;                     /* the session's direct ROUTER socket */
    void *other;                    /* the server's DEALER socket */
    double idle_s;                  /* return when no request comes for this long; < 0 none */
    double timer_s;                 /* request_timeout (SIGALRM) per request; <= 0 none */
    int64_t max_message;            /* bytes of a request's body, at most */
    double *status;                 /* (3,) the worker's status file [busy since, step, time] */
    rbc_sl_pieces pieces;
    unsigned char *out;             /* the reply's header frame (out_n of out_cap bytes) */
    size_t out_cap, out_n;
    int (*interrupted)(void *ctx);  /* nonzero: stop (a signal's handler raised) */
    void *ctx;
    rbc_zmq_msg parts[RBC_SL_PARTS];
    int n_parts, more, delimited;   /* the last request's parts (more: still unread ones) */
} rbc_sl_wire;

/* Why rbc_sl_run returned. */
enum {
    RBC_SL_IDLE = 0,     /* no request within idle_s */
    RBC_SL_OTHER = 1,    /* the server's socket has a message */
    RBC_SL_HANDOVER = 2, /* a request for Python: its parts in w->parts, nothing done */
    RBC_SL_UNSENT = 3,   /* a step done, its reply (w->out, to parts[0]) not taken by ZeroMQ */
    RBC_SL_SIGNAL = 4,   /* w->interrupted stopped it */
    RBC_SL_ERROR = 5     /* zmq_poll failed */
};

/* Serve ordinary step requests of session s on w until something else comes (see above). */
int rbc_sl_run(rbc_sl_wire *w, rbc_sl_session *s);

/* Handle one request's header frame as rbc_sl_run does, without the socket: 1 when it was an
 * ordinary step (done, its reply in w->out), 0 when it is Python's (nothing changed). */
int rbc_sl_step(rbc_sl_wire *w, rbc_sl_session *s, const unsigned char *header, size_t n);

#endif
