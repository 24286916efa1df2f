"""3-vector helpers of the numba force kernels that the minimal route still compiles
(`kernels.forces`, `kernels.power.force_power`); the C core has its own (rigid/rotation.h)."""

from __future__ import annotations

from rbcosim.kernels import jit


@jit
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def vec(a):
    """A 3-vector (array or tuple) as a tuple."""
    return (a[0], a[1], a[2])


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

