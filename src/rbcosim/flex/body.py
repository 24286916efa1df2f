"""FlexBody: the runtime solver of a Craig–Bampton body coupled at one interface point.

Contract (co-simulation, fixed macro steps):

1. ``initialize(t0, motion)`` puts the frame (floating) or the boundary reference (grounded) at
   the interface point; ``eta = 0``, undeformed, at rest relative to the frame.
2. ``step(t, H, motion, extrapolation)`` advances t -> t + H. The frame is first re-synchronised
   to the rigid side's ``motion`` at t (the rigid side owns the joint's kinematics). Inside the
   step the interface accelerations (linear and angular, inertial) are a polynomial in time:
   constant (no ``extrapolation``), or through the accelerations of 1 or 2 past motions (order
   1, 2). Velocities and positions are their exact integrals, the orientation is integrated with
   the modal coordinates by classic RK4 with ``micro_steps`` steps.
3. ``wrench()``, ``node_kinematics()``, ``output_nodes()``, ``interface_jacobian()`` report at
   the current time from the flexible side's own frame (its end-of-step extrapolation, or the
   motion given to ``set_motion``).

Equations, structure frame (components along the beam axes, rotating with the frame):

- grounded: ``M_ee eta'' + C_ee eta' + K_ee eta = -(M_eb u_b'' + C_eb u_b' + K_eb u_b)``; the
  force on the rigid body is ``-f_b`` with ``f_b`` the boundary rows of the reduced equations
  (``M_bb u_b'' + M_be eta'' + C_bb u_b' + C_be eta' + K_bb u_b + K_be eta``). Rotational
  boundary DOFs use the rotation vector from the initial orientation (small-rotation model:
  inside a step it is integrated as ``theta' = omega``).
- floating (linear floating-frame-of-reference): with ``b = a_p - g``, alpha, omega in the
  frame, ``A = [alpha]x + [omega]x [omega]x`` and physical ``u = Phi eta``, the absolute
  acceleration of the material minus gravity, as a field-consistent nodal vector, is
  ``acc = P(b, A) + Phi eta'' + 2 D([omega]x) Phi eta' + D(A) Phi eta``, where ``P`` maps an
  affine field to nodal values (:func:`rbcosim.flex.model.rotation_dofs`) and ``D(B)`` applies
  ``B`` to each node's translation and maps its rotation to ``rotation_dofs(B [theta]x)``. The
  modes obey ``Phi^T (M acc) + C_ee eta' + K_ee eta = 0``. The force and moment the rigid body
  receives at the point are minus the beam's rate of change of momentum less its weight. The
  force uses the first-moment invariants (``S = P_t^T M Phi``, exact for the continuum):
  ``F = -(m b + A m r_cm + S eta'' + 2 w x S eta' + A S eta)``, so linear momentum balance holds
  identically. The moment uses the nodal form
  ``M = -sum_i ((X_i + u_i) x f_t,i + f_r,i)`` with ``f = M_phys acc`` (virtual work of a rigid
  rotation about the point, deformed lever arms); its elastic Coriolis/centrifugal part carries
  the nodal-map approximation of ``D`` (axial strain of rotated bending fields is dropped), plus
  the gyroscopic term of the sections' torsional inertia ``-omega x (J omega)``. For the rigid
  part (``eta = 0``) this is exact: ``F = -m (a_p + A r_cm - g)``,
  ``M = -(m r_cm x (a_p - g) + I_p alpha + omega x I_p omega)`` with the model's inertia I_p.
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.flex.kinematics import (
    InterfaceMotion,
    quat_conjugate,
    quat_from_rotation_vector,
    quat_multiply,
    rotation_matrix,
    rotation_vector,
    skew,
)
from rbcosim.flex.model import FlexModel, rotation_dofs

# Layout of the state vector (float64): time, frame (r, q, v, w, a, alpha), reference pose
# (p_ref, q_ref), initialised flag, then eta (k), eta_dot (k).
_T, _R, _Q, _V, _W, _A, _AL, _PREF, _QREF, _INIT, _ETA = 0, 1, 4, 8, 11, 14, 17, 20, 23, 27, 28


class FlexBody:
    """Craig–Bampton flexible body at one interface point (see the module docstring).

    Args:
        model: the reduced model.
        gravity: inertial gravity acceleration, (3,), m/s².
        micro_steps: RK4 steps per macro step (>= 1).
    """

    def __init__(self, model: FlexModel, *, gravity=(0.0, 0.0, -9.81), micro_steps: int = 10):
        if isinstance(micro_steps, bool) or not isinstance(micro_steps, int) or micro_steps < 1:
            raise ValueError(f"micro_steps: expected an integer >= 1, got {micro_steps!r}")
        g = np.asarray(gravity, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: expected 3 finite numbers, got {gravity!r}")
        self.model = model
        self.gravity = g
        self.micro_steps = micro_steps
        nb = model.n_boundary
        k = model.n_modes
        self._k = k
        self._comps = np.array(model.boundary_components, dtype=np.int64)
        m, c, kk = model.mass, model.damping, model.stiffness
        if model.attachment == "grounded":
            m_ee = m[nb:, nb:]
            minv = np.linalg.inv(m_ee) if k else np.zeros((0, 0))
            # eta'' = W @ [eta, eta', u_b, u_b', u_b'']
            self._w = -minv @ np.hstack(
                [kk[nb:, nb:], c[nb:, nb:], kk[nb:, :nb], c[nb:, :nb], m[nb:, :nb]]
            )
            # f_b = B @ [u_b, u_b', u_b'', eta, eta', eta'']
            self._fb = np.hstack(
                [kk[:nb, :nb], c[:nb, :nb], m[:nb, :nb], kk[:nb, nb:], c[:nb, nb:], m[:nb, nb:]]
            )
            # Boundary motion at a frozen interior (mass-weighted projection on the kept modes):
            # d[u_b; eta] = Z du_b, Z = [I; -M_ee^-1 M_eb].
            self._interior_shift = minv @ m[nb:, :nb]
            z = np.vstack([np.eye(nb), -self._interior_shift])
            self._jac_k = z.T @ kk @ z
            self._jac_c = z.T @ c @ z
        else:
            self._w = model.floating.ode_matrix
        self._state = np.zeros(_ETA + 2 * k)
        self._r0 = np.eye(3)  # structure axes of a grounded body (derived from q_ref)
        self._wrench_memo: tuple[bytes, np.ndarray] = (b"", np.zeros(6))

    # ------------------------------------------------------------------ state

    @property
    def time(self) -> float:
        """Current time, s."""
        return float(self._state[_T])

    @property
    def modal_coordinates(self) -> np.ndarray:
        """eta, shape (k,): fixed-interface modal coordinates (mass-normalised modes)."""
        return self._state[_ETA : _ETA + self._k].copy()

    @property
    def modal_velocities(self) -> np.ndarray:
        """d(eta)/dt, shape (k,)."""
        return self._state[_ETA + self._k :].copy()

    def get_state(self) -> bytes:
        """The complete solver state as bytes (little-endian float64)."""
        return self._state.astype("<f8").tobytes()

    def set_state(self, blob: bytes) -> None:
        """Restore a state from :meth:`get_state`; stepping again reproduces the same bits."""
        s = np.frombuffer(blob, dtype="<f8")
        if s.shape != self._state.shape:
            raise ValueError(
                f"blob: expected {self._state.size} float64 values for this model, got {s.size}"
            )
        self._state = s.astype(np.float64).copy()
        self._update_axes()

    def _update_axes(self) -> None:
        if self.model.structure_axes == "point":
            self._r0 = rotation_matrix(self._state[_QREF : _QREF + 4]) @ self.model.axis_rotation
        else:
            self._r0 = np.eye(3)

    # ------------------------------------------------------------------ driving

    def initialize(self, t0: float, motion: InterfaceMotion) -> None:
        """Start at ``t0`` with the frame / boundary reference at ``motion``; eta = 0, at rest."""
        arr = motion.as_array()
        s = np.zeros_like(self._state)
        s[_T] = float(t0)
        s[_R:_PREF] = arr
        s[_Q : _Q + 4] /= np.linalg.norm(s[_Q : _Q + 4])
        s[_PREF : _PREF + 3] = s[_R : _R + 3]
        s[_QREF : _QREF + 4] = s[_Q : _Q + 4]
        s[_INIT] = 1.0
        self._state = s
        self._update_axes()

    def set_motion(self, motion: InterfaceMotion) -> None:
        """Re-synchronise the frame to the rigid side's motion at the current time (no advance).

        Grounded: the interior keeps its physical position and velocity while the boundary
        moves to the rigid side's values (η -= M_ee⁻¹ M_eb Δu_b, exact for a boundary without
        mass coupling to the interior); otherwise the re-synchronisation would move the
        interior by the extrapolation error every macro step.
        """
        self._require_init()
        arr = motion.as_array()
        regrounding = self.model.attachment == "grounded" and self._k
        if regrounding:
            before = self._boundary_state()
        self._state[_R:_PREF] = arr
        self._state[_Q : _Q + 4] /= np.linalg.norm(arr[3:7])
        if regrounding:
            du, dud = (new - old for new, old in zip(self._boundary_state(), before))
            k = self._k
            self._state[_ETA : _ETA + k] -= self._interior_shift @ du
            self._state[_ETA + k :] -= self._interior_shift @ dud

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
        self._require_init()
        if not (math.isfinite(H) and H > 0):
            raise ValueError(f"H: expected a positive finite macro step, got {H!r}")
        if abs(t - self._state[_T]) > 1e-9 * max(1.0, abs(t)):
            raise SimulationError(
                f"step: time {t!r} does not match the flexible body's time {self._state[_T]!r}"
            )
        self.set_motion(motion)
        coeff_a, coeff_al = _acceleration_polynomial(t, H, motion, extrapolation or [])
        s = self._state
        n = self.micro_steps
        h = H / n
        tau = np.arange(2 * n + 1) * (0.5 * h)
        r, v, a = _integrate_polynomial(tau, s[_R : _R + 3], s[_V : _V + 3], coeff_a)
        theta_in, w, al = _integrate_polynomial(tau, np.zeros(3), s[_W : _W + 3], coeff_al)
        # q' = Omega(w(tau)) q / 2 is linear: its RK4 is a product of per-micro-step matrices.
        om = 0.5 * _omega_matrices(w)
        om1, om2, om4 = om[0:-1:2], om[1::2], om[2::2]
        p_q, _, stage_q = _rk4_linear(om1, om2, om2, om4, None, None, None, None, h)
        qs = np.empty((n + 1, 4))
        qs[0] = s[_Q : _Q + 4]
        for i in range(n):
            qs[i + 1] = p_q[i] @ qs[i]
        k = self._k
        if k:
            y = s[_ETA:].copy()
            if self.model.attachment == "grounded":
                theta_start = rotation_vector(
                    quat_multiply(qs[0], quat_conjugate(s[_QREF : _QREF + 4]))
                )
                r0t = self._r0.T
                c = self._comps
                ub = np.hstack([(r - s[_PREF : _PREF + 3]) @ r0t, (theta_in + theta_start) @ r0t])
                ubd = np.hstack([v @ r0t, w @ r0t])
                ubdd = np.hstack([a @ r0t, al @ r0t])
                drive = np.hstack([ub[:, c], ubd[:, c], ubdd[:, c]])
                f = np.zeros((2 * n + 1, 2 * k))
                f[:, k:] = drive @ self._w[:, 2 * k :].T
                a_sys = np.zeros((2 * k, 2 * k))
                a_sys[:k, k:] = np.eye(k)
                a_sys[k:] = self._w[:, : 2 * k]
                a_sys = np.broadcast_to(a_sys, (n, 2 * k, 2 * k))
                p_y, c_y, _ = _rk4_linear(
                    a_sys, a_sys, a_sys, a_sys, f[0:-1:2], f[1::2], f[1::2], f[2::2], h
                )
            else:
                # Orientation at each RK4 stage (n steps x 4 stages) -> frame-component inputs.
                q_stages = np.einsum("nsij,nj->nsi", stage_q, qs[:-1])
                idx = np.stack(
                    [
                        np.arange(0, 2 * n, 2),
                        np.arange(1, 2 * n, 2),
                        np.arange(1, 2 * n, 2),
                        np.arange(2, 2 * n + 1, 2),
                    ],
                    axis=1,
                ).ravel()
                rs = _rotation_matrices(q_stages.reshape(-1, 4)) @ self.model.axis_rotation
                inputs = np.stack([w[idx], al[idx], a[idx] - self.gravity], axis=1)
                loc = np.einsum("sji,smj->smi", rs, inputs)  # R_s^T x, (4n, 3, 3)
                a_st, f_st = self._floating_linear(loc[:, 0], loc[:, 1], loc[:, 2])
                a_st = a_st.reshape(n, 4, 2 * k, 2 * k)
                f_st = f_st.reshape(n, 4, 2 * k)
                p_y, c_y, _ = _rk4_linear(
                    a_st[:, 0],
                    a_st[:, 1],
                    a_st[:, 2],
                    a_st[:, 3],
                    f_st[:, 0],
                    f_st[:, 1],
                    f_st[:, 2],
                    f_st[:, 3],
                    h,
                )
            for i in range(n):
                y = p_y[i] @ y + c_y[i]
        q = qs[-1] / np.linalg.norm(qs[-1])
        if not (np.all(np.isfinite(q)) and (k == 0 or np.all(np.isfinite(y)))):
            raise SimulationError(
                f"flexible body: non-finite modal state after the step from t={t!r} (H={H!r})"
            )
        s[_T] = t + H
        s[_R : _R + 3] = r[-1]
        s[_Q : _Q + 4] = q
        s[_V : _V + 3] = v[-1]
        s[_W : _W + 3] = w[-1]
        s[_A : _A + 3] = a[-1]
        s[_AL : _AL + 3] = al[-1]
        if k:
            s[_ETA:] = y

    def _floating_linear(self, ws, als, bs):
        """Stage systems y' = A y + f, y = [eta; eta'], from frame inputs, each (m, 3)."""
        k = self._k
        wmat = self._w
        m = ws.shape[0]
        ww = (ws[:, :, None] * ws[:, None, :]).reshape(m, 9)
        o = 2 * k
        w_b, w_al, w_ww = wmat[:, o : o + 3], wmat[:, o + 3 : o + 6], wmat[:, o + 6 : o + 15]
        o += 15
        g2 = wmat[:, o : o + 3 * k].reshape(k, 3, k)
        g1 = wmat[:, o + 3 * k : o + 6 * k].reshape(k, 3, k)
        hh = wmat[:, o + 6 * k : o + 15 * k].reshape(k, 9, k)
        a_sys = np.zeros((m, 2 * k, 2 * k))
        a_sys[:, :k, k:] = np.eye(k)
        a_sys[:, k:, :k] = (
            wmat[:, :k] + np.einsum("mj,ijl->mil", als, g1) + np.einsum("mj,ijl->mil", ww, hh)
        )
        a_sys[:, k:, k:] = wmat[:, k : 2 * k] + np.einsum("mj,ijl->mil", ws, g2)
        f = np.zeros((m, 2 * k))
        f[:, k:] = bs @ w_b.T + als @ w_al.T + ww @ w_ww.T
        return a_sys, f

    # ------------------------------------------------------------------ outputs

    def wrench(self) -> np.ndarray:
        """[force (3) N, moment (3) N·m] on the rigid body at the interface point, inertial.

        Remembered for the last state it was computed at (an exchange asks several times)."""
        self._require_init()
        s = self._state
        key = s.tobytes()
        if self._wrench_memo[0] != key:
            self._wrench_memo = (key, self._wrench_at(
                s[_Q : _Q + 4], s[_W : _W + 3], s[_AL : _AL + 3], s[_A : _A + 3],
                s[_R : _R + 3], s[_V : _V + 3]))
        return self._wrench_memo[1].copy()

    def added_mass(self) -> np.ndarray:
        """Instantaneous added mass M_a (6, 6), inertial: ∂wrench/∂[a_p; α_p] = −M_a at the
        current state (exact: the wrench is linear in the interface accelerations)."""
        self._require_init()
        s = self._state
        q, w, r, v = s[_Q:_Q + 4], s[_W:_W + 3], s[_R:_R + 3], s[_V:_V + 3]
        z = np.zeros(3)
        base = self._wrench_at(q, w, z, z, r, v)
        columns = []
        for k in range(6):
            unit = np.zeros(6)
            unit[k] = 1.0
            columns.append(base - self._wrench_at(q, w, unit[3:], unit[:3], r, v))
        m = np.column_stack(columns)
        return 0.5 * (m + m.T)

    def _boundary_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Grounded: the boundary DOFs' displacement and velocity (n_b,) at the current frame."""
        s = self._state
        ub, ubd, _ = self._boundary(s[_Q:_Q + 4], s[_W:_W + 3], s[_AL:_AL + 3], s[_A:_A + 3],
                                    s[_R:_R + 3], s[_V:_V + 3])
        return ub, ubd

    def set_modal_state(self, eta, eta_dot) -> None:
        """Set the modal coordinates η (k,) and rates η̇ (k,) (e.g. an initial deformation)."""
        self._require_init()
        k = self._k
        eta, eta_dot = np.asarray(eta, float), np.asarray(eta_dot, float)
        if eta.shape != (k,) or eta_dot.shape != (k,):
            raise ValueError(f"expected {k} modal coordinates and rates, got {eta.shape}, "
                             f"{eta_dot.shape}")
        self._state[_ETA:_ETA + k] = eta
        self._state[_ETA + k:] = eta_dot

    def _wrench_at(self, q, w, al, a, r, v) -> np.ndarray:
        s = self._state
        k = self._k
        eta = s[_ETA : _ETA + k]
        etad = s[_ETA + k :]
        if self.model.attachment == "grounded":
            ub, ubd, ubdd = self._boundary(q, w, al, a, r, v)
            etadd = self._w @ np.concatenate((eta, etad, ub, ubd, ubdd)) if k else eta
            fb = self._fb @ np.concatenate((ub, ubd, ubdd, eta, etad, etadd))
            six = np.zeros(6)
            six[self._comps] = -fb
            return np.concatenate((self._r0 @ six[:3], self._r0 @ six[3:]))
        fl = self.model.floating
        rs = rotation_matrix(q) @ self.model.axis_rotation
        ws, als, bs = np.stack((w, al, a - self.gravity)) @ rs
        etadd = self._w @ _floating_z(ws, als, bs, eta, etad) if k else eta
        nodes = fl.nodes
        big_a = skew(als) + skew(ws) @ skew(ws)
        acc = np.empty((nodes.shape[0], 6))
        acc[:, :3] = bs + nodes @ big_a.T
        acc[:, 3:] = rotation_dofs(big_a)
        lever = nodes
        if k:
            u = (fl.modes @ eta).reshape(-1, 6)
            ud = (fl.modes @ etad).reshape(-1, 6)
            udd = (fl.modes @ etadd).reshape(-1, 6)
            wx = skew(ws)
            acc[:, :3] += udd[:, :3] + 2.0 * ud[:, :3] @ wx.T + u[:, :3] @ big_a.T
            acc[:, 3:] += (
                udd[:, 3:]
                + 2.0 * rotation_dofs(wx @ _skew_stack(ud[:, 3:]))
                + rotation_dofs(big_a @ _skew_stack(u[:, 3:]))
            )
            lever = nodes + u[:, :3]
        f = (fl.mass @ acc.ravel()).reshape(-1, 6)
        # Force from the exact first-moment form, so that it is minus the rate of change of the
        # momentum m v_p + w x (m r_cm + S eta) + S eta' (less the weight) for any eta(t).
        force = -(fl.total_mass * bs + big_a @ fl.first_moment)
        if k:
            s_e = fl.modal_first_moment
            force -= s_e @ etadd + 2.0 * np.cross(ws, s_e @ etad) + big_a @ (s_e @ eta)
        moment = -(
            np.cross(lever, f[:, :3]).sum(axis=0)
            + f[:, 3:].sum(axis=0)
            + np.cross(ws, fl.spin_inertia @ ws)
        )
        return np.concatenate((rs @ force, rs @ moment))

    def _boundary(self, q, w, al, a, r, v):
        s = self._state
        theta = rotation_vector(quat_multiply(q, quat_conjugate(s[_QREF : _QREF + 4])))
        r0t = self._r0.T
        c = self._comps
        ub = np.concatenate((r0t @ (r - s[_PREF : _PREF + 3]), r0t @ theta))[c]
        ubd = np.concatenate((r0t @ v, r0t @ w))[c]
        ubdd = np.concatenate((r0t @ a, r0t @ al))[c]
        return ub, ubd, ubdd

    def node_kinematics(self) -> np.ndarray:
        """The flexible side's joint node: position (3), quaternion (4), velocity (3), ω (3)."""
        self._require_init()
        return self._state[_R:_A].copy()

    def frame_accelerations(self) -> np.ndarray:
        """The interface accelerations (6,) the body currently assumes: [a (3) m/s², α (3)
        rad/s²], inertial."""
        self._require_init()
        return self._state[_A : _AL + 3].copy()

    def output_nodes(self) -> dict[str, np.ndarray]:
        """Named output nodes -> inertial position (3,), m."""
        self._require_init()
        model = self.model
        s = self._state
        if not model.output_names:
            return {}
        k = self._k
        if model.attachment == "grounded":
            ub = self._boundary(
                s[_Q : _Q + 4],
                s[_W : _W + 3],
                s[_AL : _AL + 3],
                s[_A : _A + 3],
                s[_R : _R + 3],
                s[_V : _V + 3],
            )[0]
            coords = np.concatenate((ub, s[_ETA : _ETA + k]))
            origin, rot = s[_PREF : _PREF + 3], self._r0
        else:
            coords = np.concatenate((np.zeros(model.n_boundary), s[_ETA : _ETA + k]))
            origin = s[_R : _R + 3]
            rot = rotation_matrix(s[_Q : _Q + 4]) @ model.axis_rotation
        local = model.output_positions + model.output_rows @ coords
        pos = origin + local @ rot.T
        return {name: pos[i].copy() for i, name in enumerate(model.output_names)}

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
        if self.model.attachment == "grounded":
            r6 = np.zeros((6, 6))
            r6[:3, :3] = self._r0
            r6[3:, 3:] = self._r0
            sel = r6[:, self._comps]
            return -sel @ self._jac_k @ sel.T, -sel @ self._jac_c @ sel.T
        s = self._state
        q, w, al, a = s[_Q : _Q + 4], s[_W : _W + 3], s[_AL : _AL + 3], s[_A : _A + 3]
        r, v = s[_R : _R + 3], s[_V : _V + 3]
        dx = np.zeros((6, 6))
        dv = np.zeros((6, 6))
        eps = 1e-6
        for i in range(3):
            e = np.zeros(3)
            e[i] = eps
            qp = quat_multiply(quat_from_rotation_vector(e), q)
            qm = quat_multiply(quat_from_rotation_vector(-e), q)
            dx[:, 3 + i] = (
                self._wrench_at(qp, w, al, a, r, v) - self._wrench_at(qm, w, al, a, r, v)
            ) / (2 * eps)
            scale = eps * max(1.0, float(np.linalg.norm(w)))
            e[i] = scale
            dv[:, 3 + i] = (
                self._wrench_at(q, w + e, al, a, r, v) - self._wrench_at(q, w - e, al, a, r, v)
            ) / (2 * scale)
        return dx, dv

    def _require_init(self) -> None:
        if self._state[_INIT] != 1.0:
            raise SimulationError("flexible body: initialize(t0, motion) has not been called")


