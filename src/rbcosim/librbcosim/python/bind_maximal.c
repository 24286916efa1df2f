/* Python entry points of the maximal (rigid) part of the core: rbcosim.maximal.kernels.handle wraps
 * them one line each.  Array sizes are checked here; the kernels trust them. */
#include "rbc_py.h"
#include "../rigid/forces.h"
#include "../rigid/maximal.h"
#include "../rigid/expression.h"
#include "../rigid/macro.h"

/* A 'rows' handle: a RowTable and the Frames it is evaluated at (constraints.py). */
typedef struct { rbc_rows rows; rbc_frames frames; } rows_at;
/* A 'points' handle: PointInputs and Frames (dynamics.py's reactions). */
typedef struct { rbc_points points; rbc_frames frames; } points_at;

static int64_t n_bodies(const rbc_maximal *h) { return h->sys.mass_blocks.shape[0] - 1; }

static int check_size(const rbc_arr *a, int64_t size, const char *fn, const char *what) {
    if (a->size != size) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %lld elements, expected %lld", fn, what,
                     (long long)a->size, (long long)size);
        return 0;
    }
    return 1;
}

#define CHECK(a, size, fn, what) if (!check_size(&(a), (size), fn, what)) return NULL

/* applied_forces(forces, t, r, R, v, w, force, torque): see rigid/forces.h. */
static PyObject *py_applied_forces(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_forces *f;
    double t;
    rbc_arr r, R, v, w, force, torque;
    if (!rbc_parse(args, nargs, "applied_forces", "HdDDDDDD", "forces", (void **)&f, &t, &r, &R,
                   &v, &w, &force, &torque))
        return NULL;
    int64_t n = f->gravity_force.shape[0];
    CHECK(force, 3 * n, "applied_forces", "force");
    CHECK(torque, 3 * n, "applied_forces", "torque");
    CHECK(r, 3 * (n + 1), "applied_forces", "r");
    CHECK(R, 9 * (n + 1), "applied_forces", "R");
    rbc_applied_forces(f, t, &r, &R, &v, &w, &force, &torque);
    Py_RETURN_NONE;
}

/* potential_energy(forces, r, R, v, w) -> J. */
static PyObject *py_potential_energy(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_forces *f;
    rbc_arr r, R, v, w;
    if (!rbc_parse(args, nargs, "potential_energy", "HDDDD", "forces", (void **)&f, &r, &R, &v, &w))
        return NULL;
    return PyFloat_FromDouble(rbc_potential_energy(f, &r, &R, &v, &w));
}

/* force_power(forces, t, r, R, v, w) -> W. */
static PyObject *py_force_power(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_forces *f;
    double t;
    rbc_arr r, R, v, w;
    if (!rbc_parse(args, nargs, "force_power", "HdDDDD", "forces", (void **)&f, &t, &r, &R, &v, &w))
        return NULL;
    return PyFloat_FromDouble(rbc_force_power(f, t, &r, &R, &v, &w));
}

/* program_jet(program, t, stack) -> (f, f', f'', bad). */
static PyObject *py_program_jet(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr program, stack;
    double t, jet[3];
    if (!rbc_parse(args, nargs, "program_jet", "DdD", &program, &t, &stack)) return NULL;
    if (program.size < 2 || program.size < 2 + 2 * (int64_t)program.d[0]
        || stack.size < 3 * (int64_t)program.d[1])
        return PyErr_Format(PyExc_ValueError, "program_jet: malformed program or short stack");
    int64_t bad = rbc_program_jet(program.d, t, stack.d, jet);
    return Py_BuildValue("dddL", jet[0], jet[1], jet[2], (long long)bad);
}

/* evaluate_rows(rows, t, values (4, m), jac (2, m, 6), aux (2, 2, 6)). */
static PyObject *py_evaluate_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rows_at *h;
    double t;
    rbc_arr values, jac, aux;
    if (!rbc_parse(args, nargs, "evaluate_rows", "HdDDD", "rows", (void **)&h, &t, &values, &jac,
                   &aux))
        return NULL;
    int64_t m = h->rows.n_main.i[0] + h->rows.drivers.shape[0];
    if (values.ndim != 2 || values.shape[0] != 4 || values.shape[1] < m)
        return PyErr_Format(PyExc_ValueError, "evaluate_rows: values must be (4, >= %lld)",
                            (long long)m);
    CHECK(jac, 12 * values.shape[1], "evaluate_rows", "jac");
    CHECK(aux, 24, "evaluate_rows", "aux");
    rbc_evaluate_rows(&h->rows, t, &h->frames, &values, &jac, &aux);
    Py_RETURN_NONE;
}

