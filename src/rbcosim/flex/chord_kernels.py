"""Compiled kernels of the chord-frame beam (equations: :mod:`rbcosim.flex.chord`).

``inputs`` (9,): the frame's motion ``[e_x (x, z), l m, s' m/s, s'' m/s², w rad/s, alpha
rad/s², b (x, z) m/s²]`` (:func:`frame_inputs`). ``rows``: one set of the model's matrices on
y = [s; eta], the modal rows or the pin rows, as the tuple ``(mass, gyro, stiffness, load_b
(., 2), load_alpha (.,), load_w2 (.,), geometric (3, ., k))``; ``params`` (3,) = ``[L m, EA/L
N/m, rho A kg/m]``.
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim.flex.frame import frame_at
from rbcosim.kernels import jit_alloc


@jit_alloc
def frame_inputs(pa: np.ndarray, pb: np.ndarray, gravity: np.ndarray) -> np.ndarray:
    """The frame's motion (9,) from the pins' rows (3, 3): position m, velocity m/s,
    acceleration m/s², inertial (x and z used)."""
    d = np.array([pb[0, 0] - pa[0, 0], pb[0, 2] - pa[0, 2]])
    dd = np.array([pb[1, 0] - pa[1, 0], pb[1, 2] - pa[1, 2]])
    ddd = np.array([pb[2, 0] - pa[2, 0], pb[2, 2] - pa[2, 2]])
    ell = math.hypot(d[0], d[1])
    ex0, ex1 = d[0] / ell, d[1] / ell
    ez0, ez1 = -ex1, ex0
    sd = dd[0] * ex0 + dd[1] * ex1
    w = -(dd[0] * ez0 + dd[1] * ez1) / ell
    sdd = ddd[0] * ex0 + ddd[1] * ex1 + ell * w * w
    alpha = -(ddd[0] * ez0 + ddd[1] * ez1 + 2.0 * sd * w) / ell
    ax, az = pa[2, 0] - gravity[0], pa[2, 2] - gravity[2]
    out = np.empty(9)
    out[0], out[1], out[2], out[3], out[4] = ex0, ex1, ell, sd, sdd
    out[5], out[6] = w, alpha
    out[7], out[8] = ax * ex0 + az * ex1, ax * ez0 + az * ez1
    return out


@jit_alloc
def residual(rows, params: np.ndarray, inputs: np.ndarray, eta: np.ndarray, etad: np.ndarray,
             etadd: np.ndarray) -> np.ndarray:
    """``M y'' + 2 w G y' + (K - w² M + alpha G + K_g) y + P b + alpha e - w² c`` on the rows'
    DOFs, y = [s; eta] (s'' from the inputs, eta'' given), K_g by the axial force."""
    mass, gyro, stiff, load_b, load_alpha, load_w2, geo = rows
    length, ea_l, rho_a = params[0], params[1], params[2]
    k = eta.size
    w, al, sdd = inputs[5], inputs[6], inputs[4]
    y = np.empty(k + 1)
    yd = np.empty(k + 1)
    ydd = np.empty(k + 1)
    y[0], yd[0], ydd[0] = inputs[2] - length, inputs[3], sdd
    y[1:], yd[1:], ydd[1:] = eta, etad, etadd
    # axial force N(x) = n0 + n1 (x - L/2)/L + n2 (x²/2 - L²/6)/L² (rbcosim.flex.chord)
    n0 = ea_l * y[0]
    n1 = rho_a * inputs[7]
    n2 = rho_a * (sdd / length - w * w)
    out = np.empty(mass.shape[0])
    for r in range(mass.shape[0]):
        acc = (load_b[r, 0] * inputs[7] + load_b[r, 1] * inputs[8] + al * load_alpha[r]
               - w * w * load_w2[r])
        for c in range(k + 1):
            acc += (mass[r, c] * (ydd[c] - w * w * y[c]) + gyro[r, c] * (2.0 * w * yd[c] + al * y[c])
                    + stiff[r, c] * y[c])
        for c in range(k):
            acc += (n0 * geo[0, r, c] + n1 * geo[1, r, c] + n2 * geo[2, r, c]) * eta[c]
        out[r] = acc
    return out


@jit_alloc
def modal_acceleration(modal_rows, minv: np.ndarray, params: np.ndarray, inputs: np.ndarray,
                       eta: np.ndarray, etad: np.ndarray) -> np.ndarray:
    """eta'' (k,): the modal rows' residual with eta'' = 0, solved with M_ee^-1."""
    r = residual(modal_rows, params, inputs, eta, etad, np.zeros(eta.size))
    out = np.zeros(eta.size)
    for i in range(eta.size):
        for j in range(eta.size):
            out[i] -= minv[i, j] * r[j]
    return out


@jit_alloc
def _pins_at(pins: np.ndarray, coeffs: np.ndarray, tau: float, gravity: np.ndarray) -> np.ndarray:
    kin = np.empty((2, 3, 3))
    out = np.empty(18)
    for i in range(2):
        frame_at(pins[i], coeffs[i], tau, out)
        for j in range(9):
            kin[i, j // 3, j % 3] = out[j]
    return frame_inputs(kin[0], kin[1], gravity)


@jit_alloc
def chord_step(pins: np.ndarray, coeffs: np.ndarray, H: float, n: int, modes: np.ndarray,
               modal_rows, minv: np.ndarray, params: np.ndarray, gravity: np.ndarray) -> bool:
    """Advance the modes (eta, eta') (2k,) in place over [0, H] by n classic RK4 steps, the
    pins' kinematics from their frames ``pins`` (2, state layout) and acceleration
    polynomials ``coeffs`` (2, m, 6) (:mod:`rbcosim.flex.frame`). False if not finite."""
    k = modes.size // 2
    h = H / n
    y = modes.copy()
    rates = np.empty((4, 2 * k))
    lead = (0.0, 0.5 * h, 0.5 * h, h)
    ya = np.empty(2 * k)
    for i in range(n):
        f0 = _pins_at(pins, coeffs, i * h, gravity)
        fm = _pins_at(pins, coeffs, (i + 0.5) * h, gravity)
        f1 = _pins_at(pins, coeffs, (i + 1) * h, gravity)
        for j in range(4):
            for m in range(2 * k):
                ya[m] = y[m] + lead[j] * rates[j - 1, m] if j else y[m]
            f = f0 if j == 0 else (f1 if j == 3 else fm)
            rates[j, :k] = ya[k:]
            rates[j, k:] = modal_acceleration(modal_rows, minv, params, f, ya[:k], ya[k:])
        for m in range(2 * k):
            y[m] += (h / 6.0) * (rates[0, m] + 2.0 * (rates[1, m] + rates[2, m]) + rates[3, m])
    if not np.all(np.isfinite(y)):
        return False
    modes[:] = y
    return True
