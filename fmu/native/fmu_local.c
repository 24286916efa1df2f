/* fmu_local.c: the self-contained backend of the native rbcosim FMU (`export-fmu --native`
 * without --address): the rigid maximal core of librbcosim (src/rbcosim/librbcosim/rigid,
 * compiled into the FMU's binary) steps the model read from resources/model.bin, as the
 * rigid side of a co-simulation session does (rbcosim.cosim.rigid_side.RigidSide.step: one
 * rbc_macro_step per macro step, the wrench inputs as the polynomial over it).
 *
 * resources/model.bin (written by rbcosim.fmu_export.packaging.native_fmu.model_bytes, a model file of
 * librbcosim/model_file.h, read by its reader): "RBCMODL1", u32 n_arrays, i32 method (0 RK4,
 * 1 SDIRK2), i32 project, i32 0, i64 micro_steps, i64 max_newton, f64 tol, f64 start time (s),
 * then n_arrays records (u8 type 'd'/'l', u8 ndim, 6 bytes 0, i64 shape[ndim], the elements) in member order of
 *   rbc_maximal (rigid/maximal.h: the MaximalTables, then the Workspace), and last the
 *   initial state vector y (13 n_bodies).
 * The model's state (FMU states): t, y, the integrator's statistics, the interface inputs
 * (points.poly .. points.added), and with SDIRK2 its Newton matrix and flag.
 */
#include "rbcosim_fmu.h"

#include "librbcosim/model_file.h"
#include "librbcosim/rigid/macro.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SLOTS RBC_MAXIMAL_SLOTS
static const char TYPES[] = RBC_MAXIMAL_TYPES;
static const char TAG[8] = {'R', 'B', 'C', 'M', 'O', 'D', 'L', '1'};
static const char STATE_TAG[8] = {'R', 'B', 'C', 'L', 'S', 'T', 'A', '1'};

typedef struct local {
    rbc_arr slots[N_SLOTS]; /* viewed as rbc_maximal */
    rbc_model_file file;    /* model.bin, the arrays' storage */
    rbc_stepper st;
    int64_t micro, ny, nb, np;
    double t, stats[2];
    double *y, *newton;
    int64_t valid;
    double *buf, *times, *start, *end, *acc, *energy, *failed, *bodies;
} local;

static rbc_maximal *model(local *L) { return (rbc_maximal *)(void *)L->slots; }

static void free_local(local *L) {
    if (L == NULL) return;
    rbc_model_file_free(&L->file);
    free(L->buf);
    free(L->newton);
    free(L);
}

