"""Maximal-coordinate equations of motion: Newton–Euler per body, joints by Lagrange
multipliers, Baumgarte stabilisation and projection (computed by the C core,
`librbcosim/rigid/`, through `rbcosim.maximal.kernels.handle`).

Generalized velocities are ν = [v_i, ω^b_i] per body (centre-of-mass velocity, inertial;
angular velocity, body frame). The multiplier system J M⁻¹ Jᵀ is solved by a banded Cholesky
factorisation in reverse Cuthill–McKee order (`rbcosim.maximal.kernels.multipliers`), dense-like for a
small mechanism and linear in size for a chain. Interface-point inputs of a co-simulation
(wrench polynomials, interface Jacobians, added mass) live in `tables.points` and are read
inside the C step.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.errors import DivergedError, SimulationError, SingularJacobianError
from rbcosim.maximal.constraints import Constraints, JacobianAssembler
from rbcosim.maximal.kernels import equations as eq
from rbcosim.maximal.kernels import handle as kernel
from rbcosim.maximal.kernels.forces import force_table
from rbcosim.maximal.kernels.interface_points import add_point_loads, point_inputs, point_wrenches
from rbcosim.maximal.kernels.multipliers import schur_pattern
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Model
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

#: Baumgarte defaults (1/s): critically damped constraint error, time constant 0.1 s.
DEFAULT_BAUMGARTE = (10.0, 10.0)
#: Redundant rows are searched (pivoted QR of the dense Jacobian) up to this many rows.
REDUNDANCY_CHECK_ROWS = 3000


def independent_rows(J: np.ndarray, tol: float = 1e-9) -> tuple[np.ndarray, int]:
    """Indices of a maximal set of independent rows of J, and the rank (pivoted QR of Jᵀ)."""
    import scipy.linalg as sla  # loaded only when a loop needs the check

    if J.shape[0] == 0:
        return np.arange(0), 0
    _, r, piv = sla.qr(J.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > tol * max(1.0, diag[0]))) if diag.size else 0
    return np.sort(piv[:rank]), rank


def _closes_a_loop(model: Model) -> bool:
    """True when the joints (drivers aside) connect some pair of bodies, ground included,
    along two paths: a closed kinematic loop."""
    parent = list(range(model.n_bodies + 1))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for joint in model.joints:
        if joint.kind == "driver":
            continue
        a, b = root(joint.marker1.body), root(joint.marker2.body)
        if a == b:
            return True
        parent[a] = b
    return False


class MaximalSystem:
    """Equations of motion of a model in maximal coordinates; all methods are f(state).

    `tables` holds everything the C core reads; `tables.points` the interface-point
    inputs a co-simulation writes between steps (see `rbcosim.cosim.rigid_side`)."""

    def __init__(self, model: Model, *, baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE,
                 drop_redundant: bool = True):
        self.model = model
        self.alpha, self.beta = baumgarte
        self.constraints = Constraints(model)
        n = model.n_bodies
        self.mass = np.array([b.mass for b in model.bodies], dtype=float).reshape(n)
        self.inertia = np.array([b.inertia for b in model.bodies], dtype=float).reshape(n, 3, 3)
        blocks = np.zeros((n + 1, 6, 6))
        blocks[1:, :3, :3] = self.mass[:, None, None] * np.eye(3)
        blocks[1:, 3:, 3:] = self.inertia
        minv = np.zeros_like(blocks)
        minv[1:] = np.linalg.inv(blocks[1:]) if n else minv[1:]
        self.rows, self.redundant_rows = self._kept_rows(drop_redundant)
        table = self.constraints.table
        pattern = schur_pattern(table.row_bodies, self.rows, n)
        pts = point_inputs([p.body for p in model.points], [p.position for p in model.points],
                           [quat.from_matrix(p.axes) for p in model.points])
        self.tables = eq.MaximalTables(
            mass_blocks=blocks, minv=minv, forces=force_table(model), rows=table,
            pattern=pattern, alpha=float(self.alpha), beta=float(self.beta), points=pts)
        self.work = eq.workspace(n, self.constraints.n_rows, pattern, len(model.points))
        self.handle = kernel.make_handle(self.tables, self.work)
        self._forces = make_handle("forces", self.tables.forces)

    def _kept_rows(self, drop_redundant: bool) -> tuple[np.ndarray, list[str]]:
        """Indices of the constraint rows solved for, and the labels of the dropped ones:
        rows that vanish at the initial state (a degenerate joint), and, when the joints close
        a loop, rows that depend on others (pivoted QR of the dense Jacobian, for models of up
        to REDUNDANCY_CHECK_ROWS rows). Joints that form a tree have independent rows."""
        c = self.constraints
        every = np.arange(c.n_rows, dtype=np.int64)
        if not (drop_redundant and c.n_rows):
            return every, []
        values = c.evaluate(Kinematics.of(State.initial(self.model)))
        norms = np.sqrt(np.sum(values.ja**2, axis=1) + np.sum(values.jb**2, axis=1))
        keep = every[norms > 1e-12 * max(1.0, float(norms.max()))]
        if _closes_a_loop(self.model) and keep.size <= REDUNDANCY_CHECK_ROWS:
            full = JacobianAssembler(values.a[keep], values.b[keep], self.model.n_bodies,
                                     sparse=False)
            sub = type(values)(*(x[keep] for x in (values.phi, values.phi_t, values.gamma,
                                                    values.a, values.b, values.ja, values.jb)))
            independent, _ = independent_rows(full.assemble(sub))
            keep = keep[independent]
        dropped = sorted(set(every.tolist()) - set(keep.tolist()))
        return keep.astype(np.int64), [c.row_labels[i] for i in dropped]

    @property
    def points(self):
        """The interface-point inputs (arrays written by the co-simulation's rigid side)."""
        return self.tables.points

    # --- forces -----------------------------------------------------------------------------
    def applied(self, t: float, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """Applied force (n,3) N at the centres of mass and torque (n,3) N·m, inertial:
        gravity, loads, springs, torsion springs and the interface-point inputs."""
        n = self.model.n_bodies
        force, torque = np.zeros((n, 3)), np.zeros((n, 3))
        _core.applied_forces(self._forces, float(t), kin.r, kin.R, kin.v, kin.w_inertial, force,
                             torque)
        if self.model.points:
            loads = np.hstack([force, torque])
            add_point_loads(self.points, kin, self.point_wrenches(t, kin), loads)
            force, torque = loads[:, :3], loads[:, 3:]
        return force, torque

    def point_wrenches(self, t: float, kin: Kinematics) -> np.ndarray:
        """(k, 6) wrench inputs at the interface points at time t, inertial."""
        out = np.zeros((len(self.model.points), 6))
        point_wrenches(self.points, t, kin, out)
        return out

    def point_outputs(self, state: State, out: np.ndarray) -> None:
        """The interface points' outputs (k, 13) at `state` into out: position m, attitude
        (q0..q3), velocity m/s, angular velocity rad/s, inertial."""
        kernel.point_outputs_of(self.handle, state.vector, out)

    def point_state(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """(k, 19) outputs and total wrench (input − M_a [a_p; α_p], N and N·m) of the points
        at `state` under the current inputs, and their accelerations (k, 6) m/s², rad/s²;
        inertial."""
        k = len(self.model.points)
        out, acc = np.empty((k, 19)), np.empty((k, 6))
        self.check_status(kernel.points_now(self.handle, state.t, state.vector, out, acc),
                          state.t)
        return out, acc

    # --- equations of motion ----------------------------------------------------------------
    def check_status(self, status: int, t: float) -> None:
        """Raise the error a C core status at time t (s) stands for (none for success)."""
        if status == eq.SINGULAR:
            raise SingularJacobianError(
                f"the joints' Jacobian lost rank at t = {t:.6g} s (a kinematic singularity, "
                "or constraints that became redundant): J M⁻¹ Jᵀ is singular")
        if status == eq.NO_CONVERGENCE:
            raise SimulationError(f"sdirk2: Newton iteration did not converge at t = {t:.6g} s")

    def accelerations(self, state: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(v̇ (n,3) m/s² inertial, ω̇^b (n,3) rad/s², λ (m,) of the kept rows) at `state`."""
        acc = np.empty((self.model.n_bodies, 6))
        self.check_status(kernel.accelerations(self.handle, state.t, state.vector, acc), state.t)
        lam = np.empty(self.rows.size)
        lam[np.searchsorted(self.rows, self.tables.pattern.rows[:, 0])] = self.work.solve[1]
        return acc[:, :3], acc[:, 3:], lam

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ for y = [r, q, v, ω^b] (State.to_vector layout)."""
        out = np.empty(y.size)
        self.check_status(kernel.derivative(self.handle, t, np.ascontiguousarray(y, dtype=float), out), t)
        return out

    def derivative_and_power(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ for y = [r, q, v, ω^b, W]: the state's derivative and dW/dt, the power of
        `power` (an adaptive integrator's quadrature state for the work)."""
        out = np.empty(y.size)
        self.check_status(kernel.derivative_and_power(
            self.handle, t, np.ascontiguousarray(y, dtype=float), out), t)
        return out

    # --- projection onto the constraint manifold ----------------------------------------------
    def project(self, state: State, tol: float = 1e-12, max_iter: int = 8) -> float:
        """Project positions (Newton, mass-weighted minimum norm, to ‖Φ‖∞ ≤ tol over the kept
        rows), then velocities onto Φ̇ = 0; returns the final ‖Φ‖∞."""
        y = state.to_vector()
        status, worst = kernel.project(self.handle, state.t, y, tol, max_iter)
        self.check_status(status, state.t)
        state.vector[:] = y
        return float(worst)

    # --- diagnostics --------------------------------------------------------------------------
    def drift(self, state: State) -> tuple[float, float]:
        """(‖Φ‖∞, ‖Φ_q v + Φ_t‖∞) at `state`, over all constraint rows."""
        phi, phidot = kernel.drift(self.handle, state.t, state.vector)
        return float(phi), float(phidot)

    def energy(self, state: State) -> float:
        """Kinetic + gravitational + spring potential energy, J."""
        return float(kernel.energy(self.handle, state.vector)[0])

    def power(self, t: float, y: np.ndarray) -> float:
        """dE/dt (W) of the energy of `energy` at y (State.to_vector layout): the power of
        loads, dampers and drivers (`librbcosim/rigid/equations.c`, `forces.c`)."""
        status, p = kernel.power(self.handle, t, np.ascontiguousarray(y, dtype=float))
        self.check_status(status, t)
        return float(p)

    def kinetic_energy(self, state: State) -> float:
        """Kinetic energy, J."""
        return float(kernel.energy(self.handle, state.vector)[1])

    def check_finite(self, state: State) -> None:
        """Raise DivergedError naming the time and the first body with a non-finite value."""
        if state.is_finite():
            return
        for i, name in enumerate(self.model.body_names):
            row = np.concatenate([state.r[i], state.q[i], state.v[i], state.w[i]])
            if not np.isfinite(row).all():
                raise DivergedError(f"diverged: non-finite state at t = {state.t:.6g} s in "
                                    f"body {name!r}")
        raise DivergedError(f"diverged: non-finite state at t = {state.t:.6g} s")
