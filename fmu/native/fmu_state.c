/* fmu_state.c: FMU states of the native rbcosim FMU, one byte blob used both in memory
 * (fmi2GetFMUstate) and serialized (fmi2SerializeFMUstate).
 *
 * Layout (this host's byte order): the tag "RBCNFMS2", n_vars (u32), the state-machine state
 * (u32), the session's step index (i64), its macro step (f64, s), every
 * variable's Real value (n_vars f64), the points' motions ([n_points][19] f64), per String
 * variable its length (u32) and bytes, the session's rigid-side state (u64 size and bytes; 0
 * before initialization), and a 64-bit FNV-1a checksum of everything before it. A state is
 * checked whole (tag, sizes, checksum, this FMU's variable count, check_fields) before anything
 * is applied; the backend's state is restored with rbf_backend_set_state at the saved step
 * index (the server's session state, or the self-contained model's, fmu_local.c). A state
 * taken after initialization restores in any state of the instance (in instantiated or
 * initialization mode the model is started first, as FMI 2 and 3 allow); one taken before
 * ends a running model. A refused state changes nothing.
 */
#include "rbcosim_fmu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char TAG[8] = {'R', 'B', 'C', 'N', 'F', 'M', 'S', '2'};

static uint64_t fnv1a(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

typedef struct writer { unsigned char *p; size_t n; } writer;

static void put(writer *w, const void *data, size_t size) {
    if (w->p != NULL) memcpy(w->p + w->n, data, size);
    w->n += size;
}

/* Writes the blob into w (w->p NULL: only counts its size). */
static void write_state(rbf_instance *inst, writer *w, const unsigned char *solver,
                        uint64_t solver_size) {
    const rbf_model *m = inst->m;
    uint32_t n_vars = (uint32_t)m->n_vars, state = (uint32_t)inst->state;
    int64_t step = inst->step;
    put(w, TAG, sizeof TAG);
    put(w, &n_vars, 4);
    put(w, &state, 4);
    put(w, &step, 8);
    put(w, &inst->macro_step, 8);
    put(w, inst->reals, sizeof(double) * (size_t)m->n_vars);
    put(w, inst->motions, sizeof(double) * 19 * (size_t)m->n_points);
    for (int vr = 1; vr < m->n_vars; ++vr) {
        if (m->vars[vr].type != RBF_STRING) continue;
        uint32_t len = (uint32_t)strlen(inst->strings[vr]);
        put(w, &len, 4);
        put(w, inst->strings[vr], len);
    }
    put(w, &solver_size, 8);
    if (solver_size) put(w, solver, (size_t)solver_size);
    uint64_t sum = w->p != NULL ? fnv1a(w->p, w->n) : 0;
    put(w, &sum, 8);
}

rbf_result rbf_get_state(rbf_instance *inst, const char *call, unsigned char **blob,
                         size_t *size) {
    unsigned char *solver = NULL;
    size_t solver_size = 0;
    if (blob == NULL || size == NULL) return rbf_refuse(inst, call, "NULL state pointer");
    if (rbf_backend_active(inst) &&
        rbf_backend_get_state(inst, call, &solver, &solver_size) != RBF_OK) {
        return RBF_REFUSED;
    }
    writer w = {NULL, 0};
    write_state(inst, &w, solver, solver_size);
    w.p = malloc(w.n);
    if (w.p == NULL) {
        free(solver);
        return rbf_refuse(inst, call, "out of memory");
    }
    w.n = 0;
    write_state(inst, &w, solver, solver_size);
    free(solver);
    *blob = w.p;
    *size = w.n;
    return RBF_OK;
}

typedef struct reader { const unsigned char *p; size_t n, at; } reader;

/* NULL when the header fields and the values of a state (passed its checksum, which anyone
 * can recompute) are usable, else what is wrong: the macro step finite, positive and within
 * a factor 1e3 of the model's, the step index in [0, 2^53], the time
 * and the points' motions finite. */
static const char *check_fields(const rbf_model *m, const unsigned char *reals,
                                double macro_step, int64_t step) {
    double value;
    if (!isfinite(macro_step) || !(macro_step >= m->macro_step * 1e-3) ||
        !(macro_step <= m->macro_step * 1e3)) {
        return "the state's macro step is not finite, not positive or not within a factor "
               "1000 of the FMU's";
    }
    if (step < 0 || step > ((int64_t)1 << 53)) return "the state's step index is out of range";
    memcpy(&value, reals, sizeof value);
    if (!isfinite(value)) return "the state's time is not finite";
    for (size_t i = 0; i < 19 * (size_t)m->n_points; ++i) {
        memcpy(&value, reals + sizeof(double) * ((size_t)m->n_vars + i), sizeof value);
        if (!isfinite(value)) return "the state's point motions are not finite";
    }
    return NULL;
}

static int take(reader *r, void *out, size_t size) {
    if (r->n - r->at < size) return -1;
    if (out != NULL) memcpy(out, r->p + r->at, size);
    r->at += size;
    return 0;
}

static void free_strings(const rbf_model *m, char **strings) {
    for (int vr = 0; strings != NULL && vr < m->n_vars; ++vr) free(strings[vr]);
    free(strings);
}

/* The String values of a checked blob (its strings start at `at`), one malloc'ed string per
 * String variable (NULL elsewhere); NULL when out of memory. */
static char **read_strings(const rbf_model *m, const unsigned char *blob, size_t size,
                           size_t at) {
    reader r = {blob, size, at};
    char **strings = calloc((size_t)m->n_vars, sizeof *strings);
    for (int vr = 1; strings != NULL && vr < m->n_vars; ++vr) {
        uint32_t len = 0;
        if (m->vars[vr].type != RBF_STRING) continue;
        take(&r, &len, 4);
        strings[vr] = malloc((size_t)len + 1);
        if (strings[vr] == NULL) {
            free_strings(m, strings);
            return NULL;
        }
        take(&r, strings[vr], len);
        strings[vr][len] = '\0';
    }
    return strings;
}

/* Exchange the instance's Real and String values with `reals` and `strings`. */
static void swap_values(rbf_instance *inst, double *reals, char **strings) {
    for (int vr = 0; vr < inst->m->n_vars; ++vr) {
        double value = inst->reals[vr];
        inst->reals[vr] = reals[vr];
        reals[vr] = value;
        if (inst->m->vars[vr].type == RBF_STRING && vr > 0) {
            char *text = inst->strings[vr];
            inst->strings[vr] = strings[vr];
            strings[vr] = text;
        }
    }
}

/* The model to a state's solver bytes (`solver_size` 0: a state from before initialization,
 * no model). Before initialization ended the model is started first (with the values now in
 * the instance) and, if it then refuses the bytes, released again. */
static rbf_result restore_model(rbf_instance *inst, const char *call,
                                const unsigned char *solver, uint64_t solver_size, long step) {
    if (solver_size == 0) {
        rbf_close_session(inst);
        return RBF_OK;
    }
    int opened = 0;
    if (!rbf_backend_active(inst)) {
        if (rbf_open_session(inst, call) != RBF_OK) return RBF_REFUSED;
        opened = 1;
    }
    if (rbf_backend_set_state(inst, call, solver, (size_t)solver_size, step) != RBF_OK) {
        if (opened) rbf_close_session(inst);
        return RBF_REFUSED;
    }
    return RBF_OK;
}

rbf_result rbf_set_state(rbf_instance *inst, const char *call, const unsigned char *blob,
                         size_t size) {
    const rbf_model *m = inst->m;
    reader r = {blob, size, 0};
    char tag[8];
    uint32_t n_vars, state;
    int64_t step;
    double macro_step;
    uint64_t solver_size, sum;
    if (blob == NULL || size < sizeof TAG + 8) return rbf_refuse(inst, call, "not an FMU state");
    memcpy(&sum, blob + size - 8, 8);
    if (take(&r, tag, 8) || memcmp(tag, TAG, 8) != 0) {
        return rbf_refuse(inst, call, "not an FMU state of a native rbcosim FMU (tag)");
    }
    if (fnv1a(blob, size - 8) != sum) return rbf_refuse(inst, call, "checksum mismatch");
    if (take(&r, &n_vars, 4) || n_vars != (uint32_t)m->n_vars || take(&r, &state, 4) ||
        state > RBF_FAILED || take(&r, &step, 8) || take(&r, &macro_step, 8)) {
        return rbf_refuse(inst, call, "a state of another FMU (variable count or header)");
    }
    size_t reals_at = r.at;
    if (take(&r, NULL, sizeof(double) * (size_t)m->n_vars) ||
        take(&r, NULL, sizeof(double) * 19 * (size_t)m->n_points)) {
        return rbf_refuse(inst, call, "truncated state");
    }
    const char *bad = check_fields(m, blob + reals_at, macro_step, step);
    if (bad != NULL) return rbf_refuse(inst, call, bad);
    size_t strings_at = r.at;
    for (int vr = 1; vr < m->n_vars; ++vr) {
        uint32_t len;
        if (m->vars[vr].type == RBF_STRING && (take(&r, &len, 4) || take(&r, NULL, len))) {
            return rbf_refuse(inst, call, "truncated state");
        }
    }
    if (take(&r, &solver_size, 8) || solver_size != r.n - r.at - 8) {
        return rbf_refuse(inst, call, "truncated state or trailing bytes");
    }
    size_t solver_at = r.at;
    /* Everything is checked: apply. Values first (a model started here is started with the
     * state's parameters), put back if the model does not take the state. */
    size_t n_reals = sizeof(double) * (size_t)m->n_vars;
    double *reals = malloc(n_reals);
    char **strings = read_strings(m, blob, size, strings_at);
    if (reals == NULL || strings == NULL) {
        free(reals);
        free_strings(m, strings);
        return rbf_refuse(inst, call, "out of memory");
    }
    memcpy(reals, blob + reals_at, n_reals);
    swap_values(inst, reals, strings); /* reals, strings: the instance's until now */
    rbf_result done = restore_model(inst, call, blob + solver_at, solver_size, (long)step);
    if (done != RBF_OK) swap_values(inst, reals, strings);
    free(reals);
    free_strings(m, strings);
    if (done != RBF_OK) return RBF_REFUSED;
    memcpy(inst->reals, blob + reals_at, n_reals); /* a model started above published its own */
    memcpy(inst->motions, blob + reals_at + n_reals, sizeof(double) * 19 * (size_t)m->n_points);
    for (int vr = 1; vr < m->n_vars; ++vr) {
        if (m->vars[vr].type != RBF_STRING) rbf_store_real(inst, (unsigned)vr, inst->reals[vr]);
    }
    inst->state = (rbf_state)state;
    inst->step = (long)step;
    inst->macro_step = macro_step;
    return RBF_OK;
}
