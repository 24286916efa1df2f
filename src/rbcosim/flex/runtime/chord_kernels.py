"""The chord-frame beam's kernels (equations: :mod:`rbcosim.flex.modelling.chord`), in the C core
(``librbcosim/flex/chord.c``).

``inputs`` (9,): the frame's motion ``[e_x (x, z), l m, s' m/s, s'' m/s², w rad/s, alpha
rad/s², b (x, z) m/s²]`` (:func:`frame_inputs`). ``rows``: one set of the model's matrices on
y = [s; eta], the modal rows or the pin rows, as the tuple ``(mass, gyro, stiffness, load_b
(., 2), load_alpha (.,), load_w2 (.,), geometric (3, ., k))``; ``params`` (3,) = ``[L m, EA/L
N/m, rho A kg/m]``.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core


class _Rows(tuple):
    """A rows tuple of C-contiguous float64 arrays, as `contiguous_rows` made it."""


def contiguous_rows(rows) -> tuple[np.ndarray, ...]:
    """The rows tuple as C-contiguous float64 arrays (what the kernels take); a tuple it made
    already is returned as it is (a body's rows, taken by every step)."""
    if type(rows) is _Rows:
        return rows
    return _Rows(np.ascontiguousarray(a, dtype=np.float64) for a in rows)


def frame_inputs(pa: np.ndarray, pb: np.ndarray, gravity: np.ndarray) -> np.ndarray:
    """The frame's motion (9,) from the pins' rows (3, 3): position m, velocity m/s,
    acceleration m/s², inertial (x and z used)."""
    out = np.empty(9)
    _core.chord_frame_inputs(np.ascontiguousarray(pa, dtype=np.float64),
                             np.ascontiguousarray(pb, dtype=np.float64),
                             np.ascontiguousarray(gravity, dtype=np.float64), out)
    return out


def residual(rows, params: np.ndarray, inputs: np.ndarray, eta: np.ndarray, etad: np.ndarray,
             etadd: np.ndarray) -> np.ndarray:
    """``M y'' + 2 w G y' + (K - w² M + alpha G + K_g) y + P b + alpha e - w² c`` on the rows'
    DOFs, y = [s; eta] (s'' from the inputs, eta'' given), K_g by the axial force."""
    out = np.empty(rows[0].shape[0])
    _core.chord_residual(*contiguous_rows(rows), params, inputs, np.ascontiguousarray(eta),
                         np.ascontiguousarray(etad), np.ascontiguousarray(etadd), out)
    return out


def modal_acceleration(modal_rows, minv: np.ndarray, params: np.ndarray, inputs: np.ndarray,
                       eta: np.ndarray, etad: np.ndarray) -> np.ndarray:
    """eta'' (k,): the modal rows' residual with eta'' = 0, solved with M_ee^-1."""
    out = np.empty(np.size(eta))
    _core.chord_modal_acceleration(*contiguous_rows(modal_rows),
                                   np.ascontiguousarray(minv, dtype=np.float64), params, inputs,
                                   np.ascontiguousarray(eta, dtype=np.float64),
                                   np.ascontiguousarray(etad, dtype=np.float64), out)
    return out


def chord_step(pins: np.ndarray, coeffs: np.ndarray, H: float, n: int, modes: np.ndarray,
               modal_rows, minv: np.ndarray, params: np.ndarray, gravity: np.ndarray) -> bool:
    """Advance the modes (eta, eta') (2k,) in place over [0, H] by n classic RK4 steps, the
    pins' kinematics from their frames ``pins`` (2, state layout) and acceleration
    polynomials ``coeffs`` (2, m, 6) (:mod:`rbcosim.flex.runtime.frame`). False if not finite."""
    return _core.chord_step(pins, coeffs, H, n, modes, *contiguous_rows(modal_rows), minv,
                            params, gravity)