/* Reads resources/model.bin (librbcosim/model_file.h); NULL with the reason in reason[size]. */
static local *load(const char *resources, char *reason, size_t size) {
    char path[4200], why[300];
    snprintf(path, sizeof path, "%s/model.bin", resources);
    local *L = calloc(1, sizeof *L);
    if (L == NULL) {
        snprintf(reason, size, "out of memory");
        return NULL;
    }
    if (rbc_model_file_open(&L->file, path, TAG, 56, reason, size) != 0) {
        free_local(L);
        return NULL;
    }
    const unsigned char *p = L->file.data;
    int32_t method, project;
    int64_t micro, max_newton;
    double tol, t0;
    memcpy(&method, p + 12, 4);
    memcpy(&project, p + 16, 4);
    memcpy(&micro, p + 24, 8);
    memcpy(&max_newton, p + 32, 8);
    memcpy(&tol, p + 40, 8);
    memcpy(&t0, p + 48, 8);
    if (L->file.n_arrays != N_SLOTS + 1 || micro < 1 ||
        (method != RBC_METHOD_RK4 && method != RBC_METHOD_SDIRK2)) {
        free_local(L);
        snprintf(reason, size, "%.4000s is not a model of this FMU's core", path);
        return NULL;
    }
    rbc_arr y = {0};
    if (rbc_model_file_arrays(&L->file, N_SLOTS, TYPES, L->slots, why, sizeof why) != 0 ||
        rbc_model_file_arrays(&L->file, 1, "d", &y, why, sizeof why) != 0) {
        free_local(L);
        snprintf(reason, size, "%.4000s is damaged or not a model of this FMU's core: %s", path,
                 why);
        return NULL;
    }
    rbc_maximal *h = model(L);
    L->nb = h->sys.mass_blocks.shape[0] - 1;
    L->np = h->sys.points.body.size;
    L->ny = 13 * L->nb;
    if (y.size != L->ny) goto bad;
    L->micro = micro;
    L->t = t0;
    L->st.method = method;
    L->st.do_project = project;
    L->st.tol = tol;
    L->st.max_newton = max_newton;
    size_t nbuf = (size_t)(L->ny + (micro + 1) + 19 * L->np * 2 + 6 * L->np + L->np + L->ny +
                           13 * L->nb + 1);
    L->buf = calloc(nbuf, sizeof(double));
    if (method == RBC_METHOD_SDIRK2) L->newton = calloc((size_t)(L->ny * L->ny + 1), sizeof(double));
    if (L->buf == NULL || (method == RBC_METHOD_SDIRK2 && L->newton == NULL)) goto bad;
    L->y = L->buf;
    L->times = L->y + L->ny;
    L->start = L->times + micro + 1;
    L->end = L->start + 19 * L->np;
    L->acc = L->end + 19 * L->np;
    L->energy = L->acc + 6 * L->np;
    L->failed = L->energy + L->np;
    L->bodies = L->failed + L->ny;
    memcpy(L->y, y.d, sizeof(double) * (size_t)L->ny);
    L->st.newton_matrix = L->newton;
    L->st.valid = &L->valid;
    return L;
bad:
    free_local(L);
    snprintf(reason, size, "%.4000s is damaged or not a model of this FMU's core", path);
    return NULL;
}

/* [x y z q v w^b] per body from y = [r (n,3), q (n,4), v (n,3), w^b (n,3)]. */
static void body_rows(local *L) {
    int64_t n = L->nb;
    for (int64_t b = 0; b < n; ++b) {
        double *o = L->bodies + 13 * b;
        for (int c = 0; c < 3; ++c) o[c] = L->y[3 * b + c];
        for (int c = 0; c < 4; ++c) o[3 + c] = L->y[3 * n + 4 * b + c];
        for (int c = 0; c < 3; ++c) o[7 + c] = L->y[7 * n + 3 * b + c];
        for (int c = 0; c < 3; ++c) o[10 + c] = L->y[10 * n + 3 * b + c];
    }
}

/* The wrench inputs as the polynomial from the current time (RigidSide.set_wrench_polynomial:
 * rows c_0, c_1, c_2 = W, dW/dt, (d2W/dt2)/2, the rest zero); the actuators' points (after
 * the FMU's n_points) hold their inputs (actuators.apply: value times the unit wrench). */
static void set_inputs(rbf_instance *inst, local *L) {
    rbc_points *pts = &model(L)->sys.points;
    int64_t rows = pts->poly.shape[1], n = inst->m->n_points;
    for (int64_t i = 0; i < L->np; ++i) {
        double *c = pts->poly.d + 6 * rows * i;
        for (int64_t r = 0; r < rows; ++r)
            for (int k = 0; k < 6; ++k)
                c[6 * r + k] = i < n && r < 3 ? inst->wrench[18 * i + 6 * r + k] : 0.0;
    }
    for (int a = 0; a < inst->m->n_actuations; ++a) {
        const rbf_actuation *act = &inst->m->actuations[a];
        double *c = pts->poly.d + 6 * rows * act->point;
        for (int k = 0; k < 6; ++k) c[k] = inst->reals[act->vr] * act->unit_wrench[k];
    }
    pts->t0.d[0] = L->t;
}

/* The points' state now (out (k, 19) [outputs, total wrench]; the FMU's n_points
 * accelerations into motions). */
static int points_now(local *L, int64_t n_points, double *motions) {
    rbc_maximal *h = model(L);
    int status = rbc_point_state(h, L->t, L->y, L->end);
    for (int64_t i = 0; i < n_points; ++i) {
        memcpy(motions + 19 * i, L->end + 19 * i, 13 * sizeof(double));
        memcpy(motions + 19 * i + 13, h->w.point_acc.d + 6 * i, 6 * sizeof(double));
    }
    return status;
}

