/* bench_roundtrip.c: macro-step round trips seen from the rbcosim C library, next to a raw
 * libzmq client sending the same bytes (benchmarks/bench_c_client.py runs it).
 *
 *   bench_roundtrip ENDPOINT STEPS ROUNDS
 *
 * ENDPOINT is an `rbcosim serve` with the toy rigid side (one point "tip", joint "tip"). Four
 * figures, in microseconds per round trip, the median over ROUNDS rounds of STEPS steps; the
 * four loops alternate within each round so that load from other processes hits them alike:
 *
 *   lib/server   rbc_step: encode the wrench [1,6] and node kinematics [1,13], send, poll,
 *                receive, decode kinematics [1,13], motions [1,19], gaps [1,4]
 *   raw/server   a hand-written libzmq DEALER sending the same step requests, pre-encoded
 *                before the clock starts, and receiving the replies without decoding them
 *   lib/fake     rbc_step against a C ROUTER in this process that answers every step with a
 *                reply of the real server's bytes (parent_id and step patched in)
 *   raw/fake     the raw client against that C ROUTER
 *
 * lib/raw against the same server is the library's overhead; the fake server removes the
 * Python server's cost so that the ratio is not diluted by it. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>
#include <zmq.h>

#include "rbcosim_client.h"

static const char *const TIP[] = {"tip"};
static const char TOY[] = "[toy]\npoints = [\"tip\"]\nmacro_step = 0.001\nsubsteps = 1\n";
static double wrench[6] = {0.0, 0.0, 9.81, 0.0, 0.0, 0.0};
static double flex[13] = {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_roundtrip: %s: %s\n", what, why);
    exit(1);
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --- the library ------------------------------------------------------------------------- */

static rbc_client *attached_client(const char *endpoint)
{
    char error[256];
    rbc_client *c = rbc_connect(endpoint, NULL, 10000, error, sizeof error);
    if (c == NULL)
        die("rbc_connect", error);
    if (rbc_hello(c, "bench") != RBC_OK ||
        rbc_create_session(c, NULL, TOY, NULL) != RBC_OK ||
        rbc_attach(c, TIP, 1, TIP, 1, "bench", 0, NULL, NULL) != RBC_OK)
        die("setup", rbc_error_message(c));
    return c;
}

static double lib_loop(rbc_client *c, int steps)
{
    rbc_inputs in;
    rbc_exchange x;
    double start;
    int i;
    memset(&in, 0, sizeof in);
    in.wrench = wrench;
    in.wrench_terms = 1;
    in.flex_kinematics = flex;
    start = now_us();
    for (i = 0; i < steps; ++i)
        if (rbc_step(c, &in, &x) != RBC_OK)
            die("rbc_step", rbc_error_message(c));
    return (now_us() - start) / steps;
}

/* --- the raw client ---------------------------------------------------------------------- */

typedef struct raw_client {
    void *context; /* its own, like each rbc_client's: one I/O thread per client */
    void *socket;
    char session[64], client[64];
    long step;
    unsigned long long msg_id;
    msgpack_sbuffer *requests; /* pre-encoded, one per step of a round */
} raw_client;

static void pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void pack_array(msgpack_packer *pk, const double *v, size_t cols)
{
    msgpack_pack_map(pk, 3);
    pack_str(pk, "dtype");
    pack_str(pk, "<f8");
    pack_str(pk, "shape");
    msgpack_pack_array(pk, 2);
    msgpack_pack_uint64(pk, 1);
    msgpack_pack_uint64(pk, cols);
    pack_str(pk, "data");
    msgpack_pack_bin(pk, 8 * cols);
    msgpack_pack_bin_body(pk, v, 8 * cols);
}

/* The step request the library sends, byte for byte (see the conformance kit). */
static void encode_step(msgpack_sbuffer *buf, unsigned long long msg_id, const char *session,
                        const char *client, long step)
{
    msgpack_packer pk;
    msgpack_sbuffer_clear(buf);
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    pack_str(&pk, "version");
    pack_str(&pk, RBC_PROTOCOL_VERSION);
    pack_str(&pk, "msg_id");
    msgpack_pack_uint64(&pk, msg_id);
    pack_str(&pk, "msg_type");
    pack_str(&pk, "step");
    pack_str(&pk, "session");
    pack_str(&pk, session);
    pack_str(&pk, "content");
    msgpack_pack_map(&pk, 4);
    pack_str(&pk, "client");
    pack_str(&pk, client);
    pack_str(&pk, "step");
    msgpack_pack_long(&pk, step);
    pack_str(&pk, "flex_kinematics");
    pack_array(&pk, flex, 13);
    pack_str(&pk, "wrench");
    pack_array(&pk, wrench, 6);
}

