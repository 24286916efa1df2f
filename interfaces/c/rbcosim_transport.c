/* rbcosim_transport.c: the DEALER socket, the envelope, waiting for a reply by parent_id, and
 * the client's error state (see rbcosim_internal.h). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "rbcosim_internal.h"
#include "rbcosim_wire.h"

static char EMPTY[] = "";
static char NO_MEMORY_MESSAGE[] = "out of memory";

/* --- error state --------------------------------------------------------------------------- */

static void free_error(rbc_client *c)
{
    if (c->error_code != EMPTY && c->error_code != NULL)
        free(c->error_code);
    if (c->error_message != EMPTY && c->error_message != NO_MEMORY_MESSAGE &&
        c->error_message != NULL)
        free(c->error_message);
    c->error_code = EMPTY;
    c->error_message = EMPTY;
}

static char *vformat(const char *format, va_list args)
{
    va_list again;
    char *text;
    int n;
    va_copy(again, args);
    n = vsnprintf(NULL, 0, format, again);
    va_end(again);
    if (n < 0)
        return NULL;
    text = malloc((size_t)n + 1);
    if (text != NULL)
        vsnprintf(text, (size_t)n + 1, format, args);
    return text;
}

rbc_status rbc__fail(rbc_client *c, rbc_status status, const char *code, const char *format, ...)
{
    va_list args;
    char *message;
    char *code_copy = NULL;
    va_start(args, format);
    message = vformat(format, args);
    va_end(args);
    free_error(c);
    if (rbc__set_string(&code_copy, code) != 0 || message == NULL) {
        free(code_copy);
        free(message);
        c->error_code = EMPTY; /* rbc_error_code answers "no_memory" for this message */
        c->error_message = NO_MEMORY_MESSAGE;
        return RBC_ERR_NO_MEMORY;
    }
    c->error_code = code_copy;
    c->error_message = message;
    return status;
}

rbc_status rbc__ok(rbc_client *c)
{
    free_error(c);
    return RBC_OK;
}

const char *rbc_error_code(const rbc_client *c)
{
    if (c == NULL)
        return "invalid_argument";
    if (c->error_message == NO_MEMORY_MESSAGE)
        return "no_memory";
    return c->error_code;
}

const char *rbc_error_message(const rbc_client *c)
{
    return c == NULL ? "the client is NULL" : c->error_message;
}

/* --- small helpers ------------------------------------------------------------------------- */

int rbc__reserve(rbc_doubles *d, size_t n)
{
    double *grown;
    if (n <= d->capacity && d->values != NULL)
        return 0;
    grown = realloc(d->values, (n > 0 ? n : 1) * sizeof(double));
    if (grown == NULL)
        return -1;
    d->values = grown;
    d->capacity = n > 0 ? n : 1;
    return 0;
}

int rbc__set_string(char **slot, const char *text)
{
    char *copy = NULL;
    if (text != NULL) {
        size_t n = strlen(text);
        copy = malloc(n + 1);
        if (copy == NULL)
            return -1;
        memcpy(copy, text, n + 1);
    }
    free(*slot);
    *slot = copy;
    return 0;
}

