"""Per-evaluation kinematics of all bodies, ground at row 0, filled from a state vector (in C:
`rbc_fill_frames`, librbcosim/rigid/rows.c)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


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
