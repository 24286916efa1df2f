/* Python entry points of a served rigid side (cosim/served.h) and the finiteness check of
 * its inputs. */
#include "rbc_py.h"

#include <string.h>

#include "../cosim/served.h"
#include "../cosim/served_loop.h"
#include "../wire/zmq_link.h"

/* served_gaps(outputs (k, 13), point (nj,) int64, flex (tuple of nj: (13,) or None),
 * tol (nj, 4), gaps (nj, 4)) -> how many joints have a gap over their tolerances. */
static PyObject *py_served_gaps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const char *name = "served_gaps";
    rbc_arr outputs, point, tol, gaps;
    if (nargs != 5) return PyErr_Format(PyExc_TypeError, "%s() takes 5 arguments", name);
    PyObject *const fixed[] = {args[0], args[1], args[3], args[4]};
    if (!rbc_parse(fixed, 4, name, "DLDD", &outputs, &point, &tol, &gaps)) return NULL;
    int64_t k = outputs.size / 13, nj = point.size;
    PyObject *flex = args[2];
    if (outputs.size != 13 * k || tol.size != 4 * nj || gaps.size != 4 * nj
        || !PyTuple_Check(flex) || PyTuple_GET_SIZE(flex) != nj)
        return PyErr_Format(PyExc_ValueError, "%s: sizes of outputs, flex, tol or gaps", name);
    const double *stack[16];
    const double **rows = nj <= 16 ? stack : PyMem_Malloc((size_t)nj * sizeof *rows);
    if (!rows) return PyErr_NoMemory();
    PyObject *result = NULL;
    for (int64_t j = 0; j < nj; j++) {
        PyObject *item = PyTuple_GET_ITEM(flex, j);
        rbc_arr row;
        rows[j] = NULL;
        if (item == Py_None) continue;
        if (!rbc_view(item, 'd', &row, "served_gaps: flex")) goto done;
        if (row.size != 13 || point.i[j] < 0 || point.i[j] >= k) {
            PyErr_Format(PyExc_ValueError, "%s: joint %lld: flex (13,) at a valid point", name,
                         (long long)j);
            goto done;
        }
        rows[j] = row.d;
    }
    result = PyLong_FromLongLong(
        (long long)rbc_sv_gaps(outputs.d, point.i, rows, nj, tol.d, gaps.d));
done:
    if (rows != stack) PyMem_Free(rows);
    return result;
}

/* all_finite(a) -> whether every entry of the float64 array a is finite (no NaN, no inf). */
static PyObject *py_all_finite(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr a;
    if (!rbc_parse(args, nargs, "all_finite", "D", &a)) return NULL;
    return PyBool_FromLong(rbc_all_finite(a.d, a.size));
}

/* --- a session worker's step path (cosim/served_loop.h) ------------------------------------- */

#define SL_FAIL(...) (PyErr_Format(PyExc_ValueError, __VA_ARGS__), 0)

static int sl_sized(const rbc_arr *a, int64_t size, const char *what) {
    if (a->size == size) return 1;
    return SL_FAIL("served_loop: %s has %lld elements, expected %lld", what, (long long)a->size,
                   (long long)size);
}

/* Bytes item i of tuple t into *p, *n. */
static int sl_bytes(PyObject *t, Py_ssize_t i, const unsigned char **p, size_t *n) {
    PyObject *b = PyTuple_GET_ITEM(t, i);
    if (!PyBytes_Check(b)) return SL_FAIL("served_loop: item %zd is not bytes", i);
    *p = (const unsigned char *)PyBytes_AS_STRING(b);
    *n = (size_t)PyBytes_GET_SIZE(b);
    return 1;
}

/* The session's arrays and settings from the tuple served_path.ServedPath.arguments builds:
 * (handle, y, stats, times, start, end, acc, energy, failed, joint_point, tol, flex,
 * energy_flex, energy_rigid, last_gaps, gap_max, gaps, motions, hist_time, hist_kin, hist_gaps,
 * scratch, out, ints, floats, sizes [micro, output_every, snapshot_every, motions_asked,
 * do_project], H, pieces (7 bytes), session id, client id). */
