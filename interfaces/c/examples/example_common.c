/* example_common.c: see example_common.h. */
#include "example_common.h"

#include <stdlib.h>
#include <string.h>


int ex_parse(int argc, char **argv, ex_options *o, const char *usage)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = 60000;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' && !o->endpoint) {
            o->endpoint = a;
            continue;
        }
        if (!v || a[0] != '-' || a[1] != '-')
            goto bad;
        ++i;
        if (!strcmp(a, "--scenario"))
            o->scenario = v;
        else if (!strcmp(a, "--session"))
            o->session = v;
        else if (!strcmp(a, "--out"))
            o->out = v;
        else if (!strcmp(a, "--body"))
            o->body = v;
        else if (!strcmp(a, "--timeout"))
            o->timeout_ms = (int)(1000.0 * atof(v));
        else if (!strcmp(a, "--set") && o->n_sets < EX_MAX_SETS && strchr(v, '=')) {
            char *eq = strchr(argv[i], '=');
            *eq = '\0';
            o->set_keys[o->n_sets] = argv[i];
            o->set_values[o->n_sets++] = eq + 1;
        } else
            goto bad;
    }
    if (o->endpoint && (!o->scenario) != (!o->session) && !(o->session && o->n_sets))
        return 0;
bad:
    fprintf(stderr, "usage: %s %s\n", argv[0], usage);
    return -1;
}

int ex_fail(rbc_client *c, const char *program, const char *what)
{
    fprintf(stderr, "%s: %s failed: %s: %s\n", program, what, c ? rbc_error_code(c) : "",
            c ? rbc_error_message(c) : "");
    rbc_destroy(c);
    return 1;
}

rbc_client *ex_open(const ex_options *o, const char *name)
{
    char err[512] = "";
    rbc_client *c = rbc_connect(o->endpoint, NULL, o->timeout_ms, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s: cannot connect to %s: %s\n", name, o->endpoint, err);
        return NULL;
    }
    if (rbc_hello(c, name) != RBC_OK) {
        ex_fail(c, name, "hello");
        return NULL;
    }
    rbc_status st;
    if (o->scenario) {
        rbc_session_options so = {0};
        so.override_keys = o->set_keys;
        so.override_values = o->set_values;
        so.n_overrides = o->n_sets;
        st = rbc_create_session(c, o->scenario, NULL, &so);
    } else {
        st = rbc_join_session(c, o->session);
    }
    if (st != RBC_OK) {
        ex_fail(c, name, o->scenario ? "create_session" : "join_session");
        return NULL;
    }
    return c;
}

int ex_scheme_supported(const rbc_coupling *cp, const char *program)
{
    static const char *const RUN[3] = {"jacobi", "gauss_seidel_rigid_first",
                                       "gauss_seidel_flex_first"};
    for (int i = 0; i < 3; ++i)
        if (!strcmp(cp->scheme, RUN[i]))
            return 1;
    fprintf(stderr, "%s: the session couples with scheme '%s'; this example runs only "
            "'jacobi', 'gauss_seidel_rigid_first' and 'gauss_seidel_flex_first'\n", program,
            cp->scheme[0] ? cp->scheme : "(none: a server older than protocol 1.2?)");
    return 0;
}
