/* rbcosim_client.h: a C99 client of the rbcosim wire protocol (interfaces/PROTOCOL.md).
 *
 * One rbc_client is one ZeroMQ DEALER connection to `rbcosim serve` (or to the server that
 * `rbcosim cosim --serve-external` starts), one session (created or joined) and at most one
 * attachment to some interface points and joints of it. An FE code that drives several
 * joints attaches them all at once and sends all its wrenches in one step message.
 *
 * Arrays are C-order (row-major) doubles, exactly as they travel on the wire:
 *   kinematics [n][13]  x y z q0 q1 q2 q3 vx vy vz wx wy wz   (m, unit quaternion scalar
 *                       first, m/s, rad/s; inertial frame)
 *   motions    [n][19]  the 13 kinematics values, then ax ay az (m/s^2) and alpha (rad/s^2)
 *   wrench     [n][m][6] polynomial coefficients c_0..c_{m-1} of W(tau) = sum c_j tau^j,
 *                       tau = t - t_k (s); each row fx fy fz mx my mz (N, N m), inertial,
 *                       the force and moment the flexible side exerts ON the rigid body at
 *                       the interface point; m = 1 is a constant wrench
 *   gaps       [n][4]   gap_pos (m), gap_rot (rad), gap_vel (m/s), gap_angvel (rad/s)
 *   added mass [n][6][6], interface Jacobian [n][2][6][6]
 * Rows follow the order of the names given to rbc_attach.
 *
 * Every call returns RBC_OK or an error status; rbc_error_code() then gives the server's
 * code (PROTOCOL.md section 8, e.g. "stale_step") or the library's ("timeout",
 * "transport", "bad_reply", "incompatible_version", "invalid_argument", "no_memory"), and
 * rbc_error_message() a sentence. A failed call changes nothing in the client (but its
 * error state; request ids are not reused).
 *
 * Threads: an rbc_client is not thread-safe; use one client per thread (each has its own
 * ZeroMQ context and socket). Distinct clients may run concurrently.
 *
 * On the wire (PROTOCOL.md): a DEALER socket; every request is two frames, an empty delimiter
 * and one msgpack map with the keys, in this order, version ("1.3"), msg_id (an integer
 * counting from 1 per client), msg_type, session (nil for hello and create_session) and
 * content; arrays inline ({"dtype": "<f8", "shape": [...], "data": bin}). Replies are matched
 * by parent_id; others (late replies to requests that timed out) are dropped. The content
 * keys, in order (a key in [brackets] only when given):
 *   hello           protocol_version, [client_name]
 *   create_session  scenario | text, [overrides], [base_dir], [barrier_timeout],
 *                   [output_every], [snapshot_every], [wait_for_joints]
 *   attach          points, joints, name ("" for NULL), force, motions (always true)
 *   set_added_mass  client, added_mass [n_points,6,6], [frames]
 *   report, step    client, step, [flex_kinematics], [flex_energy], [wrench [n,6] when
 *                   wrench_terms is 1 | wrench_polynomial [n,m,6] when it is 2 or 3],
 *                   [interface_jacobian], [flex_kinematics_at: "end"]
 *   save            name ("default" for NULL), [path]
 *   restore         path if given, else name ("default" for NULL)
 *   get_state       (none)            set_state  state (bin), [step]
 *   heartbeat       [client] (when attached)   detach  client   close  (none)
 * interfaces/conformance/ holds a recorded exchange with these exact bytes.
 * Protocol 1.3: when a create_session or attach reply names the session's direct `endpoint`,
 * the client opens a second DEALER socket to it (same CURVE keys; tcp: the server's host at
 * the endpoint's port) and sends that session's requests there; while waiting there it looks
 * at the server's socket every 0.5 s for a session_ended notice (then RBC_ERR_SERVER,
 * "session_closed"). hello and create_session stay on the server's endpoint.
 */
#ifndef RBCOSIM_CLIENT_H
#define RBCOSIM_CLIENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RBC_PROTOCOL_VERSION "1.3"
#define RBC_PROTOCOL_MAJOR 1

