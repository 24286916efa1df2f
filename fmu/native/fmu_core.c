/* fmu_core.c: variable values, the FMI state machine and doStep of the native rbcosim FMU.
 *
 * States and what each allows are those of the Python FMU (fmu/README.md, "The FMI state
 * machine"); every call is checked before anything is stored, a refused call changes nothing
 * but puts the instance in RBF_FAILED. Times in s; the step size must be a whole multiple
 * k >= 1 of the scenario's macro step (relative tolerance 1e-9), done as k session steps.
 */
#define _POSIX_C_SOURCE 200809L
#include "rbcosim_fmu.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-9

static const char *const STATE_NAMES[] = {
    "instantiated", "initialization mode", "step mode", "terminated", "error"};

void rbf_logf(rbf_instance *inst, int severity, const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    if (inst->log != NULL) inst->log(inst->host, severity, message);
}

rbf_result rbf_refuse(rbf_instance *inst, const char *call, const char *reason) {
    rbf_logf(inst, 2, "%s refused: %s", call, reason);
    inst->state = RBF_FAILED;
    return RBF_REFUSED;
}

static rbf_result refuse_in_state(rbf_instance *inst, const char *call) {
    char reason[128];
    snprintf(reason, sizeof reason, "not allowed in %s", STATE_NAMES[inst->state]);
    return rbf_refuse(inst, call, reason);
}

/* Start values into reals/strings, zero exchange buffers, no session. */
static int load_start_values(rbf_instance *inst) {
    const rbf_model *m = inst->m;
    for (int vr = 0; vr < m->n_vars; ++vr) {
        const rbf_var *v = &m->vars[vr];
        inst->reals[vr] = v->start;
        free(inst->strings[vr]);
        inst->strings[vr] = NULL;
        if (v->type == RBF_STRING && (inst->strings[vr] = strdup(v->start_string)) == NULL) {
            return -1;
        }
    }
    inst->reals[0] = m->start_time;
    memset(inst->wrench, 0, sizeof(double) * 18 * (size_t)m->n_points);
    memset(inst->motions, 0, sizeof(double) * 19 * (size_t)m->n_points);
    for (int j = 0; j < m->n_joints; ++j) {
        /* Until the master sets them the session receives the rest pose (identity). */
        for (int c = 0; c < 13; ++c) inst->flex[13 * j + c] = c == 3 ? 1.0 : 0.0;
        inst->flex_reported[j] = 0;
    }
    inst->step = 0;
    inst->macro_step = m->macro_step;
    inst->state = RBF_INSTANTIATED;
    return 0;
}

rbf_instance *rbf_new(const char *resources, rbf_log_fn log, void *host) {
    const rbf_model *m = &RBF_MODEL;
    rbf_instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL) return NULL;
    inst->m = m;
    inst->log = log;
    inst->host = host;
    inst->server_log = -1;
    inst->resources = strdup(resources);
    inst->reals = calloc((size_t)m->n_vars, sizeof(double));
    inst->strings = calloc((size_t)m->n_vars, sizeof(char *));
    inst->wrench = calloc((size_t)m->n_points * 18 + 1, sizeof(double));
    inst->motions = calloc((size_t)m->n_points * 19 + 1, sizeof(double));
    inst->flex = calloc((size_t)m->n_joints * 13 + 1, sizeof(double));
    inst->flex_reported = calloc((size_t)m->n_joints + 1, sizeof(int));
    inst->bodies = calloc((size_t)m->n_bodies * 13 + 1, sizeof(double));
    if (inst->bodies == NULL ||
        inst->resources == NULL || inst->reals == NULL || inst->strings == NULL ||
        inst->wrench == NULL || inst->motions == NULL || inst->flex == NULL ||
        inst->flex_reported == NULL ||
        load_start_values(inst) != 0) {
        rbf_free(inst);
        return NULL;
    }
    return inst;
}

