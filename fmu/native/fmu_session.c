/* fmu_session.c: the native FMU's session on `rbcosim serve`.
 *
 * At exitInitializationMode the instance connects to server.address (or, when it is empty,
 * starts `rbcosim serve --bind tcp://127.0.0.1:0 --root <resources>/scenario` itself and reads
 * the address it bound from its first line, "serving on ADDRESS"), then creates a session from
 * the FMU's scenario (sent as text, parameters set away from their start values as overrides)
 * or joins server.session, and attaches to every interface point and joint. The program is
 * "rbcosim" from PATH, or the environment variable RBCOSIM_SERVE_PROGRAM. A server started here
 * ends with the instance (terminate, reset, free) or with the host process, and its output
 * goes to the FMI logger.
 */
#define _GNU_SOURCE
#include "rbcosim_fmu.h"
#include "rbcosim_client.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void rbf_publish(rbf_instance *inst, const rbc_exchange *x);

#define SPAWN_WAIT_MS 120000 /* the server's first start may compile its core */

static const char *server_string(rbf_instance *inst, const char *key) {
    for (int vr = 1; vr < inst->m->n_vars; ++vr) {
        const rbf_var *v = &inst->m->vars[vr];
        if (v->kind == RBF_SERVER && strcmp(v->key, key) == 0) {
            return v->type == RBF_STRING ? inst->strings[vr] : NULL;
        }
    }
    return "";
}

static double server_timeout(rbf_instance *inst) {
    for (int vr = 1; vr < inst->m->n_vars; ++vr) {
        const rbf_var *v = &inst->m->vars[vr];
        if (v->kind == RBF_SERVER && strcmp(v->key, "timeout") == 0) return inst->reals[vr];
    }
    return 30.0;
}

/* The local server's output (stdout and stderr go to an unlinked temporary file) to the
 * FMI logger, line by line, from where it was read last: called at every exchange with the
 * server and when it is stopped, so the host's own stdout and stderr get nothing. */
static void forward_server_log(rbf_instance *inst) {
    char chunk[2048];
    ssize_t got;
    if (inst->server_log < 0) return;
    while ((got = read(inst->server_log, chunk, sizeof chunk - 1)) > 0) {
        chunk[got] = '\0';
        for (char *line = chunk, *next; line != NULL && *line != '\0'; line = next) {
            next = strchr(line, '\n');
            if (next != NULL) *next++ = '\0';
            if (*line != '\0') rbf_logf(inst, 0, "rbcosim serve: %s", line);
        }
    }
}

static void stop_server(rbf_instance *inst) {
    if (inst->server_pid > 0) {
        kill(inst->server_pid, SIGTERM);
        for (int i = 0; i < 200; ++i) {
            if (waitpid(inst->server_pid, NULL, WNOHANG) != 0) break;
            struct timespec pause = {0, 50000000};
            nanosleep(&pause, NULL);
            if (i == 199) {
                kill(inst->server_pid, SIGKILL);
                waitpid(inst->server_pid, NULL, 0);
            }
        }
    }
    forward_server_log(inst);
    if (inst->server_log >= 0) close(inst->server_log);
    inst->server_log = -1;
    inst->server_pid = 0;
}

/* The address from the server's line "serving on ADDRESS" (stdout; other lines, on stderr,
 * may come first), waiting up to SPAWN_WAIT_MS while it runs; 0 on success. */
