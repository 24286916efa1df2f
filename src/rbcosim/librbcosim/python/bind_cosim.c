/* Python entry point of the coupled co-simulation macro steps (cosim/coupled.h). */
#include "rbc_py.h"

#include <math.h>

#include "../cosim/coupled.h"
#include "../cosim/flex_loop.h"
#include "../wire/zmq_link.h"
#include "../flex/frame.h"

#define FAIL(...) return PyErr_Format(PyExc_ValueError, __VA_ARGS__)

static int sized(const rbc_arr *a, int64_t size, const char *what) {
    if (a->size != size) {
        PyErr_Format(PyExc_ValueError, "coupled_steps: %s has %lld elements, expected %lld", what,
                     (long long)a->size, (long long)size);
        return 0;
    }
    return 1;
}

static int64_t body_state_size(const rbc_cs_joint *j) {
    return j->floating ? ((rbc_fx_floating_body *)j->body)->state.size
                       : ((rbc_fx_grounded_body *)j->body)->state.size;
}

/* The sizes of a joint's body (j->floating set), its exchange and p (the grounded propagator);
 * sets j->p. */
static int body_and_exchange(rbc_cs_joint *j, const rbc_arr *p, const char *name) {
    rbc_arr *state, *wrench;
    if (j->floating) {
        rbc_fx_floating_body *b = j->body;
        state = &b->state;
        wrench = &b->wrench;
    } else {
        rbc_fx_grounded_body *b = j->body;
        state = &b->state;
        wrench = &b->wrench;
    }
    int64_t modes = (state->size - FX_ETA) / 2;
    if (state->size < FX_ETA || (state->size - FX_ETA) % 2 || modes > FX_MAX_MODES) {
        PyErr_Format(PyExc_ValueError, "%s: a body's state is not a flex state", name);
        return 0;
    }
    rbc_fx_exchange *x = j->x;
    if (!sized(wrench, 6, "wrench") || !sized(&x->times, FX_HISTORY, "times")
        || !sized(&x->wrenches, 6 * FX_HISTORY, "wrenches") || !sized(&x->count, 1, "count")
        || !sized(&x->energy, 1, "energy") || !sized(&x->pending, 1, "pending")
        || !sized(&x->handed_mass, 36, "handed_mass") || !sized(&x->implicit, 1, "implicit")
        || !sized(&x->rigid_input, 6, "rigid_input"))
        return 0;
    if (!j->floating) {
        rbc_fx_grounded_body *b = j->body;
        int64_t nb = b->comps.size;
        if (nb > FX_MAX_BOUNDARY || !sized(p, modes ? 2 * modes * (3 * modes + 5 * nb) : p->size, "p"))
            return 0;
    }
    j->p = p->d;
    return 1;
}

/* The kind of the flexible body args[0] ("flex_floating" or "flex_grounded"), for rbc_parse to
 * check with the other arguments. */
static const char *body_kind(PyObject *const *args, const char *name, void **body) {
    if (rbc_parse(args, 1, name, "H", "flex_floating", body)) return "flex_floating";
    PyErr_Clear();
    return "flex_grounded";
}

/* The range checks' bounds of a joint: quiet [spin_floor rad²/s², rotation_gain rad per |eta|,
 * rotation_limit rad] and the nodes' elastic rotation rows (3 N, k) or empty. */
static int range_checks(rbc_cs_joint *j, const double *quiet, const rbc_arr *rotations,
                        const char *name) {
    int64_t modes = (body_state_size(j) - FX_ETA) / 2;
    if (rotations->size % (3 * (modes ? modes : 1)) || (rotations->size && !modes)) {
        PyErr_Format(PyExc_ValueError, "%s: rotations: (3 N, k) rows", name);
        return 0;
    }
    j->spin_floor = quiet[0];
    j->rotation_gain = quiet[1];
    j->rotation_limit = quiet[2];
    j->rotations = rotations->d;
    j->n_rotations = modes ? rotations->size / modes : 0;
    return 1;
}

