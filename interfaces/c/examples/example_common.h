/* example_common.h: what the C flexible-side examples share - command line, connection and
 * session set-up over the rbcosim C client library, and the CSV writer.
 */
#ifndef RBC_EXAMPLES_COMMON_H
#define RBC_EXAMPLES_COMMON_H

#include <stdio.h>

#include "rbcosim_client.h"

#define EX_MAX_SETS 32

typedef struct ex_options {
    const char *endpoint;     /* e.g. tcp://127.0.0.1:5555 */
    const char *scenario;     /* --scenario FILE (the server reads it) ... */
    const char *session;      /* ... or --session ID (join) */
    const char *out;          /* --out FILE.csv or NULL */
    const char *body;         /* --body FILE (a body file, example specific) or NULL */
    const char *set_keys[EX_MAX_SETS], *set_values[EX_MAX_SETS];
    int n_sets;               /* --set KEY=VALUE (with --scenario) */
    int timeout_ms;           /* --timeout S (default 60 s) */
} ex_options;

/* Parse "ENDPOINT (--scenario FILE | --session ID) [--out FILE] [--set K=V]... [--body FILE]
 * [--timeout S]"; prints usage and returns -1 on a bad command line. Keeps pointers into
 * argv (--set is split in place). */
int ex_parse(int argc, char **argv, ex_options *o, const char *usage);

/* Connect, hello, create or join the session. NULL after printing why. */
rbc_client *ex_open(const ex_options *o, const char *name);

/* Print "PROGRAM: what: code: message" for a failed call, destroy the client, return 1. */
int ex_fail(rbc_client *c, const char *program, const char *what);

/* The coupling schemes the examples run; 0 after printing why not. */
int ex_scheme_supported(const rbc_coupling *cp, const char *program);

#endif
