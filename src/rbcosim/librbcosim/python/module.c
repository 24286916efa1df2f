/* rbcosim._core: the Python binding of the C core.
 *
 * Handle(kind, leaves): the members of one C struct (a model and its data block), from the
 * flattened fields of Python NamedTuples of arrays (rbcosim.core.make_handle).  The handle keeps
 * the arrays alive; the kernels read and write them in place, so Python sees every result
 * without a copy.  The functions of each part (maximal, minimal, flex) take a handle and arrays.
 */
#include "rbc_py.h"
#include <stdarg.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    const rbc_kind *kind;
    PyObject *leaves;   /* tuple: keeps every viewed array alive */
    rbc_arr *slots;     /* the struct's members */
} RbcHandle;

static const rbc_kind *const all_kinds[] = {rbc_maximal_kinds, rbc_minimal_kinds, rbc_flex_kinds};

static const rbc_kind *find_kind(const char *name) {
    for (size_t k = 0; k < sizeof all_kinds / sizeof all_kinds[0]; k++)
        for (const rbc_kind *kind = all_kinds[k]; kind->name; kind++)
            if (strcmp(kind->name, name) == 0) return kind;
    return NULL;
}

/* rbc_view; the error message names `what`, or else argument k + 1 of name(), formatted only
 * when there is an error (the step path views every array of every call). */
static int view(PyObject *obj, char type, rbc_arr *out, const char *what, const char *name,
                Py_ssize_t k) {
    char buf[96];
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        if (!what) { snprintf(buf, sizeof buf, "%s() argument %zd", name, k + 1); what = buf; }
        PyErr_Format(PyExc_TypeError, "%s: expected a C-contiguous numpy array, got %.80s", what,
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    const char *f = view.format ? view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    char got = (view.itemsize == 8 && (strcmp(f, "d") == 0)) ? 'd'
             : (view.itemsize == 8 && (strcmp(f, "l") == 0 || strcmp(f, "q") == 0)) ? 'l' : '?';
    if (got == '?' || (type && got != type) || view.ndim > 4) {
        if (!what) { snprintf(buf, sizeof buf, "%s() argument %zd", name, k + 1); what = buf; }
        PyErr_Format(PyExc_TypeError, "%s: expected a %s array of at most 4 dimensions, got "
                     "format '%s' with %d dimensions", what,
                     type == 'l' ? "int64" : type == 'd' ? "float64" : "float64 or int64",
                     view.format ? view.format : "B", view.ndim);
        PyBuffer_Release(&view);
        return 0;
    }
    out->d = got == 'd' ? (double *)view.buf : NULL;
    out->i = got == 'l' ? (int64_t *)view.buf : NULL;
    out->ndim = view.ndim;
    out->size = view.len / 8;
    for (int j = 0; j < 4; j++) out->shape[j] = j < view.ndim ? view.shape[j] : 1;
    PyBuffer_Release(&view);  /* the caller holds obj for as long as the view is used */
    return 1;
}

int rbc_view(PyObject *obj, char type, rbc_arr *out, const char *what) {
    return view(obj, type, out, what, NULL, 0);
}

static PyTypeObject RbcHandleType;

/* rbc_view of argument k of name(), the message formatted only on an error. */
static int view_quick(PyObject *obj, char type, rbc_arr *out, const char *name, Py_ssize_t k) {
    return view(obj, type, out, NULL, name, k);
}

int rbc_parse(PyObject *const *args, Py_ssize_t nargs, const char *name, const char *fmt, ...) {
    Py_ssize_t want = (Py_ssize_t)strlen(fmt);
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
        return 0;
    }
    va_list ap;
    va_start(ap, fmt);
    int ok = 1;
    for (Py_ssize_t k = 0; ok && k < want; k++) {
        PyObject *obj = args[k];
        switch (fmt[k]) {
        case 'H': {
            const char *kind = va_arg(ap, const char *);
            void **out = va_arg(ap, void **);
            if (!PyObject_TypeCheck(obj, &RbcHandleType)
                || strcmp(((RbcHandle *)obj)->kind->name, kind) != 0) {
                PyErr_Format(PyExc_TypeError, "%s() argument %zd: expected a '%s' handle", name,
                             k + 1, kind);
                ok = 0;
            } else {
                *out = ((RbcHandle *)obj)->slots;
            }
            break;
        }
        case 'D': ok = view_quick(obj, 'd', va_arg(ap, rbc_arr *), name, k); break;
        case 'L': ok = view_quick(obj, 'l', va_arg(ap, rbc_arr *), name, k); break;
        case 'd': {
            double *out = va_arg(ap, double *);
            *out = PyFloat_AsDouble(obj);
            ok = !(*out == -1.0 && PyErr_Occurred());
            break;
        }
        case 'n': {
            int64_t *out = va_arg(ap, int64_t *);
            *out = PyLong_AsLongLong(obj);
            ok = !(*out == -1 && PyErr_Occurred());
            break;
        }
        case 'b': {
            int *out = va_arg(ap, int *);
            *out = PyObject_IsTrue(obj);
            ok = *out >= 0;
            break;
        }
        default:
            PyErr_Format(PyExc_SystemError, "%s: bad format character '%c'", name, fmt[k]);
            ok = 0;
        }
    }
    va_end(ap);
    return ok;
}