/* One joint from (body, exchange, p, ints [point, micro_steps, n_motions], floats [tol (4),
 * spin_floor, rotation_gain, rotation_limit], motions (2, 20), ledger (23,), rotations (3 N, k)
 * or empty). */
static int parse_joint(PyObject *item, rbc_cs_joint *j, int64_t k, double H) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 8) {
        PyErr_SetString(PyExc_TypeError, "coupled_steps: a joint is a tuple of 8 items");
        return 0;
    }
    PyObject *const *a = &PyTuple_GET_ITEM(item, 0);
    const char *kind = body_kind(a, "coupled_steps", &j->body);
    rbc_arr p, ints, floats, motions, ledger, rotations;
    if (!rbc_parse(a, 8, "coupled_steps", "HHDLDDDD", kind, &j->body, "flex_exchange",
                   (void **)&j->x, &p, &ints, &floats, &motions, &ledger, &rotations))
        return 0;
    j->floating = kind[5] == 'f';
    if (!body_and_exchange(j, &p, "coupled_steps") || !sized(&ints, 3, "ints")
        || !sized(&floats, 7, "floats") || !sized(&motions, 40, "motions")
        || !sized(&ledger, RBC_CS_LEDGER, "ledger")
        || !range_checks(j, floats.d + 4, &rotations, "coupled_steps"))
        return 0;
    j->point = ints.i[0];
    j->micro_steps = ints.i[1];
    j->n_motions = ints.i + 2;
    if (j->point < 0 || j->point >= k || j->micro_steps < 1 || j->n_motions[0] < 0
        || j->n_motions[0] > 2) {
        PyErr_SetString(PyExc_ValueError, "coupled_steps: a joint's point, micro steps or motion "
                        "count is out of range");
        return 0;
    }
    for (int c = 0; c < 4; c++) j->tol[c] = floats.d[c];
    j->motions = motions.d;
    j->ledger = ledger.d;
    (void)H;
    return 1;
}

/* coupled_steps(h, y, t, H, n, method, do_project, tol, max_newton, matrix, valid, times,
 * start, end, acc, energy, stats, failed, scheme, order, K, joints) -> (code, steps done, t,
 * micro steps): up to K coupled macro steps (cosim/coupled.h); code 0 done, 1 stopped before
 * step `done` (to be taken by the Python master). */
static PyObject *py_coupled_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_maximal *h;
    rbc_arr y, matrix, valid, times, start, end, acc, energy, stats, failed;
    double t, H, tol;
    int64_t n, method, max_newton, scheme, order, K;
    int do_project;
    if (nargs != 22) FAIL("coupled_steps() takes 22 arguments (%zd given)", nargs);
    if (!rbc_parse(args, 21, "coupled_steps", "HDddnnbdnDLDDDDDDDnnn", "maximal", (void **)&h,
                   &y, &t, &H, &n, &method, &do_project, &tol, &max_newton, &matrix, &valid,
                   &times, &start, &end, &acc, &energy, &stats, &failed, &scheme, &order, &K))
        return NULL;
    int64_t k = h->sys.points.body.size, nb = h->sys.mass_blocks.shape[0] - 1;
    if (!sized(&y, 13 * nb, "y")) return NULL;
    if (n < 1 || K < 0 || !(H > 0) || order < 0 || order > 2 || scheme < RBC_CS_JACOBI
        || scheme > RBC_CS_FLEX_FIRST)
        FAIL("coupled_steps: n >= 1, K >= 0, H > 0, order 0..2 and a known scheme");
    if (method == RBC_METHOD_SDIRK2) {
        if (!sized(&matrix, y.size * y.size, "matrix") || !sized(&valid, 1, "valid")) return NULL;
    } else if (method != RBC_METHOD_RK4) {
        FAIL("coupled_steps: unknown method %lld", (long long)method);
    }
    if (!sized(&times, n + 1, "times") || !sized(&start, 19 * k, "start")
        || !sized(&end, 19 * k, "end") || !sized(&acc, 6 * k, "acc") || !sized(&energy, k, "energy")
        || !sized(&stats, 2, "stats") || !sized(&failed, y.size, "failed"))
        return NULL;
    PyObject *list = args[21];
    if (!PyTuple_Check(list) || PyTuple_GET_SIZE(list) > RBC_CS_MAX_JOINTS)
        FAIL("coupled_steps: joints: a tuple of at most %d joints", RBC_CS_MAX_JOINTS);
    rbc_cs_joint joints[RBC_CS_MAX_JOINTS];
    Py_ssize_t nj = PyTuple_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < nj; i++)
        if (!parse_joint(PyTuple_GET_ITEM(list, i), joints + i, k, H)) return NULL;
    rbc_stepper st = {(int)method, do_project, tol, max_newton, matrix.d, valid.i};
    rbc_macro_io io = {times.d, start.d, end.d, acc.d, energy.d, stats.d, failed.d};
    int64_t done, micro;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = rbc_cs_steps(h, &st, y.d, &t, H, n, (int)scheme, order, joints, nj, K, &io, &done,
                        &micro);
    Py_END_ALLOW_THREADS
    if (code < 0) return PyErr_NoMemory();
    return Py_BuildValue("iLdL", code, (long long)done, t, (long long)micro);
}

