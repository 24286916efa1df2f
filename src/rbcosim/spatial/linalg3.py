"""3-vectors and 3x3 matrices: batched cross products (faster than np.cross for the small
arrays of a multibody step), skew matrices, the shortest-arc rotation."""

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


def skew(v) -> np.ndarray:
    """[v]×, shape (3, 3): skew(v) @ w == cross(v, w)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def shortest_arc(axis) -> np.ndarray:
    """Rotation matrix taking +x to the unit vector ``axis`` by the shortest arc, (3, 3).

    For ``axis = -x`` (no unique shortest arc) the rotation is pi about +z.
    """
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    ex = np.array([1.0, 0.0, 0.0])
    c = float(ex @ a)
    if c < -1.0 + 1e-12:
        return np.diag([-1.0, -1.0, 1.0])
    v = np.cross(ex, a)
    vx = skew(v)
    return np.eye(3) + vx + vx @ vx / (1.0 + c)
