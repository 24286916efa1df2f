"""Per-evaluation kinematics of all bodies, ground at row 0, filled from a state vector."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.kernels.rotation import matrix_of, matvec


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
    for i in range(n):
        b = i + 1
        q = frames.q[b]
        norm2 = 0.0
        for k in range(4):
            q[k] = y[3 * n + 4 * i + k]
            norm2 += q[k] * q[k]
        norm = np.sqrt(norm2)
        for k in range(4):
            q[k] /= norm
        matrix_of(q, frames.R[b])
        for k in range(3):
            frames.r[b, k] = y[3 * i + k]
            frames.v[b, k] = y[7 * n + 3 * i + k]
            frames.wb[b, k] = y[10 * n + 3 * i + k]
        matvec(frames.R[b], frames.wb[b], frames.wi[b])
