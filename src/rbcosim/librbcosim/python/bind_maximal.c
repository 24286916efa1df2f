/* Python entry points of the maximal (rigid) part of the core. */
#include "rbc_py.h"
#include "../rigid/forces.h"

/* applied_forces(forces, t, r, R, v, w, force, torque): see rigid/forces.h. */
static PyObject *py_applied_forces(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    rbc_forces *f;
    double t;
    rbc_arr r, R, v, w, force, torque;
    if (!rbc_parse(args, nargs, "applied_forces", "HdDDDDDD", "forces", (void **)&f, &t, &r, &R,
                   &v, &w, &force, &torque))
        return NULL;
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

PyMethodDef rbc_maximal_methods[] = {
    RBC_METHOD(applied_forces),
    RBC_METHOD(potential_energy),
    RBC_METHOD(force_power),
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_maximal_kinds[] = {
    {"forces", RBC_FORCES_SLOTS, RBC_FORCES_TYPES},
    {NULL, 0, NULL},
};
