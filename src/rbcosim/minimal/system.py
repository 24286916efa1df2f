"""Equations of motion of a tree in joint coordinates: y = [q (nq), v (nv)] -> ẏ.

The state is the pair (q, v) of joint coordinates and rates laid out joint by joint (see
`rbcosim.minimal.tree`). Body poses and velocities are reconstructed from it for output, for
the forces the model applies (loads, springs, torsion springs, via `MaximalSystem.applied`),
and for the energy and constraint checks, which are those of the maximal route.
"""

from __future__ import annotations

import numpy as np

from rbcosim.dynamics import MaximalSystem
from rbcosim.kinematics import Kinematics
from rbcosim.minimal.algorithms import BodyKinematics, TreeDynamics
from rbcosim.minimal.tree import Tree, build_tree, initial_positions
from rbcosim.model import Model
from rbcosim.state import State


class TreeSystem:
    """A model in joint coordinates. `derivative(t, y)` is the ODE right-hand side.

    solver: "aba" (articulated-body, O(n)) or "crba" (mass matrix + Cholesky, O(n^2..3)).
    """

    def __init__(self, model: Model, *, tree: Tree | None = None, solver: str = "aba"):
        if solver not in ("aba", "crba"):
            raise ValueError(f"solver must be 'aba' or 'crba', got {solver!r}")
        self.model = model
        self.tree = tree if tree is not None else build_tree(model)
        self.dyn = TreeDynamics(self.tree)
        self.solver = solver
        self.maximal = MaximalSystem(model, drop_redundant=False)
        self.nq, self.nv = self.tree.nq, self.tree.nv
        self.quaternion_blocks = self.tree.quaternion_slices()
        self.has_applied = bool(model.loads or model.springs or model.torsion_springs)
        #: optional provider (t, Kinematics) -> (force (n,3), torque (n,3)), as MaximalSystem's
        self.external = None
        self._sign = [1.0] * (model.n_bodies + 1)
        q0 = initial_positions(self.tree)
        kin = self.dyn.kinematics(q0.tolist(), [0.0] * self.nv)
        for b, body in enumerate(model.bodies, start=1):
            if float(np.dot(kin.q[b], body.quaternion)) < 0:
                self._sign[b] = -1.0

    # --- state ------------------------------------------------------------------------------
    def initial(self) -> np.ndarray:
        """y0 = [q0, v0]: joint coordinates of the initial body poses, and joint rates fitted
        (least squares) to the initial body velocities."""
        q0 = initial_positions(self.tree)
        kin = self.dyn.kinematics(q0.tolist(), [0.0] * self.nv)
        state = State.initial(self.model)
        V = [np.zeros(6)]
        for b in range(1, self.model.n_bodies + 1):
            R = np.array(kin.R[b]).reshape(3, 3)
            w = R @ state.w[b - 1]
            V.append(np.concatenate([w, state.v[b - 1] - np.cross(w, kin.r[b])]))
        v0 = np.zeros(self.nv)
        for J in self.dyn.joints:
            if not J.nv:
                continue
            S = self.dyn.subspace_matrix(kin, J.body)
            rel = V[J.body] - V[J.parent]
            v0[J.v0 : J.v0 + J.nv] = np.linalg.lstsq(S, rel, rcond=None)[0]
        return np.concatenate([q0, v0])

    def normalize(self, y: np.ndarray) -> float:
        """Renormalise quaternion coordinates in place; returns the largest |‖q‖ − 1| before."""
        err = 0.0
        for a, b in self.quaternion_blocks:
            norm = float(np.linalg.norm(y[a:b]))
            err = max(err, abs(norm - 1.0))
            y[a:b] /= norm
        return err

    def kinematics(self, y) -> BodyKinematics:
        y = y.tolist() if isinstance(y, np.ndarray) else y
        return self.dyn.kinematics(y[: self.nq], y[self.nq :])

    def body_state(self, t: float, kin: BodyKinematics) -> State:
        """The maximal-coordinate State (centre of mass, quaternion, velocities) of `kin`."""
        n = self.model.n_bodies
        R = np.array(kin.R[1:]).reshape(n, 3, 3)
        r = np.array(kin.r[1:]).reshape(n, 3)
        V = np.array(kin.V[1:]).reshape(n, 6)
        w = V[:, :3]
        v = V[:, 3:] + np.cross(w, r)
        q = np.array(kin.q[1:]).reshape(n, 4) * np.array(self._sign[1:])[:, None]
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        return State(t, r, q, v, np.einsum("nji,nj->ni", R, w))

    # --- dynamics ---------------------------------------------------------------------------
    def body_forces(self, t: float, kin: BodyKinematics):
        """Spatial forces at O on every body from loads, springs, external providers (list by
        body, ground None), or None when gravity is the only force."""
        if not self.has_applied and self.external is None:
            return None
        state = self.body_state(t, kin)
        mk = Kinematics.of(state)
        self.maximal.external = self.external
        force, torque = self.maximal.applied(t, mk)
        moment = torque + np.cross(state.r, force)
        f = np.hstack([moment, force]).tolist()
        return [None, *f]

    def accelerations(self, t: float, kin: BodyKinematics) -> list[float]:
        """Joint accelerations v̇ (nv,) at the kinematic state `kin`."""
        f_ext = self.body_forces(t, kin)
        gravity = f_ext is None
        if self.solver == "aba":
            return self.dyn.aba(kin, None, f_ext, gravity=gravity)
        M = self.dyn.mass_matrix(kin)
        C = self.dyn.bias(kin, f_ext, gravity=gravity)
        return np.linalg.solve(M, -C).tolist()

    def body_accelerations(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(v̇ (n,3) centre-of-mass accelerations, inertial, m/s²; ω̇^b (n,3) body frame, rad/s²)."""
        kin = self.kinematics(y)
        vdot = self.derivative(t, y)[self.nq :]
        n = self.model.n_bodies
        acc = np.array(self.dyn.body_accelerations(kin, vdot)[1:]).reshape(n, 6)
        R = np.array(kin.R[1:]).reshape(n, 3, 3)
        r = np.array(kin.r[1:]).reshape(n, 3)
        V = np.array(kin.V[1:]).reshape(n, 6)
        w, wd = V[:, :3], acc[:, :3]
        vc = V[:, 3:] + np.cross(w, r)
        a_c = acc[:, 3:] + np.cross(wd, r) + np.cross(w, vc)
        return a_c, np.einsum("nji,nj->ni", R, wd)

    def qdot(self, y: list[float]) -> list[float]:
        """q̇ from the rates: equal to v except for quaternion blocks (½ q ⊗ ω)."""
        nq = self.nq
        v = y[nq:]
        out = [0.0] * nq
        for J in self.dyn.joints:
            i, k = J.q0, J.v0
            if J.kind == "spherical":
                out[i : i + 4] = _quat_rate(y[i : i + 4], v[k : k + 3])
            elif J.kind == "free":
                out[i : i + 3] = v[k : k + 3]
                out[i + 3 : i + 7] = _quat_rate(y[i + 3 : i + 7], v[k + 3 : k + 6])
            else:
                out[i : i + J.nv] = v[k : k + J.nv]
        return out

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ = [q̇, v̇] for y = [q, v]."""
        yl = y.tolist()
        kin = self.dyn.kinematics(yl[: self.nq], yl[self.nq :])
        return np.array(self.qdot(yl) + self.accelerations(t, kin))

    # --- diagnostics ------------------------------------------------------------------------
    def energy(self, state: State) -> float:
        return self.maximal.energy(state)

    def kinetic_energy(self, state: State) -> float:
        s = self.maximal
        return float(0.5 * np.sum(s.mass * np.sum(state.v**2, 1))
                     + 0.5 * np.einsum("ni,nij,nj->", state.w, s.inertia, state.w))


def _quat_rate(q, w):
    q0, q1, q2, q3 = q
    wx, wy, wz = w
    return [0.5 * (-q1 * wx - q2 * wy - q3 * wz), 0.5 * (q0 * wx - q3 * wy + q2 * wz),
            0.5 * (q3 * wx + q0 * wy - q1 * wz), 0.5 * (-q2 * wx + q1 * wy + q0 * wz)]

