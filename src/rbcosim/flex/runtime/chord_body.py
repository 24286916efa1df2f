"""ChordBody: the runtime of a chord-frame beam pinned at two rigid interface points.

The frame and the stretch follow the two points (:mod:`rbcosim.flex.modelling.chord`); over a macro
step each point's acceleration is the polynomial through its motion at the step's start and
the given past motions (:mod:`rbcosim.flex.runtime.frame`), its velocity and position the exact
integrals, and the modes (eta, eta') advance by classic RK4 with ``micro_steps`` steps.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core
from rbcosim.errors import SimulationError
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.runtime.chord_kernels import contiguous_rows, frame_inputs

_NO_TAUS = np.zeros(0)
_NO_PAST = np.zeros((0, 2, 19))
_FRAME_COLUMNS = np.array([[0, 1, 2], [7, 8, 9], [13, 14, 15]])  # position, velocity, acceleration


class ChordBody:
    """A :class:`ChordModel` between two interface points (A first, then B).

    State: time s, the two points' motions (2, 19) at the current time (position, quaternion,
    velocity, angular velocity, acceleration, angular acceleration, inertial) and the modes
    (eta, eta') (k each). ``revision`` counts the state's changes.
    """

    def __init__(self, model: ChordModel, *, gravity=(0.0, 0.0, -9.81), micro_steps: int = 1):
        if isinstance(micro_steps, bool) or not isinstance(micro_steps, int) or micro_steps < 1:
            raise ValueError(f"micro_steps: expected an integer >= 1, got {micro_steps!r}")
        self.model = model
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        self.micro_steps = micro_steps
        self.revision = 0
        k = model.n_modes
        self._k = k
        self._minv = np.linalg.inv(model.mass[1:, 1:])
        self._params = model.params
        self._modal_rows = contiguous_rows(model.modal_rows)
        self._pin_rows = contiguous_rows(model.pin_rows)
        self._time = np.nan
        self._motions = np.zeros((2, 19))
        self._modes = np.zeros(2 * k)
        self._forces: np.ndarray | None = None

    # --- state --------------------------------------------------------------------------
    @property
    def time(self) -> float:
        return self._time

    @property
    def modal_coordinates(self) -> np.ndarray:
        """eta (k,), mass-normalised pinned–pinned modes."""
        return self._modes[: self._k].copy()

    @property
    def modal_velocities(self) -> np.ndarray:
        return self._modes[self._k :].copy()

    def get_state(self) -> bytes:
        """Time, both motions and the modes as little-endian float64 bytes."""
        s = np.concatenate(([self._time], self._motions.ravel(), self._modes))
        return s.astype("<f8").tobytes()

    def set_state(self, blob: bytes) -> None:
        s = np.frombuffer(blob, dtype="<f8").astype(np.float64)
        if s.size != 39 + 2 * self._k:
            raise ValueError(f"blob: expected {39 + 2 * self._k} float64 values for this model, "
                             f"got {s.size}")
        self._time, self._motions, self._modes = float(s[0]), s[1:39].reshape(2, 19), s[39:]
        self._changed()

    def _changed(self) -> None:
        self.revision += 1
        self._forces = None

    # --- driving ------------------------------------------------------------------------
    def initialize(self, t0: float, motions) -> None:
        """Start at ``t0`` at the points' motions (A, B): undeformed, eta' = 0 (the rigid
        velocity field of the chord)."""
        self._time = float(t0)
        self._modes = np.zeros(2 * self._k)
        self.set_motion(motions)

    def set_motion(self, motions) -> None:
        """Re-synchronise to the points' motions (A, B) at the current time."""
        self._motions = np.array([m.as_array() for m in motions], dtype=float).reshape(2, 19)
        self._changed()

    def step(self, t: float, H: float, motions, extrapolation=None) -> None:
        """Advance from t to t + H from the points' motions at t (A, B); ``extrapolation``: at
        most two past pairs of motions (most recent first unless they carry ``time``), whose
        accelerations make the points' acceleration polynomials of order 1–2."""
        if not (np.isfinite(H) and H > 0):
            raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
        if abs(t - self._time) > 1e-9 * max(1.0, abs(t)):
            raise SimulationError(f"step: time {t!r} does not match the chord body's time "
                                  f"{self._time!r}")
        past = list(extrapolation or ())
        if len(past) > 2:
            raise ValueError(f"extrapolation: expected at most 2 past motions, got {len(past)}")
        taus = np.array([-(j + 1) * H if p[0].time is None else p[0].time - t
                         for j, p in enumerate(past)]) if past else _NO_TAUS
        self.set_motion(motions)
        rows = np.array([[m.as_array() for m in p] for p in past]) if past else _NO_PAST
        y, end = self._modes.copy(), np.empty((2, 19))
        if not _core.chord_body_step(self._motions, rows, taus, H, self.micro_steps, y,
                                     *self._modal_rows, self._minv, self._params, self.gravity,
                                     end):
            raise SimulationError(f"chord body: non-finite modal state after the step from "
                                  f"t={t!r} (H={H!r})")
        self._motions = end  # the points' motion at t + H as the body assumes it
        self._modes = y
        self._time = t + H
        self._changed()

    # --- outputs ------------------------------------------------------------------------
    def frame(self, motions: np.ndarray | None = None) -> np.ndarray:
        """The chord frame's motion (9,) (:func:`rbcosim.flex.runtime.chord_kernels.frame_inputs`)
        now, or at the points' ``motions`` (2, 19)."""
        a, b = (self._motions if motions is None else motions)[:, _FRAME_COLUMNS]
        return frame_inputs(a, b, self.gravity)

    def _forces_at(self, motions: np.ndarray) -> np.ndarray:
        """Forces (2, 3) N on the rigid bodies at the pins' motions (2, 19) and the current
        modes: the pin rows' residual along e_x and e_z (C core: rbc_fx_chord_pin_forces)."""
        f = np.empty((2, 3))
        _core.chord_pin_forces(np.ascontiguousarray(motions, dtype=np.float64), self._modes,
                               *self._modal_rows, *self._pin_rows, self._minv, self._params,
                               self.gravity, f)
        return f

    def pin_forces(self) -> np.ndarray:
        """Forces (2, 3) N on the rigid bodies at A and B, inertial (planar: y component 0),
        without the stretch's spring (:mod:`rbcosim.flex.modelling.chord`)."""
        if self._forces is None:
            self._forces = self._forces_at(self._motions)
        return self._forces.copy()

    def wrenches(self) -> np.ndarray:
        """[force (3) N, moment (3) N·m] (2, 6) on the rigid bodies at A and B, inertial; the
        pins carry no moment."""
        w = np.zeros((2, 6))
        w[:, :3] = self.pin_forces()
        return w

    def frame_accelerations(self) -> np.ndarray:
        """(2, 6): each point's [a (3) m/s², alpha (3) rad/s²] the body currently assumes."""
        return self._motions[:, 13:19].copy()

    def added_mass(self) -> np.ndarray:
        """M_a (12, 12), inertial, points A then B ([a; alpha] each): the wrenches' derivative
        with respect to the points' accelerations is -M_a (exact: they are affine in them)."""
        motions = self._motions.copy()
        motions[:, 13:19] = 0.0
        base = self._forces_at(motions)
        out = np.zeros((12, 12))
        for i in range(2):
            for j in range(3):
                motions[:, 13:19] = 0.0
                motions[i, 13 + j] = 1.0
                out[[0, 1, 2, 6, 7, 8], 6 * i + j] = (base - self._forces_at(motions)).ravel()
        return 0.5 * (out + out.T)

    def node_kinematics(self) -> np.ndarray:
        """(2, 13): each pin's position, quaternion, velocity, angular velocity: the points'
        motions as the body integrated them over the last step (the pin releases the rotation,
        so its quaternion and angular velocity are the point's own, extrapolated)."""
        return self._motions[:, :13].copy()

    def output_displacements(self) -> dict[str, np.ndarray]:
        """Named output nodes -> elastic (u_x, u_y = 0, u_z) m in the chord frame: u_z is the
        deflection from the chord A–B."""
        y = np.concatenate(([self.frame()[2] - self.model.length], self._modes[: self._k]))
        out = {}
        for name, rows in zip(self.model.output_names, self.model.output_rows, strict=True):
            u = rows @ y
            out[name] = np.array([u[0], 0.0, u[1]])
        return out

    def output_nodes(self) -> dict[str, np.ndarray]:
        """Named output nodes -> inertial position (3,) m."""
        f = self.frame()
        rot = np.array([[f[0], -f[1]], [f[1], f[0]]])  # columns e_x, e_z on (x, z)
        origin = self._motions[0, :3]
        out = {}
        for (name, u), x in zip(self.output_displacements().items(), self.model.output_x,
                                strict=True):
            p = origin.copy()
            p[[0, 2]] += rot @ (np.array([x, 0.0]) + u[[0, 2]])
            out[name] = p
        return out
