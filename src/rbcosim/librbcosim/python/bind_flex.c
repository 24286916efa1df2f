/* Python entry points of the flexible-body part of the core. */
#include "rbc_py.h"
#include "../polynomial.h"

/* polynomial_through(taus (m,), values (m, n), coef (m, n)): coefficients into coef. */
static PyObject *py_polynomial_through(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_arr taus, values, coef;
    if (!rbc_parse(args, nargs, "polynomial_through", "DDD", &taus, &values, &coef)) return NULL;
    int64_t m = taus.size, n = values.ndim == 2 ? values.shape[1] : 0;
    if (values.ndim != 2 || values.shape[0] != m || coef.size != values.size
        || m < 1 || m > RBC_MAX_POLY_POINTS || n > 64)
        return PyErr_Format(PyExc_ValueError, "polynomial_through: taus (m,), values and coef "
                            "(m, n) with 1 <= m <= %d and n <= 64", RBC_MAX_POLY_POINTS);
    rbc_polynomial_through(m, n, taus.d, values.d, coef.d);
    Py_RETURN_NONE;
}

PyMethodDef rbc_flex_methods[] = {
    RBC_METHOD(polynomial_through),
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_flex_kinds[] = {
    {NULL, 0, NULL},
};