/* point_wrenches(points, t, out (k, 6)). */
static PyObject *py_point_wrenches(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    points_at *h;
    double t;
    rbc_arr out;
    if (!rbc_parse(args, nargs, "point_wrenches", "HdD", "points", (void **)&h, &t, &out))
        return NULL;
    CHECK(out, 6 * h->points.body.size, "point_wrenches", "out");
    rbc_point_wrenches(&h->points, t, &h->frames, out.d, 6);
    Py_RETURN_NONE;
}

/* add_point_loads(points, wrenches (k, 6), loads (n, 6) [F, tau], added to). */
static PyObject *py_add_point_loads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    points_at *h;
    rbc_arr wrenches, loads;
    if (!rbc_parse(args, nargs, "add_point_loads", "HDD", "points", (void **)&h, &wrenches, &loads))
        return NULL;
    CHECK(wrenches, 6 * h->points.body.size, "add_point_loads", "wrenches");
    CHECK(loads, 6 * (h->frames.r.shape[0] - 1), "add_point_loads", "loads");
    rbc_add_point_loads(&h->points, &h->frames, wrenches.d, loads.d, loads.d + 3, 6);
    Py_RETURN_NONE;
}

/* band_solve(pattern, band (m, w+1), scale (m,), rhs (m,), out (m,)): mu with
 * (J M^-1 J^T) mu = rhs from the factor left in a workspace (rhs and out may be the same). */
static PyObject *py_band_solve(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_pattern *p;
    rbc_arr band, scale, rhs, out;
    if (!rbc_parse(args, nargs, "band_solve", "HDDDD", "pattern", (void **)&p, &band, &scale,
                   &rhs, &out))
        return NULL;
    int64_t m = p->rows.shape[0];
    CHECK(band, m * (p->width.i[0] + 1), "band_solve", "band");
    CHECK(scale, m, "band_solve", "scale");
    CHECK(rhs, m, "band_solve", "rhs");
    CHECK(out, m, "band_solve", "out");
    rbc_solve(p, &band, scale.d, rhs.d, out.d);
    Py_RETURN_NONE;
}

#define PARSE_H_T_Y(fn, fmt, ...) \
    rbc_maximal *h; \
    double t; \
    rbc_arr y; \
    if (!rbc_parse(args, nargs, fn, fmt, "maximal", (void **)&h, &t, &y, __VA_ARGS__)) return NULL; \
    CHECK(y, 13 * n_bodies(h), fn, "y")

/* accelerations(h, t, y, acc (n, 6)) -> status; multipliers in work.solve[1]. */
static PyObject *py_accelerations(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr acc;
    PARSE_H_T_Y("accelerations", "HdDD", &acc);
    CHECK(acc, 6 * n_bodies(h), "accelerations", "acc");
    int status = rbc_accelerations(h, t, y.d);
    const double *a = h->w.body.d + 6 * n_bodies(h) * RBC_ACC;
    for (int64_t k = 0; k < acc.size; k++) acc.d[k] = a[k];
    return PyLong_FromLong(status);
}

/* derivative(h, t, y, out) -> status. */
static PyObject *py_derivative(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr out;
    PARSE_H_T_Y("derivative", "HdDD", &out);
    CHECK(out, y.size, "derivative", "out");
    return PyLong_FromLong(rbc_derivative(h, t, y.d, out.d));
}

/* derivative_and_power(h, t, y (13n + 1), out) -> status: the work W as a quadrature state. */
static PyObject *py_derivative_and_power(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    double t;
    rbc_arr y, out;
    if (!rbc_parse(args, nargs, "derivative_and_power", "HdDD", "maximal", (void **)&h, &t, &y,
                   &out))
        return NULL;
    int64_t n = 13 * n_bodies(h);
    CHECK(y, n + 1, "derivative_and_power", "y");
    CHECK(out, n + 1, "derivative_and_power", "out");
    int status = rbc_derivative(h, t, y.d, out.d);
    out.d[n] = rbc_stage_power(h, t);
    return PyLong_FromLong(status);
}

/* project(h, t, y, tol, max_iter) -> (status, final max |Phi|); y in place. */
static PyObject *py_project(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    double t, tol, worst;
    rbc_arr y;
    int64_t max_iter;
    if (!rbc_parse(args, nargs, "project", "HdDdn", "maximal", (void **)&h, &t, &y, &tol, &max_iter))
        return NULL;
    CHECK(y, 13 * n_bodies(h), "project", "y");
    int status = rbc_project(h, t, y.d, tol, max_iter, &worst);
    return Py_BuildValue("id", status, worst);
}