static int server_address(rbf_instance *inst, char *address, size_t size) {
    char text[16384];
    size_t used = 0;
    for (int waited = 0; waited < SPAWN_WAIT_MS; waited += 20) {
        ssize_t got = pread(inst->server_log, text + used, sizeof text - 1 - used, (off_t)used);
        if (got > 0) used += (size_t)got;
        text[used] = '\0';
        for (char *line = text; line != NULL; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
            char *end = strchr(line, '\n');
            if (strncmp(line, "serving on ", 11) != 0 || end == NULL) continue;
            *end = '\0';
            if (end > line + 11 && end[-1] == '\r') end[-1] = '\0';
            snprintf(address, size, "%s", line + 11);
            return 0;
        }
        if (used + 1 >= sizeof text) return -1;
        if (waitpid(inst->server_pid, NULL, WNOHANG) != 0) {
            inst->server_pid = 0; /* it ended before it served */
            return -1;
        }
        struct timespec pause = {0, 20000000};
        nanosleep(&pause, NULL);
    }
    return -1;
}

/* Start a local server; its address into address[size]. 0 on success. The server is a child
 * that ends with this process (PR_SET_PDEATHSIG: SIGTERM when the thread that started it
 * ends, also when the host is killed with SIGKILL), and its output goes to the FMI logger
 * (forward_server_log). */
static int start_server(rbf_instance *inst, const char *call, const char *root, char *address,
                        size_t size) {
    const char *program = getenv("RBCOSIM_SERVE_PROGRAM");
    if (program == NULL || program[0] == '\0') program = "rbcosim";
    char *argv[] = {(char *)program, "serve", "--bind", "tcp://127.0.0.1:0", "--root",
                    (char *)root, NULL};
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rbcosim-serve-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int out = mkstemp(path);
    int in = out < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (out >= 0) unlink(path);
    if (in < 0) {
        rbf_logf(inst, 2, "%s: cannot start a local server: a log file in %s: %s", call,
                 tmp && *tmp ? tmp : "/tmp", strerror(errno));
        if (out >= 0) close(out);
        return -1;
    }
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127); /* the host ended before prctl */
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
        execvp(program, argv);
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", program, strerror(errno));
        _exit(127);
    }
    close(out);
    inst->server_log = in;
    if (pid < 0) {
        rbf_logf(inst, 2, "%s: cannot start a local server: fork: %s", call, strerror(errno));
        stop_server(inst);
        return -1;
    }
    inst->server_pid = pid;
    if (server_address(inst, address, size) != 0) {
        rbf_logf(inst, 2, "%s: server.address is empty and the local server `%s serve` did "
                 "not report its address (put rbcosim on PATH, set RBCOSIM_SERVE_PROGRAM, or "
                 "set server.address); its output follows", call, program);
        stop_server(inst);
        return -1;
    }
    forward_server_log(inst); /* what it wrote so far, the address line included */
    rbf_logf(inst, 0, "started a local rbcosim serve (pid %ld) on %s", (long)pid, address);
    return 0;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) != NULL) {
            if (fread(text, 1, (size_t)n, f) != (size_t)n) {
                free(text);
                text = NULL;
            } else {
                text[n] = '\0';
            }
        }
    }
    fclose(f);
    return text;
}

/* A TOML literal of x that reads back as the same double: an integer when x is integral
 * (counts such as cosim.micro_steps refuse a decimal point), else a float. */
static void toml_number(double x, char *out, size_t size) {
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
        snprintf(out, size, "%.0f", x);
    } else {
        snprintf(out, size, "%.17g", x);
    }
}

/* Whether the 3-vector parameter at `key` has a component away from its start; its literal
 * "[x, y, z]" in out[size] when it has. */
static int vector_override(const rbf_instance *inst, const char *key, char *out, size_t size) {
    const rbf_model *m = inst->m;
    double value[3] = {0.0, 0.0, 0.0};
    int changed = 0;
    for (int vr = 1; vr < m->n_vars; ++vr) {
        const rbf_var *v = &m->vars[vr];
        if (v->kind != RBF_VECTOR_PARAMETER || strcmp(v->key, key) != 0) continue;
        value[v->index] = inst->reals[vr];
        changed |= inst->reals[vr] != v->start;
    }
    char parts[3][40];
    for (int i = 0; i < 3; ++i) toml_number(value[i], parts[i], sizeof parts[i]);
    snprintf(out, size, "[%s, %s, %s]", parts[0], parts[1], parts[2]);
    return changed;
}

