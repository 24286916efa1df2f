/* Python entry points of a served rigid side (cosim/served.h) and the finiteness check of
 * its inputs. */
#include "rbc_py.h"

#include "../cosim/served.h"

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

PyMethodDef rbc_served_methods[] = {
    RBC_METHOD(served_gaps),
    RBC_METHOD(all_finite),
    {NULL, NULL, 0, NULL},
};
