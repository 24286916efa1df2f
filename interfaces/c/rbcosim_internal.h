/* rbcosim_internal.h: the client's state and its transport, shared by rbcosim_client.c (the
 * messages) and rbcosim_transport.c (socket, envelope, replies, errors). Not installed. */
#ifndef RBCOSIM_INTERNAL_H
#define RBCOSIM_INTERNAL_H

#include <stdint.h>

#include <msgpack.h>

#include "rbcosim_client.h"

/* A growable array of doubles owned by the client (what rbc_exchange points into). */
typedef struct rbc_doubles {
    double *values;
    size_t capacity;
} rbc_doubles;

struct rbc_client {
    void *context;
    void *socket;              /* the socket of the request in progress: one of the two below */
    void *server_socket;       /* to the server's endpoint */
    void *direct_socket;       /* to the session's direct endpoint (protocol 1.3); NULL: none */
    char *direct_session;      /* the session whose requests go to direct_socket */
    char *endpoint;            /* the server's endpoint as given to rbc_connect */
    int has_keys;              /* CURVE keys given: the direct socket uses them too */
    char keys[3][41];          /* server public, client public, client secret (Z85) */
    int timeout_ms;
    int receive_timeout;       /* `socket`'s ZMQ_RCVTIMEO as last set (-2: unknown) */
    uint64_t last_id;          /* msg_id of the last request; ids count from 1 */

    char *session;             /* NULL: none */
    char *client_id;           /* NULL: not attached */
    char *server_version;      /* "" until hello */
    int n_points, n_joints;    /* of the attachment */
    long step;
    double time;
    rbc_coupling coupling;     /* from create_session or attach; zero when the server omits it */

    int step_in_flight;        /* rbc_step_send done, rbc_step_wait not yet */
    uint64_t step_id;

    char *error_code;          /* "" (static) or malloc'ed */
    char *error_message;

    msgpack_sbuffer request;   /* the header being packed */
    msgpack_packer packer;
    char *reply;               /* bytes of the last reply's header (objects point into it) */
    size_t reply_capacity;
    msgpack_unpacked unpacked;

    rbc_doubles kinematics, motions, gaps;
};

/* Records an error (code and a printf-style sentence) and returns `status`. */
rbc_status rbc__fail(rbc_client *c, rbc_status status, const char *code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
rbc_status rbc__ok(rbc_client *c); /* clears the error, returns RBC_OK */

/* Starts a request: resets the buffer and packs the envelope (session: the client's when
 * with_session, else nil) and the content map's header of n_content pairs. */
rbc_status rbc__begin(rbc_client *c, const char *msg_type, int with_session, size_t n_content);
rbc_status rbc__packed(rbc_client *c, int pack_error); /* turns a packing failure into no_memory */
/* Sends the packed request; its msg_id is c->last_id. */
rbc_status rbc__send(rbc_client *c);
/* Waits for the reply whose parent_id is `id` (others are dropped); on success *content is
 * the reply's content map (valid until the next receive). Server errors become
 * RBC_ERR_SERVER (RBC_ERR_VERSION for incompatible_version). */
rbc_status rbc__await(rbc_client *c, uint64_t id, const msgpack_object **content);
/* rbc__send then rbc__await. */
rbc_status rbc__transact(rbc_client *c, const msgpack_object **content);

/* Grows `d` to hold n doubles; 0 on success. */
int rbc__reserve(rbc_doubles *d, size_t n);
/* Replaces *slot by a copy of text (NULL allowed); 0 on success. */
int rbc__set_string(char **slot, const char *text);

/* Protocol 1.3: after a create_session or attach reply naming `endpoint`, send `session`'s
 * requests to it (a second DEALER with the same CURVE keys). Failing to connect keeps the
 * server's endpoint (not an error). */
void rbc__use_direct(rbc_client *c, const msgpack_object *content);
/* Closes the direct socket: every request goes to the server's endpoint again. */
void rbc__drop_direct(rbc_client *c);

/* Shared by the message files (rbcosim_client.c, rbcosim_state.c). */
rbc_status rbc__need_client(const rbc_client *c);  /* RBC_ERR_ARGUMENT for NULL */
/* Refuses a request while a step is in flight, or without the session / attachment it needs. */
rbc_status rbc__ready_for(rbc_client *c, const char *what, int session, int attached);
void rbc__take_position(rbc_client *c, const msgpack_object *content); /* step, time if there */
rbc_status rbc__missing(rbc_client *c, const char *reply, const char *field, const char *why);
/* A request whose content is only the client id (with_client) or empty; takes step/time. */
rbc_status rbc__simple_request(rbc_client *c, const char *msg_type, int with_client);

#endif /* RBCOSIM_INTERNAL_H */
