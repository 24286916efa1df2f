"""Maximal-coordinate equations of motion with Lagrange multipliers (index-1 form).

For each moving body, Newton–Euler in the body frame:  m v̇ = F,  I ω̇ + ω × I ω = τ^b.
Joints add  M ν̇ + Jᵀ λ = Q  and  J ν̇ = γ − 2α Φ̇ − β² Φ  (Baumgarte stabilization).
λ comes from the Schur complement  (J M⁻¹ Jᵀ) λ = J M⁻¹ Q − γ̃ , dense for small models and
scipy.sparse for large ones. The reaction force on the bodies is −Jᵀλ.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from rbcosim import quaternion as quat
from rbcosim.constraints import Constraints, ConstraintValues, JacobianAssembler, joint_coordinate
from rbcosim.errors import SimulationError
from rbcosim.kinematics import Kinematics
from rbcosim.linalg3 import cross
from rbcosim.model import Model
from rbcosim.state import State

#: Baumgarte defaults (1/s): critically damped constraint error, time constant 0.1 s.
DEFAULT_BAUMGARTE = (10.0, 10.0)
#: Use scipy.sparse above this many generalized velocities.
SPARSE_THRESHOLD = 120

#: Signature of an added-mass provider: kin -> (blocks (n,6,6), bias (n,6)), the extra mass
#: in each body's [v̇, ω̇^b] coordinates and the generalized force of its velocity terms.
AddedMassProvider = Callable[[Kinematics], tuple[np.ndarray, np.ndarray]]

#: Signature of an external load provider: (t, kin) -> (force (n,3) N inertial at the centre
#: of mass, torque (n,3) N·m inertial) for the moving bodies.
LoadProvider = Callable[[float, Kinematics], tuple[np.ndarray, np.ndarray]]


def independent_rows(J: np.ndarray, tol: float = 1e-9) -> tuple[np.ndarray, int]:
    """Indices of a maximal set of independent rows of J, and the rank (pivoted QR of Jᵀ)."""
    if J.shape[0] == 0:
        return np.arange(0), 0
    _, r, piv = sla.qr(J.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > tol * max(1.0, diag[0]))) if diag.size else 0
    return np.sort(piv[:rank]), rank


def scatter_matrix(bodies: np.ndarray, n_bodies: int) -> np.ndarray:
    """(n, k) one-hot matrix: S @ x adds rows x (k, ·) into their moving bodies (ground 0
    dropped); a matrix product is much cheaper than np.add.at for small k."""
    s = np.zeros((n_bodies, bodies.size))
    moving = bodies > 0
    s[bodies[moving] - 1, np.flatnonzero(moving)] = 1.0
    return s


def _spring_table(model: Model) -> dict:
    """The spring–dampers of a model as arrays (markers, constants, scatter matrices)."""
    springs = model.springs
    b1 = np.array([x.marker1.body for x in springs], dtype=int)
    b2 = np.array([x.marker2.body for x in springs], dtype=int)
    return {
        "b1": b1, "b2": b2,
        "s1": np.array([x.marker1.position for x in springs]).reshape(-1, 3),
        "s2": np.array([x.marker2.position for x in springs]).reshape(-1, 3),
        "k": np.array([x.stiffness for x in springs]),
        "c": np.array([x.damping for x in springs]),
        "free": np.array([x.free_length for x in springs]),
        "on1": scatter_matrix(b1, model.n_bodies), "on2": scatter_matrix(b2, model.n_bodies),
    }


class MaximalSystem:
    """Equations of motion of a model in maximal coordinates; all methods are f(state)."""

    def __init__(
        self,
        model: Model,
        *,
        baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE,
        drop_redundant: bool = True,
    ):
        self.model = model
        self.alpha, self.beta = baumgarte
        self.constraints = Constraints(model)
        n = model.n_bodies
        self.mass = np.array([b.mass for b in model.bodies])
        self.inertia = np.array([b.inertia for b in model.bodies]).reshape(n, 3, 3)
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.gravity_force = self.mass[:, None] * model.gravity
        self.external: LoadProvider | None = None
        self.added_mass: AddedMassProvider | None = None
        self._springs = _spring_table(model)
        self._inputs_version = 0
        self._memo: tuple = (None, None)
        self.sparse = 6 * n > SPARSE_THRESHOLD
        minv = np.zeros((n, 6, 6))
        minv[:, :3, :3] = np.eye(3) / self.mass[:, None, None]
        minv[:, 3:, 3:] = self.inertia_inv
        self._minv_blocks = minv
        self._minv_sparse = sp.block_diag(list(minv), format="csr") if self.sparse else None
        values = self.constraints.evaluate(Kinematics.of(State.initial(model)))
        self.rows = np.arange(values.phi.size)
        self.redundant_rows: list[str] = []
        if drop_redundant and values.phi.size:
            full = JacobianAssembler(values.a, values.b, n, sparse=False).assemble(values)
            if full.shape[0] <= 3000:
                keep, _ = independent_rows(full)
                dropped = sorted(set(range(full.shape[0])) - set(keep.tolist()))
                self.redundant_rows = [self.constraints.row_labels[i] for i in dropped]
                self.rows = keep
        self._assembler = JacobianAssembler(
            values.a[self.rows], values.b[self.rows], n, sparse=self.sparse
        )

    # --- constraints ----------------------------------------------------------------------
    def constraint_values(self, kin: Kinematics) -> ConstraintValues:
        """Constraint rows kept for solving (redundant ones removed)."""
        v = self.constraints.evaluate(kin)
        if v.phi.size == self.rows.size:
            return v
        r = self.rows
        return ConstraintValues(v.phi[r], v.phi_t[r], v.gamma[r], v.a[r], v.b[r], v.ja[r], v.jb[r])

    def jacobian(self, values: ConstraintValues):
        return self._assembler.assemble(values)

    def _minv_jt(self, J, minv_blocks=None):
        """M⁻¹ Jᵀ, shape (6n, m); `minv_blocks` (n,6,6) replaces the bodies' own inverse."""
        if self.sparse:
            minv = self._minv_sparse if minv_blocks is None else sp.block_diag(
                list(minv_blocks), format="csr")
            return (minv @ J.T).tocsc()
        n = self.model.n_bodies
        Jb = J.reshape(J.shape[0], n, 6)
        blocks = self._minv_blocks if minv_blocks is None else minv_blocks
        return np.einsum("nkl,mnl->nkm", blocks, Jb).reshape(6 * n, J.shape[0])

    def _solve_schur(self, J, rhs: np.ndarray, minv_blocks=None):
        """Solve (J M⁻¹ Jᵀ) μ = rhs; returns (μ, M⁻¹ Jᵀ)."""
        mj = self._minv_jt(J, minv_blocks)
        S = J @ mj
        if self.sparse:
            mu = spla.spsolve(S.tocsc(), rhs)
        else:
            mu = np.linalg.solve(S, rhs)
        return mu, mj

    # --- forces -----------------------------------------------------------------------------
    def applied(self, t: float, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """Applied force (n,3) N at the centres of mass and torque (n,3) N·m, inertial."""
        model = self.model
        force = self.gravity_force.copy()
        torque = np.zeros_like(force)
        for load in model.loads:
            if load.body == 0:
                continue
            f = load.at(t)
            rho = kin.R[load.body] @ load.point
            force[load.body - 1] += f[:3]
            torque[load.body - 1] += f[3:] + np.cross(rho, f[:3])
        if model.springs:
            self._add_springs(kin, force, torque)
        for ts in model.torsion_springs:
            joint = model.joints[ts.joint]
            angle, rate = joint_coordinate(joint, kin)
            axis = kin.R[joint.marker1.body] @ joint.marker1.axes[:, 2]
            moment = -ts.stiffness * (angle - ts.rest_angle) - ts.damping * rate
            if joint.marker2.body:
                torque[joint.marker2.body - 1] += moment * axis
            if joint.marker1.body:
                torque[joint.marker1.body - 1] -= moment * axis
        if self.external is not None:
            f_ext, t_ext = self.external(t, kin)
            force += f_ext
            torque += t_ext
        return force, torque

    def _add_springs(self, kin: Kinematics, force: np.ndarray, torque: np.ndarray) -> None:
        """Translational spring–dampers, all at once: tension k (ℓ − ℓ0) + c ℓ̇ along the line
        between the markers, pulling marker 1 towards marker 2 and back."""
        sp = self._springs
        rho1, p1, v1 = kin.point(sp["b1"], sp["s1"])
        rho2, p2, v2 = kin.point(sp["b2"], sp["s2"])
        d = p2 - p1
        length = np.sqrt(np.einsum("ki,ki->k", d, d))
        e = d / length[:, None]
        rate = np.einsum("ki,ki->k", e, v2 - v1)
        pull = (sp["k"] * (length - sp["free"]) + sp["c"] * rate)[:, None] * e
        force += sp["on1"] @ pull - sp["on2"] @ pull
        torque += sp["on1"] @ cross(rho1, pull) - sp["on2"] @ cross(rho2, pull)

    # --- equations of motion ----------------------------------------------------------------
    def inputs_changed(self) -> None:
        """Tell the system that `external` or `added_mass` now answer differently."""
        self._inputs_version += 1

    def accelerations(self, state: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(v̇ (n,3) m/s² inertial, ω̇^b (n,3) rad/s², λ (m,)) at `state`.

        The last result is remembered: an exchange and the next RK4 stage often ask for the
        same state with the same inputs."""
        key = (state.t, self._inputs_version, state.to_vector().tobytes())
        if self._memo[0] != key:
            self._memo = (key, self._accelerations(state))
        return self._memo[1]

    def _accelerations(self, state: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        kin = Kinematics.of(state)
        force, torque = self.applied(state.t, kin)
        w = state.w
        Iw = np.einsum("nij,nj->ni", self.inertia, w)
        torque_body = np.einsum("nji,nj->ni", kin.R[1:], torque) - cross(w, Iw)
        acc = np.empty((w.shape[0], 6))
        minv_blocks = None
        if self.added_mass is None:
            acc[:, :3] = force / self.mass[:, None]
            acc[:, 3:] = np.einsum("nij,nj->ni", self.inertia_inv, torque_body)
        else:
            added, bias = self.added_mass(kin)
            minv_blocks = np.linalg.inv(np.linalg.inv(self._minv_blocks) + added)
            acc = np.einsum("nij,nj->ni", minv_blocks, np.hstack([force, torque_body]) + bias)
        lam = np.zeros(0)
        if self.rows.size:
            values = self.constraint_values(kin)
            J = self.jacobian(values)
            nu_ext = np.hstack([kin.v, kin.w_body])
            phidot = values.velocity_error(nu_ext)
            rhs_gamma = values.gamma - 2 * self.alpha * phidot - self.beta**2 * values.phi
            free = acc.ravel()
            lam, mj = self._solve_schur(J, J @ free - rhs_gamma, minv_blocks)
            acc = (free - mj @ lam).reshape(-1, 6)
        return acc[:, :3], acc[:, 3:], lam

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ for y = [r, q, v, ω^b] (State.to_vector layout)."""
        state = State.from_vector(t, y)
        state.q = quat.normalize(state.q)
        vdot, wdot, _ = self.accelerations(state)
        return np.concatenate(
            [state.v.ravel(), quat.rate(state.q, state.w).ravel(), vdot.ravel(), wdot.ravel()]
        )

    # --- projection onto the constraint manifold ----------------------------------------------
    def project(self, state: State, tol: float = 1e-12, max_iter: int = 8) -> float:
        """Project positions, then velocities, onto the constraint manifold (mass-weighted,
        minimum norm); returns the final ‖Φ‖∞. The velocity step reuses the Jacobian of the
        last position check."""
        if not self.rows.size:
            return 0.0
        values = self._project_positions(state, tol, max_iter)
        self._project_velocities(state, values)
        return float(np.max(np.abs(values.phi)))

    def project_positions(self, state: State, tol: float = 1e-12, max_iter: int = 8) -> float:
        """Mass-weighted minimum-norm correction of positions to ‖Φ‖∞ ≤ tol; returns ‖Φ‖∞."""
        if not self.rows.size:
            return 0.0
        return float(np.max(np.abs(self._project_positions(state, tol, max_iter).phi)))

    def _project_positions(self, state: State, tol: float, max_iter: int) -> ConstraintValues:
        """Newton iterations on Φ = 0; returns the constraint values at the final positions."""
        values = self.constraint_values(Kinematics.of(state))
        for _ in range(max_iter):
            if float(np.max(np.abs(values.phi))) <= tol:
                break
            mu, mj = self._solve_schur(self.jacobian(values), values.phi)
            delta = -(mj @ mu).reshape(-1, 6)
            state.r = state.r + delta[:, :3]
            state.q = quat.rotate_by_vector(state.q, delta[:, 3:])
            values = self.constraint_values(Kinematics.of(state))
        return values

    def project_velocities(self, state: State) -> None:
        """Mass-weighted minimum-norm correction of velocities to Φ̇ = J ν + Φ_t = 0."""
        if self.rows.size:
            self._project_velocities(state, self.constraint_values(Kinematics.of(state)))

    def _project_velocities(self, state: State, values: ConstraintValues) -> None:
        nu_ext = np.vstack([np.zeros(6), np.hstack([state.v, state.w])])
        err = values.velocity_error(nu_ext)
        mu, mj = self._solve_schur(self.jacobian(values), err)
        state.set_velocities(state.velocities - mj @ mu)

    # --- diagnostics --------------------------------------------------------------------------
    def drift(self, state: State) -> tuple[float, float]:
        """(‖Φ‖∞ m or rad-ish units, ‖Φ_q v + Φ_t‖∞) at `state`, over all constraint rows."""
        kin = Kinematics.of(state)
        values = self.constraints.evaluate(kin)
        if not values.phi.size:
            return 0.0, 0.0
        vel = values.velocity_error(np.hstack([kin.v, kin.w_body]))
        return float(np.max(np.abs(values.phi))), float(np.max(np.abs(vel)))

    def energy(self, state: State) -> float:
        """Kinetic + gravitational + spring potential energy, J."""
        kin = Kinematics.of(state)
        Iw = np.einsum("nij,nj->ni", self.inertia, state.w)
        kinetic = 0.5 * np.sum(self.mass * np.sum(state.v**2, axis=1)) + 0.5 * np.sum(state.w * Iw)
        potential = -float(np.sum(self.gravity_force * state.r))
        for s in self.model.springs:
            _, p1, _ = kin.point(np.array([s.marker1.body]), s.marker1.position[None])
            _, p2, _ = kin.point(np.array([s.marker2.body]), s.marker2.position[None])
            stretch = np.linalg.norm(p2 - p1) - s.free_length
            potential += 0.5 * s.stiffness * stretch**2
        for ts in self.model.torsion_springs:
            angle, _ = joint_coordinate(self.model.joints[ts.joint], kin)
            potential += 0.5 * ts.stiffness * (angle - ts.rest_angle) ** 2
        return float(kinetic + potential)

    def check_finite(self, state: State) -> None:
        """Raise SimulationError naming the time and the first body with a non-finite value."""
        if state.is_finite():
            return
        for i, name in enumerate(self.model.body_names):
            row = np.concatenate([state.r[i], state.q[i], state.v[i], state.w[i]])
            if not np.isfinite(row).all():
                raise SimulationError(f"non-finite state at t = {state.t:.6g} s in body {name!r}")
        raise SimulationError(f"non-finite state at t = {state.t:.6g} s")
