"""The interface frame over one macro step (compiled): what both attachments share.

Inside a step [t, t + H] the interface accelerations are a polynomial in tau = time - t,
``coeff`` (m, 6): rows c_j of ``[a (3) m/s², alpha (3) rad/s²] = sum_j c_j tau^j``, inertial.
Velocities and positions are its exact integrals from the frame at tau = 0 (the state's frame,
see :mod:`rbcosim.flex.layout`); the orientation follows ``q' = [0, w] ⊗ q / 2`` by classic
RK4 with ``n`` micro steps.
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim.flex.kinematics import add_quat_rate
from rbcosim.flex.layout import AL, A, Q, R, V, W
from rbcosim.flex.polynomial import polynomial_through
from rbcosim.kernels import jit_alloc


@jit_alloc
def acceleration_polynomial(motion: np.ndarray, past_taus: np.ndarray,
                            past: np.ndarray) -> np.ndarray:
    """coeff (m + 1, 6) through the accelerations of ``motion`` (19,) at tau = 0 and of the
    past motions (m, 19) at ``past_taus`` (s, relative to the step's start; m <= 2)."""
    m = past.shape[0]
    taus = np.empty(m + 1)
    values = np.empty((m + 1, 6))
    taus[0] = 0.0
    values[0] = motion[13:19]
    for i in range(m):
        taus[i + 1] = past_taus[i]
        values[i + 1] = past[i, 13:19]
    return polynomial_through(taus, values)


@jit_alloc
def frame_at(s: np.ndarray, coeff: np.ndarray, tau: float, out: np.ndarray) -> None:
    """out (18,) = [r, v, a, theta, w, alpha] at tau: position m, velocity m/s, acceleration
    m/s², the rotation vector turned since tau = 0 (small-rotation model, theta' = w) rad,
    angular velocity rad/s, angular acceleration rad/s²; all inertial."""
    for i in range(3):
        out[i] = s[R + i] + s[V + i] * tau
        out[3 + i] = s[V + i]
        out[6 + i] = 0.0
        out[9 + i] = s[W + i] * tau
        out[12 + i] = s[W + i]
        out[15 + i] = 0.0
    p = 1.0  # tau^j
    for j in range(coeff.shape[0]):
        iv = p * tau / (j + 1)
        ix = iv * tau / (j + 2)
        for i in range(3):
            ca, cal = coeff[j, i], coeff[j, 3 + i]
            out[i] += ix * ca
            out[3 + i] += iv * ca
            out[6 + i] += p * ca
            out[9 + i] += ix * cal
            out[12 + i] += iv * cal
            out[15 + i] += p * cal
        p *= tau


@jit_alloc
def quaternion_stages(q: np.ndarray, w0: np.ndarray, wm: np.ndarray, w1: np.ndarray, h: float,
                      stages: np.ndarray) -> np.ndarray:
    """One classic RK4 step of q' = [0, w] ⊗ q / 2 with w at the step's start, middle and
    end; returns the new (unnormalised) q and fills ``stages`` (4, 4) with the four stage
    arguments (q, q + h/2 k1, q + h/2 k2, q + h k3)."""
    rates = np.zeros((4, 4))
    ws = (w0, wm, wm, w1)
    lead = (0.0, 0.5 * h, 0.5 * h, h)
    for j in range(4):
        stages[j] = q
        if j:
            stages[j] += lead[j] * rates[j - 1]
        add_quat_rate(ws[j], stages[j], 1.0, rates[j])
    return q + (h / 6.0) * (rates[0] + 2.0 * (rates[1] + rates[2]) + rates[3])


@jit_alloc
def end_of_step(s: np.ndarray, coeff: np.ndarray, H: float, n: int) -> np.ndarray:
    """The frame's orientation at tau = H, integrated with n RK4 steps and normalised, (4,)."""
    h = H / n
    q = s[Q:Q + 4].copy()
    k0, km, k1 = np.empty(18), np.empty(18), np.empty(18)
    stages = np.empty((4, 4))
    for i in range(n):
        frame_at(s, coeff, i * h, k0)
        frame_at(s, coeff, (i + 0.5) * h, km)
        frame_at(s, coeff, (i + 1) * h, k1)
        q = quaternion_stages(q, k0[12:15], km[12:15], k1[12:15], h, stages)
    return q / math.sqrt(np.sum(q * q))


@jit_alloc
def write_end_frame(s: np.ndarray, coeff: np.ndarray, H: float, q: np.ndarray) -> None:
    """Store the frame at tau = H (orientation q) in the state; time is left to the caller."""
    end = np.empty(18)
    frame_at(s, coeff, H, end)
    s[R:R + 3] = end[0:3]
    s[Q:Q + 4] = q
    s[V:V + 3] = end[3:6]
    s[W:W + 3] = end[12:15]
    s[A:A + 3] = end[6:9]
    s[AL:AL + 3] = end[15:18]


@jit_alloc
def set_frame(s: np.ndarray, motion: np.ndarray) -> None:
    """Put the state's frame at ``motion`` (19,), quaternion normalised."""
    s[R:R + 19] = motion
    s[Q:Q + 4] /= math.sqrt(np.sum(motion[3:7] * motion[3:7]))