static PyObject *handle_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    const char *name;
    PyObject *leaves;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Handle(kind, leaves) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "sO!:Handle", &name, &PyTuple_Type, &leaves)) return NULL;
    const rbc_kind *kind = find_kind(name);
    if (!kind) return PyErr_Format(PyExc_ValueError, "Handle: unknown kind '%s'", name);
    Py_ssize_t n = PyTuple_GET_SIZE(leaves);
    if (n != kind->n_slots)
        return PyErr_Format(PyExc_ValueError, "Handle('%s'): %zd arrays given, the C struct has "
                            "%zd members", name, n, kind->n_slots);
    RbcHandle *self = (RbcHandle *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->kind = kind;
    self->slots = PyMem_Calloc((size_t)(n ? n : 1), sizeof(rbc_arr));
    Py_INCREF(leaves);
    self->leaves = leaves;
    if (!self->slots) { Py_DECREF(self); return PyErr_NoMemory(); }
    char what[96];
    for (Py_ssize_t k = 0; k < n; k++) {
        snprintf(what, sizeof what, "Handle('%s') member %zd", name, k);
        if (!rbc_view(PyTuple_GET_ITEM(leaves, k), kind->types ? kind->types[k] : 0,
                      &self->slots[k], what)) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

static void handle_dealloc(RbcHandle *self) {
    PyMem_Free(self->slots);
    Py_XDECREF(self->leaves);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *handle_get_kind(RbcHandle *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(self->kind->name);
}

static PyObject *handle_get_leaves(RbcHandle *self, void *closure) {
    (void)closure;
    Py_INCREF(self->leaves);
    return self->leaves;
}

static PyGetSetDef handle_getset[] = {
    {"kind", (getter)handle_get_kind, NULL, "the struct this handle fills", NULL},
    {"leaves", (getter)handle_get_leaves, NULL, "the arrays, in member order", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RbcHandleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rbcosim._core.Handle",
    .tp_basicsize = sizeof(RbcHandle),
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Handle(kind, leaves): one C struct of array views (see rbcosim.core)",
    .tp_new = handle_new,
    .tp_getset = handle_getset,
};

static PyObject *py_kinds(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self; (void)args; (void)nargs;
    PyObject *out = PyDict_New();
    for (size_t k = 0; out && k < sizeof all_kinds / sizeof all_kinds[0]; k++)
        for (const rbc_kind *kind = all_kinds[k]; kind->name; kind++) {
            PyObject *count = PyLong_FromSsize_t(kind->n_slots);
            if (!count || PyDict_SetItemString(out, kind->name, count) < 0) {
                Py_XDECREF(count);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(count);
        }
    return out;
}

static PyMethodDef module_methods[] = {
    {"kinds", (PyCFunction)(void (*)(void))py_kinds, METH_FASTCALL,
     "kinds() -> {name: number of struct members} of every handle kind"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "rbcosim._core",
    "The C core of rbcosim (kernels over array views; see rbcosim.core).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

/* cosim/coupled.h: the coupled macro steps (python/bind_cosim.c) */
extern PyMethodDef rbc_cosim_methods[];
/* cosim/served.h: a served rigid side's gaps (python/bind_served.c) */
extern PyMethodDef rbc_served_methods[];

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&RbcHandleType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyMethodDef *tables[] = {module_methods, rbc_maximal_methods, rbc_minimal_methods,
                             rbc_flex_methods, rbc_cosim_methods, rbc_served_methods};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        if (PyModule_AddFunctions(m, tables[t]) < 0) { Py_DECREF(m); return NULL; }
    Py_INCREF(&RbcHandleType);
    if (PyModule_AddObject(m, "Handle", (PyObject *)&RbcHandleType) < 0) {
        Py_DECREF(&RbcHandleType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
