/* matrix_market.h: read a real dense matrix from a Matrix Market file.
 *
 * Supported headers: "%%MatrixMarket matrix array real general|symmetric" (column-major
 * values; symmetric: the lower triangle with the diagonal, column by column) and
 * "%%MatrixMarket matrix coordinate real general|symmetric" (1-based "i j value" lines;
 * symmetric: the lower or upper triangle, mirrored). Comment lines start with '%'.
 */
#ifndef RBC_EXAMPLES_MATRIX_MARKET_H
#define RBC_EXAMPLES_MATRIX_MARKET_H

#include <stddef.h>

/* Read `path` into a malloc'ed row-major array (*values, free() it) of *rows x *cols.
 * Returns 0, or -1 with a sentence naming the file in err. */
int mm_read_dense(const char *path, double **values, int *rows, int *cols, char *err,
                  size_t err_size);

#endif