/* flex_step(body, exchange, p, micro_steps, motions, n_motions, checks, rotations, motion,
 * future, t, H, order, poly_order, coef) -> (code, rows): one body's exchange step outside a
 * batch (rbc_cs_flex_step): motions (2, 20) and n_motions (1,) its history, checks [spin_floor,
 * rotation_gain, rotation_limit], rotations (3 N, k) or empty, motion (20,), future (20,) or
 * empty, coef (4, 6). */
static PyObject *py_flex_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const char *name = "flex_step";
    rbc_cs_joint j = {0};
    rbc_arr p, motions, n_motions, checks, rotations, motion, future, coef;
    double t, H;
    int64_t order, poly_order, rows = 0;
    if (nargs != 15) FAIL("%s() takes 15 arguments (%zd given)", name, nargs);
    const char *kind = body_kind(args, name, &j.body);
    if (!rbc_parse(args, nargs, name, "HHDnDLDDDDddnnD", kind, &j.body, "flex_exchange",
                   (void **)&j.x, &p, &j.micro_steps, &motions, &n_motions, &checks, &rotations,
                   &motion, &future, &t, &H, &order, &poly_order, &coef))
        return NULL;
    j.floating = kind[5] == 'f';
    if (!body_and_exchange(&j, &p, name) || !sized(&motions, 40, "motions")
        || !sized(&n_motions, 1, "n_motions") || !sized(&checks, 3, "checks")
        || !sized(&motion, 20, "motion") || !sized(&coef, 6 * FX_HISTORY, "coef")
        || !range_checks(&j, checks.d, &rotations, name))
        return NULL;
    if (j.micro_steps < 1 || n_motions.i[0] < 0 || n_motions.i[0] > 2 || order < 0
        || poly_order >= FX_HISTORY || (future.size != 0 && future.size != 20) || !(H > 0))
        FAIL("%s: micro_steps >= 1, n_motions 0..2, order >= 0, poly_order < %d, future (20,) "
             "or empty, H > 0", name, FX_HISTORY);
    j.motions = motions.d;
    j.n_motions = n_motions.i;
    int code = rbc_cs_flex_step(&j, motion.d, future.size ? future.d : NULL, t, H, order,
                                poly_order, poly_order >= 0 ? coef.d : NULL, &rows);
    return Py_BuildValue("iL", code, (long long)rows);
}


/* --- the flexible solver's loop over the wire (cosim/flex_loop.h) ---------------------------- */

/* The request's constant pieces from a tuple of 9 bytes (head, msg_id prefix, envelope,
 * kinematics, energy, polynomial of 1..4 rows); their total size to *total. */