static void copy_error(char *error, size_t error_size, const char *text)
{
    if (error != NULL && error_size > 0)
        snprintf(error, error_size, "%s", text);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* --- connection ---------------------------------------------------------------------------- */

static int set_curve(void *socket, const rbc_curve_keys *keys, char *error, size_t error_size)
{
    const char *values[3];
    const int options[3] = {ZMQ_CURVE_SERVERKEY, ZMQ_CURVE_PUBLICKEY, ZMQ_CURVE_SECRETKEY};
    const char *names[3] = {"server_public", "client_public", "client_secret"};
    int i;
    values[0] = keys->server_public;
    values[1] = keys->client_public;
    values[2] = keys->client_secret;
    for (i = 0; i < 3; ++i) {
        if (values[i] == NULL || strlen(values[i]) != 40) {
            char text[160];
            snprintf(text, sizeof text,
                     "CURVE key %s must be 40 characters of Z85 text (all three keys or none)",
                     names[i]);
            copy_error(error, error_size, text);
            return -1;
        }
        if (zmq_setsockopt(socket, options[i], values[i], 41) != 0) {
            char text[160];
            snprintf(text, sizeof text, "CURVE key %s refused by ZeroMQ: %s", names[i],
                     zmq_strerror(zmq_errno()));
            copy_error(error, error_size, text);
            return -1;
        }
    }
    return 0;
}

static void init_state(rbc_client *c, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->timeout_ms = timeout_ms;
    c->error_code = EMPTY;
    c->error_message = EMPTY;
    msgpack_sbuffer_init(&c->request);
    msgpack_packer_init(&c->packer, &c->request, msgpack_sbuffer_write);
    msgpack_unpacked_init(&c->unpacked);
}

rbc_client *rbc_connect(const char *endpoint, const rbc_curve_keys *keys, int timeout_ms,
                        char *error, size_t error_size)
{
    rbc_client *c;
    int linger = 0;
    if (endpoint == NULL) {
        copy_error(error, error_size, "the endpoint is NULL");
        return NULL;
    }
    c = malloc(sizeof *c);
    if (c == NULL) {
        copy_error(error, error_size, "out of memory");
        return NULL;
    }
    init_state(c, timeout_ms);
    c->receive_timeout = -1; /* ZeroMQ's default */
    if (rbc__set_string(&c->server_version, "") != 0) {
        copy_error(error, error_size, "out of memory");
        rbc_destroy(c);
        return NULL;
    }
    c->context = zmq_ctx_new();
    c->socket = c->context != NULL ? zmq_socket(c->context, ZMQ_DEALER) : NULL;
    if (c->socket == NULL) {
        copy_error(error, error_size, zmq_strerror(zmq_errno()));
        rbc_destroy(c);
        return NULL;
    }
    zmq_setsockopt(c->socket, ZMQ_LINGER, &linger, sizeof linger);
    c->server_socket = c->socket;
    if (keys != NULL && set_curve(c->socket, keys, error, error_size) != 0) {
        rbc_destroy(c);
        return NULL;
    }
    if (keys != NULL) {
        c->has_keys = 1;
        memcpy(c->keys[0], keys->server_public, 40);
        memcpy(c->keys[1], keys->client_public, 40);
        memcpy(c->keys[2], keys->client_secret, 40);
    }
    if (rbc__set_string(&c->endpoint, endpoint) != 0) {
        copy_error(error, error_size, "out of memory");
        rbc_destroy(c);
        return NULL;
    }
    if (zmq_connect(c->socket, endpoint) != 0) {
        const char *why = zmq_strerror(zmq_errno());
        size_t n = strlen(endpoint) + strlen(why) + 32;
        char *text = malloc(n);
        if (text != NULL)
            snprintf(text, n, "cannot connect to %s: %s", endpoint, why);
        copy_error(error, error_size, text != NULL ? text : why);
        free(text);
        rbc_destroy(c);
        return NULL;
    }
    return c;
}

/* --- the direct endpoint (1.3) ------------------------------------------------------------ */

void rbc__drop_direct(rbc_client *c)
{
    if (c->direct_socket != NULL)
        zmq_close(c->direct_socket);
    c->direct_socket = NULL;
    free(c->direct_session);
    c->direct_session = NULL;
    if (c->socket != c->server_socket) {
        c->socket = c->server_socket;
        c->receive_timeout = -2;
    }
}

void rbc__use_direct(rbc_client *c, const msgpack_object *content)
{
    const msgpack_object *value = wire_get(content, "endpoint");
    char *endpoint, *address = NULL, *session = NULL;
    void *sock;
    int linger = 0;
    if (value == NULL || value->type != MSGPACK_OBJECT_STR || c->session == NULL)
        return;
    endpoint = wire_strdup(value, NULL);
    if (endpoint == NULL)
        return;
    /* tcp: the host this client reaches the server by, at the endpoint's port */
    if (strncmp(endpoint, "tcp://", 6) == 0 && strncmp(c->endpoint, "tcp://", 6) == 0) {
        const char *port = strrchr(endpoint, ':');
        const char *host_end = strrchr(c->endpoint, ':');
        if (port != NULL && host_end != NULL) {
            size_t n = (size_t)(host_end - c->endpoint) + strlen(port) + 1;
            address = malloc(n);
            if (address != NULL)
                snprintf(address, n, "%.*s%s", (int)(host_end - c->endpoint), c->endpoint, port);
        }
    } else {
        address = endpoint;
        endpoint = NULL;
    }
    free(endpoint);
    if (address == NULL || rbc__set_string(&session, c->session) != 0) {
        free(address);
        return;
    }
    rbc__drop_direct(c);
    sock = zmq_socket(c->context, ZMQ_DEALER);
    if (sock != NULL) {
        zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
        if ((c->has_keys && (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, c->keys[0], 41) != 0 ||
                             zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, c->keys[1], 41) != 0 ||
                             zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, c->keys[2], 41) != 0)) ||
            zmq_connect(sock, address) != 0) {
            zmq_close(sock);
            sock = NULL;
        }
    }
    free(address);
    if (sock == NULL) {
        free(session);
        return;
    }
    c->direct_socket = sock;
    c->direct_session = session;
}