/* drift(h, t, y) -> (max |Phi|, max |Phi'|). */
static PyObject *py_drift(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    double t, out[2];
    rbc_arr y;
    if (!rbc_parse(args, nargs, "drift", "HdD", "maximal", (void **)&h, &t, &y)) return NULL;
    CHECK(y, 13 * n_bodies(h), "drift", "y");
    rbc_drift(h, t, y.d, out);
    return Py_BuildValue("dd", out[0], out[1]);
}

/* power(h, t, y) -> (status, W). */
static PyObject *py_power(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    double t;
    rbc_arr y;
    if (!rbc_parse(args, nargs, "power", "HdD", "maximal", (void **)&h, &t, &y)) return NULL;
    CHECK(y, 13 * n_bodies(h), "power", "y");
    int status = rbc_accelerations(h, t, y.d);
    return Py_BuildValue("id", status, rbc_stage_power(h, t));
}

/* energy(h, y) -> (total, kinetic) J. */
static PyObject *py_energy(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    rbc_arr y;
    double kinetic;
    if (!rbc_parse(args, nargs, "energy", "HD", "maximal", (void **)&h, &y)) return NULL;
    CHECK(y, 13 * n_bodies(h), "energy", "y");
    double total = rbc_energy(h, y.d, &kinetic);
    return Py_BuildValue("dd", total, kinetic);
}

/* points_now(h, t, y, out (k, 19), acc (k, 6)) -> status. */
static PyObject *py_points_now(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr out, acc;
    PARSE_H_T_Y("points_now", "HdDDD", &out, &acc);
    int64_t k = h->sys.points.body.size;
    CHECK(out, 19 * k, "points_now", "out");
    CHECK(acc, 6 * k, "points_now", "acc");
    int status = rbc_point_state(h, t, y.d, out.d);
    for (int64_t i = 0; i < 6 * k; i++) acc.d[i] = h->w.point_acc.d[i];
    return PyLong_FromLong(status);
}

/* point_outputs_of(h, y, outputs (k, 13)). */
static PyObject *py_point_outputs_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    rbc_arr y, out;
    if (!rbc_parse(args, nargs, "point_outputs_of", "HDD", "maximal", (void **)&h, &y, &out))
        return NULL;
    CHECK(y, 13 * n_bodies(h), "point_outputs_of", "y");
    CHECK(out, 13 * h->sys.points.body.size, "point_outputs_of", "outputs");
    rbc_fill_frames(y.d, &h->w.frames);
    rbc_point_outputs(&h->sys.points, &h->w.frames, out.d, 13);
    Py_RETURN_NONE;
}

static PyObject *steps_result(int status, int64_t done) {
    if (status < 0) return PyErr_NoMemory();
    return Py_BuildValue("iL", status, (long long)done);
}

/* advance_rk4(h, y, times, step, do_project, stats (2,), failed) -> (status, steps done). */
static PyObject *py_advance_rk4(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    rbc_arr y, times, stats, failed;
    double step;
    int do_project;
    if (!rbc_parse(args, nargs, "advance_rk4", "HDDdbDD", "maximal", (void **)&h, &y, &times,
                   &step, &do_project, &stats, &failed))
        return NULL;
    CHECK(y, 13 * n_bodies(h), "advance_rk4", "y");
    CHECK(failed, y.size, "advance_rk4", "failed");
    CHECK(stats, 2, "advance_rk4", "stats");
    int64_t done;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = rbc_rk4_steps(h, y.d, times.d, times.size, step, do_project, stats.d, failed.d, &done);
    Py_END_ALLOW_THREADS
    return steps_result(status, done);
}

/* advance_sdirk2(h, y, times, step, do_project, stats, failed, matrix (s, s), valid (1,) int,
 * tol, max_newton) -> (status, steps done). */