static int sl_session(PyObject *t, rbc_sl_session *s, rbc_sl_wire *w) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 30)
        return SL_FAIL("served_loop: the session is a tuple of 30 items");
    PyObject *const *a = &PyTuple_GET_ITEM(t, 0);
    rbc_arr y, stats, times, start, end, acc, energy, failed, jp, tol, flex, ef, er, lg, gm, gaps,
        mot, ht, hk, hg, scratch, out, ints, floats, sizes;
    if (!rbc_parse(a, 27, "served_loop", "HDDDDDDDDLDDDDDDDDDDDDDLDLd", "maximal",
                   (void **)&s->h, &y, &stats, &times, &start, &end, &acc, &energy, &failed, &jp,
                   &tol, &flex, &ef, &er, &lg, &gm, &gaps, &mot, &ht, &hk, &hg, &scratch, &out,
                   &ints, &floats, &sizes, &s->H))
        return 0;
    int64_t np = s->h->sys.points.body.size, nj = jp.size;
    int64_t ny = 13 * (s->h->sys.mass_blocks.shape[0] - 1);
    if (!sl_sized(&sizes, 5, "sizes")) return 0;
    s->micro = sizes.i[0];
    s->output_every = sizes.i[1];
    s->snapshot_every = sizes.i[2];
    s->motions_asked = sizes.i[3] != 0;
    int64_t cap = ht.size;
    if (!sl_sized(&y, ny, "y") || !sl_sized(&stats, 2, "stats")
        || !sl_sized(&times, s->micro + 1, "times") || !sl_sized(&start, 19 * np, "start")
        || !sl_sized(&end, 19 * np, "end") || !sl_sized(&acc, 6 * np, "acc")
        || !sl_sized(&energy, np, "energy") || !sl_sized(&failed, ny, "failed")
        || !sl_sized(&tol, 4 * nj, "tol") || !sl_sized(&flex, 13 * nj, "flex")
        || !sl_sized(&ef, nj, "energy_flex") || !sl_sized(&er, nj, "energy_rigid")
        || !sl_sized(&lg, 4 * nj, "last_gaps") || !sl_sized(&gm, 4 * nj, "gap_max")
        || !sl_sized(&gaps, 4 * nj, "gaps") || !sl_sized(&mot, 19 * np, "motions")
        || !sl_sized(&hk, 13 * np * cap, "hist_kin") || !sl_sized(&hg, 4 * nj * cap, "hist_gaps")
        || !sl_sized(&ints, RBC_SL_N_INTS, "ints") || !sl_sized(&floats, RBC_SL_N_FLOATS, "floats")
        || !sl_sized(&s->h->sys.points.poly, 24 * np, "the points' polynomials"))
        return 0;
    if (s->micro < 1 || s->output_every < 1 || s->snapshot_every < 0 || !(s->H > 0)
        || nj > RBC_SL_MAX_JOINTS || scratch.size < rbc_sl_scratch_size(np, nj, ny))
        return SL_FAIL("served_loop: micro steps, output_every >= 1, snapshot_every >= 0, H > 0, "
                       "at most %d joints, a large enough scratch", RBC_SL_MAX_JOINTS);
    for (int64_t j = 0; j < nj; j++)
        if (jp.i[j] < 0 || jp.i[j] >= np) return SL_FAIL("served_loop: a joint's point row");
    PyObject *pieces = a[27];
    if (!PyTuple_Check(pieces) || PyTuple_GET_SIZE(pieces) != 7)
        return SL_FAIL("served_loop: pieces: a tuple of 7 bytes");
    rbc_sl_pieces *pc = &w->pieces;
    const unsigned char **p[] = {&pc->head, &pc->mid, &pc->tail, &pc->time, &pc->kin,
                                 &pc->gaps, &pc->motions};
    size_t *n[] = {&pc->head_n, &pc->mid_n, &pc->tail_n, &pc->time_n, &pc->kin_n, &pc->gaps_n,
                   &pc->motions_n};
    for (int i = 0; i < 7; i++)
        if (!sl_bytes(pieces, i, p[i], n[i])) return 0;
    if (!sl_bytes(t, 28, (const unsigned char **)&s->session_id, &s->session_n)
        || !sl_bytes(t, 29, (const unsigned char **)&s->client_id, &s->client_n))
        return 0;
    s->y = y.d;
    s->st = (rbc_stepper){RBC_METHOD_RK4, sizes.i[4] != 0, 0.0, 0, NULL, NULL};
    s->io = (rbc_macro_io){times.d, start.d, end.d, acc.d, energy.d, stats.d, failed.d};
    s->np = np;
    s->nj = nj;
    s->joint_point = jp.i;
    s->tol = tol.d;
    s->flex = flex.d;
    s->energy_flex = ef.d;
    s->energy_rigid = er.d;
    s->last_gaps = lg.d;
    s->gap_max = gm.d;
    s->gaps = gaps.d;
    s->motions = mot.d;
    s->hist_time = ht.d;
    s->hist_kin = hk.d;
    s->hist_gaps = hg.d;
    s->hist_cap = cap;
    s->scratch = scratch.d;
    s->ints = ints.i;
    s->floats = floats.d;
    w->out = (unsigned char *)out.d;
    w->out_cap = 8 * (size_t)out.size;
    return 1;
}

/* served_step(header, session) -> the reply's header frame (bytes), or None: the request is
 * Python's and nothing changed (rbc_sl_step, without a socket). */