/* A TOML basic string of text (quotes, backslashes and control bytes escaped), malloc'ed. */
static char *toml_string(const char *text) {
    char *out = malloc(6 * strlen(text) + 3), *w = out;
    if (out == NULL) return NULL;
    *w++ = '"';
    for (const unsigned char *p = (const unsigned char *)text; *p; ++p) {
        if (*p == '"' || *p == '\\') {
            *w++ = '\\';
            *w++ = (char)*p;
        } else if (*p < 0x20 || *p == 0x7f) {
            w += sprintf(w, "\\u%04x", *p);
        } else {
            *w++ = (char)*p;
        }
    }
    *w++ = '"';
    *w = '\0';
    return out;
}

/* The override literal (malloc'ed) of parameter vr when it is away from its start, else NULL
 * with *changed 0: a number (Real, Integer), true or false (Boolean), a string (String); a
 * 3-vector whole at its first component. */
static char *override_literal(const rbf_instance *inst, int vr, int *changed) {
    const rbf_var *v = &inst->m->vars[vr];
    char buffer[160];
    *changed = 0;
    if (v->kind == RBF_VECTOR_PARAMETER) {
        if (v->index != 0 || !vector_override(inst, v->key, buffer, sizeof buffer)) return NULL;
    } else if (v->kind != RBF_PARAMETER) {
        return NULL;
    } else if (v->type == RBF_STRING) {
        if (strcmp(inst->strings[vr], v->start_string) == 0) return NULL;
        *changed = 1;
        return toml_string(inst->strings[vr]);
    } else if (inst->reals[vr] == v->start) {
        return NULL;
    } else if (v->type == RBF_BOOLEAN) {
        snprintf(buffer, sizeof buffer, "%s", inst->reals[vr] != 0.0 ? "true" : "false");
    } else {
        toml_number(inst->reals[vr], buffer, sizeof buffer);
    }
    *changed = 1;
    return strdup(buffer);
}

/* Create the session from the FMU's scenario with the changed parameters as overrides (a
 * 3-vector parameter whole, when any of its components changed). */
static rbc_status create_session(rbf_instance *inst, const char *folder, const char *text) {
    const rbf_model *m = inst->m;
    const char **keys = calloc((size_t)m->n_vars, sizeof(char *));
    char **values = calloc((size_t)m->n_vars, sizeof(char *));
    rbc_status status = RBC_ERR_NO_MEMORY;
    rbc_session_options options = {0};
    int ok = keys != NULL && values != NULL;
    for (int vr = 1; ok && vr < m->n_vars; ++vr) {
        int changed;
        char *literal = override_literal(inst, vr, &changed);
        if (changed && literal == NULL) ok = 0;
        if (!changed) continue;
        keys[options.n_overrides] = m->vars[vr].key;
        values[options.n_overrides++] = literal;
    }
    if (ok) {
        options.base_dir = folder;
        options.override_keys = keys;
        options.override_values = (const char *const *)values;
        status = rbc_create_session(inst->client, NULL, text, &options);
    }
    for (int i = 0; values != NULL && i < options.n_overrides; ++i) free(values[i]);
    free(keys);
    free(values);
    return status;
}

/* The added-mass parameters, when any is nonzero, to the session (rbc_set_added_mass): the
 * rigid side then treats them implicitly. 0, or -1 with the reason in reason[size]. */