typedef enum rbc_status {
    RBC_OK = 0,
    RBC_ERR_SERVER = 1,     /* the server answered with an error reply (see rbc_error_code) */
    RBC_ERR_TIMEOUT = 2,    /* no reply within the client's timeout */
    RBC_ERR_TRANSPORT = 3,  /* ZeroMQ failed (connect, send, receive) */
    RBC_ERR_BAD_REPLY = 4,  /* the reply could not be decoded or lacks a field */
    RBC_ERR_VERSION = 5,    /* the server speaks another protocol major version */
    RBC_ERR_ARGUMENT = 6,   /* bad arguments to this call (NULL, counts, state) */
    RBC_ERR_NO_MEMORY = 7
} rbc_status;

typedef struct rbc_client rbc_client;

/* CURVE keys, Z85 text (40 characters); all three or none. */
typedef struct rbc_curve_keys {
    const char *server_public;
    const char *client_public;
    const char *client_secret;
} rbc_curve_keys;

/* What the server says about the coupling when a client attaches (protocol 1.2). */
typedef struct rbc_coupling {
    char scheme[64];     /* "jacobi", "gauss_seidel_rigid_first", "gauss_seidel_flex_first",
                            "interface_jacobian", ... */
    int extrapolation;   /* order of the wrench polynomial through past wrenches (0, 1, 2) */
    int micro_steps;     /* flexible-side sub-steps the scenario asks for per macro step */
    double macro_step;   /* s */
    double t_end;        /* s */
    long n_steps;        /* macro steps from t = 0 to t_end */
    int output_every;    /* the server records a result row every this many steps */
    int added_mass;      /* 1: the scenario asks the flexible side to hand its added mass over
                            (rbc_set_added_mass) before the first report */
} rbc_coupling;

/* Session options for rbc_create_session (NULL: defaults). */
typedef struct rbc_session_options {
    const char *base_dir;            /* folder relative scenario paths refer to, or NULL */
    const char *const *override_keys; /* e.g. "cosim.macro_step" */
    const char *const *override_values; /* TOML literals as text, e.g. "0.002" */
    int n_overrides;
    double barrier_timeout;          /* s; <= 0: the server's default */
    int output_every;                /* <= 0: the scenario's */
    int snapshot_every;              /* 0: none */
    int wait_for_joints;             /* 0 or 1 */
} rbc_session_options;

/* The result of rbc_attach, rbc_step_wait, rbc_step and rbc_report. The arrays are owned
 * by the client and stay valid until the next call on it. */
typedef struct rbc_exchange {
    long step;                /* the session's step index after the call */
    double time;              /* s */
    int n_points, n_joints;
    const double *kinematics; /* [n_points][13] */
    const double *motions;    /* [n_points][19]; NULL if the server sent none */
    const double *gaps;       /* [n_joints][4]; NULL after rbc_attach */
} rbc_exchange;

/* The inputs of one macro step (rbc_step_send) or of a report (rbc_report). */
typedef struct rbc_inputs {
    const double *wrench;             /* [n_points][wrench_terms][6]; NULL: none (report) */
    int wrench_terms;                 /* 1..3 */
    const double *flex_kinematics;    /* [n_joints][13] node kinematics, or NULL */
    const double *flex_energy;        /* [n_joints] J delivered since t = 0, or NULL */
    const double *interface_jacobian; /* [n_points][2][6][6] or NULL */
    int kinematics_at_end;            /* 0: flex_kinematics at t_k; 1: at t_k + H */
} rbc_inputs;

/* --- connection -------------------------------------------------------------------------- */

/* Connect to `endpoint` (e.g. "tcp://127.0.0.1:5555"); keys may be NULL (no CURVE);
 * timeout_ms bounds every wait for a reply (<= 0: wait forever). Nothing is sent yet (ZeroMQ
 * connects in the background; a dead server shows as RBC_ERR_TIMEOUT of the first call).
 * NULL on failure, with a sentence copied into error[error_size] (truncated, NUL-terminated)
 * when error is not NULL. */
rbc_client *rbc_connect(const char *endpoint, const rbc_curve_keys *keys, int timeout_ms,
                        char *error, size_t error_size);
void rbc_destroy(rbc_client *client);             /* closes the socket; NULL is allowed */
void rbc_set_timeout(rbc_client *client, int timeout_ms);