static PyObject *py_served_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_sl_session s;
    rbc_sl_wire w;
    memset(&w, 0, sizeof w);
    if (nargs != 2 || !PyBytes_Check(args[0]))
        return PyErr_Format(PyExc_TypeError, "served_step(header bytes, session)");
    if (!sl_session(args[1], &s, &w)) return NULL;
    if (!rbc_sl_step(&w, &s, (const unsigned char *)PyBytes_AS_STRING(args[0]),
                     (size_t)PyBytes_GET_SIZE(args[0])))
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)w.out, (Py_ssize_t)w.out_n);
}

/* Between waits: Python's signal handlers (the GIL taken for them). */
static int sl_interrupted(void *ctx) {
    PyThreadState **ts = ctx;
    PyEval_RestoreThread(*ts);
    int stop = PyErr_CheckSignals() < 0;
    *ts = PyEval_SaveThread();
    return stop;
}

/* The unsent reply's frames [identity, (empty,) header]; closes the request's parts. */
static PyObject *sl_reply(rbc_sl_wire *w) {
    const rbc_zmq *z = w->z;
    PyObject *list = Py_BuildValue("[y#]", (const char *)z->msg_data(&w->parts[0]),
                                   (Py_ssize_t)z->msg_size(&w->parts[0]));
    if (list && w->delimited) {
        PyObject *e = PyBytes_FromStringAndSize("", 0);
        if (!e || PyList_Append(list, e) < 0) Py_CLEAR(list);
        Py_XDECREF(e);
    }
    PyObject *h = PyBytes_FromStringAndSize((const char *)w->out, (Py_ssize_t)w->out_n);
    if (list && (!h || PyList_Append(list, h) < 0)) Py_CLEAR(list);
    Py_XDECREF(h);
    rbc_zmq_close_parts(z, w->parts, &w->n_parts);
    return list;
}

/* served_loop(sock, other, idle, timer, max_message, status (3,) or None, session) ->
 * (code, extra): rbc_sl_run over the libzmq sockets at addresses sock (the direct ROUTER) and
 * other (the server's DEALER) (pyzmq's Socket.underlying); idle, timer s (< 0, <= 0: none);
 * extra: the request's parts (RBC_SL_HANDOVER), the reply's frames (RBC_SL_UNSENT), else None. */
static PyObject *py_served_loop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    char why[512];
    rbc_sl_session s;
    rbc_sl_wire w;
    memset(&w, 0, sizeof w);
    int64_t sock, other, max_message;
    rbc_arr status = {0};
    if (nargs != 7) return PyErr_Format(PyExc_TypeError, "served_loop() takes 7 arguments");
    if (!rbc_parse(args, 5, "served_loop", "nnddn", &sock, &other, &w.idle_s, &w.timer_s,
                   &max_message)
        || (args[5] != Py_None && !rbc_parse(args + 5, 1, "served_loop", "D", &status))
        || !sl_session(args[6], &s, &w))
        return NULL;
    if (args[5] != Py_None && status.size != 3)
        return PyErr_Format(PyExc_ValueError, "served_loop: status (3,)");
    w.z = rbc_zmq_link(why, sizeof why);
    if (!w.z)
        return PyErr_Format(PyExc_RuntimeError, "rbcosim's C core cannot use ZeroMQ: %s", why);
    if (!sock || !other) return PyErr_Format(PyExc_ValueError, "served_loop: two sockets");
    w.sock = (void *)(intptr_t)sock;
    w.other = (void *)(intptr_t)other;
    w.max_message = max_message;
    w.status = args[5] != Py_None ? status.d : NULL;
    PyThreadState *ts = PyEval_SaveThread();
    w.interrupted = sl_interrupted;
    w.ctx = &ts;
    int code = rbc_sl_run(&w, &s);
    PyEval_RestoreThread(ts);
    PyObject *extra;
    if (code == RBC_SL_HANDOVER) {
        extra = rbc_py_message_parts(w.z, w.sock, w.parts, &w.n_parts, w.more);
    } else if (code == RBC_SL_UNSENT) {
        extra = sl_reply(&w);
    } else if (code == RBC_SL_SIGNAL) {
        return NULL;  /* the handler's exception */
    } else if (code == RBC_SL_ERROR) {
        return PyErr_Format(PyExc_RuntimeError, "served_loop: zmq_poll failed: %s",
                            w.z->strerror(w.z->errno_()));
    } else {
        extra = Py_None;
        Py_INCREF(extra);
    }
    if (!extra) return NULL;
    return Py_BuildValue("iN", code, extra);
}

PyMethodDef rbc_served_methods[] = {
    RBC_METHOD(served_gaps),
    RBC_METHOD(all_finite),
    RBC_METHOD(served_step),
    RBC_METHOD(served_loop),
    {NULL, NULL, 0, NULL},
};