void rbc_destroy(rbc_client *c)
{
    if (c == NULL)
        return;
    if (c->direct_socket != NULL)
        zmq_close(c->direct_socket);
    if (c->server_socket != NULL)
        zmq_close(c->server_socket);
    if (c->context != NULL)
        zmq_ctx_term(c->context);
    free_error(c);
    free(c->session);
    free(c->direct_session);
    free(c->endpoint);
    free(c->client_id);
    free(c->server_version);
    free(c->reply);
    free(c->kinematics.values);
    free(c->motions.values);
    free(c->gaps.values);
    msgpack_unpacked_destroy(&c->unpacked);
    msgpack_sbuffer_destroy(&c->request);
    free(c);
}

void rbc_set_timeout(rbc_client *c, int timeout_ms)
{
    if (c != NULL)
        c->timeout_ms = timeout_ms;
}

/* --- requests ------------------------------------------------------------------------------ */

rbc_status rbc__begin(rbc_client *c, const char *msg_type, int with_session, size_t n_content)
{
    void *target = c->server_socket;
    if (with_session && c->direct_socket != NULL && c->session != NULL &&
        strcmp(c->session, c->direct_session) == 0 && strcmp(msg_type, "create_session") != 0)
        target = c->direct_socket;
    if (target != c->socket) {
        c->socket = target;
        c->receive_timeout = -2; /* each socket has its own ZMQ_RCVTIMEO */
    }
    msgpack_sbuffer_clear(&c->request);
    c->last_id += 1;
    return rbc__packed(c, wire_envelope(&c->packer, RBC_PROTOCOL_VERSION, c->last_id, msg_type,
                                        with_session ? c->session : NULL, n_content));
}

rbc_status rbc__packed(rbc_client *c, int pack_error)
{
    if (pack_error)
        return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory", "out of memory packing a request");
    return RBC_OK;
}

/* Waits until the socket is ready for `events` or the deadline (< 0: none) passes. 1 ready,
 * 0 timed out, -1 ZeroMQ error. */
static int wait_ready(rbc_client *c, short events, double deadline)
{
    zmq_pollitem_t item;
    for (;;) {
        long wait = -1;
        int n;
        if (deadline >= 0) {
            double left = deadline - now_ms();
            wait = left > 0 ? (long)left + 1 : 0;
        }
        item.socket = c->socket;
        item.fd = 0;
        item.events = events;
        item.revents = 0;
        n = zmq_poll(&item, 1, wait);
        if (n > 0)
            return 1;
        if (n == 0 && (deadline < 0 || now_ms() >= deadline))
            return 0;
        if (n < 0 && zmq_errno() != EINTR)
            return -1;
    }
}

static double deadline_of(const rbc_client *c)
{
    return c->timeout_ms > 0 ? now_ms() + c->timeout_ms : -1.0;
}

/* Sends the two frames; when the pipe is full (no connection yet), waits for it up to the
 * timeout. */
rbc_status rbc__send(rbc_client *c)
{
    if (zmq_send(c->socket, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) != 0) {
        int ready;
        if (zmq_errno() != EAGAIN)
            return rbc__fail(c, RBC_ERR_TRANSPORT, "transport", "sending a request failed: %s",
                             zmq_strerror(zmq_errno()));
        ready = wait_ready(c, ZMQ_POLLOUT, deadline_of(c));
        if (ready == 0)
            return rbc__fail(c, RBC_ERR_TIMEOUT, "timeout",
                             "could not send within %d ms: no connection to the server",
                             c->timeout_ms);
        if (ready < 0 || zmq_send(c->socket, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) != 0)
            return rbc__fail(c, RBC_ERR_TRANSPORT, "transport", "sending a request failed: %s",
                             zmq_strerror(zmq_errno()));
    }
    if (zmq_send(c->socket, c->request.data, c->request.size, 0) < 0)
        return rbc__fail(c, RBC_ERR_TRANSPORT, "transport", "sending a request failed: %s",
                         zmq_strerror(zmq_errno()));
    return RBC_OK;
}

/* Sets ZMQ_RCVTIMEO to what is left until the deadline (a blocking receive with a timeout
 * wakes up as fast as a plain one; zmq_poll before it costs a system call per reply).
 * Returns 0 when the deadline has passed. */