static void publish(rbf_instance *inst, local *L, double *motions) {
    body_rows(L);
    rbf_publish_values(inst, inst->step, L->t, L->end, 19, motions, L->bodies);
}

static const char *status_text(int status) {
    switch (status) {
    case RBC_NOT_FINITE: return "a non-finite state";
    case RBC_SINGULAR: return "the joints' Jacobian lost rank (J M^-1 J^T is singular)";
    case RBC_NO_CONVERGENCE: return "sdirk2: Newton iteration did not converge";
    default: return "out of memory";
    }
}

/* The added-mass parameters into the model (RigidSide.set_added_mass); 0 or -1 (reason). */
static int added_mass(rbf_instance *inst, local *L, char *reason, size_t size) {
    const rbf_model *m = inst->m;
    rbc_points *pts = &model(L)->sys.points;
    double *mass = calloc((size_t)L->np * 36 + 1, sizeof(double));
    const char **frames = calloc((size_t)L->np + 1, sizeof(char *));
    if (mass == NULL || frames == NULL) {
        free(mass);
        free(frames);
        snprintf(reason, size, "out of memory");
        return -1;
    }
    int rc = rbf_added_mass_parameters(inst, mass, frames, reason, size) < 0 ? -1 : 0;
    for (int64_t i = 0; rc == 0 && i < L->np; ++i)
        if (frames[i] != NULL) pts->flags.i[2 * i + 1] = strcmp(frames[i], "point") == 0;
    free(frames);
    int any = 0;
    for (int64_t i = 0; rc == 0 && i < L->np; ++i) {
        const double *a = mass + 36 * i;
        double big = 1.0;
        for (int k = 0; k < 36; ++k) big = fmax(big, fabs(a[k]));
        for (int r = 0; rc == 0 && r < 6; ++r)
            for (int c = 0; c < 6; ++c) {
                /* numpy.allclose(m, m.T, atol=1e-9 max(1, max|m|)), rtol 1e-5 */
                if (!(fabs(a[6 * r + c] - a[6 * c + r]) <= 1e-9 * big + 1e-5 * fabs(a[6 * c + r]))) {
                    snprintf(reason, size, "%s added mass: expected a symmetric 6x6 matrix",
                             m->points[i]);
                    rc = -1;
                    break;
                }
            }
        for (int r = 0; rc == 0 && r < 6; ++r)
            for (int c = 0; c < 6; ++c) {
                double s = 0.5 * (a[6 * r + c] + a[6 * c + r]);
                pts->added.d[36 * i + 6 * r + c] = s;
                any |= s != 0.0;
            }
    }
    if (rc == 0) pts->switches.i[1] = any;
    free(mass);
    return rc;
}

rbf_result rbf_open_session(rbf_instance *inst, const char *call) {
    char reason[4400];
    local *L = load(inst->resources, reason, sizeof reason);
    if (L == NULL) return rbf_refuse(inst, call, reason);
    if (added_mass(inst, L, reason, sizeof reason) != 0) {
        free_local(L);
        return rbf_refuse(inst, call, reason);
    }
    inst->local = L;
    inst->step = 0;
    double *motions = malloc(sizeof(double) * (size_t)(19 * L->np + 1));
    if (motions == NULL) {
        rbf_close_session(inst);
        return rbf_refuse(inst, call, "out of memory");
    }
    int status = points_now(L, inst->m->n_points, motions);
    publish(inst, L, motions);
    free(motions);
    if (status != RBC_OK) {
        snprintf(reason, sizeof reason, "at the start: %s", status_text(status));
        rbf_close_session(inst);
        return rbf_refuse(inst, call, reason);
    }
    return RBF_OK;
}

void rbf_close_session(rbf_instance *inst) {
    free_local((local *)inst->local);
    inst->local = NULL;
}

int rbf_backend_active(const rbf_instance *inst) { return inst->local != NULL; }

