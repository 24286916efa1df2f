"""Interface points of a co-simulation on a tree in joint coordinates.

The inputs are those of the maximal route (`rbcosim.maximal.kernels.interface_points.PointInputs`, written by
`rbcosim.cosim.rigid_side`), and so are the point outputs and the input wrenches W (polynomial,
interface-Jacobian feedback, body-frame wrenches): both are computed by the maximal route's C
functions on the body state that q, v produce. W enters the recursions as the spatial force
(n_O; F) = (M + p × F; F) at the inertial origin O on the point's body. An added mass M_a
stands for −M_a [a_p; α_p] and is treated implicitly, as in the maximal route: with J_p the
point's Jacobian ([v_p; ω] = J_p v) and b_p its acceleration at v̇ = 0,

    (M + Σ J_pᵀ M_a J_p) v̇ = −C − Σ J_pᵀ M_a b_p,

M and C from the composite-rigid-body and Newton–Euler recursions (C including −f_ext).
Steps are RK4 or SDIRK2 in Python on y = [q, v, W], W the work (J) of the loads, dampers and
interface wrenches.
"""

from __future__ import annotations

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.minimal.tree import Tree
from rbcosim.spatial import quaternion as quat
from rbcosim.spatial.linalg3 import cross


def rate_mask(tree: Tree) -> np.ndarray:
    """(n, nv): 1 where rate k moves body b (row b − 1), i.e. belongs to a joint on b's path
    to the ground."""
    mask = np.zeros((tree.model.n_bodies, tree.nv))
    owner = {J.body: J for J in tree.joints}
    for J in tree.joints:
        a = J.body
        while a:
            o = owner[a]
            mask[J.body - 1, o.v0 : o.v0 + o.nv] = 1.0
            a = tree.parent_of[a]
    return mask


class TreePoints:
    """The interface points of a TreeSystem (`rbcosim.minimal.system`): their state, and the
    equations of motion with their wrenches."""

    def __init__(self, system):
        if system.has_loops:
            raise SimulationError("solver.formulation = \"minimal\": a co-simulation's rigid "
                                  "side runs in joint coordinates on trees only (no closed "
                                  "loops, no drivers); use solver.formulation = \"maximal\"")
        self.system = system
        self.maximal = system.maximal
        self.inputs = self.maximal.points
        self.body = self.inputs.body
        self._mask = rate_mask(system.tree)

    def _body_state(self, t: float, y: np.ndarray):
        kin = self.system.kinematics(y)
        return kin, self.system.body_state(t, kin)

    def outputs(self, t: float, y: np.ndarray, out: np.ndarray) -> None:
        """(k, 13) point outputs at (t, y) into out (MaximalSystem.point_outputs)."""
        self.maximal.point_outputs(self._body_state(t, y)[1], out)

    def _jacobians(self, kin, positions: np.ndarray) -> np.ndarray:
        """(k, 6, nv): [v_p; ω] = J_p v of every point (positions (k, 3) m, inertial)."""
        out = np.empty((len(self.body), 6, self.system.nv))
        for i, (b, p) in enumerate(zip(self.body, positions)):
            S = (kin.S * self._mask[b - 1][:, None]).T  # (6, nv): (ω; v_O) per rate
            out[i, :3] = S[3:] - np.cross(p, S[:3].T).T
            out[i, 3:] = S[:3]
        return out

    def _added_masses(self, outputs: np.ndarray) -> np.ndarray:
        """(k, 6, 6) added masses in inertial axes."""
        added = self.inputs.added.copy()
        for i in np.flatnonzero(self.inputs.flags[:, 1]):
            R = np.kron(np.eye(2), quat.to_matrix(outputs[i, 3:7]))
            added[i] = R @ added[i] @ R.T
        return added

    def evaluate(self, t: float, y: np.ndarray) -> tuple:
        """At (t, y = [q, v]): (v̇ (nv,), point outputs (k, 13), total wrenches (k, 6) N and
        N·m, point accelerations (k, 6) m/s² and rad/s², inertial)."""
        system = self.system
        kin, state = self._body_state(t, y)
        k = len(self.body)
        outputs = np.empty((k, 13))
        self.maximal.point_outputs(state, outputs)
        wrench = self.maximal.point_wrenches(t, Kinematics.of(state))
        f_ext = system.body_forces(t, kin)
        f_ext = np.zeros((system.model.n_bodies + 1, 6)) if f_ext is None else f_ext
        for i, b in enumerate(self.body):
            f_ext[b, :3] += wrench[i, 3:] + np.cross(outputs[i, :3], wrench[i, :3])
            f_ext[b, 3:] += wrench[i, :3]
        J = self._jacobians(kin, outputs[:, :3])
        acc0 = system.dyn.body_accelerations(kin, np.zeros(system.nv))
        w, vp = outputs[:, 10:13], outputs[:, 7:10]
        bias = np.hstack([acc0[self.body, 3:] + cross(acc0[self.body, :3], outputs[:, :3])
                          + cross(w, vp), acc0[self.body, :3]])
        if self.inputs.switches[1]:
            added = self._added_masses(outputs)
            M, C = system.dyn.mass_matrix_and_bias(kin, f_ext)
            M = M + np.einsum("kai,kab,kbj->ij", J, added, J)
            vdot = np.linalg.solve(M, -C - np.einsum("kai,kab,kb->i", J, added, bias))
        else:
            added = None
            vdot = system.dyn.aba(kin, None, f_ext)
        acc = np.einsum("kai,i->ka", J, vdot) + bias
        if added is not None:
            wrench = wrench - np.einsum("kab,kb->ka", added, acc)
        return vdot, outputs, wrench, acc

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ of y = [q, v, W]: q̇, v̇ and the power (W) of the loads, dampers and the points'
        total wrenches."""
        system = self.system
        x = np.ascontiguousarray(y[:-1])
        vdot, outputs, wrench, _ = self.evaluate(t, x)
        velocity = np.hstack([outputs[:, 7:10], outputs[:, 10:13]])
        power = system.power(t, x) + float(np.sum(wrench * velocity))
        return np.concatenate([system.qdot(x), vdot, [power]])

    def state(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(k, 19) outputs and total wrenches, (k, 6) accelerations at (t, y)."""
        _, outputs, wrench, acc = self.evaluate(t, y)
        return np.hstack([outputs, wrench]), acc