void rbf_free(rbf_instance *inst) {
    if (inst == NULL) return;
    rbf_close_session(inst);
    if (inst->strings != NULL) {
        for (int vr = 0; vr < inst->m->n_vars; ++vr) free(inst->strings[vr]);
    }
    free(inst->strings);
    free(inst->reals);
    free(inst->wrench);
    free(inst->flex_reported);
    free(inst->motions);
    free(inst->flex);
    free(inst->bodies);
    free(inst->resources);
    free(inst);
}

/* -- values ---------------------------------------------------------------------------- */

static int is_input(const rbf_var *v) {
    return v->kind == RBF_WRENCH || v->kind == RBF_WRENCH_RATE || v->kind == RBF_WRENCH_RATE2 ||
           v->kind == RBF_FLEX || v->kind == RBF_ACTUATOR;
}

void rbf_store_real(rbf_instance *inst, unsigned vr, double value) {
    const rbf_var *v = &inst->m->vars[vr];
    inst->reals[vr] = value;
    if (v->kind == RBF_WRENCH || v->kind == RBF_WRENCH_RATE || v->kind == RBF_WRENCH_RATE2) {
        int order = v->kind == RBF_WRENCH ? 0 : v->kind == RBF_WRENCH_RATE ? 1 : 2;
        inst->wrench[18 * v->owner + 6 * order + v->index] = order == 2 ? 0.5 * value : value;
    } else if (v->kind == RBF_FLEX) {
        inst->flex[13 * v->owner + v->index] = value;
    }
}

static const char *const TYPE_NAMES[] = {"Real", "Integer", "Boolean", "String"};

/* NULL if every reference exists and is of the type; else the reason (in buffer). */
static const char *check_refs(const rbf_instance *inst, const unsigned *vr, size_t n,
                              rbf_type type, int reading, char *buffer, size_t size) {
    if (n > 0 && vr == NULL) return "NULL value references";
    for (size_t i = 0; i < n; ++i) {
        int time_ok = reading && inst->time_variable && type == RBF_REAL;
        int exists = vr[i] < (unsigned)inst->m->n_vars;
        if (!exists || (vr[i] == 0 && !time_ok) ||
            (vr[i] != 0 && inst->m->vars[vr[i]].type != type)) {
            snprintf(buffer, size, "value reference %u%s%s%s is not a%s %s variable of this FMU",
                     vr[i], exists ? " (" : "", exists ? inst->m->vars[vr[i]].name : "",
                     exists ? ")" : "", type == RBF_INTEGER ? "n" : "", TYPE_NAMES[type]);
            return buffer;
        }
    }
    return NULL;
}

/* NULL if every reference may be set now: inputs in any state but terminated and error,
 * parameters before initialization ends. */
static const char *check_settable(const rbf_instance *inst, const unsigned *vr, size_t n,
                                  char *buffer, size_t size) {
    int before_end = inst->state == RBF_INSTANTIATED || inst->state == RBF_INITIALIZATION;
    for (size_t i = 0; i < n; ++i) {
        const rbf_var *v = &inst->m->vars[vr[i]];
        int parameter = v->kind == RBF_PARAMETER || v->kind == RBF_VECTOR_PARAMETER ||
                        v->kind == RBF_SERVER ||
                        v->kind == RBF_ADDED_MASS || v->kind == RBF_ADDED_MASS_FRAME;
        if (!(is_input(v) && (before_end || inst->state == RBF_STEPPING)) &&
            !(parameter && before_end)) {
            snprintf(buffer, size, "%s (value reference %u) cannot be set in %s", v->name,
                     vr[i], STATE_NAMES[inst->state]);
            return buffer;
        }
    }
    return NULL;
}

/* The continuity gaps of joint j now: its point's kinematics (the outputs) against the
 * flexible side's latest inputs, zeros until the host has set one of them (direct
 * feedthrough, as rbcosim.cosim.continuity.joint_gaps: position m, rotation angle rad,
 * velocity m/s, angular velocity rad/s). */