rbf_result rbf_backend_report(rbf_instance *inst, const char *call) {
    local *L = (local *)inst->local;
    set_inputs(inst, L);
    int status = points_now(L, inst->m->n_points, inst->motions);
    publish(inst, L, NULL);
    if (status != RBC_OK) {
        char reason[200];
        snprintf(reason, sizeof reason, "at t = %.17g s: %s", L->t, status_text(status));
        return rbf_refuse(inst, call, reason);
    }
    return RBF_OK;
}

rbf_result rbf_backend_step(rbf_instance *inst, const char *call) {
    local *L = (local *)inst->local;
    set_inputs(inst, L);
    int phase;
    int64_t done;
    rbc_macro_io io = {L->times, L->start, L->end, L->acc, L->energy, L->stats, L->failed};
    int status = rbc_macro_step(model(L), &L->st, L->y, L->t, inst->macro_step, L->micro, &io,
                                &phase, &done);
    if (phase >= RBC_PHASE_STEPS) L->t = L->times[phase == RBC_PHASE_STEPS ? done : L->micro];
    if (status != RBC_OK) {
        rbf_logf(inst, 2, "%s failed at t = %.17g s: %s", call, L->t, status_text(status));
        return RBF_DISCARD;
    }
    for (int64_t i = 0; i < inst->m->n_points; ++i) {
        memcpy(inst->motions + 19 * i, L->end + 19 * i, 13 * sizeof(double));
        memcpy(inst->motions + 19 * i + 13, L->acc + 6 * i, 6 * sizeof(double));
    }
    inst->step += 1;
    publish(inst, L, NULL);
    return RBF_OK;
}

/* The state: tag, t, stats (2), y, valid, the points' input arrays (poly .. added), Newton
 * matrix (SDIRK2). */
static size_t state_size(local *L) {
    rbc_points *p = &model(L)->sys.points;
    size_t n = 8 + 8 * (size_t)(1 + 2 + L->ny + 1);
    n += 8 * (size_t)(p->poly.size + p->t0.size + p->switches.size + p->gains.size +
                      p->reference.size + p->flags.size + p->added.size);
    if (L->newton != NULL) n += 8 * (size_t)(L->ny * L->ny);
    return n;
}

typedef struct cursor { unsigned char *p; const unsigned char *q; } cursor;

static void move(cursor *c, void *data, int64_t count, int writing) {
    size_t bytes = 8 * (size_t)count;
    if (writing) { memcpy(c->p, data, bytes); c->p += bytes; }
    else { memcpy(data, c->q, bytes); c->q += bytes; }
}

static void transfer(local *L, cursor *c, int writing) {
    rbc_points *p = &model(L)->sys.points;
    move(c, &L->t, 1, writing);
    move(c, L->stats, 2, writing);
    move(c, L->y, L->ny, writing);
    move(c, &L->valid, 1, writing);
    move(c, p->poly.d, p->poly.size, writing);
    move(c, p->t0.d, p->t0.size, writing);
    move(c, p->switches.i, p->switches.size, writing);
    move(c, p->gains.d, p->gains.size, writing);
    move(c, p->reference.d, p->reference.size, writing);
    move(c, p->flags.i, p->flags.size, writing);
    move(c, p->added.d, p->added.size, writing);
    if (L->newton != NULL) move(c, L->newton, L->ny * L->ny, writing);
}

rbf_result rbf_backend_get_state(rbf_instance *inst, const char *call, unsigned char **blob,
                                 size_t *size) {
    local *L = (local *)inst->local;
    *size = state_size(L);
    *blob = malloc(*size);
    if (*blob == NULL) return rbf_refuse(inst, call, "out of memory");
    memcpy(*blob, STATE_TAG, 8);
    cursor c = {*blob + 8, NULL};
    transfer(L, &c, 1);
    return RBF_OK;
}

rbf_result rbf_backend_set_state(rbf_instance *inst, const char *call,
                                 const unsigned char *blob, size_t size, long step) {
    local *L = (local *)inst->local;
    if (size != state_size(L) || memcmp(blob, STATE_TAG, 8) != 0) {
        return rbf_refuse(inst, call, "the state is not one of this FMU's model");
    }
    cursor c = {NULL, blob + 8};
    transfer(L, &c, 0);
    inst->step = step;
    body_rows(L);
    return RBF_OK;
}
