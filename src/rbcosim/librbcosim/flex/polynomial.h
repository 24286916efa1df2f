/* Polynomials in time through a few sampled values: the flexible body's interface accelerations
 * over a macro step and the wrench polynomial its endpoint hands the rigid side.
 * Times are relative (tau, s); values are rows of any width (m/s², N, ...). */
#ifndef RBC_POLYNOMIAL_H
#define RBC_POLYNOMIAL_H

#include <stdint.h>

/* Largest number of sample points (a cubic). */
#define RBC_MAX_POLY_POINTS 4

/* Coefficients coef (m, n), p(tau) = sum_j coef[j] tau^j, with p(taus[i]) = values[i] (m, n);
 * m <= RBC_MAX_POLY_POINTS, n <= 64 (the divided-difference table lives on the stack).
 * Newton's divided differences expanded to the monomial basis. */
void rbc_polynomial_through(int64_t m, int64_t n, const double *taus, const double *values,
                            double *coef);

#endif