static void joint_gaps(const rbf_instance *inst, int j, double gaps[4]) {
    const rbf_model *m = inst->m;
    double rigid[13] = {0.0};
    const double *flex = inst->flex + 13 * j;
    gaps[0] = gaps[1] = gaps[2] = gaps[3] = 0.0;
    if (!inst->flex_reported[j]) return;
    for (int vr = 1; vr < m->n_vars; ++vr) {
        const rbf_var *v = &m->vars[vr];
        if (v->kind == RBF_POINT && v->owner == m->joint_point[j]) rigid[v->index] = inst->reals[vr];
    }
    const int first[3] = {0, 7, 10}, slot[3] = {0, 2, 3};
    for (int k = 0; k < 3; ++k) {
        double s = 0.0;
        for (int c = first[k]; c < first[k] + 3; ++c) s += (rigid[c] - flex[c]) * (rigid[c] - flex[c]);
        gaps[slot[k]] = sqrt(s);
    }
    double p[4], q[4];
    double np_ = sqrt(rigid[3] * rigid[3] + rigid[4] * rigid[4] + rigid[5] * rigid[5] + rigid[6] * rigid[6]);
    double nq = sqrt(flex[3] * flex[3] + flex[4] * flex[4] + flex[5] * flex[5] + flex[6] * flex[6]);
    for (int i = 0; i < 4; ++i) {
        p[i] = rigid[3 + i] / np_;
        q[i] = flex[3 + i] / nq;
    }
    double d0 = p[0] * q[0] + p[1] * q[1] + p[2] * q[2] + p[3] * q[3];
    double d1 = -p[0] * q[1] + p[1] * q[0] - p[2] * q[3] + p[3] * q[2];
    double d2 = -p[0] * q[2] + p[1] * q[3] + p[2] * q[0] - p[3] * q[1];
    double d3 = -p[0] * q[3] - p[1] * q[2] + p[2] * q[1] + p[3] * q[0];
    gaps[1] = 2.0 * atan2(sqrt(d1 * d1 + d2 * d2 + d3 * d3), fabs(d0));
}

rbf_result rbf_get_reals(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                         double *value) {
    char reason[256];
    const char *bad = check_refs(inst, vr, n, RBF_REAL, 1, reason, sizeof reason);
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    if (n > 0 && value == NULL) return rbf_refuse(inst, call, "NULL value array");
    for (size_t i = 0; i < n; ++i) {
        const rbf_var *v = &inst->m->vars[vr[i]];
        if (v->kind == RBF_GAP) {
            double gaps[4];
            joint_gaps(inst, v->owner, gaps);
            inst->reals[vr[i]] = gaps[v->index];
        }
        value[i] = inst->reals[vr[i]];
    }
    return RBF_OK;
}

rbf_result rbf_set_reals(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                         const double *value) {
    char reason[256];
    const char *bad = check_refs(inst, vr, n, RBF_REAL, 0, reason, sizeof reason);
    if (bad == NULL) bad = check_settable(inst, vr, n, reason, sizeof reason);
    if (bad == NULL && n > 0 && value == NULL) bad = "NULL value array";
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    for (size_t i = 0; i < n; ++i) {
        rbf_store_real(inst, vr[i], value[i]);
        if (inst->m->vars[vr[i]].kind == RBF_FLEX) inst->flex_reported[inst->m->vars[vr[i]].owner] = 1;
    }
    return RBF_OK;
}

rbf_result rbf_get_ints(rbf_instance *inst, const char *call, rbf_type type, const unsigned *vr,
                        size_t n, int *value) {
    char reason[256];
    const char *bad = check_refs(inst, vr, n, type, 1, reason, sizeof reason);
    if (bad == NULL && n > 0 && value == NULL) bad = "NULL value array";
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    for (size_t i = 0; i < n; ++i) value[i] = (int)inst->reals[vr[i]];
    return RBF_OK;
}

/* Integer and Boolean variables are parameters only: their checks (ranges, choices) are the
 * scenario format's, done by the server when the session is created. */
