/* A flexible solver's macro-step loop over the wire (rbcosim flex, issue 26).
 *
 * One client of a server session drives flexible bodies (rbc_fl_bodies): the compiled one-node
 * ones (rbc_cs_joint, coupled.h) in C, any other kind (multi-node, chord-frame) through the
 * caller's callbacks, one per phase of the scheme.  Per macro step it encodes the step request (the bytes rbcosim.service.wire.RequestEncoder
 * gives), sends it over the client's ZeroMQ DEALER socket, reads the reply (a msgpack header
 * and raw float64 arrays, interfaces/PROTOCOL.md) and steps the bodies, in the order of the
 * scheme (jacobi, gauss_seidel_rigid_first, gauss_seidel_flex_first), as the Python flexible
 * solver (rbcosim.distributed.flex_solver) does, with the same functions: the same bits.
 * Whatever is unusual stops the loop where Python can take over with its own code: a motion
 * that is not finite, a body step that is not certainly quiet (undone first), a request ZeroMQ
 * does not take at once, a reply it does not recognise, a message on the server's socket, a
 * timeout, a signal.  Everything SI, inertial; motions (n, 19) as the protocol's rows. */
#ifndef RBC_COSIM_FLEX_LOOP_H
#define RBC_COSIM_FLEX_LOOP_H

#include "../wire/zmq_abi.h"
#include "coupled.h"

/* Parts of a reply kept for Python (more are read by the caller, see rbc_fl_wire). */
#define RBC_FL_PARTS 16

/* The constant pieces of a step request, packed by Python once (RequestEncoder.step_pieces):
 * head up to the msg_id value; the msg_id's prefix (its counter follows in decimal); the rest of
 * the envelope and content up to the step's value; then each array's key and descriptor up to
 * its bytes: flex_kinematics (n, 13), flex_energy (n,), wrench_polynomial (n, m, 6), m = 1..4. */
typedef struct rbc_fl_pieces {
    const unsigned char *head, *prefix, *envelope, *kinematics, *energy, *poly[FX_HISTORY];
    size_t head_n, prefix_n, envelope_n, kinematics_n, energy_n, poly_n[FX_HISTORY];
} rbc_fl_pieces;

typedef struct rbc_fl_wire {
    const rbc_zmq *z;
    void *sock;            /* the socket requests go to and replies come from */
    void *other;           /* the server's socket when sock is a session's direct one, or NULL */
    long timeout_ms;       /* per reply; < 0: none */
    rbc_fl_pieces pieces;
    int (*interrupted)(void *ctx); /* nonzero: stop (a signal's handler raised) */
    void *ctx;
    unsigned char *out;    /* the request's header frame (out_n bytes of out_cap) */
    size_t out_cap, out_n;
    rbc_zmq_msg parts[RBC_FL_PARTS]; /* a reply for Python: n_parts open messages */
    int n_parts, more;     /* more: the reply has further parts, still to be read */
} rbc_fl_wire;

/* Why rbc_fl_run returned. */
enum {
    RBC_FL_STOP = 0,    /* at step `stop` (or beyond): Python's work (rows, checkpoint, end) */
    RBC_FL_TOP = 1,     /* nothing of step *k done: Python takes the whole step */
    RBC_FL_UNSENT = 2,  /* the request (w->out) is encoded, not sent: Python sends it */
    RBC_FL_SENT = 3,    /* sent: Python receives the reply */
    RBC_FL_REPLY = 4,   /* sent, the reply's parts in w->parts: Python reads them */
    RBC_FL_TIMEOUT = 5, /* sent, no reply within the timeout */
    RBC_FL_SIGNAL = 6,  /* w->interrupted stopped it */
    RBC_FL_RAISED = 7,  /* a body's step failed (Python bodies: their exception is pending) */
    RBC_FL_NOMEM = -1
};

/* What a step request carries from the bodies: each joint's kinematics (nj, 13) and energy
 * (nj,) J before the step, the wrench polynomial (nj, m, 6) over it. */
typedef struct rbc_fl_inputs {
    const double *kinematics, *energies, *poly;
    int64_t m;
} rbc_fl_inputs;

/* The bodies a loop steps, in the order of the scheme: the compiled one-node ones
 * (rbc_fl_compiled) or any others through the caller's callbacks (bind_cosim.c: Python's). */
typedef struct rbc_fl_bodies rbc_fl_bodies;
struct rbc_fl_bodies {
    int64_t nj;  /* joints, in the protocol's order */
    /* Before the request, from the motions `now` (nj, 19) at t: the inputs (flexible side
     * first: the bodies step now).  1: done; 0: nothing done (Python takes the step);
     * RBC_FL_RAISED: failed. */
    int (*inputs)(rbc_fl_bodies *b, double t, const double *now, rbc_fl_inputs *in);
    /* Every body's step from `now` at t (rigid side first: to `end` (nj, 19) at t_end, else
     * end NULL).  1: done; 0: nothing done (Python takes it); RBC_FL_RAISED: failed. */
    int (*step)(rbc_fl_bodies *b, double t, const double *now, const double *end,
                double t_end);
    /* Undo what `inputs` did (its request cannot be encoded): RBC_FL_TOP when done, else
     * RBC_FL_RAISED. */
    int (*undo)(rbc_fl_bodies *b);
    void *ctx;
};

/* The compiled one-node bodies as rbc_fl_bodies: a body step that is not certainly quiet (its
 * range checks may warn) is undone (every body as before it) and left to Python. */
typedef struct rbc_fl_compiled {
    rbc_fl_bodies bodies;
    rbc_cs_joint *joints;
    int scheme;
    int64_t order;  /* the extrapolation order */
    double H;       /* s */
    double *buf;    /* scratch (rbc_fl_compiled_free) */
    double *kept, *kinematics, *energies, *coef, *poly;
    int64_t rows[RBC_CS_MAX_JOINTS];
} rbc_fl_compiled;

/* Set c up for nj joints; 0: no memory. */
int rbc_fl_compiled_init(rbc_fl_compiled *c, rbc_cs_joint *joints, int64_t nj, int scheme,
                         int64_t order, double H);
void rbc_fl_compiled_free(rbc_fl_compiled *c);

/* Macro steps from step *k at *t with the points' motions `now` (nj, 19) at *t until step
 * `stop`; per step the request carries msg_id prefix + *next_id (then incremented).  On return
 * *k, *t and `now` are the step the loop is at.  From RBC_FL_UNSENT to RBC_FL_TIMEOUT that
 * step's request is encoded (w->out) and, but for UNSENT, sent; the bodies took what the
 * scheme does before sending (flexible side first: their step), and *stepped tells whether
 * they also took their step after it (jacobi).  scheme: RBC_CS_* (coupled.h). */
int rbc_fl_run(rbc_fl_wire *w, rbc_fl_bodies *b, int scheme, int64_t *k, double *t,
               double *now, int64_t stop, int64_t *next_id, int *stepped);

/* The step request's header frame into w->out (w->out_n bytes): step k, the joints' reports
 * kinematics (nj, 13) and energies (nj,), the polynomial (nj, m, 6); msg_id prefix + id.
 * Returns 0 when w->out is too small. */
int rbc_fl_encode(rbc_fl_wire *w, int64_t id, int64_t k, int64_t nj, const double *kinematics,
                  const double *energies, int64_t m, const double *poly);

#endif