static int set_receive_timeout(rbc_client *c, double deadline)
{
    int wait = -1;
    if (deadline >= 0) {
        double left = deadline - now_ms();
        if (left <= 0)
            return 0;
        wait = left < (double)INT_MAX - 1 ? (int)left + 1 : INT_MAX;
    }
    if (wait != c->receive_timeout) {
        zmq_setsockopt(c->socket, ZMQ_RCVTIMEO, &wait, sizeof wait);
        c->receive_timeout = wait;
    }
    return 1;
}

/* Receives one multipart message and keeps its header frame (the first non-empty frame) in
 * c->reply; extra frames are dropped. *size = 0 when there was no header. RBC_ERR_TIMEOUT
 * (with no error recorded) when nothing came within ZMQ_RCVTIMEO. */
static rbc_status receive_header(rbc_client *c, size_t *size)
{
    int more = 1, have = 0, first = 1;
    *size = 0;
    while (more) {
        zmq_msg_t frame;
        size_t more_size = sizeof more;
        zmq_msg_init(&frame);
        while (zmq_msg_recv(&frame, c->socket, 0) < 0) {
            int error = zmq_errno();
            if (error == EINTR)
                continue;
            zmq_msg_close(&frame);
            if (first && error == EAGAIN)
                return RBC_ERR_TIMEOUT;
            return rbc__fail(c, RBC_ERR_TRANSPORT, "transport", "receiving a reply failed: %s",
                             zmq_strerror(error));
        }
        first = 0;
        if (!have && zmq_msg_size(&frame) > 0) {
            size_t n = zmq_msg_size(&frame);
            if (n > c->reply_capacity) {
                char *grown = realloc(c->reply, n);
                if (grown == NULL) {
                    zmq_msg_close(&frame);
                    return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory",
                                     "out of memory for a reply of %lu bytes", (unsigned long)n);
                }
                c->reply = grown;
                c->reply_capacity = n;
            }
            memcpy(c->reply, zmq_msg_data(&frame), n);
            *size = n;
            have = 1;
        }
        zmq_getsockopt(c->socket, ZMQ_RCVMORE, &more, &more_size);
        zmq_msg_close(&frame);
    }
    return RBC_OK;
}

static int parent_is(const msgpack_object *header, uint64_t id)
{
    const msgpack_object *parent = wire_get(header, "parent_id");
    return parent != NULL && parent->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
           parent->via.u64 == id;
}

/* An error reply -> RBC_ERR_SERVER (or RBC_ERR_VERSION) with the server's code and message. */
static rbc_status server_error(rbc_client *c, const msgpack_object *header)
{
    const msgpack_object *error = wire_get(header, "error");
    const msgpack_object *code = wire_get(error, "code");
    const msgpack_object *message = wire_get(error, "message");
    int code_len = code != NULL && code->type == MSGPACK_OBJECT_STR ? (int)code->via.str.size : 0;
    int msg_len =
        message != NULL && message->type == MSGPACK_OBJECT_STR ? (int)message->via.str.size : 0;
    if (code_len == 0)
        return rbc__fail(c, RBC_ERR_SERVER, "internal_error",
                         "the server answered with an error but gave no code");
    {
        char *code_text = wire_strdup(code, NULL);
        rbc_status status = wire_is_str(code, "incompatible_version") ? RBC_ERR_VERSION
                                                                       : RBC_ERR_SERVER;
        if (code_text == NULL)
            return rbc__fail(c, RBC_ERR_NO_MEMORY, "no_memory", "out of memory");
        status = rbc__fail(c, status, code_text, "%.*s", msg_len,
                           msg_len ? message->via.str.ptr : "");
        free(code_text);
        return status;
    }
}

/* The envelope's version must be "1.x". */
static int version_ok(const msgpack_object *version)
{
    char major[16];
    size_t n;
    if (version == NULL || version->type != MSGPACK_OBJECT_STR)
        return 0;
    n = version->via.str.size;
    if (n == 0 || n >= sizeof major)
        return 0;
    memcpy(major, version->via.str.ptr, n);
    major[n] = '\0';
    return atoi(major) == RBC_PROTOCOL_MAJOR && strchr(major, '.') != NULL;
}

