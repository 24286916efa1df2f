"""FloatingMultiBody: the runtime of a floating body at several interface nodes in 3D.

The same contract as :class:`~rbcosim.flex.runtime.multi_body.MultiNodeBody` (one motion per
interface in, one wrench per interface out; ``added_mass`` over the stacked interfaces), for a
:class:`~rbcosim.flex.floating_multi.FloatingMultiModel`. Over a macro step each point's
acceleration is the polynomial through its motion at the step's start and the given past
motions (:mod:`rbcosim.flex.runtime.frame`), its velocity and position their exact integrals, its
orientation RK4; the frame and u_b follow from the points at every RK4 stage
(:mod:`rbcosim.flex.runtime.floating_multi_frame`) and (eta, eta') advance by classic RK4 with
``micro_steps`` steps.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.flex.modelling.floating_multi import FRAME_DOFS, FloatingMultiModel
from rbcosim.flex.runtime.floating_multi_frame import FrameState, _cross, frame_state
from rbcosim.flex.runtime.frame import acceleration_polynomial, end_of_step, frame_at, set_frame
from rbcosim.flex.runtime.layout import ETA, Q
from rbcosim.spatial.quaternion import rotation_matrix

_NO_ROWS = np.zeros((0, 19))


_outer = np.multiply.outer  # (1-D operands: np.outer's products without its Python wrapper)
_EYE = np.eye(3)
_EYE.setflags(write=False)


def _z(st: FrameState, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """The inertia invariants' input z (20 n_q + 15) (:func:`rbcosim.flex.modelling.model.floating_inertia`)."""
    w, al, b = st.w, st.alpha, st.b
    ww = _outer(w, w).ravel()
    return np.concatenate([q, qd, b, al, ww, _outer(w, qd).ravel(), _outer(al, q).ravel(),
                           _outer(ww, q).ravel(), _outer(b, q).ravel()])


