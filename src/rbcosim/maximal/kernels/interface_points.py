"""Interface points of a co-simulation: outputs, wrench inputs, added mass (computed in C,
`librbcosim/rigid/interface.c`).

Inside a macro step the wrench at point k is W(t) = Σ_j c_kj (t − t0)^j (+ K_x Δx + K_v Δv
with interface-Jacobian feedback, Δ measured from the reference outputs at t0), inertial or
turned by the body's attitude when given in the body frame. It enters Newton–Euler as F and
τ = M + ρ × F at the centre of mass. An added mass M_a (6, 6) stands for the part −M_a [a_p;
α_p] of the flexible side's wrench and is treated implicitly, as extra body mass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.maximal.kinematics import Kinematics

#: Highest power of (t − t0) in a wrench polynomial.
MAX_POLY_ORDER = 3


class PointInputs(NamedTuple):
    """The interface points and their inputs; the input arrays are written between steps."""

    body: np.ndarray       # (k,) body of each point
    geometry: np.ndarray   # (k, 7) point in the body frame (m), axes relative to the body (q)
    poly: np.ndarray       # (k, MAX_POLY_ORDER + 1, 6) wrench coefficients, N and N·m
    t0: np.ndarray         # (1,) time the polynomial is centred on, s
    switches: np.ndarray   # (2,) 1 while K_x, K_v apply; 1 when any added mass is set
    gains: np.ndarray      # (k, 2, 6, 6) ∂W/∂x, ∂W/∂v
    reference: np.ndarray  # (k, 13) point outputs at t0
    flags: np.ndarray      # (k, 2) 1 where W is in the body frame; 1 where M_a is in the
                           # point frame (else inertial)
    added: np.ndarray      # (k, 6, 6) added mass


def point_inputs(body, local, axes_q) -> PointInputs:
    """Inputs of k points, all zero; added masses in the point frame."""
    k = len(body)
    geometry = np.hstack([np.asarray(local, float).reshape(k, 3),
                          np.asarray(axes_q, float).reshape(k, 4)])
    flags = np.zeros((k, 2), np.int64)
    flags[:, 1] = 1
    return PointInputs(np.asarray(body, np.int64).reshape(k), geometry,
                       np.zeros((k, MAX_POLY_ORDER + 1, 6)), np.zeros(1), np.zeros(2, np.int64),
                       np.zeros((k, 2, 6, 6)), np.zeros((k, 13)), flags, np.zeros((k, 6, 6)))


def point_wrenches(pts: PointInputs, t: float, fr: Kinematics, out: np.ndarray) -> None:
    """(k, 6) input wrenches at time t, inertial, into `out`."""
    _core.point_wrenches(make_handle("points", pts, fr), float(t), out)


def add_point_loads(pts: PointInputs, fr: Kinematics, wrenches: np.ndarray, loads: np.ndarray) -> None:
    """Point wrenches (k, 6) onto the bodies' loads (n, 6) [F, τ], inertial: F at the centre
    of mass and τ = M + ρ × F, added."""
    _core.add_point_loads(make_handle("points", pts, fr), wrenches, loads)
