"""Per-evaluation kinematics of all bodies, ground at row 0, filled from a state vector."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit


class Frames(NamedTuple):
    """Arrays over ground + n bodies: q (n+1, 4) unit, R (n+1, 3, 3) body -> inertial,
    r (n+1, 3) m, v (n+1, 3) m/s, wi (n+1, 3) inertial and wb (n+1, 3) body-frame angular
    velocity rad/s. Row 0, the ground, has identity pose and zero velocity."""

    q: np.ndarray
    R: np.ndarray
    r: np.ndarray
    v: np.ndarray
    wi: np.ndarray
    wb: np.ndarray


def empty_frames(n_bodies: int) -> Frames:
    """Frames for n moving bodies with the ground row set."""
    k = n_bodies + 1
    frames = Frames(np.zeros((k, 4)), np.zeros((k, 3, 3)), np.zeros((k, 3)), np.zeros((k, 3)),
                    np.zeros((k, 3)), np.zeros((k, 3)))
    frames.q[0, 0] = 1.0
    frames.R[0] = np.eye(3)
    return frames


@jit
def fill_frames(y, frames):
    """Frames of y = [r (n,3), q (n,4), v (n,3), ω^b (n,3)] flat; quaternions normalised."""
    n = frames.r.shape[0] - 1
    q, R = frames.q, frames.R
    for i in range(n):
        b = i + 1
        o = 3 * n + 4 * i
        norm = math.sqrt(y[o] ** 2 + y[o + 1] ** 2 + y[o + 2] ** 2 + y[o + 3] ** 2)
        w, x, yy, z = y[o] / norm, y[o + 1] / norm, y[o + 2] / norm, y[o + 3] / norm
        q[b, 0], q[b, 1], q[b, 2], q[b, 3] = w, x, yy, z
        R[b, 0, 0], R[b, 0, 1], R[b, 0, 2] = 1.0 - 2.0 * (yy * yy + z * z), 2.0 * (x * yy - w * z), 2.0 * (x * z + w * yy)
        R[b, 1, 0], R[b, 1, 1], R[b, 1, 2] = 2.0 * (x * yy + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (yy * z - w * x)
        R[b, 2, 0], R[b, 2, 1], R[b, 2, 2] = 2.0 * (x * z - w * yy), 2.0 * (yy * z + w * x), 1.0 - 2.0 * (x * x + yy * yy)
        for k in range(3):
            frames.r[b, k] = y[3 * i + k]
            frames.v[b, k] = y[7 * n + 3 * i + k]
            frames.wb[b, k] = y[10 * n + 3 * i + k]
        for k in range(3):
            frames.wi[b, k] = (R[b, k, 0] * frames.wb[b, 0] + R[b, k, 1] * frames.wb[b, 1]
                               + R[b, k, 2] * frames.wb[b, 2])
