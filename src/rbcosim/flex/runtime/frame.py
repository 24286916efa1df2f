"""The interface frame over one macro step: what both attachments share (C core:
``librbcosim/flex/frame.c``).

Inside a step [t, t + H] the interface accelerations are a polynomial in tau = time - t,
``coeff`` (m, 6): rows c_j of ``[a (3) m/s², alpha (3) rad/s²] = sum_j c_j tau^j``, inertial.
Velocities and positions are its exact integrals from the frame at tau = 0 (the state's frame,
see :mod:`rbcosim.flex.runtime.layout`); the orientation follows ``q' = [0, w] ⊗ q / 2`` by classic
RK4 with ``n`` micro steps.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core


def acceleration_polynomial(motion: np.ndarray, past_taus: np.ndarray,
                            past: np.ndarray) -> np.ndarray:
    """coeff (m + 1, 6) through the accelerations of ``motion`` (19,) at tau = 0 and of the
    past motions (m, 19) at ``past_taus`` (s, relative to the step's start; m <= 2)."""
    coeff = np.empty((np.size(past_taus) + 1, 6))
    _core.acceleration_polynomial(motion, past_taus, past, coeff)
    return coeff


def frame_at(s: np.ndarray, coeff: np.ndarray, tau: float, out: np.ndarray) -> None:
    """out (18,) = [r, v, a, theta, w, alpha] at tau: position m, velocity m/s, acceleration
    m/s², the rotation vector turned since tau = 0 (small-rotation model, theta' = w) rad,
    angular velocity rad/s, angular acceleration rad/s²; all inertial."""
    _core.frame_at(s, coeff, tau, out)


def end_of_step(s: np.ndarray, coeff: np.ndarray, H: float, n: int) -> np.ndarray:
    """The frame's orientation at tau = H, integrated with n RK4 steps and normalised, (4,)."""
    q = np.empty(4)
    _core.end_of_step(s, coeff, H, n, q)
    return q


def write_end_frame(s: np.ndarray, coeff: np.ndarray, H: float, q: np.ndarray) -> None:
    """Store the frame at tau = H (orientation q) in the state; time is left to the caller."""
    _core.write_end_frame(s, coeff, H, q)


def set_frame(s: np.ndarray, motion: np.ndarray) -> None:
    """Put the state's frame at ``motion`` (19,), quaternion normalised."""
    _core.set_frame(s, motion)