static rbc_status check_reply(rbc_client *c, const msgpack_object *header,
                              const msgpack_object **content)
{
    const msgpack_object *version = wire_get(header, "version");
    const msgpack_object *status = wire_get(header, "status");
    if (!version_ok(version))
        return rbc__fail(c, RBC_ERR_VERSION, "incompatible_version",
                         "the server answered with protocol version %.*s; this client speaks %s",
                         version != NULL && version->type == MSGPACK_OBJECT_STR
                             ? (int)version->via.str.size : 1,
                         version != NULL && version->type == MSGPACK_OBJECT_STR
                             ? version->via.str.ptr : "?",
                         RBC_PROTOCOL_VERSION);
    if (wire_is_str(status, "ok")) {
        static const msgpack_object empty = {MSGPACK_OBJECT_MAP, {0}};
        *content = wire_get(header, "content");
        if (*content == NULL || (*content)->type != MSGPACK_OBJECT_MAP)
            *content = &empty;
        return RBC_OK;
    }
    if (wire_is_str(status, "error"))
        return server_error(c, header);
    return rbc__fail(c, RBC_ERR_BAD_REPLY, "bad_reply",
                     "the reply's status is neither \"ok\" nor \"error\"");
}

/* A session_ended notice for the direct session waiting on the server's socket (1.3): 1 and
 * the error recorded (the direct socket dropped), else 0. Other messages there are late
 * replies and are dropped. */
static int session_ended(rbc_client *c)
{
    int found = 0;
    for (;;) {
        zmq_msg_t frame;
        int more = 0;
        size_t more_size = sizeof more;
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, c->server_socket, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&frame);
            return found;
        }
        if (!found && zmq_msg_size(&frame) > 0) {
            msgpack_unpacked notice;
            size_t offset = 0;
            msgpack_unpacked_init(&notice);
            if (msgpack_unpack_next(&notice, zmq_msg_data(&frame), zmq_msg_size(&frame),
                                    &offset) == MSGPACK_UNPACK_SUCCESS &&
                notice.data.type == MSGPACK_OBJECT_MAP &&
                wire_is_str(wire_get(&notice.data, "msg_type"), "session_ended") &&
                wire_is_str(wire_get(&notice.data, "session"), c->direct_session)) {
                const msgpack_object *message = wire_get(wire_get(&notice.data, "error"),
                                                         "message");
                int n = message != NULL && message->type == MSGPACK_OBJECT_STR
                            ? (int)message->via.str.size : 0;
                rbc__fail(c, RBC_ERR_SERVER, "session_closed", "%.*s", n,
                          n ? message->via.str.ptr : "the session ended");
                found = 1;
            }
            msgpack_unpacked_destroy(&notice);
        }
        zmq_getsockopt(c->server_socket, ZMQ_RCVMORE, &more, &more_size);
        zmq_msg_close(&frame);
        if (!more && found) {
            rbc__drop_direct(c);
            return 1;
        }
    }
}

#define RBC_NOTICE_SLICE_MS 500.0 /* how often a wait on the direct socket looks for notices */

rbc_status rbc__await(rbc_client *c, uint64_t id, const msgpack_object **content)
{
    double deadline = deadline_of(c);
    for (;;) {
        size_t size = 0, offset = 0;
        rbc_status status = RBC_ERR_TIMEOUT;
        int direct = c->socket == c->direct_socket && c->direct_socket != NULL;
        double slice = deadline;
        if (direct && (deadline < 0 || deadline - now_ms() > RBC_NOTICE_SLICE_MS))
            slice = now_ms() + RBC_NOTICE_SLICE_MS;
        if (set_receive_timeout(c, slice))
            status = receive_header(c, &size);
        if (status == RBC_ERR_TIMEOUT && direct && session_ended(c))
            return RBC_ERR_SERVER;
        if (status == RBC_ERR_TIMEOUT && slice != deadline)
            continue;
        if (status == RBC_ERR_TIMEOUT)
            return rbc__fail(c, RBC_ERR_TIMEOUT, "timeout",
                             "no reply to request %llu within %d ms", (unsigned long long)id,
                             c->timeout_ms);
        if (status != RBC_OK)
            return status;
        if (size == 0)
            continue; /* not a reply of this protocol */
        if (msgpack_unpack_next(&c->unpacked, c->reply, size, &offset) != MSGPACK_UNPACK_SUCCESS ||
            c->unpacked.data.type != MSGPACK_OBJECT_MAP)
            return rbc__fail(c, RBC_ERR_BAD_REPLY, "bad_reply",
                             "a reply header (%lu bytes) is not one msgpack map",
                             (unsigned long)size);
        if (!parent_is(&c->unpacked.data, id))
            continue; /* a late reply to an earlier request */
        return check_reply(c, &c->unpacked.data, content);
    }
}

rbc_status rbc__transact(rbc_client *c, const msgpack_object **content)
{
    rbc_status status = rbc__send(c);
    if (status != RBC_OK)
        return status;
    return rbc__await(c, c->last_id, content);
}