class FloatingMultiBody:
    """A floating body at ``model.n_interfaces`` interface points (module docstring).

    State: time s, the points' motions (n_i, 19) now (inertial), their structure orientations
    at the start ``refs`` (n_i, 3, 3: point frame -> structure, fixed at ``initialize``) and
    (eta, eta') (k each). ``revision`` counts the state's changes."""

    def __init__(self, model: FloatingMultiModel, *, gravity=(0.0, 0.0, -9.81),
                 micro_steps: int = 1):
        if isinstance(micro_steps, bool) or not isinstance(micro_steps, int) or micro_steps < 1:
            raise ValueError(f"micro_steps: expected an integer >= 1, got {micro_steps!r}")
        self.model, self.micro_steps, self.revision = model, micro_steps, 0
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        n, nb, k = model.n_interfaces, model.n_boundary, model.n_modes
        self.n_interfaces, self._k, self._nb = n, k, nb
        m = np.asarray(model.mass)
        self._minv = np.linalg.inv(m[nb:, nb:]) if k else np.zeros((0, 0))
        self._geo = model.stiffening[0] > 0.0
        self._length = float(model.interface_positions[1, 0])
        self._time = math.nan
        self._motions = np.zeros((n, 19))
        self._refs = np.zeros((n, 3, 3))
        self._y = np.zeros(2 * k)
        self._wrenches: np.ndarray | None = None

    # --- state --------------------------------------------------------------------------
    @property
    def time(self) -> float:
        return self._time

    @property
    def modal_coordinates(self) -> np.ndarray:
        """eta (k,)."""
        return self._y[:self._k].copy()

    @property
    def modal_velocities(self) -> np.ndarray:
        return self._y[self._k:].copy()

    def get_state(self) -> bytes:
        """Time, motions, reference orientations, eta, eta' as little-endian float64."""
        s = np.concatenate(([self._time], self._motions.ravel(), self._refs.ravel(), self._y))
        return s.astype("<f8").tobytes()

    def set_state(self, blob: bytes) -> None:
        s = np.frombuffer(blob, dtype="<f8").astype(np.float64)
        n = self.n_interfaces
        size = 1 + 28 * n + 2 * self._k
        if s.size != size:
            raise ValueError(f"blob: expected {size} float64 values for this model, got {s.size}")
        self._time = float(s[0])
        self._motions = s[1:1 + 19 * n].reshape(n, 19)
        self._refs = s[1 + 19 * n:1 + 28 * n].reshape(n, 3, 3)
        self._y = s[1 + 28 * n:]
        self._changed()

    def set_modal_state(self, eta, eta_dot) -> None:
        """Set eta (k,) and eta' (k,)."""
        self._y = np.concatenate([np.asarray(eta, float), np.asarray(eta_dot, float)])
        self._changed()

    def _changed(self) -> None:
        self.revision += 1
        self._wrenches = None

    # --- driving ------------------------------------------------------------------------
    def initialize(self, t0: float, motions) -> None:
        """Start at ``t0`` at the points' motions: undeformed modes, eta' = 0; the structure
        axes are interface 0's point frame times ``axis_rotation``, and each point's
        orientation relative to them is its mounting (held fixed)."""
        arr = self._checked(motions)
        r0 = rotation_matrix(arr[0, 3:7]) @ self.model.axis_rotation
        self._refs = np.array([r0.T @ rotation_matrix(m[3:7]) for m in arr])
        self._time = float(t0)
        self._y = np.zeros(2 * self._k)
        self._motions = arr
        self._changed()

    def set_motion(self, motions) -> None:
        """Re-synchronise to the points' motions at the current time."""
        self._motions = self._checked(motions)
        self._changed()

    def _checked(self, motions) -> np.ndarray:
        motions = list(motions)
        if len(motions) != self.n_interfaces:
            raise ValueError(f"motions: expected {self.n_interfaces} interface motions, got "
                             f"{len(motions)}")
        return np.array([m.as_array() for m in motions], dtype=float).reshape(-1, 19)

    def _orient(self, quats: np.ndarray) -> np.ndarray:
        """(n_i, 3, 3): each point's structure orientation (its rotation times its mounting)."""
        return np.array([rotation_matrix(q) @ r.T for q, r in zip(quats, self._refs)])

    def _state_now(self, motions: np.ndarray) -> FrameState:
        kin = np.zeros((self.n_interfaces, 18))
        kin[:, 0:3], kin[:, 3:6], kin[:, 6:9] = motions[:, 0:3], motions[:, 7:10], motions[:, 13:16]
        kin[:, 12:15], kin[:, 15:18] = motions[:, 10:13], motions[:, 16:19]
        return frame_state(kin, self._orient(motions[:, 3:7]), self.model, self.gravity)

    def step(self, t: float, H: float, motions, extrapolation=None) -> None:
        """Advance t -> t + H from the points' motions at t; ``extrapolation``: up to two past
        motion sequences (most recent first unless they carry ``time``)."""
        if not (math.isfinite(H) and H > 0):
            raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
        if abs(t - self._time) > 1e-9 * max(1.0, abs(t)):
            raise SimulationError(f"step: time {t!r} does not match the flexible body's time "
                                  f"{self._time!r}")
        past = [self._checked(p) for p in (extrapolation or ())]
        if len(past) > 2:
            raise ValueError(f"extrapolation: expected at most 2 past motions, got {len(past)}")
        taus = np.array([-(j + 1) * H if p[0].time is None else float(p[0].time) - t
                         for j, p in enumerate(extrapolation or ())])
        ordered = sorted([0.0, *taus])
        if any(b - a <= 1e-12 * H for a, b in itertools.pairwise(ordered)):
            raise ValueError(f"extrapolation: past motions at coincident times {[0.0, *taus]}")
        arr = self._checked(motions)
        frames, coeffs = [], []
        for i, m in enumerate(arr):
            s = np.zeros(ETA)
            set_frame(s, m)
            frames.append(s)
            rows = np.array([p[i] for p in past]) if past else _NO_ROWS
            coeffs.append(acceleration_polynomial(m, taus, rows))
        y, h, n = self._y.copy(), H / self.micro_steps, self.micro_steps
        states = [self._at(frames, coeffs, 0.0, 0)]
        for i in range(n):
            mid = self._at(frames, coeffs, (i + 0.5) * h, 2 * i + 1)
            end = self._at(frames, coeffs, (i + 1) * h, 2 * i + 2)
            y = self._rk4(y, h, states[-1], mid, end)
            states.append(end)
        if not np.all(np.isfinite(y)):
            raise SimulationError(f"flexible body: non-finite modal state after the step from "
                                  f"t={t!r} (H={H!r})")
        out = np.empty(18)
        for i in range(self.n_interfaces):  # the points' motion at t + H as the body assumes it
            frame_at(frames[i], coeffs[i], H, out)
            self._motions[i] = np.concatenate([out[0:3], end_of_step(frames[i], coeffs[i], H, n),
                                               out[3:6], out[12:15], out[6:9], out[15:18]])
        self._y, self._time = y, t + H
        self._changed()

    def _at(self, frames, coeffs, tau: float, half_steps: int) -> FrameState:
        """The frame state at tau inside the step (orientations by RK4 in half micro steps)."""
        kin = np.empty((self.n_interfaces, 18))
        quats = np.empty((self.n_interfaces, 4))
        for i, (s, c) in enumerate(zip(frames, coeffs)):
            frame_at(s, c, tau, kin[i])
            quats[i] = end_of_step(s, c, tau, half_steps) if half_steps else s[Q:Q + 4]
        return frame_state(kin, self._orient(quats), self.model, self.gravity)

    def _rk4(self, y, h, s0: FrameState, sm: FrameState, s1: FrameState) -> np.ndarray:
        k = self._k
        if not k:
            return y
        rates = []
        for st, lead, prev in ((s0, 0.0, None), (sm, 0.5, 0), (sm, 0.5, 1), (s1, 1.0, 2)):
            ya = y if prev is None else y + lead * h * rates[prev]
            rates.append(np.concatenate([ya[k:], self._eta_dd(st, ya[:k], ya[k:])]))
        return y + (h / 6.0) * (rates[0] + 2.0 * (rates[1] + rates[2]) + rates[3])

    def _geometric(self, st: FrameState, q: np.ndarray) -> np.ndarray:
        """K_g q (n_q,) of the quasi-static axial force (zero without stiffening)."""
        if not self._geo:
            return np.zeros(q.size)
        ea, rho_a = self.model.stiffening
        s, sdd = st.ub[self.model.stretch], st.ubdd[self.model.stretch]
        coef = (ea * s / self._length, rho_a * st.b[0],
                rho_a * (sdd / self._length - st.w[1] ** 2 - st.w[2] ** 2))
        return np.einsum("j,jab,b->a", coef, self.model.geometric, q)

    def _eta_dd(self, st: FrameState, eta: np.ndarray, etad: np.ndarray) -> np.ndarray:
        nb = self._nb
        q, qd = np.concatenate([st.ub, eta]), np.concatenate([st.ubd, etad])
        e = self.model.inertia[nb:] @ _z(st, q, qd) + self._geometric(st, q)[nb:]
        return -self._minv @ (self.model.mass[nb:, :nb] @ st.ubdd + e)

    # --- outputs ------------------------------------------------------------------------
    def wrenches(self) -> np.ndarray:
        """(n_i, 6): [force N, moment N·m] on each rigid body at its point, inertial, without
        the stretch's spring (on the rigid side); computed once per state."""
        if self._wrenches is None:
            self._wrenches = self._wrenches_at(self._motions)
        return self._wrenches.copy()

    def _wrenches_at(self, motions: np.ndarray) -> np.ndarray:
        model, k, nb = self.model, self._k, self._nb
        st = self._state_now(motions)
        eta, etad = self._y[:k], self._y[k:]
        q, qd = np.concatenate([st.ub, eta]), np.concatenate([st.ubd, etad])
        etadd = self._eta_dd(st, eta, etad) if k else np.zeros(0)
        qdd = np.concatenate([st.ubdd, etadd])
        z = _z(st, q, qd)
        fb = (model.mass[:nb] @ qdd + model.inertia[:nb] @ z + self._geometric(st, q)[:nb])
        fb[model.stretch] -= model.stretch_stiffness * st.ub[model.stretch]
        total = self._resultant(st, q, qd, qdd)
        dofs = [tuple(d) for d in model.boundary] + list(FRAME_DOFS)
        cols = np.array([self._column(i, c, st.arms) for i, c in dofs]).T  # (6, n_b + 6)
        f6 = np.linalg.solve(cols[:, nb:], total - cols[:, :nb] @ fb)
        forces = np.concatenate([fb, f6])
        out = np.zeros((self.n_interfaces, 6))  # at each point: moments about the point
        for (i, c), f in zip(dofs, forces, strict=True):
            out[i, c] -= f
        out[:, :3] = out[:, :3] @ st.rot.T
        out[:, 3:] = out[:, 3:] @ st.rot.T
        return out

    @staticmethod
    def _column(i: int, comp: int, arms: np.ndarray) -> np.ndarray:
        """[force; moment about node 0] (6,) of a unit generalized force on DOF (i, comp)."""
        e = _EYE[comp % 3]
        if comp >= 3:
            return np.concatenate([np.zeros(3), e])
        return np.concatenate([e, _cross(arms[i], e)])

    def _resultant(self, st: FrameState, q, qd, qdd) -> np.ndarray:
        """The interfaces' resultant on the body (6,), frame components, moment about node 0:
        the rate of linear and angular momentum less the weight (the invariants S, Y)."""
        model = self.model
        w, al, b = st.w, st.alpha, st.b
        big_a = _outer(w, w) - (w @ w) * _EYE
        big_a += np.array([[0, -al[2], al[1]], [al[2], 0, -al[0]], [-al[1], al[0], 0]])
        s_e = model.modal_first_moment
        first = model.first_moment + s_e @ q
        force = (model.total_mass * b + big_a @ first + s_e @ qdd
                 + 2.0 * _cross(w, s_e @ qd))
        c = np.concatenate([b, big_a.ravel(), qdd, _outer(w, qd).ravel(), _outer(big_a.ravel(), q).ravel()])
        y = model.moment_invariants.reshape(-1, 3, c.size)
        moment = _cross(w, model.spin_inertia @ w) + (y[0] + np.tensordot(q, y[1:], 1)) @ c
        return np.concatenate([force, moment])

    def added_mass(self) -> np.ndarray:
        """M_a (6 n_i, 6 n_i), inertial: the stacked wrenches' derivative with respect to the
        stacked point accelerations [a; alpha] is -M_a (exact: they are affine in them)."""
        motions = self._motions.copy()
        motions[:, 13:19] = 0.0
        base = self._wrenches_at(motions).ravel()
        n = self.n_interfaces
        cols = []
        for i in range(n):
            for j in range(6):
                probe = motions.copy()
                probe[i, 13 + j] = 1.0
                cols.append(base - self._wrenches_at(probe).ravel())
        m = np.column_stack(cols)
        return 0.5 * (m + m.T)

    def node_kinematics(self) -> np.ndarray:
        """(n_i, 13): each point's position, quaternion, velocity, angular velocity as the
        body last integrated them."""
        return self._motions[:, :13].copy()

    def frame_accelerations(self) -> np.ndarray:
        """(n_i, 6): each point's [a m/s², alpha rad/s²] the body currently assumes."""
        return self._motions[:, 13:19].copy()

    def energy(self) -> float:
        """The body's kinetic and strain energy, J, less the stretch's spring (on the rigid
        side): ``½ cᵀ Z c + ½ qᵀ K q − ½ k_s s²`` (:class:`~rbcosim.flex.modelling.floating_multi.FloatingMultiModel`)."""
        model, k = self.model, self._k
        st = self._state_now(self._motions)
        q = np.concatenate([st.ub, self._y[:k]])
        qd = np.concatenate([st.ubd, self._y[k:]])
        c = np.concatenate([st.rot.T @ self._motions[0, 7:10], st.w, qd, _outer(st.w, q).ravel()])
        s = st.ub[model.stretch]
        return float(0.5 * c @ model.kinetic @ c + 0.5 * q @ model.stiffness @ q
                     - 0.5 * model.stretch_stiffness * s * s)

    def output_displacements(self) -> dict[str, np.ndarray]:
        """Named output nodes -> elastic displacement (3,) m in the frame (from the line
        between interface nodes 0 and 1, the frame's x axis)."""
        st = self._state_now(self._motions)
        q = np.concatenate([st.ub, self._y[:self._k]])
        local = self.model.output_rows @ q
        return {name: local[i].copy() for i, name in enumerate(self.model.output_names)}

    def output_nodes(self) -> dict[str, np.ndarray]:
        """Named output nodes -> inertial position (3,) m."""
        st = self._state_now(self._motions)
        q = np.concatenate([st.ub, self._y[:self._k]])
        local = self.model.output_positions + self.model.output_rows @ q
        pos = self._motions[0, :3] + local @ st.rot.T
        return {name: pos[i].copy() for i, name in enumerate(self.model.output_names)}