def _floating_z(ws, als, bs, eta, etad) -> np.ndarray:
    ww = np.outer(ws, ws).ravel()
    return np.concatenate(
        (
            eta,
            etad,
            bs,
            als,
            ww,
            np.outer(ws, etad).ravel(),
            np.outer(als, eta).ravel(),
            np.outer(ww, eta).ravel(),
        )
    )


def _skew_stack(v: np.ndarray) -> np.ndarray:
    """[v_i]x for each row of v (n, 3) -> (n, 3, 3)."""
    out = np.zeros((v.shape[0], 3, 3))
    out[:, 0, 1], out[:, 0, 2] = -v[:, 2], v[:, 1]
    out[:, 1, 0], out[:, 1, 2] = v[:, 2], -v[:, 0]
    out[:, 2, 0], out[:, 2, 1] = -v[:, 1], v[:, 0]
    return out


def _acceleration_polynomial(t, h, motion, past) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients (order+1, 3) of a(tau), alpha(tau), tau = time - t, through past motions."""
    if len(past) > 2:
        raise ValueError(f"extrapolation: expected at most 2 past motions, got {len(past)}")
    taus = [0.0]
    acc = [np.asarray(motion.acceleration, float)]
    alp = [np.asarray(motion.angular_acceleration, float)]
    for i, m in enumerate(past):
        taus.append(-(i + 1) * h if m.time is None else float(m.time) - t)
        arr = m.as_array()
        acc.append(arr[13:16])
        alp.append(arr[16:19])
    taus = np.array(taus)
    if len(taus) > 1 and np.min(np.abs(np.diff(np.sort(taus)))) <= 1e-12 * h:
        raise ValueError(f"extrapolation: past motions at coincident times {taus.tolist()}")
    vander = np.vander(taus, increasing=True)
    return np.linalg.solve(vander, np.array(acc)), np.linalg.solve(vander, np.array(alp))


def _integrate_polynomial(tau, x0, v0, coeff):
    """x(tau), v(tau), a(tau) with a = sum c_n tau^n, each shape (len(tau), 3)."""
    x = x0 + np.outer(tau, v0)
    v = np.broadcast_to(v0, (tau.size, 3)).copy()
    a = np.zeros((tau.size, 3))
    for n, c in enumerate(coeff):
        p = tau**n
        a += np.outer(p, c)
        v += np.outer(p * tau / (n + 1), c)
        x += np.outer(p * tau * tau / ((n + 1) * (n + 2)), c)
    return x, v, a


def _omega_matrices(w: np.ndarray) -> np.ndarray:
    """Omega(w) with [0, w] ⊗ q = Omega(w) @ q, for each row of w (m, 3) -> (m, 4, 4)."""
    m = w.shape[0]
    out = np.zeros((m, 4, 4))
    wx, wy, wz = w[:, 0], w[:, 1], w[:, 2]
    out[:, 0, 1], out[:, 0, 2], out[:, 0, 3] = -wx, -wy, -wz
    out[:, 1, 0], out[:, 1, 2], out[:, 1, 3] = wx, -wz, wy
    out[:, 2, 0], out[:, 2, 1], out[:, 2, 3] = wy, wz, -wx
    out[:, 3, 0], out[:, 3, 1], out[:, 3, 2] = wz, -wy, wx
    return out


def _rotation_matrices(q: np.ndarray) -> np.ndarray:
    """R(q) for each row of q (m, 4), normalised here -> (m, 3, 3)."""
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    out = np.empty((q.shape[0], 3, 3))
    out[:, 0, 0] = 1 - 2 * (y * y + z * z)
    out[:, 0, 1] = 2 * (x * y - w * z)
    out[:, 0, 2] = 2 * (x * z + w * y)
    out[:, 1, 0] = 2 * (x * y + w * z)
    out[:, 1, 1] = 1 - 2 * (x * x + z * z)
    out[:, 1, 2] = 2 * (y * z - w * x)
    out[:, 2, 0] = 2 * (x * z - w * y)
    out[:, 2, 1] = 2 * (y * z + w * x)
    out[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def _rk4_linear(a1, a2, a3, a4, f1, f2, f3, f4, h):
    """Classic RK4 for y' = A(t) y + f(t), batched over the micro steps.

    a1..a4: stage matrices (n, d, d) at t_i, t_i + h/2 (stages 2 and 3), t_i + h; f1..f4:
    (n, d), or all None. Returns (P, c, S): y_{i+1} = P[i] @ y_i + c[i], and S (n, 4, d, d)
    mapping y_i to the four stage arguments (when f is None). Algebraically the textbook RK4.
    """
    n, d = a1.shape[0], a1.shape[1]
    eye = np.eye(d)
    k1 = a1
    s2 = eye + (0.5 * h) * k1
    k2 = a2 @ s2
    s3 = eye + (0.5 * h) * k2
    k3 = a3 @ s3
    s4 = eye + h * k3
    k4 = a4 @ s4
    p = eye + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)
    if f1 is None:
        stages = np.stack([np.broadcast_to(eye, (n, d, d)), s2, s3, s4], axis=1)
        return p, None, stages
    c1 = f1
    c2 = np.einsum("nij,nj->ni", a2, (0.5 * h) * c1) + f2
    c3 = np.einsum("nij,nj->ni", a3, (0.5 * h) * c2) + f3
    c4 = np.einsum("nij,nj->ni", a4, h * c3) + f4
    return p, (h / 6.0) * (c1 + 2.0 * (c2 + c3) + c4), None
