/* live_exchange.c: drives the rbcosim C client against a live server and prints what the API
 * returns, for tests/test_c_client.py to compare with the Python client's numbers.
 *
 *   live_exchange run [OPTIONS] ENDPOINT SCENARIO.toml STEPS   a coupled run
 *       --point NAME, --joint NAME   the interface point and joint (default "tip" for both)
 *       --path        send the scenario's path (default: its text)
 *       --energy      send flex_energy (0.001 J per step so far) with every report and step
 *       --added-mass  hand over an added mass (0.5 on the diagonal) before the first report
 *   live_exchange hello ENDPOINT TIMEOUT_MS          one hello; prints its status
 *   live_exchange misuse                             calls the API wrongly; prints statuses
 *
 * Output: one line per result, doubles as C99 hex floats (%a, exact; Python reads them with
 * float.fromhex). CURVE keys come from the environment when RBC_CURVE_SERVER_PUBLIC,
 * RBC_CURVE_CLIENT_PUBLIC and RBC_CURVE_CLIENT_SECRET are set. Exits 1 on an unexpected error. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbcosim_client.h"

static void die_call(const char *call, const rbc_client *c, rbc_status status)
{
    fprintf(stderr, "live_exchange: %s: status %d (%s: %s)\n", call, (int)status,
            rbc_error_code(c), rbc_error_message(c));
    exit(1);
}

#define CHECK(call, c, expr)                                                                     \
    do {                                                                                         \
        rbc_status status_ = (expr);                                                             \
        if (status_ != RBC_OK)                                                                   \
            die_call(call, c, status_);                                                          \
    } while (0)

static void print_values(const double *v, int n)
{
    int i;
    for (i = 0; i < n; ++i)
        printf(" %a", v != NULL ? v[i] : 0.0);
}

static void print_exchange(const char *label, const rbc_exchange *x, int gaps)
{
    printf("%s %ld %a", label, x->step, x->time);
    print_values(x->kinematics, 13 * x->n_points);
    print_values(x->motions, 19 * x->n_points);
    if (gaps)
        print_values(x->gaps, 4 * x->n_joints);
    printf("\n");
}

/* The same flexible-side stand-in as make_transcripts.py and the Python test. */
static void spring(const double *x, int k, double w[6])
{
    w[0] = -40.0 * x[0] + 0.5 * k;
    w[1] = -40.0 * x[1];
    w[2] = -40.0 * x[2] + 3.0;
    w[3] = -0.5 * x[10];
    w[4] = 0.25;
    w[5] = 0.0;
}

static void flex_of(const double *x, int k, double flex[13])
{
    memcpy(flex, x, 13 * sizeof(double));
    flex[0] += 1e-4 * (k + 1);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *text;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        fprintf(stderr, "live_exchange: cannot read %s\n", path);
        exit(1);
    }
    rewind(f);
    text = malloc((size_t)n + 1);
    if (text == NULL || fread(text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "live_exchange: cannot read %s\n", path);
        exit(1);
    }
    text[n] = '\0';
    fclose(f);
    return text;
}

static rbc_client *connect_to(const char *endpoint, int timeout_ms)
{
    char error[512];
    rbc_curve_keys keys;
    rbc_client *c;
    keys.server_public = getenv("RBC_CURVE_SERVER_PUBLIC");
    keys.client_public = getenv("RBC_CURVE_CLIENT_PUBLIC");
    keys.client_secret = getenv("RBC_CURVE_CLIENT_SECRET");
    c = rbc_connect(endpoint, keys.server_public != NULL ? &keys : NULL, timeout_ms, error,
                    sizeof error);
    if (c == NULL) {
        fprintf(stderr, "live_exchange: rbc_connect: %s\n", error);
        exit(1);
    }
    return c;
}

/* Moves the session `steps` ahead with a second client, so that the first one's next step
 * is stale. */
static void move_ahead(const char *endpoint, const char *session, long steps)
{
    rbc_client *b = connect_to(endpoint, 10000);
    unsigned char *blob = NULL;
    size_t size = 0;
    long step;
    CHECK("rbc_join_session", b, rbc_join_session(b, session));
    CHECK("rbc_get_state", b, rbc_get_state(b, &blob, &size, &step, NULL));
    CHECK("rbc_set_state", b, rbc_set_state(b, blob, size, step + steps));
    free(blob);
    rbc_destroy(b);
}

typedef struct run_options {
    const char *point, *joint;
    int path, energy, added_mass;
} run_options;

