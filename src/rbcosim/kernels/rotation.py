"""Quaternion and 3-vector helpers for compiled code (scalar first, body -> inertial)."""

from __future__ import annotations

import math

from rbcosim.kernels import jit


@jit
def multiply(p, q, out):
    """Hamilton product p ⊗ q (4,) into `out`."""
    p0, p1, p2, p3 = p[0], p[1], p[2], p[3]
    q0, q1, q2, q3 = q[0], q[1], q[2], q[3]
    out[0] = p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3
    out[1] = p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2
    out[2] = p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1
    out[3] = p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0


@jit
def normalize(q):
    """Scale q (4,) to unit length in place; returns |‖q‖ − 1| before."""
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for i in range(4):
        q[i] /= norm
    return abs(norm - 1.0)


@jit
def rotate_by_vector(q, theta):
    """q ← normalise(q ⊗ exp(θ/2)) for a small body-frame rotation vector θ (3,) rad."""
    angle = math.sqrt(theta[0] ** 2 + theta[1] ** 2 + theta[2] ** 2)
    half = 0.5 * angle
    scale = math.sin(half) / angle if angle > 1e-12 else 0.5
    d0, d1, d2, d3 = math.cos(half), scale * theta[0], scale * theta[1], scale * theta[2]
    q0, q1, q2, q3 = q[0], q[1], q[2], q[3]
    q[0] = q0 * d0 - q1 * d1 - q2 * d2 - q3 * d3
    q[1] = q0 * d1 + q1 * d0 + q2 * d3 - q3 * d2
    q[2] = q0 * d2 - q1 * d3 + q2 * d0 + q3 * d1
    q[3] = q0 * d3 + q1 * d2 - q2 * d1 + q3 * d0
    normalize(q)


@jit
def cross(a, b, out):
    """a × b of 3-vectors into `out` (out must not alias a or b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@jit
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def matvec(R, x, out):
    """R x for R (3, 3), x (3,) into `out`."""
    for i in range(3):
        out[i] = R[i, 0] * x[0] + R[i, 1] * x[1] + R[i, 2] * x[2]


# --- 3-vectors as tuples: register values, no allocation in compiled loops ----------------------

@jit
def vec(a):
    """A 3-vector (array or tuple) as a tuple."""
    return (a[0], a[1], a[2])


@jit
def at2(a, i):
    """Row i of an (n, 3) array as a tuple."""
    return (a[i, 0], a[i, 1], a[i, 2])


@jit
def at3(a, i, j):
    """a[i, j] of an (n, k, 3) array as a tuple."""
    return (a[i, j, 0], a[i, j, 1], a[i, j, 2])


@jit
def mat(R, i):
    """R[i] of an (n, 3, 3) array as a tuple of rows."""
    return ((R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]), (R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]),
            (R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]))


@jit
def mtt(R, x):
    """R x for a tuple matrix R (rows) and a tuple x."""
    return (R[0][0] * x[0] + R[0][1] * x[1] + R[0][2] * x[2],
            R[1][0] * x[0] + R[1][1] * x[1] + R[1][2] * x[2],
            R[2][0] * x[0] + R[2][1] * x[1] + R[2][2] * x[2])


@jit
def mtt_t(R, x):
    """Rᵀ x for a tuple matrix R (rows) and a tuple x."""
    return (R[0][0] * x[0] + R[1][0] * x[1] + R[2][0] * x[2],
            R[0][1] * x[0] + R[1][1] * x[1] + R[2][1] * x[2],
            R[0][2] * x[0] + R[1][2] * x[1] + R[2][2] * x[2])


@jit
def mv(R, x):
    """R x as a tuple, R (3, 3)."""
    return (R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2],
            R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2],
            R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2])


@jit
def cr(a, b):
    """a × b as a tuple."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@jit
def scaled(s, a):
    return (s * a[0], s * a[1], s * a[2])


@jit
def qmul(p, q):
    """Hamilton product p ⊗ q of tuple quaternions."""
    return (p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3],
            p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2],
            p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
            p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0])


@jit
def tuple_matrix(q):
    """Rotation matrix (tuple of rows) of a tuple quaternion q (need not be unit)."""
    w, x, y, z = q
    s = 2.0 / (w * w + x * x + y * y + z * z)
    xx, yy, zz = s * x * x, s * y * y, s * z * z
    xy, xz, yz = s * x * y, s * x * z, s * y * z
    wx, wy, wz = s * w * x, s * w * y, s * w * z
    return ((1.0 - yy - zz, xy - wz, xz + wy), (xy + wz, 1.0 - xx - zz, yz - wx),
            (xz - wy, yz + wx, 1.0 - xx - yy))
