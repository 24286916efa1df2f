"""Polynomials through exchanged values: extrapolation and interpolation of coupling inputs."""

from __future__ import annotations

import numpy as np


def polynomial_through(taus, values) -> np.ndarray:
    """Coefficients c (len(taus), ...) of Σ c_k τ^k through values at times taus (relative)."""
    taus = np.asarray(taus, dtype=float)
    vander = np.vander(taus, increasing=True)
    values = np.asarray(values, dtype=float)
    return np.linalg.solve(vander, values.reshape(len(taus), -1)).reshape(values.shape)


def evaluate(coefficients: np.ndarray, tau: float) -> np.ndarray:
    """Σ c_k τ^k for coefficients (order+1, ...)."""
    out = np.zeros(coefficients.shape[1:])
    for c in coefficients[::-1]:
        out = out * tau + c
    return out