static int run(const char *endpoint, const char *scenario, int steps, const run_options *o)
{
    const char *const point[] = {o->point}, *const joint[] = {o->joint};
    char *text = read_file(scenario);
    rbc_client *a = connect_to(endpoint, 60000);
    rbc_coupling k;
    rbc_exchange x;
    rbc_inputs in;
    double wrench[6], flex[13], energy[1] = {0.0}, mass[36] = {0.0};
    unsigned char *blob = NULL;
    size_t size = 0, i;
    rbc_status status;
    int s;
    CHECK("rbc_hello", a, rbc_hello(a, "live_exchange"));
    printf("server_version %s\n", rbc_server_version(a));
    CHECK("rbc_create_session", a,
          rbc_create_session(a, o->path ? scenario : NULL, o->path ? NULL : text, NULL));
    CHECK("rbc_attach", a, rbc_attach(a, point, 1, joint, 1, "live", 0, &k, &x));
    printf("coupling %s %d %d %a %a %ld %d %d\n", k.scheme, k.extrapolation, k.micro_steps,
           k.macro_step, k.t_end, k.n_steps, k.output_every, k.added_mass);
    print_exchange("attach", &x, 0);
    memset(&in, 0, sizeof in);
    in.wrench = wrench;
    in.wrench_terms = 1;
    in.flex_kinematics = flex;
    in.flex_energy = o->energy ? energy : NULL;
    if (o->added_mass) {
        for (s = 0; s < 6; ++s)
            mass[7 * s] = 0.5;
        CHECK("rbc_set_added_mass", a, rbc_set_added_mass(a, mass, NULL));
    }
    spring(x.kinematics, 0, wrench);
    flex_of(x.kinematics, 0, flex);
    CHECK("rbc_report", a, rbc_report(a, &in, &x));
    print_exchange("report", &x, 1);
    for (s = 0; s < steps; ++s) {
        spring(x.kinematics, s + 1, wrench);
        flex_of(x.kinematics, s + 1, flex);
        energy[0] = 0.001 * s;
        if (s % 2 == 0) {
            CHECK("rbc_step", a, rbc_step(a, &in, &x));
        } else {
            CHECK("rbc_step_send", a, rbc_step_send(a, &in));
            CHECK("rbc_step_wait", a, rbc_step_wait(a, &x));
        }
        print_exchange("step", &x, 1);
    }
    CHECK("rbc_get_state", a, rbc_get_state(a, &blob, &size, NULL, NULL));
    printf("state ");
    for (i = 0; i < size; ++i)
        printf("%02x", blob[i]);
    printf("\n");
    free(blob);
    move_ahead(endpoint, rbc_session_id(a), 3);
    status = rbc_step(a, &in, &x);
    printf("stale %d %s\n", (int)status, rbc_error_code(a));
    CHECK("rbc_detach", a, rbc_detach(a));
    CHECK("rbc_close_session", a, rbc_close_session(a));
    printf("close %ld %a\n", rbc_step_index(a), rbc_time(a));
    rbc_destroy(a);
    free(text);
    return 0;
}

static int hello(const char *endpoint, int timeout_ms)
{
    rbc_client *c = connect_to(endpoint, timeout_ms);
    rbc_status status = rbc_hello(c, "live_exchange");
    printf("hello %d %s %s\n", (int)status, status == RBC_OK ? rbc_server_version(c)
                                                              : rbc_error_code(c),
           rbc_error_message(c));
    rbc_destroy(c);
    return 0;
}

static void report_misuse(const char *what, const rbc_client *c, rbc_status status)
{
    printf("%s %d %s\n", what, (int)status, rbc_error_code(c));
}

/* Calls that must be refused by the library itself, before anything is sent. */
static int misuse(void)
{
    static const char *const tip[] = {"tip"};
    const rbc_curve_keys bad = {"short", "short", "short"};
    char error[256] = "";
    rbc_client *c = rbc_connect("tcp://127.0.0.1:1", NULL, 100, NULL, 0);
    rbc_exchange x;
    rbc_inputs in;
    memset(&in, 0, sizeof in);
    report_misuse("step_unattached", c, rbc_step(c, &in, &x));
    report_misuse("wait_without_send", c, rbc_step_wait(c, &x));
    report_misuse("attach_without_session", c, rbc_attach(c, tip, 1, NULL, 0, NULL, 0, NULL, NULL));
    report_misuse("create_two_sources", c, rbc_create_session(c, "a.toml", "[toy]", NULL));
    report_misuse("create_no_source", c, rbc_create_session(c, NULL, NULL, NULL));
    report_misuse("join_empty", c, rbc_join_session(c, ""));
    report_misuse("null_client", NULL, rbc_hello(NULL, "x"));
    rbc_destroy(c);
    rbc_destroy(NULL);
    printf("connect_bad_endpoint %d %s\n",
           rbc_connect("nonsense://x", NULL, 100, error, sizeof error) == NULL, error);
    printf("connect_bad_curve %d %s\n",
           rbc_connect("tcp://127.0.0.1:1", &bad, 100, error, sizeof error) == NULL, error);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "misuse") == 0)
        return misuse();
    if (argc >= 5 && strcmp(argv[1], "run") == 0) {
        run_options o = {"tip", "tip", 0, 0, 0};
        int i = 2;
        for (; i < argc - 3; ++i) {
            if (strcmp(argv[i], "--point") == 0 && i + 1 < argc - 3)
                o.point = argv[++i];
            else if (strcmp(argv[i], "--joint") == 0 && i + 1 < argc - 3)
                o.joint = argv[++i];
            else if (strcmp(argv[i], "--path") == 0)
                o.path = 1;
            else if (strcmp(argv[i], "--energy") == 0)
                o.energy = 1;
            else if (strcmp(argv[i], "--added-mass") == 0)
                o.added_mass = 1;
            else
                break;
        }
        if (i == argc - 3)
            return run(argv[i], argv[i + 1], atoi(argv[i + 2]), &o);
    }
    if (argc == 4 && strcmp(argv[1], "hello") == 0)
        return hello(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: %s run [OPTIONS] ENDPOINT SCENARIO STEPS | hello ENDPOINT "
                    "TIMEOUT_MS | misuse\n",
            argv[0]);
    return 2;
}