static PyObject *py_advance_sdirk2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    rbc_arr y, times, stats, failed, matrix, valid;
    double step, tol;
    int do_project;
    int64_t max_newton;
    if (!rbc_parse(args, nargs, "advance_sdirk2", "HDDdbDDDLdn", "maximal", (void **)&h, &y,
                   &times, &step, &do_project, &stats, &failed, &matrix, &valid, &tol, &max_newton))
        return NULL;
    CHECK(y, 13 * n_bodies(h), "advance_sdirk2", "y");
    CHECK(failed, y.size, "advance_sdirk2", "failed");
    CHECK(stats, 2, "advance_sdirk2", "stats");
    CHECK(matrix, y.size * y.size, "advance_sdirk2", "matrix");
    CHECK(valid, 1, "advance_sdirk2", "valid");
    int64_t done;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = rbc_sdirk2_steps(h, y.d, times.d, times.size, step, do_project, stats.d, failed.d,
                              matrix.d, valid.i, tol, max_newton, &done);
    Py_END_ALLOW_THREADS
    return steps_result(status, done);
}

/* macro_step(h, y, t, H, n, method (0 rk4, 1 sdirk2), do_project, tol, max_newton,
 * matrix (s, s), valid (1,) int, times (n+1,), start (k, 19), end (k, 19), acc (k, 6),
 * energy (k,), stats (2,), failed) -> (status, phase, steps done): one co-simulation macro
 * step of the rigid side (rigid/macro.h). */
static PyObject *py_macro_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    rbc_arr y, matrix, valid, times, start, end, acc, energy, stats, failed;
    double t, H, tol;
    int64_t n, method, max_newton;
    int do_project;
    if (!rbc_parse(args, nargs, "macro_step", "HDddnnbdnDLDDDDDDD", "maximal", (void **)&h, &y,
                   &t, &H, &n, &method, &do_project, &tol, &max_newton, &matrix, &valid, &times,
                   &start, &end, &acc, &energy, &stats, &failed))
        return NULL;
    int64_t k = h->sys.points.body.size;
    CHECK(y, 13 * n_bodies(h), "macro_step", "y");
    if (n < 1) return PyErr_Format(PyExc_ValueError, "macro_step: n must be >= 1");
    if (method == RBC_METHOD_SDIRK2) {
        CHECK(matrix, y.size * y.size, "macro_step", "matrix");
        CHECK(valid, 1, "macro_step", "valid");
    } else if (method != RBC_METHOD_RK4) {
        return PyErr_Format(PyExc_ValueError, "macro_step: unknown method %lld", (long long)method);
    }
    CHECK(times, n + 1, "macro_step", "times");
    CHECK(start, 19 * k, "macro_step", "start");
    CHECK(end, 19 * k, "macro_step", "end");
    CHECK(acc, 6 * k, "macro_step", "acc");
    CHECK(energy, k, "macro_step", "energy");
    CHECK(stats, 2, "macro_step", "stats");
    CHECK(failed, y.size, "macro_step", "failed");
    rbc_stepper st = {(int)method, do_project, tol, max_newton, matrix.d, valid.i};
    rbc_macro_io io = {times.d, start.d, end.d, acc.d, energy.d, stats.d, failed.d};
    int status, phase;
    int64_t done;
    Py_BEGIN_ALLOW_THREADS
    status = rbc_macro_step(h, &st, y.d, t, H, n, &io, &phase, &done);
    Py_END_ALLOW_THREADS
    if (status < 0) return PyErr_NoMemory();
    return Py_BuildValue("iiL", status, phase, (long long)done);
}

PyMethodDef rbc_maximal_methods[] = {
    RBC_METHOD(applied_forces),
    RBC_METHOD(potential_energy),
    RBC_METHOD(force_power),
    RBC_METHOD(program_jet),
    RBC_METHOD(evaluate_rows),
    RBC_METHOD(band_solve),
    RBC_METHOD(point_wrenches),
    RBC_METHOD(add_point_loads),
    RBC_METHOD(accelerations),
    RBC_METHOD(derivative),
    RBC_METHOD(derivative_and_power),
    RBC_METHOD(project),
    RBC_METHOD(drift),
    RBC_METHOD(power),
    RBC_METHOD(energy),
    RBC_METHOD(points_now),
    RBC_METHOD(point_outputs_of),
    RBC_METHOD(advance_rk4),
    RBC_METHOD(advance_sdirk2),
    RBC_METHOD(macro_step),
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_maximal_kinds[] = {
    {"forces", RBC_FORCES_SLOTS, RBC_FORCES_TYPES},
    {"rows", RBC_ROWS_SLOTS + RBC_FRAMES_SLOTS, RBC_ROWS_TYPES "dddddd"},
    {"points", 9 + RBC_FRAMES_SLOTS, "ldddlddld" "dddddd"},
    {"pattern", 3, "lll"},
    {"maximal", RBC_MAXIMAL_SLOTS, RBC_MAXIMAL_TYPES},
    {NULL, 0, NULL},
};