static int parse_pieces(PyObject *t, rbc_fl_pieces *pc, size_t *total) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5 + FX_HISTORY) {
        PyErr_SetString(PyExc_TypeError, "flex_loop: pieces: a tuple of 9 bytes");
        return 0;
    }
    const unsigned char **p[] = {&pc->head, &pc->prefix, &pc->envelope, &pc->kinematics,
                                 &pc->energy, &pc->poly[0], &pc->poly[1], &pc->poly[2],
                                 &pc->poly[3]};
    size_t *n[] = {&pc->head_n, &pc->prefix_n, &pc->envelope_n, &pc->kinematics_n,
                   &pc->energy_n, &pc->poly_n[0], &pc->poly_n[1], &pc->poly_n[2],
                   &pc->poly_n[3]};
    *total = 0;
    for (int i = 0; i < 5 + FX_HISTORY; i++) {
        PyObject *b = PyTuple_GET_ITEM(t, i);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "flex_loop: pieces: a tuple of 9 bytes");
            return 0;
        }
        *p[i] = (const unsigned char *)PyBytes_AS_STRING(b);
        *n[i] = (size_t)PyBytes_GET_SIZE(b);
        *total += *n[i];
    }
    if (pc->prefix_n > 256) {
        PyErr_SetString(PyExc_ValueError, "flex_loop: the msg_id prefix is over 256 bytes");
        return 0;
    }
    return 1;
}

/* A request's header buffer for nj joints (freed by the caller). */
static unsigned char *out_buffer(rbc_fl_wire *w, size_t pieces, int64_t nj) {
    w->out_cap = pieces + 512 + 8 * (size_t)nj * (14 + 6 * FX_HISTORY);
    w->out = PyMem_Malloc(w->out_cap);
    if (!w->out) PyErr_NoMemory();
    return w->out;
}

/* flex_request(pieces, id, k, kinematics (n, 13), energies (n,), polynomial (n, m, 6)) ->
 * bytes: the step request's header frame as the loop encodes it. */
static PyObject *py_flex_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_fl_wire w = {0};
    size_t total;
    int64_t id, k;
    rbc_arr kin, energy, poly;
    if (nargs != 6) FAIL("flex_request() takes 6 arguments (%zd given)", nargs);
    if (!parse_pieces(args[0], &w.pieces, &total)
        || !rbc_parse(args + 1, 5, "flex_request", "nnDDD", &id, &k, &kin, &energy, &poly))
        return NULL;
    int64_t nj = energy.size, m = nj ? poly.size / (6 * nj) : 0;
    if (nj < 1 || kin.size != 13 * nj || poly.size != 6 * m * nj || id < 0 || k < 0)
        FAIL("flex_request: kinematics (n, 13), energies (n,), polynomial (n, m, 6), id, k >= 0");
    if (!out_buffer(&w, total, nj)) return NULL;
    PyObject *out = NULL;
    if (rbc_fl_encode(&w, id, k, nj, kin.d, energy.d, m, poly.d))
        out = PyBytes_FromStringAndSize((const char *)w.out, (Py_ssize_t)w.out_n);
    else
        PyErr_Format(PyExc_ValueError, "flex_request: m = %lld rows, 1 to %d", (long long)m,
                     FX_HISTORY);
    PyMem_Free(w.out);
    return out;
}

/* One joint of the loop from (body, exchange, p, micro_steps, motions (2, 20), n_motions (1,),
 * checks [spin_floor, rotation_gain, rotation_limit], rotations (3 N, k) or empty). */
static int loop_joint(PyObject *item, rbc_cs_joint *j) {
    const char *name = "flex_loop";
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 8) {
        PyErr_SetString(PyExc_TypeError, "flex_loop: a joint is a tuple of 8 items");
        return 0;
    }
    PyObject *const *a = &PyTuple_GET_ITEM(item, 0);
    const char *kind = body_kind(a, name, &j->body);
    rbc_arr p, motions, n_motions, checks, rotations;
    if (!rbc_parse(a, 8, name, "HHDnDLDD", kind, &j->body, "flex_exchange", (void **)&j->x, &p,
                   &j->micro_steps, &motions, &n_motions, &checks, &rotations))
        return 0;
    j->floating = kind[5] == 'f';
    if (!body_and_exchange(j, &p, name) || !sized(&motions, 40, "motions")
        || !sized(&n_motions, 1, "n_motions") || !sized(&checks, 3, "checks")
        || !range_checks(j, checks.d, &rotations, name))
        return 0;
    if (j->micro_steps < 1 || n_motions.i[0] < 0 || n_motions.i[0] > 2) {
        PyErr_SetString(PyExc_ValueError, "flex_loop: micro_steps >= 1, n_motions 0..2");
        return 0;
    }
    j->motions = motions.d;
    j->n_motions = n_motions.i;
    return 1;
}