static int hand_over_added_mass(rbf_instance *inst, char *reason, size_t size) {
    const rbf_model *m = inst->m;
    size_t np = (size_t)m->n_points;
    double *mass = calloc(np * 36 + 1, sizeof(double));
    const char **frames = calloc(np + 1, sizeof(char *));
    int any = 0, rc = 0;
    if (mass == NULL || frames == NULL) {
        snprintf(reason, size, "out of memory");
        rc = -1;
    } else {
        for (size_t i = 0; i < np; ++i) frames[i] = "point"; /* the FMU's own body points */
        any = rbf_added_mass_parameters(inst, mass, frames, reason, size);
        rc = any < 0 ? -1 : 0;
    }
    if (rc == 0 && any && rbc_set_added_mass(inst->client, mass, frames) != RBC_OK) {
        snprintf(reason, size, "the server refused the added mass: %s: %s",
                 rbc_error_code(inst->client), rbc_error_message(inst->client));
        rc = -1;
    }
    free(mass);
    free(frames);
    return rc;
}

rbf_result rbf_open_session(rbf_instance *inst, const char *call) {
    const rbf_model *m = inst->m;
    const char *address = server_string(inst, "address");
    const char *session = server_string(inst, "session");
    double timeout = server_timeout(inst);
    char reason[900], spawned[512], folder[4096], file[4200];
    snprintf(folder, sizeof folder, "%s/scenario", inst->resources);
    if (address == NULL || address[0] == '\0') {
        if (start_server(inst, call, folder, spawned, sizeof spawned) != 0) {
            return rbf_refuse(inst, call, "no server: server.address is empty and no local "
                              "server could be started");
        }
        address = spawned;
    }
    rbf_logf(inst, 0, "connecting to rbcosim serve at %s", address);
    inst->client = rbc_connect(address, NULL,
                               isfinite(timeout) && timeout > 0 ? (int)(timeout * 1e3) : 0,
                               reason, sizeof reason);
    if (inst->client == NULL) {
        stop_server(inst);
        return rbf_refuse(inst, call, reason);
    }
    rbc_status status = rbc_hello(inst->client, "rbcosim native FMU");
    if (status == RBC_OK && session != NULL && session[0] != '\0') {
        status = rbc_join_session(inst->client, session);
    } else if (status == RBC_OK) {
        snprintf(file, sizeof file, "%s/%s", folder, m->scenario_file);
        char *text = read_text(file);
        if (text == NULL) {
            snprintf(reason, sizeof reason, "cannot read the FMU's scenario %.800s", file);
            rbf_close_session(inst);
            return rbf_refuse(inst, call, reason);
        }
        status = create_session(inst, folder, text);
        free(text);
        inst->owns_session = status == RBC_OK;
    }
    rbc_coupling coupling;
    rbc_exchange x;
    if (status == RBC_OK) {
        status = rbc_attach(inst->client, m->points, m->n_points, m->joints, m->n_joints,
                            "rbcosim native FMU", 0, &coupling, &x);
    }
    if (status != RBC_OK) {
        snprintf(reason, sizeof reason, "the server at %s answered %s: %s", address,
                 rbc_error_code(inst->client), rbc_error_message(inst->client));
        rbf_close_session(inst);
        return rbf_refuse(inst, call, reason);
    }
    inst->attached = 1;
    if (coupling.macro_step > 0) inst->macro_step = coupling.macro_step;
    rbf_publish(inst, &x);
    if (hand_over_added_mass(inst, reason, sizeof reason) != 0) {
        rbf_close_session(inst);
        return rbf_refuse(inst, call, reason);
    }
    return RBF_OK;
}

void rbf_close_session(rbf_instance *inst) {
    if (inst->client != NULL) {
        if (((inst->attached && rbc_detach(inst->client) != RBC_OK) ||
             (inst->owns_session && rbc_close_session(inst->client) != RBC_OK)) &&
            inst->server_pid <= 0) {
            rbf_logf(inst, 1, "closing the remote session failed: %s: %s",
                     rbc_error_code(inst->client), rbc_error_message(inst->client));
        }
        rbc_destroy(inst->client);
        inst->client = NULL;
    }
    inst->attached = inst->owns_session = 0;
    stop_server(inst);
}