/* Sends one request and receives its reply without decoding; returns the reply's header
 * size (the header is copied to keep, when keep is not NULL). */
static size_t raw_round_trip(void *socket, const msgpack_sbuffer *request, msgpack_sbuffer *keep)
{
    size_t header = 0;
    int more = 1;
    zmq_send(socket, "", 0, ZMQ_SNDMORE);
    zmq_send(socket, request->data, request->size, 0);
    while (more) {
        zmq_msg_t frame;
        size_t size = sizeof more;
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, socket, 0) < 0)
            die("zmq_msg_recv", zmq_strerror(zmq_errno()));
        if (zmq_msg_size(&frame) > 0) {
            header = zmq_msg_size(&frame);
            if (keep != NULL) {
                msgpack_sbuffer_clear(keep);
                msgpack_sbuffer_write(keep, zmq_msg_data(&frame), header);
            }
        }
        zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &size);
        zmq_msg_close(&frame);
    }
    return header;
}

/* A request with the given content pairs packed by fill(); the reply is kept in buf. */
static void raw_request(raw_client *r, const char *msg_type, const char *session,
                        void (*fill)(msgpack_packer *), size_t n, msgpack_sbuffer *buf)
{
    msgpack_packer pk;
    msgpack_sbuffer_clear(buf);
    msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    pack_str(&pk, "version");
    pack_str(&pk, RBC_PROTOCOL_VERSION);
    pack_str(&pk, "msg_id");
    msgpack_pack_uint64(&pk, ++r->msg_id);
    pack_str(&pk, "msg_type");
    pack_str(&pk, msg_type);
    pack_str(&pk, "session");
    if (session != NULL)
        pack_str(&pk, session);
    else
        msgpack_pack_nil(&pk);
    pack_str(&pk, "content");
    msgpack_pack_map(&pk, n);
    fill(&pk);
    raw_round_trip(r->socket, buf, buf);
}

static void fill_create(msgpack_packer *pk)
{
    pack_str(pk, "text");
    pack_str(pk, TOY);
}

static void fill_attach(msgpack_packer *pk)
{
    pack_str(pk, "points");
    msgpack_pack_array(pk, 1);
    pack_str(pk, "tip");
    pack_str(pk, "joints");
    msgpack_pack_array(pk, 1);
    pack_str(pk, "tip");
    pack_str(pk, "motions");
    msgpack_pack_true(pk);
}

/* Copies content[key] (a str) of the reply in buf to out. */
static void reply_str(const msgpack_sbuffer *buf, const char *key, char *out, size_t size)
{
    msgpack_unpacked u;
    size_t offset = 0, n = strlen(key);
    uint32_t i, j;
    msgpack_unpacked_init(&u);
    out[0] = '\0';
    if (msgpack_unpack_next(&u, buf->data, buf->size, &offset) != MSGPACK_UNPACK_SUCCESS)
        die("setup", "a reply is not msgpack");
    for (i = 0; i < u.data.via.map.size; ++i) {
        const msgpack_object_kv *kv = &u.data.via.map.ptr[i];
        if (kv->key.via.str.size != 7 || memcmp(kv->key.via.str.ptr, "content", 7) != 0)
            continue;
        for (j = 0; j < kv->val.via.map.size; ++j) {
            const msgpack_object_kv *c = &kv->val.via.map.ptr[j];
            if (c->key.via.str.size == n && memcmp(c->key.via.str.ptr, key, n) == 0 &&
                c->val.type == MSGPACK_OBJECT_STR && c->val.via.str.size < size) {
                memcpy(out, c->val.via.str.ptr, c->val.via.str.size);
                out[c->val.via.str.size] = '\0';
            }
        }
    }
    msgpack_unpacked_destroy(&u);
    if (out[0] == '\0')
        die("setup", key);
}

