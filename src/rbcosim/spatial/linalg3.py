"""Batched 3-vector operations, faster than np.cross for the small arrays of a multibody step."""

from __future__ import annotations

import numpy as np

_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1.0
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1.0
_I1, _I2 = [1, 2, 0], [2, 0, 1]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (k,3) arrays (np.cross costs ~15 µs per call on small arrays)."""
    if a.shape[0] <= 32:
        return np.einsum("ijk,nj,nk->ni", _LEVI_CIVITA, a, b)
    return a[:, _I1] * b[:, _I2] - a[:, _I2] * b[:, _I1]