/* The bodies' outputs from the FMU's points at their centres of mass (body_points.py):
 * pose and velocity as they are, the inertial angular velocity turned into the body frame,
 * w_b = R(q)^T w. */
static void body_rows(const rbf_instance *inst, const double *kinematics) {
    for (int b = 0; b < inst->m->n_bodies; ++b) {
        const double *k = kinematics + 13 * (inst->m->first_body_point + b);
        double *o = inst->bodies + 13 * b;
        memcpy(o, k, 10 * sizeof(double));
        double w = k[3], x = k[4], y = k[5], z = k[6];
        double R[3][3] = {
            {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
            {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
            {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
        for (int i = 0; i < 3; ++i)
            o[10 + i] = R[0][i] * k[10] + R[1][i] * k[11] + R[2][i] * k[12];
    }
}

static void rbf_publish(rbf_instance *inst, const rbc_exchange *x) {
    int bodies = inst->m->first_body_point >= 0;
    if (bodies) body_rows(inst, x->kinematics);
    rbf_publish_values(inst, x->step, x->time, x->kinematics, 13, x->motions,
                       bodies ? inst->bodies : NULL);
}

int rbf_backend_active(const rbf_instance *inst) { return inst->client != NULL; }

/* A report is a barrier of the session: in a joined session (server.session) it would wait
 * for every other client, so there the initialization-mode wrench goes with the first step
 * and the accelerations until then are the session's at attach. */
rbf_result rbf_backend_report(rbf_instance *inst, const char *call) {
    forward_server_log(inst);
    if (!inst->owns_session) return RBF_OK;
    rbc_inputs in = {0};
    rbc_exchange x;
    in.wrench = inst->wrench;
    in.wrench_terms = 3;
    in.flex_kinematics = inst->m->n_joints ? inst->flex : NULL;
    if (rbc_report(inst->client, &in, &x) != RBC_OK) {
        char reason[600];
        snprintf(reason, sizeof reason, "the report of the wrench to the server failed: %s: %s",
                 rbc_error_code(inst->client), rbc_error_message(inst->client));
        return rbf_refuse(inst, call, reason);
    }
    rbf_publish(inst, &x);
    return RBF_OK;
}

rbf_result rbf_backend_step(rbf_instance *inst, const char *call) {
    forward_server_log(inst);
    rbc_inputs in = {0};
    rbc_exchange x;
    in.wrench = inst->wrench;
    in.wrench_terms = 3;
    in.flex_kinematics = inst->m->n_joints ? inst->flex : NULL;
    if (rbc_step(inst->client, &in, &x) != RBC_OK) {
        rbf_logf(inst, 2, "%s failed at t = %.17g s: the server answered %s: %s", call,
                 inst->reals[0], rbc_error_code(inst->client), rbc_error_message(inst->client));
        return RBF_DISCARD;
    }
    rbf_publish(inst, &x);
    return RBF_OK;
}

rbf_result rbf_backend_get_state(rbf_instance *inst, const char *call, unsigned char **blob,
                                 size_t *size) {
    long step;
    double time;
    if (rbc_get_state(inst->client, blob, size, &step, &time) != RBC_OK) {
        char reason[600];
        snprintf(reason, sizeof reason, "the server's state could not be fetched: %s: %s",
                 rbc_error_code(inst->client), rbc_error_message(inst->client));
        return rbf_refuse(inst, call, reason);
    }
    return RBF_OK;
}

rbf_result rbf_backend_set_state(rbf_instance *inst, const char *call,
                                 const unsigned char *blob, size_t size, long step) {
    if (rbc_set_state(inst->client, blob, size, step) != RBC_OK) {
        char reason[600];
        snprintf(reason, sizeof reason, "the server refused the state: %s: %s",
                 rbc_error_code(inst->client), rbc_error_message(inst->client));
        return rbf_refuse(inst, call, reason);
    }
    return RBF_OK;
}