/* A raw client with a session and attachment of its own (set up untimed). */
static void raw_open(raw_client *r, const char *endpoint, int steps)
{
    msgpack_sbuffer buf;
    int linger = 0, i;
    memset(r, 0, sizeof *r);
    r->context = zmq_ctx_new();
    r->socket = zmq_socket(r->context, ZMQ_DEALER);
    zmq_setsockopt(r->socket, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(r->socket, endpoint) != 0)
        die("zmq_connect", zmq_strerror(zmq_errno()));
    msgpack_sbuffer_init(&buf);
    raw_request(r, "create_session", NULL, fill_create, 1, &buf);
    reply_str(&buf, "session", r->session, sizeof r->session);
    raw_request(r, "attach", r->session, fill_attach, 3, &buf);
    reply_str(&buf, "client", r->client, sizeof r->client);
    msgpack_sbuffer_destroy(&buf);
    r->requests = malloc((size_t)steps * sizeof *r->requests);
    for (i = 0; i < steps; ++i)
        msgpack_sbuffer_init(&r->requests[i]);
}

static void raw_close(raw_client *r, int steps)
{
    int i;
    for (i = 0; i < steps; ++i)
        msgpack_sbuffer_destroy(&r->requests[i]);
    free(r->requests);
    zmq_close(r->socket);
    zmq_ctx_term(r->context);
}

static double raw_loop(raw_client *r, int steps, msgpack_sbuffer *keep)
{
    double start;
    int i;
    for (i = 0; i < steps; ++i) /* pre-encoded before the clock starts */
        encode_step(&r->requests[i], ++r->msg_id, r->session, r->client, r->step + i);
    start = now_us();
    for (i = 0; i < steps; ++i)
        raw_round_trip(r->socket, &r->requests[i], i == 0 ? keep : NULL);
    r->step += steps;
    return (now_us() - start) / steps;
}

/* --- the fake server (a C ROUTER) -------------------------------------------------------- */

static msgpack_sbuffer template_reply;
static volatile int fake_stop;

/* Packs the template reply with parent_id and content.step replaced, and with the content
 * keys hello, create_session and attach need (protocol_version, session, client), so that one
 * reply answers every request of the library's setup too. */
static void pack_reply(msgpack_packer *pk, const msgpack_object *t, const msgpack_object *msg_id,
                       long long step)
{
    uint32_t i, j;
    msgpack_pack_map(pk, t->via.map.size);
    for (i = 0; i < t->via.map.size; ++i) {
        const msgpack_object_kv *kv = &t->via.map.ptr[i];
        msgpack_pack_object(pk, kv->key);
        if (kv->key.via.str.size == 9 && memcmp(kv->key.via.str.ptr, "parent_id", 9) == 0) {
            msgpack_pack_object(pk, *msg_id);
        } else if (kv->key.via.str.size == 7 && memcmp(kv->key.via.str.ptr, "content", 7) == 0) {
            msgpack_pack_map(pk, kv->val.via.map.size + 3);
            for (j = 0; j < kv->val.via.map.size; ++j) {
                const msgpack_object_kv *c = &kv->val.via.map.ptr[j];
                msgpack_pack_object(pk, c->key);
                if (c->key.via.str.size == 4 && memcmp(c->key.via.str.ptr, "step", 4) == 0)
                    msgpack_pack_long_long(pk, step + 1);
                else
                    msgpack_pack_object(pk, c->val);
            }
            pack_str(pk, "protocol_version");
            pack_str(pk, RBC_PROTOCOL_VERSION);
            pack_str(pk, "session");
            pack_str(pk, "s-fake");
            pack_str(pk, "client");
            pack_str(pk, "c-fake");
        } else {
            msgpack_pack_object(pk, kv->val);
        }
    }
}