rbf_result rbf_set_ints(rbf_instance *inst, const char *call, rbf_type type, const unsigned *vr,
                        size_t n, const int *value) {
    char reason[256];
    const char *bad = check_refs(inst, vr, n, type, 0, reason, sizeof reason);
    if (bad == NULL) bad = check_settable(inst, vr, n, reason, sizeof reason);
    if (bad == NULL && n > 0 && value == NULL) bad = "NULL value array";
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    for (size_t i = 0; i < n; ++i) {
        inst->reals[vr[i]] = type == RBF_BOOLEAN ? (value[i] != 0) : (double)value[i];
    }
    return RBF_OK;
}

rbf_result rbf_get_strings(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                           const char **value) {
    char reason[256];
    const char *bad = check_refs(inst, vr, n, RBF_STRING, 1, reason, sizeof reason);
    if (bad == NULL && n > 0 && value == NULL) bad = "NULL value array";
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    for (size_t i = 0; i < n; ++i) value[i] = inst->strings[vr[i]];
    return RBF_OK;
}

rbf_result rbf_set_strings(rbf_instance *inst, const char *call, const unsigned *vr, size_t n,
                           const char *const *value) {
    char reason[256];
    const char *bad = check_refs(inst, vr, n, RBF_STRING, 0, reason, sizeof reason);
    if (bad == NULL) bad = check_settable(inst, vr, n, reason, sizeof reason);
    if (bad == NULL && n > 0 && value == NULL) bad = "NULL value array";
    for (size_t i = 0; bad == NULL && i < n; ++i) {
        if (value[i] == NULL) bad = "a NULL string";
    }
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    for (size_t i = 0; i < n; ++i) {
        char *copy = strdup(value[i]);
        if (copy == NULL) return rbf_refuse(inst, call, "out of memory");
        free(inst->strings[vr[i]]);
        inst->strings[vr[i]] = copy;
    }
    return RBF_OK;
}

int rbf_added_mass_parameters(const rbf_instance *inst, double *mass, const char **frames,
                              char *reason, size_t size) {
    const rbf_model *m = inst->m;
    int any = 0;
    for (int vr = 1; vr < m->n_vars; ++vr) {
        const rbf_var *v = &m->vars[vr];
        if (v->kind == RBF_ADDED_MASS) {
            mass[36 * v->owner + v->index] = inst->reals[vr];
            any |= inst->reals[vr] != 0.0;
        } else if (v->kind == RBF_ADDED_MASS_FRAME) {
            const char *frame = inst->strings[vr];
            if (strcmp(frame, "point") != 0 && strcmp(frame, "inertial") != 0) {
                snprintf(reason, size, "%s: expected 'point' or 'inertial', got '%.100s'",
                         v->name, frame);
                return -1;
            }
            frames[v->owner] = frame;
        }
    }
    return any;
}

void rbf_publish_values(rbf_instance *inst, long step, double time, const double *kinematics,
                        int stride, const double *motions, const double *bodies) {
    const rbf_model *m = inst->m;
    double previous_time = inst->reals[0];
    inst->step = step;
    inst->reals[0] = time;
    if (motions != NULL) {
        memcpy(inst->motions, motions, sizeof(double) * 19 * (size_t)m->n_points);
    }
    if (bodies != NULL && bodies != inst->bodies) {
        memcpy(inst->bodies, bodies, sizeof(double) * 13 * (size_t)m->n_bodies);
    }
    for (int vr = 1; vr < m->n_vars; ++vr) {
        const rbf_var *v = &m->vars[vr];
        if (v->kind == RBF_POINT) {
            inst->reals[vr] = kinematics[stride * v->owner + v->index];
        } else if (v->kind == RBF_ACCELERATION) {
            inst->reals[vr] = inst->motions[19 * v->owner + 13 + v->index];
        } else if (v->kind == RBF_BODY) {
            inst->reals[vr] = inst->bodies[13 * v->owner + v->index];
        }
    }
    if (bodies != NULL) {
        rbf_joint_outputs(inst, previous_time, inst->angles_fresh);
        inst->angles_fresh = 0;
    }
}

