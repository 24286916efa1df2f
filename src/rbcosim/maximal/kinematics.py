"""Per-evaluation kinematic quantities of all bodies, ground prepended at index 0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.spatial import quaternion as quat
from rbcosim.state import State


@dataclass
class Kinematics:
    """Arrays over (ground + n) bodies: q (n+1,4), R (n+1,3,3), r (n+1,3) m, v (n+1,3) m/s,
    w_inertial (n+1,3) rad/s, w_body (n+1,3) rad/s. Ground has identity pose, zero velocity."""

    t: float
    q: np.ndarray
    R: np.ndarray
    r: np.ndarray
    v: np.ndarray
    w_inertial: np.ndarray
    w_body: np.ndarray

    @classmethod
    def of(cls, state: State) -> Kinematics:
        n = state.r.shape[0]
        q = np.empty((n + 1, 4))
        q[0] = (1.0, 0.0, 0.0, 0.0)
        q[1:] = state.q
        R = np.empty((n + 1, 3, 3))
        R[0] = np.eye(3)
        R[1:] = quat.to_matrix(state.q)
        r, v, w_body = (np.zeros((n + 1, 3)) for _ in range(3))
        r[1:], v[1:], w_body[1:] = state.r, state.v, state.w
        return cls(t=state.t, q=q, R=R, r=r, v=v, w_inertial=np.einsum("kij,kj->ki", R, w_body),
                   w_body=w_body)
