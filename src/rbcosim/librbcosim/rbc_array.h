/* rbcosim core: the array view every kernel works on, and the status codes.
 *
 * A model or data block is a C struct whose members are, in order, rbc_arr views of arrays that
 * live on the Python side (numpy, float64 or int64, C-contiguous).  Scalars are 0-d arrays
 * (read as a->d[0] or a->i[0]).  Struct members follow the field order of the Python NamedTuple
 * they mirror, depth-first, so the binding can fill a struct from the flattened fields
 * (rbcosim.core.make_handle) and check the count and the element type of each.
 *
 * Kernels are plain C99: no allocation on the step path, no Python.
 */
#ifndef RBC_ARRAY_H
#define RBC_ARRAY_H

#include <math.h>
#include <stdint.h>

typedef struct rbc_arr {
    double *d;        /* float64 data, or NULL when the array holds int64 */
    int64_t *i;       /* int64 data, or NULL when the array holds float64 */
    int64_t size;     /* number of elements (1 for a 0-d array) */
    int64_t ndim;
    int64_t shape[4];
} rbc_arr;

/* Element access of C-contiguous views. */
#define RBC_D2(a, r, c) ((a)->d[(int64_t)(r) * (a)->shape[1] + (c)])
#define RBC_D3(a, i, r, c) ((a)->d[((int64_t)(i) * (a)->shape[1] + (r)) * (a)->shape[2] + (c)])
#define RBC_D4(a, i, j, r, c) \
    ((a)->d[(((int64_t)(i) * (a)->shape[1] + (j)) * (a)->shape[2] + (r)) * (a)->shape[3] + (c)])
#define RBC_I2(a, r, c) ((a)->i[(int64_t)(r) * (a)->shape[1] + (c)])
/* Pointer to the row-major block at leading index k (a (n, ...) array's k-th entry). */
#define RBC_ROW(a, k) ((a)->d + (int64_t)(k) * ((a)->size / ((a)->shape[0] ? (a)->shape[0] : 1)))

/* 1 if every entry of a (n) is finite (no NaN, no infinity). */
static inline int rbc_all_finite(const double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 0;
    return 1;
}

/* Status codes of the kernels (as the Python side reads them). */
enum { RBC_OK = 0, RBC_NOT_FINITE = 1, RBC_SINGULAR = 2, RBC_NO_CONVERGENCE = 3 };

#endif
