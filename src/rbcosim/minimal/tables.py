"""A spanning tree as arrays for the compiled kernels (`TreeTables`), built once per model.

Every joint type reduces to the same description, so the kernels need no per-type code:

* the child body's attitude relative to the parent body is  L = A ⊗ e(q) ⊗ B,  with A the
  parent marker's axes (marker -> parent body) and B the inverse of the child marker's axes;
  e(q) is the joint quaternion (spherical and free joints: the coordinates q0..q3 themselves)
  or the product, in rate order, of the rotations exp(½ θ_k u_k) of the joint's angle
  coordinates θ_k about their marker-frame axes u_k;
* the child marker origin sits at  o2 = o + R_p (t_fix + Σ_k d_k a_k),  o the parent marker
  origin, R_p the parent's rotation, d_k the joint's displacement coordinates along their
  parent-body-frame axes a_k (a fixed joint's constant t_fix);
* each rate k is one column of the motion subspace: a translation (0; R_p a_k) or a rotation
  about the axis a_k of the parent (side 0, through o) or of the child (side 1, through o2),
  fixed in that side's body frame.

Joints are listed in tree order (parents first); bodies keep the model's indices (ground 0).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.minimal.tree import Tree, TreeJoint
from rbcosim.spatial.quaternion import conjugate, multiply, to_matrix

#: rate_kind values: what a column of the motion subspace is
ROTATION, TRANSLATION = 0, 1
#: rate_side values: the body whose frame holds the axis
PARENT, CHILD = 0, 1


class TreeTables(NamedTuple):
    """Constant data of a tree's joints, rates and bodies (SI units).

    Joints (nj,), tree order: joint_body, joint_parent (body indices), joint_v0, joint_nv
    (slice of v), joint_quat (index in q of the joint quaternion, −1 for none); body_joint
    (n+1,) the joint of every body (−1 for the ground); marker_a, marker_b (nj, 4) the
    quaternions A and B above, marker_parent (nj, 3) the parent marker
    origin in the parent body frame, marker_child (nj, 3) the child marker origin in the
    child body frame, fixed_shift (nj, 3) t_fix in the parent body frame.
    Rates (nv,): rate_kind (ROTATION/TRANSLATION), rate_side (PARENT/CHILD), rate_axis
    (nv, 3) unit axis in the side's body frame, rate_u (nv, 3) the same axis in the joint's
    marker frame (for e(q)), rate_q index of the rate's coordinate in q (−1 for the angular
    velocity of a joint quaternion).
    Bodies (n+1,), ground row 0: mass kg, inertia (n+1, 3, 3) kg·m² about the centre of mass
    in body axes; base_acceleration (6,) = (0; −g), the gravity of the recursions.
    """

    joint_body: np.ndarray
    joint_parent: np.ndarray
    joint_v0: np.ndarray
    joint_nv: np.ndarray
    joint_quat: np.ndarray
    body_joint: np.ndarray
    marker_a: np.ndarray
    marker_b: np.ndarray
    marker_parent: np.ndarray
    marker_child: np.ndarray
    fixed_shift: np.ndarray
    rate_kind: np.ndarray
    rate_side: np.ndarray
    rate_axis: np.ndarray
    rate_u: np.ndarray
    rate_q: np.ndarray
    mass: np.ndarray
    inertia: np.ndarray
    base_acceleration: np.ndarray


def _rates(j: TreeJoint) -> list[tuple[int, int, tuple, int]]:
    """(kind, side, axis in the side's marker frame, q index) of every rate of joint j."""
    k, i = j.kind, j.q0
    x, y, z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
    if k == "revolute":
        return [(ROTATION, PARENT, j.axes[0], i)]
    if k == "prismatic":
        return [(TRANSLATION, PARENT, j.axes[0], i)]
    if k == "cylindrical":
        return [(ROTATION, PARENT, j.axes[0], i), (TRANSLATION, PARENT, j.axes[0], i + 1)]
    if k == "universal":
        return [(ROTATION, PARENT, j.axes[0], i), (ROTATION, CHILD, j.axes[1], i + 1)]
    if k == "planar":
        return [(TRANSLATION, PARENT, x, i), (TRANSLATION, PARENT, y, i + 1),
                (ROTATION, CHILD, z, i + 2)]
    if k == "spherical":
        return [(ROTATION, CHILD, e, -1) for e in (x, y, z)]
    if k == "free":
        return ([(TRANSLATION, PARENT, e, i + m) for m, e in enumerate((x, y, z))]
                + [(ROTATION, CHILD, e, -1) for e in (x, y, z)])
    return []


def tree_tables(tree: Tree) -> TreeTables:
    """The arrays of `tree` (one pass over the joints; no per-evaluation setup remains)."""
    model = tree.model
    joints = tree.joints
    nj = len(joints)
    qap = np.array([j.qap for j in joints], dtype=float).reshape(nj, 4)
    qac = np.array([j.qac for j in joints], dtype=float).reshape(nj, 4)
    rap, rac = to_matrix(qap), to_matrix(qac)
    rates = [r for j in joints for r in _rates(j)]
    rate_joint = np.array([m for m, j in enumerate(joints) for _ in _rates(j)], dtype=np.int64)
    side = np.array([r[1] for r in rates], dtype=np.int64)
    marker_axis = np.array([r[2] for r in rates], dtype=float).reshape(-1, 3)
    frames = np.where((side == PARENT)[:, None, None], rap[rate_joint], rac[rate_joint])
    n = model.n_bodies
    mass = np.zeros(n + 1)
    inertia = np.zeros((n + 1, 3, 3))
    mass[1:] = [b.mass for b in model.bodies]
    inertia[1:] = np.array([b.inertia for b in model.bodies], dtype=float).reshape(n, 3, 3)
    fixed_q = np.array([j.fixed_q for j in joints], dtype=float).reshape(nj, 4)
    fixed_t = np.array([j.fixed_t for j in joints], dtype=float).reshape(nj, 3)
    body_joint = np.full(n + 1, -1, dtype=np.int64)
    body_joint[[j.body for j in joints]] = np.arange(nj)
    quat = [j.q0 if j.kind == "spherical" else j.q0 + 3 if j.kind == "free" else -1
            for j in joints]
    return TreeTables(
        joint_body=np.array([j.body for j in joints], dtype=np.int64),
        joint_parent=np.array([j.parent for j in joints], dtype=np.int64),
        joint_v0=np.array([j.v0 for j in joints], dtype=np.int64),
        joint_nv=np.array([j.nv for j in joints], dtype=np.int64),
        joint_quat=np.array(quat, dtype=np.int64),
        body_joint=body_joint,
        marker_a=np.array([multiply(a, f) for a, f in zip(qap, fixed_q)]).reshape(nj, 4),
        marker_b=np.array([conjugate(b) for b in qac]).reshape(nj, 4),
        marker_parent=np.array([j.sp for j in joints], dtype=float).reshape(nj, 3),
        marker_child=np.array([j.sc for j in joints], dtype=float).reshape(nj, 3),
        fixed_shift=np.einsum("jab,jb->ja", rap, fixed_t),
        rate_kind=np.array([r[0] for r in rates], dtype=np.int64),
        rate_side=side,
        rate_axis=np.ascontiguousarray(np.einsum("kab,kb->ka", frames, marker_axis)),
        rate_u=marker_axis,
        rate_q=np.array([r[3] for r in rates], dtype=np.int64),
        mass=mass,
        inertia=inertia,
        base_acceleration=np.concatenate([np.zeros(3), -np.asarray(model.gravity, float)]),
    )
