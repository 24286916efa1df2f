/* Binding helpers shared by the Python entry points of every part of the core. */
#ifndef RBC_PY_H
#define RBC_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../rbc_array.h"
#include "../wire/zmq_abi.h"

/* A kind of handle: its name, the number of rbc_arr members of its C struct and their element
 * types ('d' float64, 'l' int64, one character per member; NULL: not checked). */
typedef struct rbc_kind {
    const char *name;
    Py_ssize_t n_slots;
    const char *types;
} rbc_kind;

/* Parse positional arguments of a METH_FASTCALL function `name` by `fmt`, one character each:
 *   H  (const char *kind, void **struct)  a Handle of that kind: its members as the struct
 *   D  (rbc_arr *)  a float64 C-contiguous array      L  (rbc_arr *)  an int64 one
 *   d  (double *)   a Python float or int             n  (int64_t *)   an int
 *   b  (int *)      truthiness
 * Raises TypeError/ValueError naming the function and argument; returns 0 then, 1 on success.
 * Array views stay valid while the caller holds the arguments (the call's duration). */
int rbc_parse(PyObject *const *args, Py_ssize_t nargs, const char *name, const char *fmt, ...);

/* Fill an rbc_arr from any object exporting a C-contiguous float64 ('d') or int64 ('l') buffer;
 * type is 'd', 'l' or 0 (either).  Returns 0 with an exception set on failure. */
int rbc_view(PyObject *obj, char type, rbc_arr *out, const char *what);

/* One ZeroMQ message's parts as a list of bytes: the *n open ones in parts, then (more) the
 * rest read from sock without waiting; closes them all (*n becomes 0).  NULL with an exception
 * set on failure (bind_cosim.c). */
PyObject *rbc_py_message_parts(const rbc_zmq *z, void *sock, rbc_zmq_msg *parts, int *n,
                               int more);

#define RBC_METHOD(name) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, NULL}

/* Each part of the core exports its Python functions and handle kinds (NULL-terminated). */
extern PyMethodDef rbc_maximal_methods[], rbc_minimal_methods[], rbc_flex_methods[];
extern const rbc_kind rbc_maximal_kinds[], rbc_minimal_kinds[], rbc_flex_kinds[];

#endif