/* Between waits: Python's signal handlers (the GIL taken for them). */
static int interrupted(void *ctx) {
    PyThreadState **ts = ctx;
    PyEval_RestoreThread(*ts);
    int stop = PyErr_CheckSignals() < 0;
    *ts = PyEval_SaveThread();
    return stop;
}

/* `list` with the bytes of one message part appended, or NULL (cleared) on failure. */
static PyObject *with_part(PyObject *list, const rbc_zmq *z, rbc_zmq_msg *msg) {
    PyObject *b = list ? PyBytes_FromStringAndSize(z->msg_data(msg), (Py_ssize_t)z->msg_size(msg))
                       : NULL;
    if (!b || PyList_Append(list, b) < 0) Py_CLEAR(list);
    Py_XDECREF(b);
    return list;
}

PyObject *rbc_py_message_parts(const rbc_zmq *z, void *sock, rbc_zmq_msg *parts, int *n,
                               int more) {
    PyObject *list = PyList_New(0);
    for (int i = 0; i < *n; i++) list = with_part(list, z, &parts[i]);
    rbc_zmq_close_parts(z, parts, n);
    while (more) {
        rbc_zmq_msg msg;
        z->msg_init(&msg);
        if (z->msg_recv(&msg, sock, RBC_ZMQ_DONTWAIT) < 0) {
            z->msg_close(&msg);
            break;
        }
        more = z->msg_more(&msg);
        list = with_part(list, z, &msg);
        z->msg_close(&msg);
    }
    return list;
}

/* --- bodies stepped by Python (any kind but the compiled one-node one) --------------------- */

/* The flexible solver's callbacks (rbcosim.distributed.flex_solver._Side), called with the GIL:
 * inputs(t) -> the polynomial (nj, m, 6), its reports written to kinematics (nj, 13) and
 * energies (nj,); finish(t, t_end | None) steps the bodies (rigid side first: to the motions
 * the loop wrote to end (nj, 19) at t_end). */
typedef struct py_bodies {
    rbc_fl_bodies bodies;
    PyObject *inputs, *finish, *poly; /* poly: the last polynomial (a reference) */
    rbc_arr kinematics, energies, end;
    PyThreadState **ts;
} py_bodies;

static int py_inputs(rbc_fl_bodies *b, double t, const double *now, rbc_fl_inputs *in) {
    (void)now;  /* (Python's bodies read it from the array the loop writes) */
    py_bodies *p = b->ctx;
    PyEval_RestoreThread(*p->ts);
    int done = RBC_FL_RAISED;
    PyObject *r = PyObject_CallFunction(p->inputs, "d", t);
    rbc_arr poly;
    if (r && rbc_view(r, 'd', &poly, "flex_loop: the wrench polynomial")) {
        int64_t m = poly.size / (6 * b->nj);
        if (m >= 1 && m <= FX_HISTORY && poly.size == 6 * m * b->nj) {
            Py_XSETREF(p->poly, r);
            r = NULL;
            *in = (rbc_fl_inputs){p->kinematics.d, p->energies.d, poly.d, m};
            done = 1;
        } else {
            PyErr_Format(PyExc_ValueError, "flex_loop: the wrench polynomial has %lld values, "
                         "expected (%lld, 1..%d, 6)", (long long)poly.size, (long long)b->nj,
                         FX_HISTORY);
        }
    }
    Py_XDECREF(r);
    *p->ts = PyEval_SaveThread();
    return done;
}

