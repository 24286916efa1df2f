/* A flexible solver's macro-step loop over the wire (rbcosim flex, issue 26).
 *
 * One client of a server session drives one-node flexible bodies (rbc_cs_joint, coupled.h):
 * per macro step it encodes the step request (the bytes rbcosim.service.wire.RequestEncoder
 * gives), sends it over the client's ZeroMQ DEALER socket, reads the reply (a msgpack header
 * and raw float64 arrays, interfaces/PROTOCOL.md) and steps the bodies, in the order of the
 * scheme (jacobi, gauss_seidel_rigid_first, gauss_seidel_flex_first), as the Python flexible
 * solver (rbcosim.distributed.flex_solver) does, with the same C functions: the same bits.
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
    RBC_FL_NOMEM = -1
};

/* Macro steps of H from step *k at *t (s) with the points' motions `now` (nj, 19) at *t until
 * step `stop`; per step the request carries msg_id prefix + *next_id (then incremented).  On
 * return *k, *t and `now` are the step the loop is at.  From RBC_FL_UNSENT to RBC_FL_TIMEOUT
 * that step's request is encoded (w->out) and, but for UNSENT, sent; the bodies took what the
 * scheme does before sending (flexible side first: their step), and *stepped tells whether
 * they also took their step after it (jacobi).  A body step that is not certainly quiet is
 * undone (every body as before it) and left to Python.  scheme: RBC_CS_* (coupled.h), order:
 * the extrapolation order. */
int rbc_fl_run(rbc_fl_wire *w, rbc_cs_joint *joints, int64_t nj, int scheme, int64_t order,
               double H, int64_t *k, double *t, double *now, int64_t stop, int64_t *next_id,
               int *stepped);

/* The step request's header frame into w->out (w->out_n bytes): step k, the joints' reports
 * kinematics (nj, 13) and energies (nj,), the polynomial (nj, m, 6); msg_id prefix + id.
 * Returns 0 when w->out is too small. */
int rbc_fl_encode(rbc_fl_wire *w, int64_t id, int64_t k, int64_t nj, const double *kinematics,
                  const double *energies, int64_t m, const double *poly);

#endif
