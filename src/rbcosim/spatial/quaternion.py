"""Unit quaternions, scalar first [q0, q1, q2, q3], batched over a leading axis (the functions
named for one quaternion take one).

A quaternion q rotates body-frame vectors into the inertial frame: x_I = R(q) x_b.
"""

from __future__ import annotations

import math

import numpy as np


def normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternions, shape (..., 4)."""
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _rotation_tensor() -> np.ndarray:
    """C (3,3,4,4) with R(q)_ij = Σ_ab C_ijab q_a q_b for a unit quaternion q."""
    c = np.zeros((3, 3, 4, 4))
    w, x, y, z = range(4)
    for i, a in enumerate((x, y, z)):
        c[i, i, w, w] = 1.0
        for j, b in enumerate((x, y, z)):
            c[i, i, b, b] += 1.0 if a == b else -1.0
            if a != b:
                c[i, j, a, b] += 1.0
                c[i, j, b, a] += 1.0
    # 2 w [v]× terms: R_01 -= 2wz, R_10 += 2wz, R_02 += 2wy, R_20 -= 2wy, R_12 -= 2wx, R_21 += 2wx
    for (i, j, k, sign) in ((0, 1, z, -1), (1, 0, z, 1), (0, 2, y, 1), (2, 0, y, -1),
                            (1, 2, x, -1), (2, 1, x, 1)):
        c[i, j, w, k] += sign
        c[i, j, k, w] += sign
    return c


_ROTATION = _rotation_tensor()


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of quaternions: shape (..., 4) -> (..., 3, 3); q need not be unit
    (the quadratic form is divided by |q|²)."""
    q = np.asarray(q, dtype=float)
    return np.einsum("ijab,...a,...b->...ij", _ROTATION, q, q) / np.einsum(
        "...a,...a->...", q, q)[..., None, None]


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Quaternion (4,) with q0 >= 0 of a rotation matrix (3, 3) (Shepperd's method)."""
    m = np.asarray(m, dtype=float)
    tr = np.trace(m)
    candidates = np.array([tr, m[0, 0], m[1, 1], m[2, 2]])
    k = int(np.argmax(candidates))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + tr)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif k == 1:
        s = 2.0 * np.sqrt(1.0 + 2 * m[0, 0] - tr)
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif k == 2:
        s = 2.0 * np.sqrt(1.0 + 2 * m[1, 1] - tr)
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + 2 * m[2, 2] - tr)
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    return normalize(q if q[0] >= 0 else -q)


def rotation_matrix(q) -> np.ndarray:
    """R(q), shape (3, 3), of one quaternion (any array-like), normalised first: the operation
    order of the C core's fx_rotation_matrix (librbcosim/flex/fx_vec.h), bit for bit."""
    q = np.asarray(q, dtype=np.float64)
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def from_rotation_vector(v) -> np.ndarray:
    """Unit quaternion of the rotation vector v (rad), shape (4,)."""
    v = np.asarray(v, dtype=float)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        q = np.array([1.0, 0.5 * v[0], 0.5 * v[1], 0.5 * v[2]])
        return q / np.linalg.norm(q)
    s = math.sin(0.5 * angle) / angle
    return np.array([math.cos(0.5 * angle), v[0] * s, v[1] * s, v[2] * s])


def from_axis_angle(axis, angle: float) -> np.ndarray:
    """Quaternion (4,) of a rotation by `angle` rad about `axis` (any length > 0)."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def multiply(p, q) -> np.ndarray:
    """Hamilton product p ⊗ q, shapes (..., 4) (array-likes; the operation order of the C
    core's q_mul, librbcosim/rbc_vec.h)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    p0, p1, p2, p3 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    q0, q1, q2, q3 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        [
            p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
            p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
            p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
            p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0,
        ],
        axis=-1,
    )


def conjugate(q) -> np.ndarray:
    """q* = [q0, -q1, -q2, -q3], shape (..., 4): the inverse rotation of a unit quaternion."""
    return np.asarray(q, dtype=float) * np.array([1.0, -1.0, -1.0, -1.0])


def rate(q: np.ndarray, omega_body: np.ndarray) -> np.ndarray:
    """Quaternion time derivative q̇ = ½ q ⊗ [0, ω^b]; q (..., 4), ω^b (..., 3) rad/s."""
    q0, q1, q2, q3 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    wx, wy, wz = omega_body[..., 0], omega_body[..., 1], omega_body[..., 2]
    return 0.5 * np.stack(
        [
            -q1 * wx - q2 * wy - q3 * wz,
            q0 * wx - q3 * wy + q2 * wz,
            q3 * wx + q0 * wy - q1 * wz,
            -q2 * wx + q1 * wy + q0 * wz,
        ],
        axis=-1,
    )


def rotate_by_vector(q: np.ndarray, rotation_body: np.ndarray) -> np.ndarray:
    """Apply a small body-frame rotation vector (..., 3) rad: q ⊗ exp(θ/2), normalised."""
    angle = np.linalg.norm(rotation_body, axis=-1, keepdims=True)
    half = 0.5 * angle
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(angle > 1e-12, np.sin(half) / np.where(angle > 0, angle, 1.0), 0.5)
    dq = np.concatenate([np.cos(half), scale * rotation_body], axis=-1)
    return normalize(multiply(q, dq))


def rotation_angle(p: np.ndarray, q: np.ndarray) -> float:
    """Angle (rad, in [0, π]) of the rotation taking attitude q to p; atan2 keeps it accurate
    for small angles (2·arccos of the scalar part loses everything below ~1e-8 rad)."""
    conjugate_q = normalize(np.asarray(q, float)) * np.array([1.0, -1.0, -1.0, -1.0])
    d = multiply(normalize(np.asarray(p, float)), conjugate_q)
    return 2.0 * float(np.arctan2(np.linalg.norm(d[1:]), abs(d[0])))
