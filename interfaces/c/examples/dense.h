/* dense.h: the few dense-matrix operations the examples need (row-major double arrays).
 *
 * Sizes are small (a structure's interior states, a dozen to a few hundred), so plain loops.
 */
#ifndef RBC_EXAMPLES_DENSE_H
#define RBC_EXAMPLES_DENSE_H

/* c (n x m) = a (n x p) @ b (p x m); c must not alias a or b. */
void dense_matmul(int n, int p, int m, const double *a, const double *b, double *c);

/* y (n) = a (n x m) @ x (m); y must not alias x. */
void dense_matvec(int n, int m, const double *a, const double *x, double *y);

/* Solve a (n x n) X = b (n x m) in place (b becomes X) by Gaussian elimination with partial
 * pivoting; a is overwritten. Returns 0, or -1 if a is singular. */
int dense_solve(int n, int m, double *a, double *b);

/* e (n x n) = exp(a) (n x n): Pade 13 with scaling and squaring (Higham 2005). Returns 0, or
 * -1 on a singular Pade denominator or no memory. */
int dense_expm(int n, const double *a, double *e);

#endif
