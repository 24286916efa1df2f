/* live_exchange.c: drives the rbcosim C client against a live server and prints what the API
 * returns, for tests/test_c_client.py to compare with the Python client's numbers.
 *
 *   live_exchange run ENDPOINT SCENARIO.toml STEPS   a coupled run on the point/joint "tip"
 *   live_exchange hello ENDPOINT TIMEOUT_MS          one hello; prints its status
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

static int run(const char *endpoint, const char *scenario, int steps)
{
    static const char *const tip[] = {"tip"};
    char *text = read_file(scenario);
    rbc_client *a = connect_to(endpoint, 10000);
    rbc_coupling k;
    rbc_exchange x;
    rbc_inputs in;
    double wrench[6], flex[13];
    unsigned char *blob = NULL;
    size_t size = 0, i;
    rbc_status status;
    int s;
    CHECK("rbc_hello", a, rbc_hello(a, "live_exchange"));
    printf("server_version %s\n", rbc_server_version(a));
    CHECK("rbc_create_session", a, rbc_create_session(a, NULL, text, NULL));
    CHECK("rbc_attach", a, rbc_attach(a, tip, 1, tip, 1, "live", 0, &k, &x));
    printf("coupling %s %d %d %a %a %ld %d %d\n", k.scheme, k.extrapolation, k.micro_steps,
           k.macro_step, k.t_end, k.n_steps, k.output_every, k.added_mass);
    print_exchange("attach", &x, 0);
    memset(&in, 0, sizeof in);
    in.wrench = wrench;
    in.wrench_terms = 1;
    in.flex_kinematics = flex;
    spring(x.kinematics, 0, wrench);
    flex_of(x.kinematics, 0, flex);
    CHECK("rbc_report", a, rbc_report(a, &in, &x));
    print_exchange("report", &x, 1);
    for (s = 0; s < steps; ++s) {
        spring(x.kinematics, s + 1, wrench);
        flex_of(x.kinematics, s + 1, flex);
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

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "run") == 0)
        return run(argv[2], argv[3], atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "hello") == 0)
        return hello(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: %s run ENDPOINT SCENARIO STEPS | hello ENDPOINT TIMEOUT_MS\n",
            argv[0]);
    return 2;
}
