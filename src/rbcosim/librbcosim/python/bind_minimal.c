/* Python entry points of the minimal part of the core. */
#include "rbc_py.h"

PyMethodDef rbc_minimal_methods[] = {
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_minimal_kinds[] = {
    {NULL, 0, NULL},
};
