"""Continuity checks of rigid–flexible joints: do both sides agree on the joint's motion?"""

from __future__ import annotations

import warnings

import numpy as np

from rbcosim import _core
from rbcosim.errors import SimulationError
from rbcosim.settings import Coupling


class ContinuityWarning(UserWarning):
    """A rigid–flexible joint's gap exceeded its tolerance (action `warn`)."""


def joint_gaps(rigid: np.ndarray, flex: np.ndarray) -> np.ndarray:
    """Gaps (4,) between two 13-vectors of joint kinematics: position m, rotation angle rad
    (of the rotation taking one attitude to the other, by atan2, accurate for small angles),
    velocity m/s, angular velocity rad/s (C core: librbcosim/flex/continuity.c)."""
    gaps = np.empty(4)
    _core.joint_gaps(np.ascontiguousarray(rigid, dtype=np.float64),
                     np.ascontiguousarray(flex, dtype=np.float64), gaps)
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
