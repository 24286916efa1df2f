/* polynomial.h: polynomials in time through a few sampled values (as rbcosim.flex.runtime.polynomial).
 *
 * Times are relative, tau (s); values are rows of width `width` (m/s^2, N, ...); at most four
 * points. Coefficient rows c_j of p(tau) = sum_j c_j tau^j, row-major [m][width].
 */
#ifndef RBC_EXAMPLES_POLYNOMIAL_H
#define RBC_EXAMPLES_POLYNOMIAL_H

#define POLY_MAX_POINTS 4

/* c [m][width] with p(taus[i]) = values[i] (m <= POLY_MAX_POINTS distinct taus; width <= 6):
 * Newton's divided differences expanded to the monomial basis. */
void poly_through(int m, int width, const double *taus, const double *values, double *c);

/* Wrench coefficients [n_known + count][6] in tau = time - t through the `known` rows at
 * `known_taus` first, then the newest `count` exchanged wrenches (rows of `wrenches`, newest
 * first, at absolute `times`). Returns the number of coefficient rows. */
int poly_exchange(double t, const double *times, const double *wrenches, int count,
                  int n_known, const double *known_taus, const double *known, double *c);

#endif