static int py_step(rbc_fl_bodies *b, double t, const double *now, const double *end,
                   double t_end) {
    (void)now;
    py_bodies *p = b->ctx;
    PyEval_RestoreThread(*p->ts);
    if (end) memcpy(p->end.d, end, 19 * (size_t)b->nj * sizeof(double));
    PyObject *r = end ? PyObject_CallFunction(p->finish, "dd", t, t_end)
                      : PyObject_CallFunction(p->finish, "dO", t, Py_None);
    Py_XDECREF(r);
    *p->ts = PyEval_SaveThread();
    return r ? 1 : RBC_FL_RAISED;
}

static int py_undo(rbc_fl_bodies *b) {
    py_bodies *p = b->ctx;
    PyEval_RestoreThread(*p->ts);
    PyErr_Format(PyExc_RuntimeError, "flex_loop: the step request of %lld joints does not fit "
                 "its buffer", (long long)b->nj);
    *p->ts = PyEval_SaveThread();
    return RBC_FL_RAISED;
}

/* Python's bodies from (inputs, finish, kinematics, energies, end) for nj joints. */
static int python_bodies(PyObject *t, py_bodies *p, int64_t nj) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5)
        return PyErr_SetString(PyExc_TypeError, "flex_loop: bodies: a tuple of compiled joints "
                               "or (inputs, finish, kinematics, energies, end)"), 0;
    PyObject *const *a = &PyTuple_GET_ITEM(t, 0);
    if (!PyCallable_Check(a[0]) || !PyCallable_Check(a[1]))
        return PyErr_SetString(PyExc_TypeError, "flex_loop: inputs and finish: callables"), 0;
    if (!rbc_parse(a + 2, 3, "flex_loop", "DDD", &p->kinematics, &p->energies, &p->end))
        return 0;
    if (!sized(&p->kinematics, 13 * nj, "kinematics") || !sized(&p->energies, nj, "energies")
        || !sized(&p->end, 19 * nj, "end"))
        return 0;
    p->inputs = a[0];
    p->finish = a[1];
    p->poly = NULL;
    p->bodies = (rbc_fl_bodies){nj, py_inputs, py_step, py_undo, p};
    return 1;
}

/* Whether `bodies` names Python's callbacks rather than compiled joints. */
static int by_python(PyObject *bodies) {
    return PyTuple_Check(bodies) && PyTuple_GET_SIZE(bodies) == 5
           && PyCallable_Check(PyTuple_GET_ITEM(bodies, 0));
}

/* The compiled joints' bodies from a tuple of 1 to RBC_CS_MAX_JOINTS joints (`loop_joint`). */
static int compiled_bodies(PyObject *list, rbc_cs_joint *joints, int64_t nj) {
    if (!PyTuple_Check(list) || PyTuple_GET_SIZE(list) != nj || nj > RBC_CS_MAX_JOINTS) {
        PyErr_Format(PyExc_ValueError, "flex_loop: joints: a tuple of 1 to %d joints, one per "
                     "row of now", RBC_CS_MAX_JOINTS);
        return 0;
    }
    memset(joints, 0, sizeof(rbc_cs_joint) * (size_t)nj);
    for (Py_ssize_t i = 0; i < nj; i++)
        if (!loop_joint(PyTuple_GET_ITEM(list, i), joints + i)) return 0;
    return 1;
}

/* The loop's result for Python; extra: the reply's parts (RBC_FL_REPLY), the request's header
 * frame (RBC_FL_UNSENT), the exception a body's callback raised (RBC_FL_RAISED), else None. */
static PyObject *loop_result(rbc_fl_wire *w, int code, int64_t k, double t, int64_t next_id,
                             int stepped) {
    PyObject *extra = NULL;
    if (code == RBC_FL_REPLY) {
        extra = rbc_py_message_parts(w->z, w->sock, w->parts, &w->n_parts, w->more);
    } else if (code == RBC_FL_UNSENT) {
        extra = PyBytes_FromStringAndSize((const char *)w->out, (Py_ssize_t)w->out_n);
    } else if (code == RBC_FL_RAISED) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb) PyException_SetTraceback(value, tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        extra = value;
    } else if (code == RBC_FL_NOMEM) {
        PyErr_NoMemory();
    } else if (code != RBC_FL_SIGNAL) {
        extra = Py_None;
        Py_INCREF(extra);
    }
    if (!extra) return NULL;  /* (RBC_FL_SIGNAL: the handler's exception) */
    return Py_BuildValue("iLdLiN", code, (long long)k, t, (long long)next_id, stepped, extra);
}

