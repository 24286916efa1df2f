"""Small value-level helpers of the compiled recursions: quaternions, rotations, spatial
cross products. Vectors are tuples of floats (kept in registers, never allocated); arrays are
read and written by (array, row) rather than through row views, which cost a reference count
each in compiled code.

Spatial vectors (Featherstone) are in inertial axes at the inertial origin O, angular part
first: a motion (ω; v_O), a force (n_O; F).
"""

from __future__ import annotations

import math

from rbcosim.kernels import jit


@jit
def vec3(x, i):
    """Row i of an (m, 3) array as a tuple."""
    return (x[i, 0], x[i, 1], x[i, 2])


@jit
def vec4(x, i):
    """Row i of an (m, 4) array as a tuple."""
    return (x[i, 0], x[i, 1], x[i, 2], x[i, 3])


@jit
def vec6(x, i):
    """Row i of an (m, 6) array as a tuple."""
    return (x[i, 0], x[i, 1], x[i, 2], x[i, 3], x[i, 4], x[i, 5])


@jit
def qmul(p, q):
    """Hamilton product p ⊗ q of two 4-tuples (scalar first)."""
    p0, p1, p2, p3 = p
    q0, q1, q2, q3 = q
    return (p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
            p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
            p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
            p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0)


@jit
def half_turn(u, angle):
    """The unit quaternion exp(½ angle u) of a rotation by `angle` rad about unit axis u."""
    s = math.sin(0.5 * angle)
    return (math.cos(0.5 * angle), s * u[0], s * u[1], s * u[2])


@jit
def rotation_into(q, out, b):
    """Rotation matrix (3, 3) of quaternion q (4-tuple, need not be unit) into out[b]."""
    w, x, y, z = q
    s = 2.0 / (w * w + x * x + y * y + z * z)
    xx, yy, zz = s * x * x, s * y * y, s * z * z
    xy, xz, yz = s * x * y, s * x * z, s * y * z
    wx, wy, wz = s * w * x, s * w * y, s * w * z
    out[b, 0, 0], out[b, 0, 1], out[b, 0, 2] = 1.0 - yy - zz, xy - wz, xz + wy
    out[b, 1, 0], out[b, 1, 1], out[b, 1, 2] = xy + wz, 1.0 - xx - zz, yz - wx
    out[b, 2, 0], out[b, 2, 1], out[b, 2, 2] = xz - wy, yz + wx, 1.0 - xx - yy


@jit
def mv(R, b, a):
    """R[b] a for an (m, 3, 3) array R and a 3-tuple a."""
    return (R[b, 0, 0] * a[0] + R[b, 0, 1] * a[1] + R[b, 0, 2] * a[2],
            R[b, 1, 0] * a[0] + R[b, 1, 1] * a[1] + R[b, 1, 2] * a[2],
            R[b, 2, 0] * a[0] + R[b, 2, 1] * a[1] + R[b, 2, 2] * a[2])


@jit
def cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def crm(a, b):
    """Spatial motion cross product a ×m b of two 6-vectors."""
    w0, w1, w2, v0, v1, v2 = a[0], a[1], a[2], a[3], a[4], a[5]
    x0, x1, x2, y0, y1, y2 = b[0], b[1], b[2], b[3], b[4], b[5]
    return (w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0,
            w1 * y2 - w2 * y1 + v1 * x2 - v2 * x1,
            w2 * y0 - w0 * y2 + v2 * x0 - v0 * x2,
            w0 * y1 - w1 * y0 + v0 * x1 - v1 * x0)


@jit
def crf(a, f):
    """Spatial force cross product a ×* f of two 6-vectors."""
    w0, w1, w2, v0, v1, v2 = a[0], a[1], a[2], a[3], a[4], a[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    return (w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1,
            w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2,
            w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0,
            w1 * f2 - w2 * f1, w2 * f0 - w0 * f2, w0 * f1 - w1 * f0)


@jit
def spatial_inertia_into(m, inertia, R, r, b, out):
    """Spatial inertia (6, 6) at O, inertial axes, of body b into out[b]: mass m (kg), inertia
    (n+1, 3, 3) (kg·m², body axes, about the centre of mass), rotations R (n+1, 3, 3) body ->
    inertial and centres of mass r (n+1, 3) m. Returns the multiplications done."""
    I00, I01, I02 = inertia[b, 0, 0], inertia[b, 0, 1], inertia[b, 0, 2]
    I11, I12, I22 = inertia[b, 1, 1], inertia[b, 1, 2], inertia[b, 2, 2]
    for i in range(3):  # row i of R I, then its products with the rows of R
        t0 = R[b, i, 0] * I00 + R[b, i, 1] * I01 + R[b, i, 2] * I02
        t1 = R[b, i, 0] * I01 + R[b, i, 1] * I11 + R[b, i, 2] * I12
        t2 = R[b, i, 0] * I02 + R[b, i, 1] * I12 + R[b, i, 2] * I22
        for j in range(i, 3):
            s = t0 * R[b, j, 0] + t1 * R[b, j, 1] + t2 * R[b, j, 2]
            out[b, i, j] = s
            out[b, j, i] = s
    cx, cy, cz = r[b, 0], r[b, 1], r[b, 2]
    mx, my, mz = m * cx, m * cy, m * cz
    out[b, 0, 0] += my * cy + mz * cz
    out[b, 1, 1] += mx * cx + mz * cz
    out[b, 2, 2] += mx * cx + my * cy
    out[b, 0, 1] -= mx * cy
    out[b, 1, 0] -= mx * cy
    out[b, 0, 2] -= mx * cz
    out[b, 2, 0] -= mx * cz
    out[b, 1, 2] -= my * cz
    out[b, 2, 1] -= my * cz
    # upper right m [c]x, lower left its transpose, lower right m 1
    for i in range(3):
        for j in range(3):
            out[b, i, 3 + j] = 0.0
            out[b, 3 + i, j] = 0.0
            out[b, 3 + i, 3 + j] = m if i == j else 0.0
    out[b, 0, 4], out[b, 0, 5], out[b, 1, 5] = -mz, my, -mx
    out[b, 1, 3], out[b, 2, 3], out[b, 2, 4] = mz, -my, mx
    out[b, 4, 0], out[b, 5, 0], out[b, 5, 1] = -mz, my, -mx
    out[b, 3, 1], out[b, 3, 2], out[b, 4, 2] = mz, -my, mx
    return 27 + 18 + 9
