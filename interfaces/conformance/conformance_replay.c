/* conformance_replay.c: replays exchange.txt against the rbcosim C client.
 *
 *   conformance_replay exchange.txt exchange.expect
 *
 * A ZeroMQ ROUTER on a free loopback port plays the server: for each recorded request it
 * receives the client's request and checks that its header bytes equal the recorded ones
 * (packed by Python's msgpack in the documented key order), then answers with the recorded
 * reply bytes. The main thread drives the library through the same exchange with the public
 * API (inputs from exchange.expect) and checks what the API returns against exchange.expect.
 * Exits 1 with a message naming the first mismatch. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "rbcosim_client.h"

/* --- files ------------------------------------------------------------------------------ */

typedef struct record {
    char direction; /* '>' request, '<' reply */
    int conn;
    unsigned char *bytes;
    size_t size;
} record;

typedef struct entry {
    char *key;
    int is_str;
    char *text;       /* str: the decoded bytes, NUL-terminated */
    size_t text_size;
    double *values;   /* num */
    size_t n;
} entry;

static record *records;
static size_t n_records;
static entry *entries;
static size_t n_entries;

static void die(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "conformance_replay: FAIL: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static void *checked(void *p)
{
    if (p == NULL)
        die("out of memory");
    return p;
}

/* Reads one line of any length; NULL at the end. */
static char *read_line(FILE *f)
{
    size_t size = 0, capacity = 256;
    char *line = checked(malloc(capacity));
    int ch;
    while ((ch = fgetc(f)) != EOF && ch != '\n') {
        if (size + 1 >= capacity)
            line = checked(realloc(line, capacity *= 2));
        line[size++] = (char)ch;
    }
    if (ch == EOF && size == 0) {
        free(line);
        return NULL;
    }
    line[size] = '\0';
    return line;
}

static unsigned char *from_hex(const char *hex, size_t *size)
{
    size_t n = strlen(hex) / 2, i;
    unsigned char *out = checked(malloc(n + 1));
    for (i = 0; i < n; ++i) {
        unsigned value;
        if (sscanf(hex + 2 * i, "%2x", &value) != 1)
            die("bad hex text");
        out[i] = (unsigned char)value;
    }
    out[n] = '\0';
    *size = n;
    return out;
}

static void read_transcript(const char *path)
{
    FILE *f = fopen(path, "r");
    char *line;
    size_t capacity = 0;
    if (f == NULL)
        die("cannot open %s", path);
    while ((line = read_line(f)) != NULL) {
        char direction;
        int conn, offset = 0;
        if (line[0] != '\0') {
            if (sscanf(line, "%c %d %n", &direction, &conn, &offset) < 2 || offset == 0 ||
                (direction != '>' && direction != '<'))
                die("%s: bad line %lu", path, (unsigned long)(n_records + 1));
            if (n_records == capacity)
                records = checked(realloc(records, (capacity = 2 * capacity + 16) * sizeof *records));
            records[n_records].direction = direction;
            records[n_records].conn = conn;
            records[n_records].bytes = from_hex(line + offset, &records[n_records].size);
            ++n_records;
        }
        free(line);
    }
    fclose(f);
}

static void read_expect(const char *path)
{
    FILE *f = fopen(path, "r");
    char *line;
    size_t capacity = 0;
    if (f == NULL)
        die("cannot open %s", path);
    while ((line = read_line(f)) != NULL) {
        char *kind = strtok(line, " "), *key = strtok(NULL, " "), *rest = strtok(NULL, "");
        entry *e;
        if (kind == NULL || key == NULL) {
            free(line);
            continue;
        }
        if (n_entries == capacity)
            entries = checked(realloc(entries, (capacity = 2 * capacity + 16) * sizeof *entries));
        e = &entries[n_entries++];
        memset(e, 0, sizeof *e);
        e->key = checked(malloc(strlen(key) + 1));
        strcpy(e->key, key);
        if (strcmp(kind, "str") == 0) {
            e->is_str = 1;
            e->text = (char *)from_hex(rest != NULL ? rest : "", &e->text_size);
        } else {
            char *end;
            size_t i;
            e->n = strtoul(rest, &end, 10);
            e->values = checked(malloc((e->n + 1) * sizeof(double)));
            for (i = 0; i < e->n; ++i)
                e->values[i] = strtod(end, &end);
        }
        free(line);
    }
    fclose(f);
}

static const entry *find(const char *key)
{
    size_t i;
    for (i = 0; i < n_entries; ++i)
        if (strcmp(entries[i].key, key) == 0)
            return &entries[i];
    die("exchange.expect has no key %s", key);
    return NULL;
}

static const char *str_of(const char *key)
{
    const entry *e = find(key);
    if (!e->is_str)
        die("%s is not a string", key);
    return e->text;
}

static const double *num_of(const char *key, size_t n)
{
    const entry *e = find(key);
    if (e->is_str || e->n != n)
        die("%s: expected %lu numbers in exchange.expect", key, (unsigned long)n);
    return e->values;
}

/* --- the fake server ----------------------------------------------------------------------- */

static void *router;
static char mismatch[4096];

static void describe_mismatch(size_t index, const unsigned char *got, size_t size)
{
    const record *r = &records[index];
    size_t at = 0;
    while (at < size && at < r->size && got[at] == r->bytes[at])
        ++at;
    snprintf(mismatch, sizeof mismatch,
             "request %lu (connection %d, line %lu of exchange.txt): the client sent %lu bytes, "
             "the transcript has %lu; first difference at byte %lu (client 0x%02x, transcript "
             "0x%02x)",
             (unsigned long)(index / 2 + 1), r->conn, (unsigned long)index + 1,
             (unsigned long)size, (unsigned long)r->size, (unsigned long)at,
             at < size ? got[at] : 0, at < r->size ? r->bytes[at] : 0);
}

/* Receives [identity, "", header] and checks the header against records[index]. */
static int serve_one(size_t index)
{
    zmq_msg_t identity, delimiter, header;
    zmq_pollitem_t item = {NULL, 0, ZMQ_POLLIN, 0};
    int ok;
    item.socket = router;
    if (zmq_poll(&item, 1, 10000) <= 0) {
        snprintf(mismatch, sizeof mismatch, "request %lu never arrived",
                 (unsigned long)(index / 2 + 1));
        return 0;
    }
    zmq_msg_init(&identity);
    zmq_msg_init(&delimiter);
    zmq_msg_init(&header);
    zmq_msg_recv(&identity, router, 0);
    zmq_msg_recv(&delimiter, router, 0);
    zmq_msg_recv(&header, router, 0);
    ok = zmq_msg_size(&delimiter) == 0 && zmq_msg_size(&header) == records[index].size &&
         memcmp(zmq_msg_data(&header), records[index].bytes, records[index].size) == 0;
    if (!ok)
        describe_mismatch(index, zmq_msg_data(&header), zmq_msg_size(&header));
    else if (index + 1 < n_records && records[index + 1].direction == '<') {
        zmq_send(router, zmq_msg_data(&identity), zmq_msg_size(&identity), ZMQ_SNDMORE);
        zmq_send(router, "", 0, ZMQ_SNDMORE);
        zmq_send(router, records[index + 1].bytes, records[index + 1].size, 0);
    }
    zmq_msg_close(&identity);
    zmq_msg_close(&delimiter);
    zmq_msg_close(&header);
    return ok;
}

static void *serve(void *unused)
{
    size_t i;
    (void)unused;
    for (i = 0; i < n_records; ++i)
        if (records[i].direction == '>' && !serve_one(i))
            break;
    return NULL;
}

/* --- checks -------------------------------------------------------------------------------- */

static void fail_call(const char *call, const rbc_client *c, rbc_status status)
{
    die("%s returned status %d (%s: %s)%s%s", call, (int)status, rbc_error_code(c),
        rbc_error_message(c), mismatch[0] ? "; the fake server saw: " : "", mismatch);
}

static void check_ok(const char *call, const rbc_client *c, rbc_status status)
{
    if (status != RBC_OK)
        fail_call(call, c, status);
}

static void check_error(const char *call, const rbc_client *c, rbc_status status,
                        rbc_status want, const char *prefix)
{
    char key[128];
    if (mismatch[0])
        fail_call(call, c, status);
    if (status != want)
        die("%s: status %d, expected %d (%s: %s)", call, (int)status, (int)want,
            rbc_error_code(c), rbc_error_message(c));
    snprintf(key, sizeof key, "%s.code", prefix);
    if (strcmp(rbc_error_code(c), str_of(key)) != 0)
        die("%s: error code %s, the transcript has %s", call, rbc_error_code(c), str_of(key));
    snprintf(key, sizeof key, "%s.message", prefix);
    if (strcmp(rbc_error_message(c), str_of(key)) != 0)
        die("%s: error message differs from the transcript's", call);
}

static void check_values(const char *what, const double *got, const char *key, size_t n)
{
    const double *want = num_of(key, n);
    size_t i;
    if (n > 0 && got == NULL)
        die("%s: the API returned NULL, the transcript has %lu values", what, (unsigned long)n);
    for (i = 0; i < n; ++i)
        if (memcmp(&got[i], &want[i], sizeof(double)) != 0)
            die("%s[%lu] = %.17g, the transcript has %.17g", what, (unsigned long)i, got[i],
                want[i]);
}

static void check_number(const char *what, double got, const char *key)
{
    check_values(what, &got, key, 1);
}

static void check_exchange(const char *prefix, const rbc_exchange *x, int gaps)
{
    char key[128];
    snprintf(key, sizeof key, "%s.step", prefix);
    check_number(key, (double)x->step, key);
    snprintf(key, sizeof key, "%s.time", prefix);
    check_number(key, x->time, key);
    snprintf(key, sizeof key, "%s.kinematics", prefix);
    check_values(key, x->kinematics, key, 13);
    snprintf(key, sizeof key, "%s.motions", prefix);
    check_values(key, x->motions, key, 19);
    if (gaps) {
        snprintf(key, sizeof key, "%s.gaps", prefix);
        check_values(key, x->gaps, key, 4);
    }
}

static void check_str(const char *what, const char *got, const char *key)
{
    if (strcmp(got, str_of(key)) != 0)
        die("%s = \"%s\", the transcript has \"%s\"", what, got, str_of(key));
}

static rbc_inputs inputs_of(const char *prefix, int terms, int at_end)
{
    rbc_inputs in;
    char key[128];
    memset(&in, 0, sizeof in);
    snprintf(key, sizeof key, "%s.wrench", prefix);
    in.wrench = num_of(key, 6 * (size_t)terms);
    in.wrench_terms = terms;
    snprintf(key, sizeof key, "%s.flex", prefix);
    in.flex_kinematics = num_of(key, 13);
    in.kinematics_at_end = at_end;
    return in;
}

/* --- the exchange ---------------------------------------------------------------------- */

static void run_coupling_checks(const rbc_coupling *k)
{
    check_str("coupling.scheme", k->scheme, "coupling.scheme");
    check_number("coupling.extrapolation", k->extrapolation, "coupling.extrapolation");
    check_number("coupling.micro_steps", k->micro_steps, "coupling.micro_steps");
    check_number("coupling.macro_step", k->macro_step, "coupling.macro_step");
    check_number("coupling.t_end", k->t_end, "coupling.t_end");
    check_number("coupling.n_steps", (double)k->n_steps, "coupling.n_steps");
    check_number("coupling.output_every", k->output_every, "coupling.output_every");
    check_number("coupling.added_mass", k->added_mass, "coupling.added_mass");
}

static void run_exchange(const char *endpoint)
{
    static const char *const names[] = {"tip"};
    const char *keys[1], *values[1];
    rbc_session_options options;
    rbc_coupling coupling;
    rbc_exchange x;
    rbc_inputs in;
    unsigned char *blob = NULL, *blob_b = NULL;
    size_t size = 0, size_b = 0, state_size;
    char *want_state;
    long step;
    double time;
    rbc_client *a = rbc_connect(endpoint, NULL, 5000, NULL, 0), *b;
    if (a == NULL)
        die("rbc_connect failed");
    check_ok("rbc_hello", a, rbc_hello(a, str_of("client_name")));
    check_str("rbc_server_version", rbc_server_version(a), "hello.protocol_version");

    memset(&options, 0, sizeof options);
    keys[0] = str_of("create.override_keys");
    values[0] = str_of("create.override_values");
    options.override_keys = keys;
    options.override_values = values;
    options.n_overrides = 1;
    options.barrier_timeout = num_of("create.barrier_timeout", 1)[0];
    check_ok("rbc_create_session", a,
             rbc_create_session(a, NULL, str_of("scenario_text"), &options));
    check_str("rbc_session_id", rbc_session_id(a), "session");

    check_ok("rbc_attach", a, rbc_attach(a, names, 1, names, 1, "conformance", 0, &coupling, &x));
    check_exchange("attach", &x, 0);
    if (x.gaps != NULL)
        die("rbc_attach: gaps must be NULL");
    run_coupling_checks(&coupling);

    check_error("rbc_set_added_mass", a, rbc_set_added_mass(a, num_of("added_mass", 36), NULL),
                RBC_ERR_SERVER, "added_mass");

    in = inputs_of("report", 1, 0);
    check_ok("rbc_report", a, rbc_report(a, &in, &x));
    check_exchange("report", &x, 1);

    in = inputs_of("step0", 2, 0);
    check_ok("rbc_step 0", a, rbc_step(a, &in, &x));
    check_exchange("step0", &x, 1);

    in = inputs_of("step1", 1, 1);
    check_ok("rbc_step_send 1", a, rbc_step_send(a, &in));
    check_ok("rbc_step_wait 1", a, rbc_step_wait(a, &x));
    check_exchange("step1", &x, 1);
    check_number("rbc_step_index", (double)rbc_step_index(a), "step1.step");
    check_number("rbc_time", rbc_time(a), "step1.time");

    check_ok("rbc_save", a, rbc_save(a, "snap", NULL));
    check_number("rbc_save step", (double)rbc_step_index(a), "save.step");

    /* A second client moves the session ahead. */
    b = rbc_connect(endpoint, NULL, 5000, NULL, 0);
    if (b == NULL)
        die("rbc_connect (second client) failed");
    check_ok("rbc_join_session", b, rbc_join_session(b, rbc_session_id(a)));
    check_number("rbc_join_session step", (double)rbc_step_index(b), "join.step");
    check_ok("rbc_get_state (second client)", b, rbc_get_state(b, &blob_b, &size_b, &step, &time));
    want_state = (char *)from_hex(str_of("state"), &state_size); /* the str is the blob's hex */
    if (size_b != state_size || memcmp(blob_b, want_state, size_b) != 0)
        die("rbc_get_state: the blob differs from the transcript's");
    check_number("rbc_get_state step", (double)step, "state.step");
    check_number("rbc_get_state time", time, "state.time");
    check_ok("rbc_set_state", b,
             rbc_set_state(b, blob_b, size_b, (long)num_of("set_state.step", 1)[0]));
    check_number("rbc_set_state step", (double)rbc_step_index(b), "set_state.reply_step");

    in = inputs_of("stale", 1, 0);
    check_error("rbc_step (stale)", a, rbc_step(a, &in, &x), RBC_ERR_SERVER, "stale");

    check_ok("rbc_get_state", a, rbc_get_state(a, &blob, &size, &step, &time));
    check_number("rbc_get_state step", (double)step, "get_state.step");
    check_ok("rbc_restore", a, rbc_restore(a, "snap", NULL));
    check_number("rbc_restore step", (double)rbc_step_index(a), "restore.step");
    check_number("rbc_restore time", rbc_time(a), "restore.time");

    check_ok("rbc_step 2", a, rbc_step(a, &in, &x));
    check_exchange("step2", &x, 1);
    check_ok("rbc_heartbeat", a, rbc_heartbeat(a));
    check_number("rbc_heartbeat step", (double)rbc_step_index(a), "heartbeat.step");
    check_ok("rbc_detach", a, rbc_detach(a));
    check_ok("rbc_close_session", a, rbc_close_session(a));
    check_number("rbc_close_session step", (double)rbc_step_index(a), "close.step");
    if (rbc_session_id(a)[0] != '\0')
        die("rbc_close_session: the session id is still set");
    free(blob);
    free(blob_b);
    free(want_state);
    rbc_destroy(b);
    rbc_destroy(a);
}

int main(int argc, char **argv)
{
    void *context;
    char endpoint[256];
    size_t endpoint_size = sizeof endpoint, requests = 0, i;
    pthread_t thread;
    int linger = 0;
    if (argc != 3) {
        fprintf(stderr, "usage: %s exchange.txt exchange.expect\n", argv[0]);
        return 2;
    }
    read_transcript(argv[1]);
    read_expect(argv[2]);
    context = zmq_ctx_new();
    router = zmq_socket(context, ZMQ_ROUTER);
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(router, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &endpoint_size) != 0)
        die("cannot bind the fake server: %s", zmq_strerror(zmq_errno()));
    pthread_create(&thread, NULL, serve, NULL);
    run_exchange(endpoint);
    pthread_join(thread, NULL);
    if (mismatch[0])
        die("%s", mismatch);
    zmq_close(router);
    zmq_ctx_term(context);
    for (i = 0; i < n_records; ++i) {
        requests += records[i].direction == '>';
        free(records[i].bytes);
    }
    for (i = 0; i < n_entries; ++i) {
        free(entries[i].key);
        free(entries[i].text);
        free(entries[i].values);
    }
    free(records);
    free(entries);
    printf("conformance_replay: OK: %lu requests byte-identical, every reply's values as "
           "recorded\n", (unsigned long)requests);
    return 0;
}
