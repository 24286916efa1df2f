"""Polynomials in time through a few sampled values: the flexible body's interface
accelerations over a macro step and the wrench polynomial its endpoint hands the rigid side.

Times are relative (tau, s); values are rows of any width (m/s², N, ...); at most four points.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core


def polynomial_through(taus: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Coefficients c, shape (m, n), of p(tau) = sum_j c_j tau^j with p(taus[i]) = values[i].

    taus: (m,) distinct times, m <= 4; values: (m, n), n <= 64. Newton's divided differences,
    expanded to the monomial basis (the interpolant is unique: the same polynomial as a
    Vandermonde solve); computed in the C core (librbcosim/polynomial.c).
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    coef = np.empty(values.shape)
    _core.polynomial_through(np.ascontiguousarray(taus, dtype=np.float64), values, coef)
    return coef


def exchange_polynomial(t: float, times: np.ndarray, wrenches: np.ndarray, count: int,
                        known_taus: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Wrench coefficients (len(known_taus) + count, n) in tau = time - t through the values
    ``known`` (rows, at ``known_taus``) and the newest ``count`` exchanged wrenches (rows of
    ``wrenches`` (h, n), n <= 64, newest first, at ``times``); each column on its own."""
    m = known_taus.size
    taus = np.empty(m + count)
    values = np.empty((m + count, wrenches.shape[1]))
    taus[:m] = known_taus
    values[:m] = known
    for i in range(count):
        taus[m + i] = times[i] - t
        values[m + i] = wrenches[i]
    return polynomial_through(taus, values)
