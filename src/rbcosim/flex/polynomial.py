"""Polynomials in time through a few sampled values (compiled): the flexible body's interface
accelerations over a macro step and the wrench polynomial its endpoint hands the rigid side.

Times are relative (tau, s); values are rows of any width (m/s², N, ...); at most four points.
"""

from __future__ import annotations

import numpy as np

from rbcosim.kernels import jit_alloc


@jit_alloc
def polynomial_through(taus: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Coefficients c, shape (m, n), of p(tau) = sum_j c_j tau^j with p(taus[i]) = values[i].

    taus: (m,) distinct times; values: (m, n). Newton's divided differences, expanded to the
    monomial basis (the interpolant is unique: the same polynomial as a Vandermonde solve).
    """
    m, n = values.shape
    d = values.astype(np.float64).copy()
    for j in range(1, m):
        for i in range(m - 1, j - 1, -1):
            d[i] = (d[i] - d[i - 1]) / (taus[i] - taus[i - j])
    # p = d_{m-1}; p = p (tau - taus[j]) + d_j, j = m-2..0, on monomial coefficient rows.
    c = np.zeros((m, n))
    c[0] = d[m - 1]
    for j in range(m - 2, -1, -1):
        for i in range(m - 1, 0, -1):
            c[i] = c[i - 1] - taus[j] * c[i]
        c[0] = d[j] - taus[j] * c[0]
    return c


@jit_alloc
def exchange_polynomial(t: float, times: np.ndarray, wrenches: np.ndarray, count: int,
                        known_taus: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Wrench coefficients (len(known_taus) + count, 6) in tau = time - t through the values
    ``known`` (rows, at ``known_taus``) and the newest ``count`` exchanged wrenches (rows of
    ``wrenches``, newest first, at ``times``)."""
    m = known_taus.size
    taus = np.empty(m + count)
    values = np.empty((m + count, 6))
    taus[:m] = known_taus
    values[:m] = known
    for i in range(count):
        taus[m + i] = times[i] - t
        values[m + i] = wrenches[i]
    return polynomial_through(taus, values)
