"""Small rotation helpers on any array-like, for model building, tests and Jacobians (the step
kernels have their own in the C core, librbcosim/flex/fx_vec.h).

Quaternions are unit, scalar first ``[q0, q1, q2, q3]``, and rotate a vector from a body's
own frame to the inertial frame: ``v_inertial = R(q) @ v_body``.
"""

from __future__ import annotations

import math

import numpy as np


def rotation_matrix(q) -> np.ndarray:
    """R(q), shape (3, 3), from a quaternion (normalised here)."""
    q = np.asarray(q, dtype=np.float64)
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_multiply(p, q) -> np.ndarray:
    """Hamilton product p ⊗ q, shape (4,)."""
    pw, px, py, pz = (float(v) for v in np.asarray(p, dtype=np.float64))
    qw, qx, qy, qz = (float(v) for v in np.asarray(q, dtype=np.float64))
    return np.array([
        pw * qw - px * qx - py * qy - pz * qz,
        pw * qx + px * qw + py * qz - pz * qy,
        pw * qy - px * qz + py * qw + pz * qx,
        pw * qz + px * qy - py * qx + pz * qw,
    ])


def quat_from_rotation_vector(v) -> np.ndarray:
    """Unit quaternion of the rotation vector v (rad), shape (4,)."""
    v = np.asarray(v, dtype=float)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        q = np.array([1.0, 0.5 * v[0], 0.5 * v[1], 0.5 * v[2]])
        return q / np.linalg.norm(q)
    s = math.sin(0.5 * angle) / angle
    return np.array([math.cos(0.5 * angle), v[0] * s, v[1] * s, v[2] * s])


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
