/* Python entry points of the maximal part of the core. */
#include "rbc_py.h"

PyMethodDef rbc_maximal_methods[] = {
    {NULL, NULL, 0, NULL},
};

const rbc_kind rbc_maximal_kinds[] = {
    {NULL, 0, NULL},
};