const char *rbc_error_code(const rbc_client *client);    /* "" after success */
const char *rbc_error_message(const rbc_client *client); /* "" after success */

/* hello: checks that the server speaks protocol major 1; fills the server's version. */
rbc_status rbc_hello(rbc_client *client, const char *client_name);
const char *rbc_server_version(const rbc_client *client); /* e.g. "1.2" */

/* --- sessions ---------------------------------------------------------------------------- */

/* Create a session from a scenario file the server can read (scenario_path) or from TOML
 * text (scenario_text); exactly one is non-NULL. */
rbc_status rbc_create_session(rbc_client *client, const char *scenario_path,
                              const char *scenario_text, const rbc_session_options *options);
/* Join a session somebody else created (e.g. `rbcosim cosim --serve-external`): records
 * the id and checks it with a heartbeat (unknown_session if it does not exist), which also
 * sets rbc_step_index and rbc_time. */
rbc_status rbc_join_session(rbc_client *client, const char *session_id);
const char *rbc_session_id(const rbc_client *client);

/* Attach to points and joints (their order is the row order of every array); force: take
 * over names held by a client the server has not yet given up on. Fills the coupling
 * settings (zeros and scheme "" from a server that does not send them) and the initial
 * exchange (motions at the session's time; gaps NULL). Always asks for motions. coupling
 * and initial may be NULL. */
rbc_status rbc_attach(rbc_client *client, const char *const *points, int n_points,
                      const char *const *joints, int n_joints, const char *name, int force,
                      rbc_coupling *coupling, rbc_exchange *initial);

/* Hand the flexible side's added mass over, once, before the first report: [n_points][6][6];
 * frames: per point "point" or "inertial" (NULL: all "point"). */
rbc_status rbc_set_added_mass(rbc_client *client, const double *added_mass,
                              const char *const *frames);

/* A report at the session's current step without stepping (before the first step and after
 * the last); the wrench, if given, is held from now on. */
rbc_status rbc_report(rbc_client *client, const rbc_inputs *inputs, rbc_exchange *out);

/* One macro step: send this client's inputs for the session's current step index and wait
 * until every client's are in. rbc_step = rbc_step_send + rbc_step_wait; split them to
 * compute the flexible side's step while the rigid side takes the same step (Jacobi).
 * Between rbc_step_send and rbc_step_wait other calls are refused (invalid_argument). When
 * rbc_step_wait times out the step stays in flight and rbc_step_wait may be called again;
 * rbc_step gives it up instead (a late reply is then dropped). A step needs the wrench of
 * every point; flex_kinematics may be NULL when a report at this step delivered them. */
rbc_status rbc_step(rbc_client *client, const rbc_inputs *inputs, rbc_exchange *out);
rbc_status rbc_step_send(rbc_client *client, const rbc_inputs *inputs);
rbc_status rbc_step_wait(rbc_client *client, rbc_exchange *out);

/* The session's step index as last seen in any reply that reports it (create_session,
 * attach, step, report, get_state, set_state, save, restore, heartbeat, detach, close). */
long rbc_step_index(const rbc_client *client);
double rbc_time(const rbc_client *client);      /* s, as last seen */

/* --- state ------------------------------------------------------------------------------- */

/* name NULL: "default"; path (a file on the server's host) may be NULL. */
rbc_status rbc_save(rbc_client *client, const char *name, const char *path);
/* From the file `path` if not NULL, else the snapshot `name` (NULL: "default"). */
rbc_status rbc_restore(rbc_client *client, const char *name, const char *path);
/* The rigid side's state as an opaque blob (malloc'ed; free() it). */
rbc_status rbc_get_state(rbc_client *client, unsigned char **blob, size_t *size, long *step,
                         double *time);
/* step < 0: keep the session's step index. */
rbc_status rbc_set_state(rbc_client *client, const unsigned char *blob, size_t size, long step);

rbc_status rbc_heartbeat(rbc_client *client);     /* with the client id when attached */
rbc_status rbc_detach(rbc_client *client);        /* the client id is forgotten */
rbc_status rbc_close_session(rbc_client *client); /* the session and client ids are forgotten */

#ifdef __cplusplus
}
#endif

#endif /* RBCOSIM_CLIENT_H */
