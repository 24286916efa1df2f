"""Python entry points to the tree recursions of the C core (`librbcosim/minimal/motion.c`,
`recursions.c`): kinematics, articulated-body algorithm, composite-rigid-body mass matrix and
Newton–Euler bias.

Spatial vectors are in inertial axes at the inertial origin O, angular part first (see
`rbcosim.minimal.motion`). Body forces f_ext are spatial forces at O, (moment N·m; force N),
inertial: an (n+1, 6) array with the ground at row 0, or a list by body with None entries.
`ops` adds up the multiplications the kernels report (the tests' operation counts).
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.minimal import motion, recursions
from rbcosim.minimal.motion import BodyKinematics
from rbcosim.minimal.tables import tree_tables
from rbcosim.minimal.tree import Tree


class TreeDynamics:
    """Kinematics, ABA, CRBA and RNEA of a spanning tree (its arrays in `tables`)."""

    def __init__(self, tree: Tree):
        self.tree = tree
        self.tables = tree_tables(tree)
        self.n = tree.model.n_bodies
        self.nv = tree.nv
        self.work = recursions.dynamics_work(self.n, self.nv)
        #: the core's "minimal_tree" handle: tables and recursion scratch
        self.handle = make_handle("minimal_tree", self.tables, self.work)
        self._no_force = np.zeros((self.n + 1, 6))
        self._no_base = np.zeros(6)
        self.ops = 0

    def _forces(self, f_ext) -> np.ndarray:
        if f_ext is None:
            return self._no_force
        if isinstance(f_ext, np.ndarray):
            return np.ascontiguousarray(f_ext, dtype=float)
        out = np.zeros((self.n + 1, 6))
        for b, f in enumerate(f_ext):
            if b and f is not None:
                out[b] = f
        return out

    def _base(self, gravity: bool) -> np.ndarray:
        return self.tables.base_acceleration if gravity else self._no_base

    def kinematics(self, q, v) -> BodyKinematics:
        """Body poses, velocities, motion subspaces and velocity products at q (nq,), v (nv,)."""
        kin = motion.empty_kinematics(self.n, self.nv)
        self.ops += _core.minimal_kinematics(self.handle, make_handle("minimal_kin", kin),
                                             _vector(q), _vector(v))
        return kin

    def aba(self, kin: BodyKinematics, tau=None, f_ext=None, gravity: bool = True) -> np.ndarray:
        """Joint accelerations v̇ (nv,) from joint forces tau (nv,) and body forces f_ext."""
        tau = np.zeros(self.nv) if tau is None else _vector(tau)
        vdot = np.empty(self.nv)
        self.ops += _core.minimal_aba(self.handle, make_handle("minimal_kin", kin), tau,
                                      self._forces(f_ext), self._base(gravity), vdot)
        return vdot

    def mass_matrix(self, kin: BodyKinematics) -> np.ndarray:
        """Joint-space mass matrix M(q) (nv, nv)."""
        M = np.empty((self.nv, self.nv))
        self.ops += _core.minimal_mass_matrix(self.handle, make_handle("minimal_kin", kin), M)
        return M

    def bias(self, kin: BodyKinematics, f_ext=None, gravity: bool = True) -> np.ndarray:
        """C(q, v) (nv,): joint forces that hold v̇ = 0 (velocity products, gravity, f_ext)."""
        C = np.empty(self.nv)
        self.ops += _core.minimal_bias(self.handle, make_handle("minimal_kin", kin),
                                       self._forces(f_ext), self._base(gravity), C)
        return C

    def mass_matrix_and_bias(self, kin: BodyKinematics, f_ext=None) -> tuple[np.ndarray,
                                                                             np.ndarray]:
        """(M, C) of `mass_matrix` and `bias` (with gravity) in one pass."""
        M, C = np.empty((self.nv, self.nv)), np.empty(self.nv)
        self.ops += _core.minimal_mass_matrix_and_bias(
            self.handle, make_handle("minimal_kin", kin), self._forces(f_ext),
            self.tables.base_acceleration, M, C)
        return M, C

    def body_accelerations(self, kin: BodyKinematics, vdot) -> np.ndarray:
        """Spatial accelerations (ω̇; v̇_O) (n+1, 6) by body, gravity not included."""
        acc = np.empty((self.n + 1, 6))
        _core.minimal_body_accelerations(self.handle, make_handle("minimal_kin", kin),
                                         _vector(vdot), self._no_base, acc)
        return acc

    def subspace_matrix(self, kin: BodyKinematics, b: int) -> np.ndarray:
        """Motion subspace S_b (6, nv_b) of body b's joint, inertial axes at O."""
        j = self.tables.body_joint[b]
        v0, nv = self.tables.joint_v0[j], self.tables.joint_nv[j]
        return kin.S[v0 : v0 + nv].T.copy()

    def coordinate_rates(self, q, v) -> np.ndarray:
        """q̇ (nq,) from q (nq,) and the rates v (nv,): equal to the rate for ordinary
        coordinates, ½ e ⊗ (0, ω) for a joint quaternion e."""
        q = _vector(q)
        out = np.empty(q.size)
        _core.minimal_coordinate_rates(self.handle, q, _vector(v), out)
        return out

    def normalize(self, y: np.ndarray) -> float:
        """Renormalise the joint quaternions of y (a C-contiguous float64 array) in place;
        returns the largest |‖e‖ − 1| before (NaN when y is not finite)."""
        return _core.minimal_normalize(self.handle, y)


def _vector(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)