/* flex_loop(sock, other, timeout, pieces, bodies, scheme, order, H, k, t, now, stop, next_id)
 * -> (code, k, t, next_id, stepped, extra): rbc_fl_run over the libzmq sockets at addresses
 * sock and other (0: none; pyzmq's Socket.underlying), timeout s (< 0: none), now (n, 19)
 * written in place; bodies: a tuple of compiled joints (`loop_joint`), or Python's
 * (inputs, finish, kinematics, energies, end) (`python_bodies`); extra: `loop_result`. */
static PyObject *py_flex_loop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    char why[512];
    rbc_fl_wire w = {0};
    size_t total;
    int64_t sock, other, scheme, order, k, stop, next_id;
    double timeout, H, t;
    rbc_arr now;
    if (nargs != 13) FAIL("flex_loop() takes 13 arguments (%zd given)", nargs);
    if (!rbc_parse(args, 3, "flex_loop", "nnd", &sock, &other, &timeout)
        || !parse_pieces(args[3], &w.pieces, &total)
        || !rbc_parse(args + 5, 8, "flex_loop", "nndndDnn", &scheme, &order, &H, &k, &t, &now,
                      &stop, &next_id))
        return NULL;
    w.z = rbc_zmq_link(why, sizeof why);
    if (!w.z) return PyErr_Format(PyExc_RuntimeError, "rbcosim's C core cannot use ZeroMQ: %s",
                                  why);
    int64_t nj = now.size / 19;
    if (!sock || nj < 1 || now.size != 19 * nj || !(H > 0) || order < 0 || order > 2
        || scheme < RBC_CS_JACOBI || scheme > RBC_CS_FLEX_FIRST || next_id < 0)
        FAIL("flex_loop: a socket, now (n, 19), H > 0, order 0..2, a known scheme, next_id >= 0");
    rbc_cs_joint joints[RBC_CS_MAX_JOINTS];
    rbc_fl_compiled compiled = {0};
    py_bodies python = {0};
    PyThreadState *ts = NULL;
    python.ts = &ts;
    rbc_fl_bodies *bodies = &python.bodies;
    if (by_python(args[4])) {
        if (!python_bodies(args[4], &python, nj)) return NULL;
    } else {
        if (!compiled_bodies(args[4], joints, nj)) return NULL;
        if (!rbc_fl_compiled_init(&compiled, joints, nj, (int)scheme, order, H))
            return PyErr_NoMemory();
        bodies = &compiled.bodies;
    }
    w.sock = (void *)(intptr_t)sock;
    w.other = (void *)(intptr_t)other;
    w.timeout_ms = timeout < 0 ? -1 : (long)ceil(timeout * 1e3);
    PyObject *out = NULL;
    if (out_buffer(&w, total, nj)) {
        ts = PyEval_SaveThread();
        w.interrupted = interrupted;
        w.ctx = &ts;
        int stepped;
        int code = rbc_fl_run(&w, bodies, (int)scheme, &k, &t, now.d, stop, &next_id, &stepped);
        PyEval_RestoreThread(ts);
        out = loop_result(&w, code, k, t, next_id, stepped);
    }
    PyMem_Free(w.out);
    rbc_fl_compiled_free(&compiled);
    Py_XDECREF(python.poly);
    return out;
}

PyMethodDef rbc_cosim_methods[] = {
    RBC_METHOD(coupled_steps),
    RBC_METHOD(flex_step),
    RBC_METHOD(flex_request),
    RBC_METHOD(flex_loop),
    {NULL, NULL, 0, NULL},
};
