/* fmu_state.c: FMU states of the native rbcosim FMU, one byte blob used both in memory
 * (fmi2GetFMUstate) and serialized (fmi2SerializeFMUstate).
 *
 * Layout (this host's byte order): the tag "RBCNFMS1", n_vars (u32), the state-machine state
 * (u32), the session's step index (i64), its macro step (f64, s), wrench_pending (u32), every
 * variable's Real value (n_vars f64), the points' motions ([n_points][19] f64), per String
 * variable its length (u32) and bytes, the session's rigid-side state (u64 size and bytes; 0
 * before initialization), and a 64-bit FNV-1a checksum of everything before it. A state is
 * checked whole (tag, sizes, checksum, this FMU's variable count, a session state exactly when
 * the instance has a session) before anything is applied; the backend's state is restored with
 * rbf_backend_set_state at the saved step index (the server's session state, or the
 * self-contained model's, fmu_local.c).
 */
#include "rbcosim_fmu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char TAG[8] = {'R', 'B', 'C', 'N', 'F', 'M', 'S', '1'};

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
    uint32_t pending = (uint32_t)inst->wrench_pending;
    int64_t step = inst->step;
    put(w, TAG, sizeof TAG);
    put(w, &n_vars, 4);
    put(w, &state, 4);
    put(w, &step, 8);
    put(w, &inst->macro_step, 8);
    put(w, &pending, 4);
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

static int take(reader *r, void *out, size_t size) {
    if (r->n - r->at < size) return -1;
    if (out != NULL) memcpy(out, r->p + r->at, size);
    r->at += size;
    return 0;
}

rbf_result rbf_set_state(rbf_instance *inst, const char *call, const unsigned char *blob,
                         size_t size) {
    const rbf_model *m = inst->m;
    reader r = {blob, size, 0};
    char tag[8];
    uint32_t n_vars, state, pending;
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
        state > RBF_FAILED || take(&r, &step, 8) || take(&r, &macro_step, 8) ||
        take(&r, &pending, 4)) {
        return rbf_refuse(inst, call, "a state of another FMU (variable count or header)");
    }
    size_t reals_at = r.at;
    if (take(&r, NULL, sizeof(double) * (size_t)m->n_vars) ||
        take(&r, NULL, sizeof(double) * 19 * (size_t)m->n_points)) {
        return rbf_refuse(inst, call, "truncated state");
    }
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
    if ((solver_size != 0) != rbf_backend_active(inst)) {
        return rbf_refuse(inst, call, solver_size ? "the state has a session state and this "
                          "instance has no session (restore it in step mode)" :
                          "the state was saved before initialization and this instance has a "
                          "session (reset first)");
    }
    if (solver_size != 0 &&
        rbf_backend_set_state(inst, call, blob + r.at, (size_t)solver_size, (long)step) !=
            RBF_OK) {
        return RBF_REFUSED;
    }
    memcpy(inst->reals, blob + reals_at, sizeof(double) * (size_t)m->n_vars);
    memcpy(inst->motions, blob + reals_at + sizeof(double) * (size_t)m->n_vars,
           sizeof(double) * 19 * (size_t)m->n_points);
    r.at = strings_at;
    for (int vr = 1; vr < m->n_vars; ++vr) {
        const rbf_var *v = &m->vars[vr];
        if (v->type == RBF_STRING) {
            uint32_t len = 0;
            take(&r, &len, 4);
            char *copy = malloc((size_t)len + 1);
            if (copy == NULL) return rbf_refuse(inst, call, "out of memory");
            take(&r, copy, len);
            copy[len] = '\0';
            free(inst->strings[vr]);
            inst->strings[vr] = copy;
        } else {
            rbf_store_real(inst, (unsigned)vr, inst->reals[vr]);
        }
    }
    inst->state = (rbf_state)state;
    inst->step = (long)step;
    inst->macro_step = macro_step;
    inst->wrench_pending = (int)pending;
    return RBF_OK;
}
