"""MultiNodeBody: a grounded Craig–Bampton body coupled at several interface nodes.

The body with n_i interfaces (``model.n_interfaces``) takes and returns, per macro step:

- in: ``motions``, a sequence of n_i :class:`~rbcosim.flex.runtime.interface_motion.InterfaceMotion` (the
  rigid interface point of each interface, in the model's interface order), and for
  extrapolation up to two past such sequences (most recent first, or placed by their ``time``);
- out: ``wrenches()`` (n_i, 6): [force (3) N, moment (3) N·m] on each rigid body at its point,
  inertial; ``node_kinematics()`` (n_i, 13): each interface node's position (3), quaternion (4),
  velocity (3), angular velocity (3), inertial (the flexible side's frames, as for FlexBody);
  ``frame_accelerations()`` (n_i, 6); ``added_mass()`` (6 n_i, 6 n_i) and
  ``interface_jacobian()`` (two (6 n_i, 6 n_i)) over the stacked interfaces.

Equations: those of the grounded FlexBody (:mod:`rbcosim.flex.runtime.body`, :mod:`.grounded`) with the
boundary vector ``u_b`` the concatenation of every interface's boundary DOFs: each interface
node's displacement (translation, small rotation) from its reference pose, in the structure
axes ``r0`` (interface 0's initial point frame times the beam-axis rotation for beams; the
inertial axes for imported matrices), less its released components (pin, ball:
:mod:`rbcosim.flex.modelling.interface_nodes`). Each interface's frame follows its rigid point exactly like the
one-node frame (accelerations a polynomial over the step, exact integrals, RK4 orientation);
the modes step by the same exact propagator (:func:`rbcosim.flex.runtime.grounded.propagator`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.flex.runtime.frame import (
    acceleration_polynomial,
    end_of_step,
    set_frame,
    write_end_frame,
)
from rbcosim.flex.runtime.grounded import boundary, grounded_matrices, propagator, to_structure
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.flex.runtime.layout import AL, ETA, INIT, PREF, QREF, A, Q, R, T
from rbcosim.spatial.quaternion import rotation_matrix

_NO_ROWS = np.zeros((0, 19))


class MultiNodeBody:
    """A grounded flexible body at ``model.n_interfaces`` interface nodes (module docstring).

    Args:
        model: a grounded FlexModel. gravity: inertial, (3,), m/s². micro_steps: RK4 steps of
            each interface frame's orientation per macro step.
    """

    def __init__(self, model: FlexModel, *, gravity=(0.0, 0.0, -9.81), micro_steps: int = 10):
        if model.attachment != "grounded":
            raise ValueError("MultiNodeBody: grounded models only")
        if isinstance(micro_steps, bool) or not isinstance(micro_steps, int) or micro_steps < 1:
            raise ValueError(f"micro_steps: expected an integer >= 1, got {micro_steps!r}")
        self.model = model
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        self.micro_steps = micro_steps
        self.revision = 0
        n, nb, k = model.n_interfaces, model.n_boundary, model.n_modes
        self.n_interfaces, self._k = n, k
        comps = np.asarray(model.boundary_components, dtype=np.int64)
        self._dofs = [model.interface_dofs(i) for i in range(n)]
        self._comps = [np.ascontiguousarray(comps[d]) for d in self._dofs]
        g = grounded_matrices(model.mass, model.damping, model.stiffness, nb)
        self._w, self._fb, self._minv, self._shift = g.w, g.fb, g.minv, g.shift
        self._jac_k, self._jac_c = g.jac_k, g.jac_c
        self._propagators: dict[float, np.ndarray] = {}
        self._frames = np.zeros((n, ETA))  # layout of rbcosim.flex.runtime.layout, frame part only
        self._y = np.zeros(2 * k)
        self._r0 = np.eye(3)
        self._gacc, self._gb = np.zeros(k), np.zeros(nb)
        self._wrenches: np.ndarray | None = None

    # ------------------------------------------------------------------ state
    @property
    def time(self) -> float:
        """Current time, s."""
        return float(self._frames[0, T])

    @property
    def modal_coordinates(self) -> np.ndarray:
        """eta, shape (k,)."""
        return self._y[:self._k].copy()

    @property
    def modal_velocities(self) -> np.ndarray:
        """d(eta)/dt, shape (k,)."""
        return self._y[self._k:].copy()

    def get_state(self) -> bytes:
        """The complete state as bytes (little-endian float64: the frames, then eta, eta')."""
        return np.concatenate([self._frames.ravel(), self._y]).astype("<f8").tobytes()

    def set_state(self, blob: bytes) -> None:
        """Restore a state from :meth:`get_state` (bitwise)."""
        s = np.frombuffer(blob, dtype="<f8")
        size = self._frames.size + self._y.size
        if s.shape != (size,):
            raise ValueError(f"blob: expected {size} float64 values for this model, got {s.size}")
        self._frames = s[:self._frames.size].reshape(self._frames.shape).astype(np.float64)
        self._y = s[self._frames.size:].astype(np.float64)
        self._update_axes()
        self._changed()

    def set_modal_state(self, eta, eta_dot) -> None:
        """Set η (k,) and η̇ (k,)."""
        self._require_init()
        self._y = np.concatenate([np.asarray(eta, float), np.asarray(eta_dot, float)])
        self._changed()

    def _changed(self) -> None:
        self.revision += 1
        self._wrenches = None

    def _update_axes(self) -> None:
        model = self.model
        if model.structure_axes == "point":
            self._r0 = rotation_matrix(self._frames[0, QREF:QREF + 4]) @ model.axis_rotation
        else:
            self._r0 = np.eye(3)
        nb = model.n_boundary
        load = model.gravity_load @ (self._r0.T @ self.gravity)
        self._gacc, self._gb = self._minv @ load[nb:], load[:nb].copy()

    def _boundary(self) -> np.ndarray:
        """Rows (u_b, u_b', u_b''), (3, n_b), structure components, at the current frames."""
        return np.concatenate([boundary(f, self._r0, c) for f, c in zip(self._frames, self._comps)],
                              axis=1)

    # ------------------------------------------------------------------ driving
    def initialize(self, t0: float, motions: Sequence[InterfaceMotion]) -> None:
        """Start at ``t0`` with every interface's reference at its motion; eta = 0, at rest."""
        self._frames[:] = 0.0
        for f, m in zip(self._frames, self._checked(motions)):
            f[T] = float(t0)
            set_frame(f, m.as_array())
            f[PREF:PREF + 3], f[QREF:QREF + 4], f[INIT] = f[R:R + 3], f[Q:Q + 4], 1.0
        self._y[:] = 0.0
        self._update_axes()
        self._changed()

    def set_motion(self, motions: Sequence[InterfaceMotion]) -> None:
        """Re-synchronise every frame to its rigid motion at the current time, the interior
        keeping its physical position and velocity (as FlexBody.set_motion)."""
        self._require_init()
        self._regrounded(self._checked(motions))
        self._changed()

    def _regrounded(self, motions) -> np.ndarray:
        """Move the frames to `motions`; the boundary rows (3, n_b) there."""
        before = self._boundary()
        for f, m in zip(self._frames, motions):
            set_frame(f, m.as_array())
        after = self._boundary()
        if self._k:
            du = after - before
            self._y[:self._k] -= self._shift @ du[0]
            self._y[self._k:] -= self._shift @ du[1]
        return after

    def step(self, t: float, H: float, motions: Sequence[InterfaceMotion],
             extrapolation: Sequence[Sequence[InterfaceMotion]] | None = None) -> None:
        """Advance t -> t + H from the interfaces' ``motions`` at t; ``extrapolation``: up to
        two past motion sequences (most recent first unless they carry ``time``)."""
        self._require_init()
        if not (math.isfinite(H) and H > 0):
            raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
        if abs(t - self.time) > 1e-9 * max(1.0, abs(t)):
            raise SimulationError(f"step: time {t!r} does not match the flexible body's time "
                                  f"{self.time!r}")
        motions = self._checked(motions)
        past = [self._checked(p) for p in (extrapolation or ())]
        if len(past) > 2:
            raise ValueError(f"extrapolation: expected at most 2 past motions, got {len(past)}")
        taus = np.array([-(j + 1) * H if p[0].time is None else float(p[0].time) - t
                         for j, p in enumerate(past)])
        ordered = sorted([0.0, *taus])
        if any(b - a <= 1e-12 * H for a, b in itertools.pairwise(ordered)):
            raise ValueError(f"extrapolation: past motions at coincident times {[0.0, *taus]}")
        bound = self._regrounded(motions)
        k, nb = self._k, self.model.n_boundary
        x = np.zeros(3 * k + 5 * nb)
        x[:2 * k] = self._y
        x[2 * k + 5 * nb:] = self._gacc
        x[2 * k:2 * k + 2 * nb] = bound[:2].ravel()
        coeffs, ends = [], []
        for i, (f, m) in enumerate(zip(self._frames, motions)):
            rows = np.array([p[i].as_array() for p in past]) if past else _NO_ROWS
            coeff = acceleration_polynomial(m.as_array(), taus, rows)
            coeffs.append(coeff)
            ends.append(end_of_step(f, coeff, H, self.micro_steps))
            d = self._dofs[i]
            for j in range(coeff.shape[0]):
                o = 2 * k + (2 + j) * nb
                out = np.empty(d.size)
                to_structure(self._r0, coeff[j, :3], coeff[j, 3:], self._comps[i], out)
                x[o + d] = out
        y = self._propagator(H) @ x if k else self._y
        self._changed()
        if not (np.all(np.isfinite(y)) and all(np.all(np.isfinite(q)) for q in ends)):
            raise SimulationError(
                f"flexible body: non-finite modal state after the step from t={t!r} (H={H!r})")
        for f, coeff, q in zip(self._frames, coeffs, ends):
            write_end_frame(f, coeff, H, q)
        self._frames[:, T] = t + H
        self._y = y

    def _propagator(self, H: float) -> np.ndarray:
        p = self._propagators.get(H)
        if p is None:
            if len(self._propagators) >= 4:
                self._propagators.clear()
            p = propagator(self._w, self.model.n_boundary, H)
            self._propagators[H] = p
        return p

    def _checked(self, motions) -> list[InterfaceMotion]:
        motions = list(motions)
        if len(motions) != self.n_interfaces:
            raise ValueError(f"motions: expected {self.n_interfaces} interface motions, got "
                             f"{len(motions)}")
        return motions

    # ------------------------------------------------------------------ outputs
    def wrenches(self) -> np.ndarray:
        """(n_i, 6): [force N, moment N·m] on each rigid body at its point, inertial: minus
        the interface's boundary rows of the reduced equations (computed once per state)."""
        self._require_init()
        if self._wrenches is None:
            self._wrenches = self._wrenches_at(self._boundary())
        return self._wrenches.copy()

    def _wrenches_at(self, rows: np.ndarray) -> np.ndarray:
        """Wrenches at the current frames with boundary rows (u_b, u_b', u_b'') = ``rows``."""
        k, nb = self._k, self.model.n_boundary
        x = np.empty(3 * nb + 3 * k)
        x[:3 * nb] = rows.ravel()
        x[3 * nb:3 * nb + 2 * k] = self._y
        if k:
            z = np.concatenate([self._y, x[:3 * nb]])
            x[3 * nb + 2 * k:] = self._w @ z + self._gacc
        fb = self._fb @ x - self._gb
        out = np.zeros((self.n_interfaces, 6))
        for i, (d, c) in enumerate(zip(self._dofs, self._comps)):
            six = np.zeros(6)
            six[c] = -fb[d]
            out[i, :3], out[i, 3:] = self._r0 @ six[:3], self._r0 @ six[3:]
        return out

    def added_mass(self) -> np.ndarray:
        """M_a (6 n_i, 6 n_i), inertial: ∂(stacked wrenches)/∂(stacked [a; α]) = −M_a (exact,
        the wrenches are linear in the accelerations)."""
        self._require_init()
        rows = self._boundary()
        rows[2] = 0.0
        base = self._wrenches_at(rows).ravel()
        n = self.n_interfaces
        cols = []
        for i in range(n):
            for j in range(6):
                acc = np.zeros(6)
                acc[j] = 1.0
                probe = rows.copy()
                out = np.empty(self._dofs[i].size)
                to_structure(self._r0, acc[:3], acc[3:], self._comps[i], out)
                probe[2, self._dofs[i]] = out
                cols.append(base - self._wrenches_at(probe).ravel())
        m = np.column_stack(cols)
        return 0.5 * (m + m.T)

    def interface_jacobian(self) -> tuple[np.ndarray, np.ndarray]:
        """(∂W/∂x, ∂W/∂v), each (6 n_i, 6 n_i), stacked interfaces, inertial: −Zᵀ K Z and
        −Zᵀ C Z with Z = [I; −M_ee⁻¹ M_eb] (the boundary moves, the interior stays)."""
        sel = np.zeros((6 * self.n_interfaces, self.model.n_boundary))
        for i, (d, c) in enumerate(zip(self._dofs, self._comps)):
            for col, comp in zip(d, c):
                block = 6 * i + 3 * (comp // 3)
                sel[block:block + 3, col] = self._r0[:, comp % 3]
        return -sel @ self._jac_k @ sel.T, -sel @ self._jac_c @ sel.T

    def boundary_state(self) -> tuple[np.ndarray, np.ndarray]:
        """u_b (m, rad) and u_b' (m/s, rad/s), each (n_b,), structure components."""
        rows = self._boundary()
        return rows[0].copy(), rows[1].copy()

    def node_kinematics(self) -> np.ndarray:
        """(n_i, 13): each interface node's position, quaternion, velocity, angular velocity."""
        self._require_init()
        return self._frames[:, R:A].copy()

    def frame_accelerations(self) -> np.ndarray:
        """(n_i, 6): the accelerations [a m/s², α rad/s²] each frame assumes, inertial."""
        self._require_init()
        return self._frames[:, A:AL + 3].copy()

    def output_nodes(self) -> dict[str, np.ndarray]:
        """Named output nodes -> inertial position (3,), m (from interface 0's reference)."""
        self._require_init()
        model = self.model
        if not model.output_names:
            return {}
        coords = np.concatenate((self.boundary_state()[0], self._y[:self._k]))
        local = model.output_positions + model.output_rows @ coords
        pos = self._frames[0, PREF:PREF + 3] + local @ self._r0.T
        return {name: pos[i].copy() for i, name in enumerate(model.output_names)}

    def _require_init(self) -> None:
        if self._frames[0, INIT] != 1.0:
            raise SimulationError("flexible body: initialize(t0, motions) has not been called")
