"""FlexBody: the runtime solver of a Craig–Bampton body coupled at one interface point.

Contract (co-simulation, fixed macro steps):

1. ``initialize(t0, motion)`` puts the frame (floating) or the boundary reference (grounded) at
   the interface point; ``eta = 0``, undeformed, at rest relative to the frame.
2. ``step(t, H, motion, extrapolation)`` advances t -> t + H. The frame is first re-synchronised
   to the rigid side's ``motion`` at t (the rigid side owns the joint's kinematics). Inside the
   step the interface accelerations (linear and angular, inertial) are a polynomial in time:
   constant (no ``extrapolation``), or through the accelerations of 1 or 2 past motions (order
   1, 2). Velocities and positions are their exact integrals, the orientation is integrated by
   classic RK4 with ``micro_steps`` steps (:mod:`rbcosim.flex.runtime.frame`).
3. ``wrench()``, ``node_kinematics()``, ``output_nodes()``, ``interface_jacobian()`` report at
   the current time from the flexible side's own frame (its end-of-step extrapolation, or the
   motion given to ``set_motion``).

Equations, structure frame (components along the beam axes, rotating with the frame):

- grounded: ``M_ee eta'' + C_ee eta' + K_ee eta = -(M_eb u_b'' + C_eb u_b' + K_eb u_b) + f_e``;
  the force on the rigid body is ``-f_b`` with ``f_b`` the boundary rows of the reduced
  equations (``M_bb u_b'' + M_be eta'' + C_bb u_b' + C_be eta' + K_bb u_b + K_be eta - f_gb``).
  ``f = [f_gb; f_e] = G r0^T g`` is gravity, ``G`` the model's ``gravity_load`` (reduced
  ``T^T f``, f the physical load per unit gravity), constant in structure axes. Rotational
  boundary DOFs use the rotation vector from the initial orientation (small-rotation model:
  inside a step it is integrated as ``theta' = omega``).
- floating (linear floating-frame-of-reference): with ``b = a_p - g``, alpha, omega in the
  frame, ``A = [alpha]x + [omega]x [omega]x`` and physical ``u = Phi eta``, the absolute
  acceleration of the material minus gravity, as a field-consistent nodal vector, is
  ``acc = P(b, A) + Phi eta'' + 2 D([omega]x) Phi eta' + D(A) Phi eta``, where ``P`` maps an
  affine field to nodal values (:func:`rbcosim.flex.modelling.model.rotation_dofs`) and ``D(B)`` applies
  ``B`` to each node's translation and maps its rotation to ``rotation_dofs(B [theta]x)``. The
  modes obey ``Phi^T (M acc) + C_ee eta' + (K_ee + K_g) eta = 0``, ``K_g`` the geometric
  stiffness of the inertial axial load (:mod:`rbcosim.flex.modelling.geometric`; zero unless the model
  has ``geometric_stiffening``). The force and moment the rigid body
  receives at the point are minus the beam's rate of change of momentum less its weight. The
  force uses the first-moment invariants (``S = P_t^T M Phi``, exact for the continuum):
  ``F = -(m b + A m r_cm + S eta'' + 2 w x S eta' + A S eta)``, so linear momentum balance holds
  identically. The moment uses the nodal form
  ``M = -sum_i ((X_i + u_i) x f_t,i + f_r,i)`` with ``f = M_phys acc`` (virtual work of a rigid
  rotation about the point, deformed lever arms), evaluated from invariants precomputed once
  (:func:`rbcosim.flex.modelling.model.moment_invariants`: O(k²) per call, whatever the mesh); its elastic Coriolis/centrifugal part carries
  the nodal-map approximation of ``D`` (axial strain of rotated bending fields is dropped), plus
  the gyroscopic term of the sections' torsional inertia ``-omega x (J omega)``. For the rigid
  part (``eta = 0``) this is exact: ``F = -m (a_p + A r_cm - g)``,
  ``M = -(m r_cm x (a_p - g) + I_p alpha + omega x I_p omega)`` with the model's inertia I_p.

Two integration routes, by attachment (each a kernel of the C core, one call per step):

- grounded: the modal ODE is linear with a polynomial input, so the step is its exact discrete
  propagator ``y(H) = Phi y(0) + Psi u`` (:mod:`rbcosim.flex.runtime.grounded`), precomputed once per
  step size; ``micro_steps`` only sets the orientation's RK4 steps.
- floating: the modal ODE's coefficients depend on the frame's rotation and angular velocity;
  the modes are integrated with the orientation by classic RK4 with ``micro_steps`` steps
  (:mod:`rbcosim.flex.runtime.floating`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.errors import SimulationError
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.flex.runtime.floating import floating_wrench
from rbcosim.flex.runtime.frame import set_frame
from rbcosim.flex.runtime.grounded import (
    boundary,
    grounded_matrices,
    grounded_wrench,
    propagator,
    regrounded_frame,
)
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.flex.runtime.layout import AL, ETA, INIT, PREF, QREF, A, Q, R, T, W
from rbcosim.spatial.quaternion import from_rotation_vector, multiply, rotation_matrix

_NO_TAUS, _NO_ROWS = np.zeros(0), np.zeros((0, 19))
# rbc_cs_flex_step's codes (librbcosim/cosim/coupled.h)
_STEP_REFUSED, _STEP_NOT_FINITE, _STEP_QUIET = -1, 0, 1
_PROPAGATORS_KEPT = 4  # step sizes whose grounded propagator is kept (H, H/2 in practice)


class FlexBody:
    """Craig–Bampton flexible body at one interface point (see the module docstring).

    Args:
        model: the reduced model.
        gravity: inertial gravity acceleration, (3,), m/s².
        micro_steps: RK4 steps per macro step (>= 1).

    ``revision`` counts the changes of the state (every step, re-synchronisation, restore), so
    that callers can keep values derived from it.
    """

    def __init__(self, model: FlexModel, *, gravity=(0.0, 0.0, -9.81), micro_steps: int = 10):
        if isinstance(micro_steps, bool) or not isinstance(micro_steps, int) or micro_steps < 1:
            raise ValueError(f"micro_steps: expected an integer >= 1, got {micro_steps!r}")
        g = np.array(gravity, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: expected 3 finite numbers, got {gravity!r}")
        self.model = model
        self.gravity = g
        self.micro_steps = micro_steps
        self.revision = 0
        self._grounded = model.attachment == "grounded"
        nb = model.n_boundary
        k = model.n_modes
        self._k = k
        self._comps = np.array(model.boundary_components, dtype=np.int64)
        m, c, kk = model.mass, model.damping, model.stiffness
        if self._grounded:
            g = grounded_matrices(m, c, kk, nb)
            self._w, self._fb, self._minv = g.w, g.fb, g.minv
            # Boundary motion at a frozen interior (mass-weighted projection on the kept modes):
            # d[u_b; eta] = Z du_b, Z = [I; -M_ee^-1 M_eb].
            self._interior_shift, self._jac_k, self._jac_c = g.shift, g.jac_k, g.jac_c
            self._propagators: dict[float, np.ndarray] = {}
        else:
            fl = model.floating
            self._w = np.ascontiguousarray(fl.ode_matrix, dtype=np.float64)
            # The wrench kernel's arrays (C-contiguous float64): invariants only, no mesh.
            self._fl = (float(fl.total_mass),) + tuple(np.ascontiguousarray(a, dtype=np.float64)
                                                       for a in (fl.first_moment,
                                                                 fl.modal_first_moment,
                                                                 fl.spin_inertia,
                                                                 fl.moment_invariants))
        self._axis = np.ascontiguousarray(model.axis_rotation, dtype=np.float64)
        self._state = np.zeros(ETA + 2 * k)
        self._r0 = np.eye(3)  # structure axes of a grounded body (derived from q_ref)
        self._gacc, self._gb = np.zeros(k), np.zeros(nb)  # grounded: gravity (_update_axes)
        # The wrench at the current state, computed once asked for (_wrench_ok).
        self._wrench = np.zeros(6)
        self._wrench_ok = False
        self._motion_rows = np.zeros((2, 20))  # exchange_step's motion and future (values, time)
        # The C core's view of the body (librbcosim/flex/endpoint.h): these arrays are only
        # ever written in place.
        if self._grounded:
            self._handle = make_handle("flex_grounded", self._state, self._r0, self._comps,
                                       self._interior_shift, self._w, self._fb, self._gacc,
                                       self._gb, self._wrench)
        else:
            self._handle = make_handle("flex_floating", self._state, self.gravity, self._axis,
                                       self._w, *self._fl, self._wrench)

    # ------------------------------------------------------------------ state

    @property
    def time(self) -> float:
        """Current time, s."""
        return float(self._state[T])

    @property
    def modal_coordinates(self) -> np.ndarray:
        """eta, shape (k,): fixed-interface modal coordinates (mass-normalised modes)."""
        return self._state[ETA : ETA + self._k].copy()

    @property
    def modal_velocities(self) -> np.ndarray:
        """d(eta)/dt, shape (k,)."""
        return self._state[ETA + self._k :].copy()

    def get_state(self) -> bytes:
        """The complete solver state as bytes (little-endian float64, :mod:`.layout`)."""
        return self._state.astype("<f8").tobytes()

    def set_state(self, blob: bytes) -> None:
        """Restore a state from :meth:`get_state`; stepping again reproduces the same bits."""
        s = np.frombuffer(blob, dtype="<f8")
        if s.shape != self._state.shape:
            raise ValueError(
                f"blob: expected {self._state.size} float64 values for this model, got {s.size}"
            )
        self._state[:] = s
        self._update_axes()
        self._changed()

    def _changed(self) -> None:
        self.revision += 1
        self._wrench_ok = False

    def _update_axes(self) -> None:
        if self.model.structure_axes == "point":
            self._r0[:] = rotation_matrix(self._state[QREF : QREF + 4]) @ self.model.axis_rotation
        else:
            self._r0[:] = np.eye(3)
        if self._grounded:
            nb = self.model.n_boundary
            load = self.model.gravity_load @ (self._r0.T @ self.gravity)
            self._gacc[:] = self._minv @ load[nb:]
            self._gb[:] = load[:nb]

    # ------------------------------------------------------------------ driving

    def initialize(self, t0: float, motion: InterfaceMotion) -> None:
        """Start at ``t0`` with the frame / boundary reference at ``motion``; eta = 0, at rest."""
        s = np.zeros_like(self._state)
        s[T] = float(t0)
        set_frame(s, motion.as_array())
        s[PREF : PREF + 3] = s[R : R + 3]
        s[QREF : QREF + 4] = s[Q : Q + 4]
        s[INIT] = 1.0
        self._state[:] = s
        self._update_axes()
        self._changed()

    def set_motion(self, motion: InterfaceMotion) -> None:
        """Re-synchronise the frame to the rigid side's motion at the current time (no advance).

        Grounded: the interior keeps its physical position and velocity while the boundary
        moves to the rigid side's values (η -= M_ee⁻¹ M_eb Δu_b, exact for a boundary without
        mass coupling to the interior); otherwise the re-synchronisation would move the
        interior by the extrapolation error every macro step.
        """
        self._require_init()
        if self._grounded:
            regrounded_frame(self._state, motion.as_array(), self._r0, self._comps,
                             self._interior_shift)
        else:
            set_frame(self._state, motion.as_array())
        self._changed()

    def step(
        self,
        t: float,
        H: float,
        motion: InterfaceMotion,
        extrapolation: list[InterfaceMotion] | None = None,
    ) -> None:
        """Advance from t to t + H (see the module docstring for the interface motion model).

        ``extrapolation``: past motions (most recent first unless they carry ``time``), at most
        two; their accelerations give the order-1/2 polynomial for the accelerations.
        """
        past_taus, rows = self._past(t, H, extrapolation)
        s, arr = self._state, motion.as_array()
        if self._grounded:
            ok = _core.grounded_body_step(self._handle, arr, past_taus, rows, H,
                                          self.micro_steps, self._propagator(H))
        else:
            ok = _core.floating_body_step(self._handle, arr, past_taus, rows, H,
                                          self.micro_steps)
        self._changed()
        if not ok:
            raise SimulationError(
                f"flexible body: non-finite modal state after the step from t={t!r} (H={H!r})"
            )
        s[T] = t + H

    def exchange_step(self, t: float, H: float, motion: InterfaceMotion,
                      future: InterfaceMotion | None, exchange, history: np.ndarray,
                      count: np.ndarray, checks, order: int, poly_order: int,
                      coef: np.ndarray) -> tuple[bool, int]:
        """:meth:`step` and its endpoint's commit in one call of the C core
        (``_core.flex_step``, the step of ``librbcosim/cosim/coupled.h``): from ``motion`` at t
        through the newest ``order`` past motions of ``history`` (2, 20: values, time s; NaN:
        none) with ``count`` (1,) valid (rigid side first: ``future`` at t + H and the newest
        one), which then takes ``motion``; ``exchange`` is the endpoint's handle (histories,
        energy, added mass), ``checks`` its RangeChecks (``quiet``, ``rotations``). With
        ``poly_order`` >= 0 the Gauss–Seidel wrench polynomial (flexible side first) is written
        to the first rows of ``coef`` (4, 6). Returns (range checks certainly quiet, rows)."""
        handle, p, micro_steps = self.core_args(H)
        now, end = self._motion_rows
        code, rows = _core.flex_step(
            handle, exchange, p, micro_steps, history, count, checks.quiet,
            checks.rotations, motion.write_timed(now),
            _NO_TAUS if future is None else future.write_timed(end), t, H, order, poly_order,
            coef)
        if code == _STEP_REFUSED:  # nothing written: the checks of step() say why
            kept = history.reshape(-1, 20)[:min(order, int(count[0]))]
            past = [InterfaceMotion.from_timed(r) for r in kept]
            self._past(t, H, past if future is None else [future, *past[:1]])
            raise SimulationError(f"flexible body: the step from t={t!r} was refused")
        self._changed()
        if code == _STEP_NOT_FINITE:
            raise SimulationError(
                f"flexible body: non-finite modal state after the step from t={t!r} (H={H!r})"
            )
        self._wrench_ok = True  # the core left the wrench at the new state
        return code == _STEP_QUIET, rows

    def core_args(self, H: float) -> tuple:
        """(handle, propagator for H or empty, micro steps): the body's arguments to the C
        core's exchange step (`exchange_step`, the loop of macro steps), its wrench made
        current (the power at the step's start)."""
        self._require_init()
        if not (math.isfinite(H) and H > 0):
            raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
        if not self._wrench_ok:
            self.wrench()
        return (self._handle, self._propagator(H) if self._grounded else _NO_TAUS,
                self.micro_steps)

    def core_stepped(self) -> None:
        """A C core's loop took exchange steps: the state changed, the wrench is current."""
        self._changed()
        self._wrench_ok = True

    def _past(self, t: float, H: float, extrapolation) -> tuple[np.ndarray, np.ndarray]:
        """Checks of a step from t by H; the past motions' times (relative to t) and rows."""
        self._require_init()
        if not (math.isfinite(H) and H > 0):
            raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
        s = self._state
        if abs(t - s[T]) > 1e-9 * max(1.0, abs(t)):
            raise SimulationError(
                f"step: time {t!r} does not match the flexible body's time {s[T]!r}"
            )
        past = extrapolation or ()
        if not past:
            return _NO_TAUS, _NO_ROWS
        if len(past) > 2:
            raise ValueError(
                f"extrapolation: expected at most 2 past motions, got {len(past)}")
        taus = [-(i + 1) * H if m.time is None else float(m.time) - t
                for i, m in enumerate(past)]
        ordered = sorted([0.0, *taus])
        if any(b - a <= 1e-12 * H for a, b in itertools.pairwise(ordered)):
            raise ValueError(f"extrapolation: past motions at coincident times {[0.0, *taus]}")
        return np.array(taus), np.array([m.as_array() for m in past])

    def _propagator(self, H: float) -> np.ndarray:
        """The grounded modes' exact propagator for step H (computed once per H)."""
        p = self._propagators.get(H)
        if p is None:
            if len(self._propagators) >= _PROPAGATORS_KEPT:
                self._propagators.clear()
            p = propagator(self._w, self.model.n_boundary, H)
            self._propagators[H] = p
        return p

    def set_modal_state(self, eta, eta_dot) -> None:
        """Set the modal coordinates η (k,) and rates η̇ (k,) (e.g. an initial deformation)."""
        self._require_init()
        k = self._k
        eta, eta_dot = np.asarray(eta, float), np.asarray(eta_dot, float)
        if eta.shape != (k,) or eta_dot.shape != (k,):
            raise ValueError(f"expected {k} modal coordinates and rates, got {eta.shape}, "
                             f"{eta_dot.shape}")
        self._state[ETA:ETA + k] = eta
        self._state[ETA + k:] = eta_dot
        self._changed()

    # ------------------------------------------------------------------ outputs

    def wrench(self) -> np.ndarray:
        """[force (3) N, moment (3) N·m] on the rigid body at the interface point, inertial.

        Computed once per state (an exchange asks several times)."""
        self._require_init()
        if not self._wrench_ok:
            if self._grounded:
                _core.grounded_body_wrench(self._handle)
            else:
                _core.floating_body_wrench(self._handle)
            self._wrench_ok = True
        return self._wrench.copy()

    def _wrench_at(self, s: np.ndarray) -> np.ndarray:
        """The wrench at a state vector s (this body's, or a copy with another frame)."""
        if self._grounded:
            return grounded_wrench(s, self._r0, self._comps, self._w, self._fb, self._gacc,
                                   self._gb)
        return floating_wrench(s, self.gravity, self._axis, self._w, *self._fl)

    def added_mass(self) -> np.ndarray:
        """Instantaneous added mass M_a (6, 6), inertial: ∂wrench/∂[a_p; α_p] = −M_a at the
        current state (exact: the wrench is linear in the interface accelerations)."""
        self._require_init()
        s = self._state.copy()
        s[A : AL + 3] = 0.0
        base = self._wrench_at(s)
        columns = []
        for i in range(6):
            s[A : AL + 3] = 0.0
            s[A + i] = 1.0
            columns.append(base - self._wrench_at(s))
        m = np.column_stack(columns)
        return 0.5 * (m + m.T)

    def boundary_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Grounded: the boundary DOFs' displacement (m, rad) and velocity (m/s, rad/s), each
        (n_b,), structure-frame components, at the current frame."""
        rows = boundary(self._state, self._r0, self._comps)
        return rows[0].copy(), rows[1].copy()

    def node_kinematics(self) -> np.ndarray:
        """The flexible side's joint node: position (3), quaternion (4), velocity (3), ω (3)."""
        self._require_init()
        return self._state[R:A].copy()

    def frame_accelerations(self) -> np.ndarray:
        """The interface accelerations (6,) the body currently assumes: [a (3) m/s², α (3)
        rad/s²], inertial."""
        self._require_init()
        return self._state[A : AL + 3].copy()

    def output_nodes(self) -> dict[str, np.ndarray]:
        """Named output nodes -> inertial position (3,), m."""
        self._require_init()
        model = self.model
        s = self._state
        if not model.output_names:
            return {}
        k = self._k
        if self._grounded:
            coords = np.concatenate((self.boundary_state()[0], s[ETA : ETA + k]))
            origin, rot = s[PREF : PREF + 3], self._r0
        else:
            coords = np.concatenate((np.zeros(model.n_boundary), s[ETA : ETA + k]))
            origin = s[R : R + 3]
            rot = rotation_matrix(s[Q : Q + 4]) @ model.axis_rotation
        local = model.output_positions + model.output_rows @ coords
        pos = origin + local @ rot.T
        return {name: pos[i].copy() for i, name in enumerate(model.output_names)}

    def output_displacements(self) -> dict[str, np.ndarray]:
        """Floating: named output nodes -> elastic displacement (3,), m, in the floating frame's
        structure axes (x along the undeformed beam from the clamp): (u_x, u_y, u_z), the
        transverse components being the deflection from the undeformed axis."""
        self._require_init()
        if self._grounded:
            raise SimulationError("output_displacements: floating bodies only")
        model = self.model
        coords = np.concatenate((np.zeros(model.n_boundary), self._state[ETA:ETA + self._k]))
        local = model.output_rows @ coords
        return {name: local[i].copy() for i, name in enumerate(model.output_names)}

    def interface_jacobian(self) -> tuple[np.ndarray, np.ndarray]:
        """(dF/dx, dF/dv), each (6, 6), of :meth:`wrench` w.r.t. the interface point.

        x = [position (3); small rotation (3)], v = [velocity (3); angular velocity (3)],
        inertial; instantaneous (accelerations held).

        Grounded: the boundary moves while the interior stays where it is (its configuration
        and velocity, projected on the kept modes in the mass metric, are frozen):
        ``d[u_b; eta] = Z du_b`` with ``Z = [I; -M_ee^-1 M_eb]``, so ``dF/dx = -Z^T K Z`` and
        ``dF/dv = -Z^T C Z`` (rotated to inertial). For the two-mass structure this is exactly
        ``-kc`` and ``-dc``. Floating: central differences of the wrench at frozen (eta, eta');
        position and velocity do not enter (zero columns), the rotation enters through gravity
        and the direction of the deformation, the angular velocity through centrifugal and
        Coriolis terms.
        """
        self._require_init()
        if self._grounded:
            r6 = np.zeros((6, 6))
            r6[:3, :3] = self._r0
            r6[3:, 3:] = self._r0
            sel = r6[:, self._comps]
            return -sel @ self._jac_k @ sel.T, -sel @ self._jac_c @ sel.T
        s = self._state
        q, w = s[Q : Q + 4].copy(), s[W : W + 3].copy()
        dx = np.zeros((6, 6))
        dv = np.zeros((6, 6))
        eps = 1e-6
        probe = s.copy()

        def at(q_probe, w_probe):
            probe[Q : Q + 4] = q_probe
            probe[W : W + 3] = w_probe
            return self._wrench_at(probe)

        for i in range(3):
            e = np.zeros(3)
            e[i] = eps
            qp = multiply(from_rotation_vector(e), q)
            qm = multiply(from_rotation_vector(-e), q)
            dx[:, 3 + i] = (at(qp, w) - at(qm, w)) / (2 * eps)
            scale = eps * max(1.0, float(np.linalg.norm(w)))
            e[i] = scale
            dv[:, 3 + i] = (at(q, w + e) - at(q, w - e)) / (2 * scale)
        return dx, dv

    def _require_init(self) -> None:
        if self._state[INIT] != 1.0:
            raise SimulationError("flexible body: initialize(t0, motion) has not been called")
