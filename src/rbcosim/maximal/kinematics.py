"""Per-evaluation kinematic quantities of all bodies, ground prepended at index 0: the one
kinematics type of the maximal route, read by Python and, as `rbc_frames`, by the C core
(filled there from a state vector by `rbc_fill_frames`, librbcosim/rigid/rows.c)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.spatial import quaternion as quat
from rbcosim.state import State


class _Arrays(NamedTuple):
    q: np.ndarray
    R: np.ndarray
    r: np.ndarray
    v: np.ndarray
    w_inertial: np.ndarray
    w_body: np.ndarray


class Kinematics(_Arrays):
    """Arrays over (ground + n) bodies: q (n+1,4) unit, R (n+1,3,3) body -> inertial,
    r (n+1,3) m, v (n+1,3) m/s, w_inertial (n+1,3) and w_body (n+1,3) rad/s. Ground has
    identity pose, zero velocity. `t` (s), the time they hold at, is not one of the arrays the
    C core views."""

    t: float = 0.0

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
        kin = cls(q, R, r, v, np.einsum("kij,kj->ki", R, w_body), w_body)
        kin.t = state.t
        return kin

    @classmethod
    def empty(cls, n_bodies: int) -> Kinematics:
        """Zero arrays for n moving bodies with the ground row set (the C core's scratch)."""
        k = n_bodies + 1
        kin = cls(np.zeros((k, 4)), np.zeros((k, 3, 3)), np.zeros((k, 3)), np.zeros((k, 3)),
                  np.zeros((k, 3)), np.zeros((k, 3)))
        kin.q[0, 0] = 1.0
        kin.R[0] = np.eye(3)
        return kin
