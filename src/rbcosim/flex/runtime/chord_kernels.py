"""The chord-frame beam's kernels (equations: :mod:`rbcosim.flex.modelling.chord`), in the C core
(``librbcosim/flex/chord.c``, where the body's macro step and pin forces are one call each:
``chord_body_step``, ``chord_pin_forces``).

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


def modal_acceleration(modal_rows, minv: np.ndarray, params: np.ndarray, inputs: np.ndarray,
                       eta: np.ndarray, etad: np.ndarray) -> np.ndarray:
    """eta'' (k,): the modal rows' residual with eta'' = 0, solved with M_ee^-1."""
    out = np.empty(np.size(eta))
    _core.chord_modal_acceleration(*contiguous_rows(modal_rows),
                                   np.ascontiguousarray(minv, dtype=np.float64), params, inputs,
                                   np.ascontiguousarray(eta, dtype=np.float64),
                                   np.ascontiguousarray(etad, dtype=np.float64), out)
    return out
