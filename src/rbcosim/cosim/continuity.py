"""Continuity checks of rigid–flexible joints: do both sides agree on the joint's motion?"""

from __future__ import annotations

import math
import warnings

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.kernels import jit_alloc
from rbcosim.settings import Coupling


class ContinuityWarning(UserWarning):
    """A rigid–flexible joint's gap exceeded its tolerance (action `warn`)."""


@jit_alloc
def joint_gaps(rigid: np.ndarray, flex: np.ndarray) -> np.ndarray:
    """Gaps (4,) between two 13-vectors of joint kinematics: position m, rotation angle rad
    (of the rotation taking one attitude to the other, by atan2, accurate for small angles),
    velocity m/s, angular velocity rad/s."""
    gaps = np.zeros(4)
    for k, first in enumerate((0, 7, 10)):
        s = 0.0
        for c in range(first, first + 3):
            s += (rigid[c] - flex[c]) ** 2
        gaps[(0, 2, 3)[k]] = math.sqrt(s)
    p, q = rigid[3:7] / np.linalg.norm(rigid[3:7]), flex[3:7] / np.linalg.norm(flex[3:7])
    d0 = p[0] * q[0] + p[1] * q[1] + p[2] * q[2] + p[3] * q[3]  # scalar part of p ⊗ q*
    d1 = -p[0] * q[1] + p[1] * q[0] - p[2] * q[3] + p[3] * q[2]
    d2 = -p[0] * q[2] + p[1] * q[3] + p[2] * q[0] - p[3] * q[1]
    d3 = -p[0] * q[3] - p[1] * q[2] + p[2] * q[1] + p[3] * q[0]
    gaps[1] = 2.0 * math.atan2(math.sqrt(d1 * d1 + d2 * d2 + d3 * d3), abs(d0))
    return gaps


#: Warnings issued per joint before further violations are only counted.
MAX_WARNINGS = 5


def enforce(coupling: Coupling, gaps: np.ndarray, t: float, earlier: int = 0) -> str | None:
    """Apply the coupling's on_violation action; returns the violation text (or None).
    `earlier`: violations of this joint so far (warnings stop after MAX_WARNINGS)."""
    over = gaps > coupling.tolerances
    if not over.any():
        return None
    names = ("position", "rotation", "velocity", "angular velocity")
    text = "; ".join(f"{names[k]} gap {gaps[k]:.3g} > {coupling.tolerances[k]:.3g}"
                     for k in np.flatnonzero(over))
    message = f"joint {coupling.name!r} at t = {t:.6g} s: {text}"
    if coupling.on_violation == "stop":
        raise SimulationError(f"continuity violated: {message}")
    if coupling.on_violation == "warn" and earlier < MAX_WARNINGS:
        if earlier == MAX_WARNINGS - 1:
            message += " (further violations of this joint are counted, not shown)"
        warnings.warn(message, ContinuityWarning, stacklevel=3)
    return message
