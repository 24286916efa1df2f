"""Equations of motion of a tree in joint coordinates: y = [q (nq), v (nv)] -> ẏ.

The state is the pair (q, v) of joint coordinates and rates laid out joint by joint (see
`rbcosim.minimal.tree`). The right-hand side and runs of fixed steps are computed in the C
core (`rbcosim.minimal.stepper`: one call per batch of steps). Body poses and velocities are reconstructed from q, v for output
and for the energy and constraint checks, which are those of the maximal route.
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.errors import SimulationError
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.kernels.forces import force_table, has_applied_forces
from rbcosim.minimal import stepper
from rbcosim.minimal.algorithms import TreeDynamics
from rbcosim.minimal.motion import BodyKinematics
from rbcosim.minimal.tree import Tree, build_tree, initial_positions
from rbcosim.model import Model
from rbcosim.spatial.linalg3 import cross
from rbcosim.state import State

#: SDIRK2's Newton settings, those of `rbcosim.maximal.integrators.SDIRK2`
SDIRK_TOL, SDIRK_MAX_NEWTON = 1e-10, 12


class TreeSystem:
    """A model in joint coordinates. `derivative(t, y)` is the ODE right-hand side.

    solver: "aba" (articulated-body, O(n)) or "crba" (mass matrix + Cholesky, O(n^2..3)).
    """

    #: closed loops need the dependent coordinates recovered after every step (`settle`)
    has_loops = False

    def __init__(self, model: Model, *, tree: Tree | None = None, solver: str = "aba"):
        if solver not in ("aba", "crba"):
            raise ValueError(f"solver must be 'aba' or 'crba', got {solver!r}")
        self.model = model
        self.tree = tree if tree is not None else build_tree(model)
        self.dyn = TreeDynamics(self.tree)
        self.tables = self.dyn.tables
        self.solver = solver
        self.maximal = MaximalSystem(model, drop_redundant=False)
        self.nq, self.nv = self.tree.nq, self.tree.nv
        #: loads and springs as arrays, None when gravity (the recursions' base acceleration)
        #: is the only force
        self.forces = force_table(model, gravity=False) if has_applied_forces(model) else None
        self.work = stepper.tree_work(self.tables, self.nq + self.nv)
        #: the core's "minimal_system" handle (tables, forces, work)
        self.handle = stepper.system_handle(
            self.tables, self.forces if self.forces is not None
            else force_table(model, gravity=False), self.forces is not None, self.work)
        self._q0 = initial_positions(self.tree)
        kin = self.dyn.kinematics(self._q0, np.zeros(self.nv))
        quaternions = np.array([b.quaternion for b in model.bodies]).reshape(-1, 4)
        self._sign = np.where(np.einsum("bi,bi->b", kin.q[1:], quaternions) < 0, -1.0, 1.0)

    # --- state ------------------------------------------------------------------------------
    def initial(self) -> np.ndarray:
        """y0 = [q0, v0]: joint coordinates of the initial body poses, and joint rates fitted
        (least squares) to the initial body velocities."""
        kin = self.dyn.kinematics(self._q0, np.zeros(self.nv))
        state = State.initial(self.model)
        w = np.einsum("bij,bj->bi", kin.R[1:], state.w)
        V = np.zeros((self.model.n_bodies + 1, 6))
        V[1:, :3], V[1:, 3:] = w, state.v - cross(w, kin.r[1:])
        v0 = np.zeros(self.nv)
        if V.any():
            for J in self.tree.joints:
                if J.nv:
                    S = self.dyn.subspace_matrix(kin, J.body)
                    rel = V[J.body] - V[J.parent]
                    v0[J.v0 : J.v0 + J.nv] = np.linalg.lstsq(S, rel, rcond=None)[0]
        return np.concatenate([self._q0, v0])

    def normalize(self, y: np.ndarray) -> float:
        """Renormalise quaternion coordinates in place; returns the largest |‖q‖ − 1| before
        (NaN when y is not finite)."""
        return self.dyn.normalize(y)

    def kinematics(self, y) -> BodyKinematics:
        y = np.asarray(y, dtype=float)
        return self.dyn.kinematics(y[: self.nq], y[self.nq :])

    def body_state(self, t: float, kin: BodyKinematics) -> State:
        """The maximal-coordinate State (centre of mass, quaternion, velocities) of `kin`."""
        R, r = kin.R[1:], kin.r[1:].copy()
        w = kin.V[1:, :3]
        v = kin.V[1:, 3:] + cross(w, r)
        q = kin.q[1:] * self._sign[:, None]
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        return State(t, r, q, v, np.einsum("nji,nj->ni", R, w))

    # --- dynamics ---------------------------------------------------------------------------
    def step_function(self, integrator: str):
        """step(t, y, h) of a fixed-step integrator ("rk4" or "sdirk2"), one call of the core:
        advances y (C-contiguous float64) in place and returns the largest |‖e‖ − 1| of its
        joint quaternions before renormalising (NaN when y is not finite)."""
        steps = self.steps_function(integrator)

        def step(t: float, y: np.ndarray, h: float) -> float:
            return steps(y, t, h, 0, 1)[0]

        return step

    def steps_function(self, integrator: str):
        """steps(y, t0, h, k0, n) -> (largest quaternion error, steps done): n fixed steps
        ("rk4" or "sdirk2") of h s in one call of the core, step i from t0 + (k0 + i) h, y
        (C-contiguous float64) advanced and renormalised in place. A step whose state is not
        finite stops the run (NaN, its index); a Newton failure of SDIRK2 raises
        SimulationError."""
        handle = self.handle
        if integrator == "rk4":
            def rk4(y, t0, h, k0, n):
                return _core.minimal_rk4(handle, y, t0, h, k0, n)
            return rk4
        newton = stepper.newton_data(self.nq + self.nv, SDIRK_TOL, SDIRK_MAX_NEWTON)

        def sdirk2(y, t0, h, k0, n):
            err, done, failed_at = _core.minimal_sdirk2(handle, *newton, y, t0, h, k0, n)
            if not math.isnan(failed_at):
                raise SimulationError(f"sdirk2: Newton iteration did not converge at "
                                      f"t = {failed_at:.6g} s")
            return err, done

        return sdirk2

    def body_forces(self, t: float, kin: BodyKinematics) -> np.ndarray | None:
        """Spatial forces at O (n+1, 6) on every body from loads and springs (gravity is the
        recursions' base acceleration), or None when the model has none."""
        if self.forces is None:
            return None
        _core.minimal_body_forces(self.handle, make_handle("minimal_kin", kin), t)
        return self.work.f_ext.copy()

    def accelerations(self, t: float, kin: BodyKinematics) -> np.ndarray:
        """Joint accelerations v̇ (nv,) at the kinematic state `kin`."""
        f_ext = self.body_forces(t, kin)
        if self.solver == "aba":
            return self.dyn.aba(kin, None, f_ext)
        M, C = self.dyn.mass_matrix_and_bias(kin, f_ext)
        return np.linalg.solve(M, -C)

    def body_accelerations(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(v̇ (n,3) centre-of-mass accelerations, inertial, m/s²; ω̇^b (n,3) body frame, rad/s²)."""
        kin = self.kinematics(y)
        acc = self.dyn.body_accelerations(kin, self.derivative(t, y)[self.nq :])[1:]
        r, w, wd = kin.r[1:], kin.V[1:, :3], acc[:, :3]
        vc = kin.V[1:, 3:] + cross(w, r)
        a_c = acc[:, 3:] + cross(wd, r) + cross(w, vc)
        return a_c, np.einsum("nji,nj->ni", kin.R[1:], wd)

    def qdot(self, y: np.ndarray) -> np.ndarray:
        """q̇ from the rates: equal to v except for quaternion blocks (½ q ⊗ ω)."""
        return self.dyn.coordinate_rates(y[: self.nq], y[self.nq :])

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ = [q̇, v̇] for y = [q, v]."""
        y = np.ascontiguousarray(y, dtype=float)
        if self.solver == "aba":
            out = np.empty_like(y)
            self.dyn.ops += _core.minimal_evaluate(self.handle, t, y, out)
            return out
        return np.concatenate([self.qdot(y), self.accelerations(t, self.kinematics(y))])

    # --- diagnostics ------------------------------------------------------------------------
    @property
    def work_done(self) -> float:
        """Work W (J) of the loads and dampers over the fixed steps taken so far (integrated
        with the steps' own stages, `stepper.TreeWork.done`)."""
        return float(self.work.done[0])

    def power(self, t: float, y: np.ndarray) -> float:
        """dW/dt (W): the power of the loads and dampers at y = [q, v], time t."""
        return _core.minimal_power(self.handle, t, np.ascontiguousarray(y, dtype=float))

    def energy(self, state: State) -> float:
        return self.maximal.energy(state)

    def kinetic_energy(self, state: State) -> float:
        return self.maximal.kinetic_energy(state)