static void *fake_server(void *router)
{
    msgpack_unpacked t, req;
    msgpack_sbuffer out;
    msgpack_packer pk;
    size_t offset = 0;
    msgpack_unpacked_init(&t);
    msgpack_unpacked_init(&req);
    msgpack_sbuffer_init(&out);
    msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);
    msgpack_unpack_next(&t, template_reply.data, template_reply.size, &offset);
    while (!fake_stop) {
        zmq_pollitem_t item = {NULL, 0, ZMQ_POLLIN, 0};
        zmq_msg_t id, empty, header;
        const msgpack_object *msg_id = NULL, *content = NULL;
        long long step = -1;
        uint32_t i;
        item.socket = router;
        if (zmq_poll(&item, 1, 50) <= 0)
            continue;
        zmq_msg_init(&id);
        zmq_msg_init(&empty);
        zmq_msg_init(&header);
        zmq_msg_recv(&id, router, 0);
        zmq_msg_recv(&empty, router, 0);
        zmq_msg_recv(&header, router, 0);
        offset = 0;
        msgpack_unpack_next(&req, zmq_msg_data(&header), zmq_msg_size(&header), &offset);
        for (i = 0; i < req.data.via.map.size; ++i) {
            const msgpack_object_kv *kv = &req.data.via.map.ptr[i];
            if (kv->key.via.str.size == 6 && memcmp(kv->key.via.str.ptr, "msg_id", 6) == 0)
                msg_id = &kv->val;
            if (kv->key.via.str.size == 7 && memcmp(kv->key.via.str.ptr, "content", 7) == 0)
                content = &kv->val;
        }
        for (i = 0; content != NULL && i < content->via.map.size; ++i)
            if (content->via.map.ptr[i].key.via.str.size == 4 &&
                memcmp(content->via.map.ptr[i].key.via.str.ptr, "step", 4) == 0)
                step = content->via.map.ptr[i].val.via.i64;
        msgpack_sbuffer_clear(&out);
        pack_reply(&pk, &t.data, msg_id, step);
        zmq_send(router, zmq_msg_data(&id), zmq_msg_size(&id), ZMQ_SNDMORE);
        zmq_send(router, "", 0, ZMQ_SNDMORE);
        zmq_send(router, out.data, out.size, 0);
        zmq_msg_close(&id);
        zmq_msg_close(&empty);
        zmq_msg_close(&header);
    }
    msgpack_unpacked_destroy(&t);
    msgpack_unpacked_destroy(&req);
    msgpack_sbuffer_destroy(&out);
    return NULL;
}

/* --- main -------------------------------------------------------------------------------- */

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    const char *names[4] = {"lib/server", "raw/server", "lib/fake", "raw/fake"};
    char fake_endpoint[256];
    size_t fake_size = sizeof fake_endpoint;
    int steps, rounds, r, k, linger = 0;
    double *t[4];
    void *context, *router;
    pthread_t thread;
    rbc_client *lib_server, *lib_fake;
    raw_client raw_server, raw_fake;
    if (argc != 4 || (steps = atoi(argv[2])) < 1 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: %s ENDPOINT STEPS ROUNDS\n", argv[0]);
        return 2;
    }
    context = zmq_ctx_new();
    for (k = 0; k < 4; ++k)
        t[k] = malloc((size_t)rounds * sizeof(double));
    lib_server = attached_client(argv[1]);
    raw_open(&raw_server, argv[1], steps);
    /* The fake server answers with the bytes of a real step reply (its first). */
    msgpack_sbuffer_init(&template_reply);
    raw_loop(&raw_server, 1, &template_reply);

    router = zmq_socket(context, ZMQ_ROUTER);
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(router, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, fake_endpoint, &fake_size) != 0)
        die("bind", zmq_strerror(zmq_errno()));
    pthread_create(&thread, NULL, fake_server, router);
    lib_fake = attached_client(fake_endpoint);
    raw_open(&raw_fake, fake_endpoint, steps);

    for (r = 0; r < rounds; ++r) {
        t[0][r] = lib_loop(lib_server, steps);
        t[1][r] = raw_loop(&raw_server, steps, NULL);
        t[2][r] = lib_loop(lib_fake, steps);
        t[3][r] = raw_loop(&raw_fake, steps, NULL);
    }
    printf("request %lu bytes, server reply %lu bytes (header frames)\n",
           (unsigned long)raw_server.requests[0].size, (unsigned long)template_reply.size);
    for (k = 0; k < 4; ++k) {
        double best = median(t[k], rounds); /* sorts t[k] */
        printf("%-11s %9.2f us per round trip (median; best round %.2f)\n", names[k], best,
               t[k][0]);
    }
    fake_stop = 1;
    pthread_join(thread, NULL);
    rbc_destroy(lib_server);
    rbc_destroy(lib_fake);
    raw_close(&raw_server, steps);
    raw_close(&raw_fake, steps);
    zmq_close(router);
    zmq_ctx_term(context);
    msgpack_sbuffer_destroy(&template_reply);
    for (k = 0; k < 4; ++k)
        free(t[k]);
    return 0;
}