/* -- life cycle ------------------------------------------------------------------------- */

rbf_result rbf_enter_initialization(rbf_instance *inst, const char *call) {
    if (inst->state != RBF_INSTANTIATED) return refuse_in_state(inst, call);
    inst->state = RBF_INITIALIZATION;
    return RBF_OK;
}

rbf_result rbf_exit_initialization(rbf_instance *inst, const char *call) {
    if (inst->state != RBF_INITIALIZATION) return refuse_in_state(inst, call);
    inst->angles_fresh = 1;
    if (rbf_open_session(inst, call) != RBF_OK) return RBF_REFUSED;
    /* Wrench inputs set during initialization take effect at the start time: the outputs
     * after this call are under them. Non-finite ones are left to the first doStep, which
     * refuses them naming the input. */
    int finite = 1;
    for (int vr = 1; vr < inst->m->n_vars; ++vr) {
        if (is_input(&inst->m->vars[vr]) && !isfinite(inst->reals[vr])) finite = 0;
    }
    if (finite && rbf_backend_report(inst, call) != RBF_OK) {
        rbf_close_session(inst);
        return RBF_REFUSED;
    }
    inst->state = RBF_STEPPING;
    return RBF_OK;
}

/* k >= 1 with h = k H (relative tolerance 1e-9), or 0 (also for k > RBF_MAX_MACRO_STEPS). */
static long whole_steps(double h, double H) {
    if (!isfinite(h) || h <= 0.0 || !isfinite(H) || H <= 0.0) return 0;
    double k = floor(h / H + 0.5);
    if (k < 1.0 || k > RBF_MAX_MACRO_STEPS || fabs(h - k * H) > REL_TOL * h) return 0;
    return (long)k;
}

rbf_result rbf_do_step(rbf_instance *inst, const char *call, double t, double h) {
    const rbf_model *m = inst->m;
    char reason[700];
    if (inst->state != RBF_STEPPING) {
        refuse_in_state(inst, call);
        return RBF_DISCARD;
    }
    double now = inst->reals[0];
    long k = whole_steps(h, inst->macro_step);
    if (k == 0) {
        snprintf(reason, sizeof reason, "step size %.17g s is not a whole multiple of the "
                 "macro step %.17g s (at most %.0f of them per doStep)", h, inst->macro_step,
                 (double)RBF_MAX_MACRO_STEPS);
        rbf_refuse(inst, call, reason);
        return RBF_DISCARD;
    }
    if (!(fabs(t - now) <= REL_TOL * fmax(1.0, fabs(now)))) {
        snprintf(reason, sizeof reason, "currentCommunicationPoint %.17g s is not the FMU's "
                 "time %.17g s", t, now);
        rbf_refuse(inst, call, reason);
        return RBF_DISCARD;
    }
    for (int vr = 1; vr < m->n_vars; ++vr) {
        if (is_input(&m->vars[vr]) && !isfinite(inst->reals[vr])) {
            snprintf(reason, sizeof reason, "input %s is not finite", m->vars[vr].name);
            rbf_refuse(inst, call, reason);
            return RBF_DISCARD;
        }
    }
    for (long i = 0; i < k; ++i) {
        if (rbf_backend_step(inst, call) != RBF_OK) {
            inst->state = RBF_FAILED;
            return RBF_DISCARD;
        }
    }
    return RBF_OK;
}

rbf_result rbf_terminate(rbf_instance *inst, const char *call) {
    if (inst->state != RBF_STEPPING && inst->state != RBF_FAILED) {
        return refuse_in_state(inst, call);
    }
    rbf_close_session(inst);
    inst->state = RBF_TERMINATED;
    return RBF_OK;
}

rbf_result rbf_reset(rbf_instance *inst, const char *call) {
    rbf_close_session(inst);
    if (load_start_values(inst) != 0) return rbf_refuse(inst, call, "out of memory");
    return RBF_OK;
}
