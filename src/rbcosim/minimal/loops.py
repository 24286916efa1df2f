"""Closed loops and drivers in joint coordinates by coordinate partitioning (Wehage–Haug).

The spanning tree gives coordinates q and rates v; each loop joint (a joint the tree did not
use) adds closure equations Φ(q) = 0, evaluated by the maximal route's constraint primitives on
the body poses that q produces. With the body Jacobian Jb (body velocities ν = Jb v) the
closure Jacobian on the rates is G = Φ_ν Jb, and Φ_ν ν̇ = γ gives G v̇ = γ − Φ_ν κ, κ the
velocity-product body accelerations.

Partition: a column-pivoted QR of G picks m dependent rates v_d whose block G_d is best
conditioned; the rest v_i are independent (quaternion rates are weighted to be chosen as
dependents first, so that the independent set is ordinary joint coordinates when possible).
With B = [−G_d⁻¹ G_i; I] the equations reduce, without multipliers, to

    Bᵀ M B v̇_i = Bᵀ (−C − M b̄),   v̇ = B v̇_i + b̄,   b̄ = [G_d⁻¹ (γ − Φ_ν κ); 0],

M and C from the composite-rigid-body and Newton–Euler recursions. Before every evaluation
the dependent coordinates are recovered from the independent ones by Newton's method on
Φ(q) = 0 (moving only along the dependent rates), and v_d = −G_d⁻¹ G_i v_i. After every step,
when cond(G_d) exceeds ten times that of the best choice the pivoting would make now, the
partition is chosen again; every choice is reported.

Drivers on tree joints prescribe their coordinates (`rbcosim.minimal.drivers`): those rates
are left out of the partition (B has zero rows for them, b̄ holds their f̈), they are set to
f(t), ḟ(t) before the recovery of the dependent coordinates, and their generalized forces are
the driver efforts.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.linalg as sla

from rbcosim.errors import SimulationError, SingularJacobianError
from rbcosim.maximal.constraints import Constraints, JacobianAssembler
from rbcosim.maximal.dynamics import independent_rows
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.minimal.drivers import efforts, prescribed
from rbcosim.minimal.steps import SDIRK2, rk4
from rbcosim.minimal.system import TreeSystem
from rbcosim.minimal.tree import Tree, build_tree
from rbcosim.model import Model
from rbcosim.spatial import quaternion as quat
from rbcosim.spatial.linalg3 import cross

#: Re-partition when cond(G_d) exceeds this multiple of the best choice's at the same state.
REPARTITION_FACTOR = 10.0
#: Weight on quaternion-rate columns in the pivoting (prefer them as dependents).
QUATERNION_WEIGHT = 10.0
NEWTON_TOL = 1e-13
NEWTON_MAX = 20


class ClosedLoopSystem(TreeSystem):
    """A model with closed loops or drivers in joint coordinates, reduced to independent
    coordinates."""

    def __init__(self, model: Model, *, tree: Tree | None = None):
        tree = tree if tree is not None else build_tree(model)
        super().__init__(model, tree=tree, solver="crba")
        joints = [model.joints[k] for k in tree.loop_joints if model.joints[k].kind != "driver"]
        if any(j.kind in ("rolling_disk", "knife_edge") for j in joints):
            raise SimulationError("rolling_disk and knife_edge joints are not supported by the "
                                  "minimal route; use formulation = \"maximal\"")
        self.prescribed = prescribed(tree, [k for k in tree.loop_joints
                                            if model.joints[k].kind == "driver"])
        #: rates the partition chooses from: all but the prescribed ones
        self.free = np.setdiff1d(np.arange(self.nv), self.prescribed.v_index)
        sub = replace(model, joints=tuple(joints), loads=(), springs=(), torsion_springs=())
        self.loop_constraints = Constraints(sub)
        self.loop_names = [j.name for j in joints]
        self._assembler = None
        n = model.n_bodies
        # ancestor mask (body b, body a): a is b or on b's path to the ground; column mask
        # (body b, rate k): rate k moves body b
        self._ancestor_mask = np.zeros((n, n))
        self._column_mask = np.zeros((n, self.nv))
        owner = {Jt.body: Jt for Jt in self.tree.joints}
        for Jt in self.tree.joints:
            a = Jt.body
            while a:
                self._ancestor_mask[Jt.body - 1, a - 1] = 1.0
                o = owner[a]
                self._column_mask[Jt.body - 1, o.v0 : o.v0 + o.nv] = 1.0
                a = self.tree.parent_of[a]
        y0 = super().initial()
        self.prescribed.impose(0.0, y0, self.nq)
        G = self._full_G(y0)
        self.rows, self.rank = independent_rows(G)
        if np.linalg.matrix_rank(G[self.rows][:, self.free]) < self.rank:
            raise SimulationError(f"drivers {list(self.prescribed.names)} prescribe a motion "
                                  "that the loop closure already fixes (over-constrained)")
        self.n_independent = self.free.size - self.rank
        quaternion_rates = np.zeros(self.nv, dtype=bool)
        for Jt in self.tree.joints:
            if Jt.kind in ("spherical", "free"):
                quaternion_rates[Jt.v0 + (3 if Jt.kind == "free" else 0) : Jt.v0 + Jt.nv] = True
        self._weights = np.where(quaternion_rates, QUATERNION_WEIGHT, 1.0)
        self.history: list[dict] = []
        self.dependent = np.arange(0)
        self.independent = self.free
        self._partition(0.0, G)
        self._y0 = self.settle(0.0, y0)

    has_loops = True

    def step_function(self, integrator: str):
        """step(t, y, h) as TreeSystem's, by RK4 or SDIRK2 in Python on `derivative` (which
        settles the loop closure at every evaluation)."""
        method = rk4 if integrator == "rk4" else SDIRK2().step

        def step(t: float, y: np.ndarray, h: float) -> float:
            y[:] = method(self.derivative, t, y, h)
            return self.normalize(y)

        return step

    # --- closure equations ------------------------------------------------------------------
    def _closure(self, kin, t: float):
        state = self.body_state(t, kin)
        values = self.loop_constraints.evaluate(Kinematics.of(state))
        if self._assembler is None:
            self._assembler = JacobianAssembler(values.a, values.b, self.model.n_bodies,
                                                sparse=False)
        return values, self._assembler.assemble(values)

    def _body_maps(self, kin):
        """X (n, 6, 6): spatial velocity at O -> [v_c, ω^b] per body; r (n, 3)."""
        n = self.model.n_bodies
        R = np.array(kin.R[1:]).reshape(n, 3, 3)
        r = np.array(kin.r[1:]).reshape(n, 3)
        X = np.zeros((n, 6, 6))
        X[:, 0, 1], X[:, 0, 2] = r[:, 2], -r[:, 1]
        X[:, 1, 0], X[:, 1, 2] = -r[:, 2], r[:, 0]
        X[:, 2, 0], X[:, 2, 1] = r[:, 1], -r[:, 0]
        X[:, :3, 3:] = np.eye(3)
        X[:, 3:, :3] = R.transpose(0, 2, 1)
        return X, r

    def body_jacobian(self, kin, X=None) -> np.ndarray:
        """Jb (6n, nv): body velocities [v_c, ω^b] per body from the joint rates."""
        if X is None:
            X, _ = self._body_maps(kin)
        return np.einsum("bij,kj,bk->bik", X, kin.S, self._column_mask).reshape(-1, self.nv)

    def _velocity_products(self, kin, X=None, r=None) -> np.ndarray:
        """κ (6n,): body accelerations [v̇_c, ω̇^b] at v̇ = 0, no gravity."""
        if X is None:
            X, r = self._body_maps(kin)
        c = np.array(kin.c[1:])
        a = self._ancestor_mask @ c
        V = np.array(kin.V[1:])
        w = V[:, :3]
        vc = V[:, 3:] + cross(w, r)
        out = np.einsum("bij,bj->bi", X, a)
        out[:, :3] += cross(w, vc)
        return out.ravel()

    def closure_jacobian(self, y: np.ndarray):
        """(Φ (m,), G (m, nv), γ − Φ_ν κ (m,), kin) on the independent closure rows at y."""
        kin = self.kinematics(y)
        values, J = self._closure(kin, 0.0)
        X, r = self._body_maps(kin)
        G = J @ self.body_jacobian(kin, X)
        rhs = values.gamma - J @ self._velocity_products(kin, X, r)
        return values.phi[self.rows], G[self.rows], rhs[self.rows], kin

    # --- partition --------------------------------------------------------------------------
    def _partition(self, t: float, G: np.ndarray) -> None:
        G = G[self.rows]
        free = self.free
        _, _, piv = sla.qr(G[:, free] * self._weights[free], pivoting=True, mode="economic")
        self.dependent = free[np.sort(piv[: self.rank])]
        self.independent = free[np.sort(piv[self.rank :])]
        self.condition = float(np.linalg.cond(G[:, self.dependent])) if self.rank else 1.0
        names = self.tree.rate_names
        self.history.append({"t": t, "independent": [names[k] for k in self.independent],
                             "condition": self.condition})

    def choose(self, t: float, independent: list[str]) -> None:
        """Impose the independent rates by name (e.g. to start from a chosen partition)."""
        names = self.tree.rate_names
        free = [names[k] for k in self.free]
        unknown = [x for x in independent if x not in free]
        if unknown or len(independent) != self.n_independent:
            raise ValueError(f"independent: expected {self.n_independent} of {free}, "
                             f"got {independent}")
        self.independent = np.array(sorted(names.index(x) for x in independent))
        self.dependent = np.setdiff1d(self.free, self.independent)
        G = self._full_G(self._y0)[self.rows]
        self.condition = float(np.linalg.cond(G[:, self.dependent]))
        self.history.append({"t": t, "independent": list(independent),
                             "condition": self.condition})

    def maybe_repartition(self, t: float, y: np.ndarray) -> bool:
        """Choose a new partition when cond(G_d) exceeds REPARTITION_FACTOR times that of the
        best-conditioned choice at this state; True when it changed. `y` must be the state
        the last `settle` returned (its closure Jacobian is reused)."""
        if not self.rank:
            return False
        G = self._settled_G
        cond = float(np.linalg.cond(G[:, self.dependent]))
        free = self.free
        _, _, piv = sla.qr(G[:, free] * self._weights[free], pivoting=True, mode="economic")
        best = float(np.linalg.cond(G[:, free[np.sort(piv[: self.rank])]]))
        if cond <= REPARTITION_FACTOR * best:
            return False
        old = self.dependent
        self._partition(t, self._full_G(y))
        return not np.array_equal(old, self.dependent)

    def _full_G(self, y):
        kin = self.kinematics(y)
        _, J = self._closure(kin, 0.0)
        return J @ self.body_jacobian(kin)

    def partition_report(self) -> dict:
        names = self.tree.rate_names
        return {"loop_joints": self.loop_names,
                "independent_coordinates": [names[k] for k in self.independent],
                "dependent_coordinates": [names[k] for k in self.dependent],
                "prescribed_coordinates": [names[k] for k in self.prescribed.v_index],
                "partitions": self.history}

    # --- recovery of dependent coordinates ----------------------------------------------------
    def _displace(self, y: np.ndarray, delta: np.ndarray) -> None:
        """q ⊕ δ in place, δ (nv,) a displacement in rate coordinates."""
        for Jt in self.tree.joints:
            i, k, nv = Jt.q0, Jt.v0, Jt.nv
            d = delta[k : k + nv]
            if not nv or not d.any():
                continue
            if Jt.kind == "spherical":
                y[i : i + 4] = quat.rotate_by_vector(y[i : i + 4], d)
            elif Jt.kind == "free":
                y[i : i + 3] += d[:3]
                y[i + 3 : i + 7] = quat.rotate_by_vector(y[i + 3 : i + 7], d[3:])
            else:
                y[i : i + nv] += d

    def settle(self, t: float, y: np.ndarray) -> np.ndarray:
        """A copy of y with the prescribed coordinates and rates at time t (s), and the
        dependent ones recovered from the independent and prescribed."""
        y = np.array(y, dtype=float)
        self.prescribed.impose(t, y, self.nq)
        if not self.rank:
            return y
        dep = self.dependent
        for _ in range(NEWTON_MAX):
            phi, G, _, _ = self.closure_jacobian(y)
            if np.max(np.abs(phi)) <= NEWTON_TOL:
                break
            delta = np.zeros(self.nv)
            delta[dep] = -np.linalg.solve(G[:, dep], phi)
            self._displace(y, delta)
        else:
            raise SingularJacobianError(f"t = {t:.6g} s: loop closure did not converge "
                                  f"(‖Φ‖ = {np.max(np.abs(phi)):.3g}); the mechanism may be "
                                  "at a singular configuration, or the step may be too large "
                                  "(`rbcosim check` prints the fastest time scale)")
        v = y[self.nq :]
        v[dep] = 0.0
        v[dep] = -np.linalg.solve(G[:, dep], G @ v)
        self._settled_G = G
        return y

    # --- equations of motion ----------------------------------------------------------------
    def initial(self) -> np.ndarray:
        return self._y0.copy()

    def _accelerations(self, t: float, y: np.ndarray):
        """(v̇ (nv,), M v̇ + C (nv,), G) at a settled state y and time t (s)."""
        _, G, rhs, kin = self.closure_jacobian(y)
        M, C = self.dyn.mass_matrix_and_bias(kin, self.body_forces(t, kin))
        dep, ind = self.dependent, self.independent
        nv = self.nv
        B = np.zeros((nv, ind.size))
        B[ind, np.arange(ind.size)] = 1.0
        bbar = np.zeros(nv)
        bbar[self.prescribed.v_index] = self.prescribed.values(t)[2]
        if self.rank:
            Gd = G[:, dep]
            B[dep] = -np.linalg.solve(Gd, G[:, ind])
            bbar[dep] = np.linalg.solve(Gd, rhs - G @ bbar)
        vdot_i = np.linalg.solve(B.T @ M @ B, B.T @ (-C - M @ bbar))
        vdot = B @ vdot_i + bbar
        return vdot, M @ vdot + C, G

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        y = self.settle(t, y)
        return np.concatenate([self.qdot(y), self._accelerations(t, y)[0]])

    def driver_efforts(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(force, power) per driver in model order at time t (s) and state y: the
        generalized force of each prescribed coordinate (N·m about the driven revolute's z1,
        or N along the prismatic's, on body2) and its power τ ḟ (W)."""
        y = self.settle(t, y)
        _, residual, G = self._accelerations(t, y)
        force = efforts(residual, G, self.prescribed.v_index)
        return force, force * self.prescribed.values(t)[1]
