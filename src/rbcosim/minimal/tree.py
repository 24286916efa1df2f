"""Topology and joint coordinates: a spanning tree of the model's joints, rooted at the ground.

Every moving body gets exactly one *tree joint* to its parent (ground = 0). A body that no
joint reaches from the ground gets a 6-DOF free joint to the ground. Joints that would close a
loop (and every distance joint) are *loop joints*, handled by coordinate partitioning
(`rbcosim.minimal.loops`).

A tree joint places the child marker frame M2 relative to the parent marker frame M1 by
M2 = M1 · (E(q), t(q)) (rotation E, translation t in M1's axes). Joint types and coordinates
(names are `<joint>.<coordinate>`):

  revolute     angle (rad) about marker1 z                      q: angle        v: angle rate
  prismatic    displacement (m) along marker1 z                 q: displacement
  cylindrical  angle about and displacement along marker1 z     q: angle, displacement
  universal    angle1 about marker1 x, then angle2 about marker2 y
  planar       x, y (m) in marker1's x–y plane, angle about z
  spherical    quaternion q0..q3 of M2 relative to M1; rates wx, wy, wz (rad/s, M2 axes)
  fixed        none
  free         for a body joined to nothing: x, y, z (centre of mass, inertial, m) and the body
               quaternion q0..q3; rates vx, vy, vz (inertial) and wx, wy, wz (body frame)

A joint written with marker1 on the child body is *reversed*: the tree uses the inverse
transform. Revolute, prismatic, cylindrical and universal coordinates keep their meaning (the
axis flips sign); a reversed spherical or planar joint's coordinates describe marker1 relative
to marker2.

The coordinate vector q (position level, length nq) and the rate vector v (velocity level,
length nv) are laid out joint by joint in tree order. Only spherical and free joints have
nq != nv (a quaternion and its angular velocity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim.model import Model
from rbcosim.spatial import quaternion as quat

#: Joint kinds that can be tree joints (distance and driver joints are always loop constraints).
TREE_KINDS = ("revolute", "prismatic", "cylindrical", "universal", "planar", "spherical", "fixed")

_POSITION_NAMES = {
    "revolute": ("angle",),
    "prismatic": ("displacement",),
    "cylindrical": ("angle", "displacement"),
    "universal": ("angle1", "angle2"),
    "planar": ("x", "y", "angle"),
    "spherical": ("q0", "q1", "q2", "q3"),
    "fixed": (),
    "free": ("x", "y", "z", "q0", "q1", "q2", "q3"),
}
_RATE_NAMES = {
    **_POSITION_NAMES,
    "spherical": ("wx", "wy", "wz"),
    "free": ("vx", "vy", "vz", "wx", "wy", "wz"),
}


def _quat_of_matrix(m) -> tuple[float, ...]:
    """Unit quaternion (q0 >= 0) of a rotation matrix (3, 3), Shepperd's method in floats
    (`rbcosim.spatial.quaternion.from_matrix` for one matrix, without numpy's per-call cost)."""
    (a, b, c), (d, e, f), (g, h, i) = np.asarray(m, dtype=float).tolist()
    tr = a + e + i
    k = max(range(4), key=(tr, a, e, i).__getitem__)
    if k == 0:
        s = 2.0 * math.sqrt(1.0 + tr)
        q = (0.25 * s, (h - f) / s, (c - g) / s, (d - b) / s)
    elif k == 1:
        s = 2.0 * math.sqrt(1.0 + 2 * a - tr)
        q = ((h - f) / s, 0.25 * s, (b + d) / s, (c + g) / s)
    elif k == 2:
        s = 2.0 * math.sqrt(1.0 + 2 * e - tr)
        q = ((c - g) / s, (b + d) / s, 0.25 * s, (f + h) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + 2 * i - tr)
        q = ((d - b) / s, (c + g) / s, (f + h) / s, 0.25 * s)
    norm = math.sqrt(sum(x * x for x in q)) * (1.0 if q[0] >= 0 else -1.0)
    return tuple(x / norm for x in q)


@dataclass(frozen=True)
class TreeJoint:
    """One joint of the spanning tree: parent -> body, with constant marker data as tuples.

    sp: parent marker origin in the parent body frame (m); qap: parent marker axes as a
    quaternion (marker -> parent body); sc, qac: the same for the child marker on the child.
    axes: unit axes in the parent marker frame (revolute/prismatic/cylindrical: (u,);
    universal: (u1, u2) with u2 in the child marker frame). fixed_q/fixed_t: the constant
    transform of a fixed joint (identity: the markers coincide, as the maximal route's weld
    requires). q0/v0: offsets into q and v.
    """

    name: str
    kind: str
    body: int
    parent: int
    sp: tuple
    qap: tuple
    sc: tuple
    qac: tuple
    axes: tuple
    reversed: bool
    model_joint: int
    q0: int
    v0: int
    fixed_q: tuple = (1.0, 0.0, 0.0, 0.0)
    fixed_t: tuple = (0.0, 0.0, 0.0)

    @property
    def nq(self) -> int:
        return len(_POSITION_NAMES[self.kind])

    @property
    def nv(self) -> int:
        return len(_RATE_NAMES[self.kind])

    @property
    def position_names(self) -> list[str]:
        return [f"{self.name}.{c}" for c in _POSITION_NAMES[self.kind]]

    @property
    def rate_names(self) -> list[str]:
        return [f"{self.name}.{c}" for c in _RATE_NAMES[self.kind]]

    def coordinates_of(self, e, t) -> list[float]:
        """Joint coordinates from a relative rotation matrix e (3,3) and translation t (3,)."""
        k = self.kind
        if k in ("revolute", "cylindrical"):
            angle = _angle_about(e, self.axes[0])
            return [angle] if k == "revolute" else [angle, float(np.dot(t, self.axes[0]))]
        if k == "prismatic":
            return [float(np.dot(t, self.axes[0]))]
        if k == "universal":
            u1, u2 = (np.array(a) for a in self.axes)
            basis = np.column_stack([u1, u2, np.cross(u1, u2)])
            el = basis.T @ e @ basis
            return [float(np.arctan2(el[2, 1], el[1, 1])), float(np.arctan2(el[0, 2], el[0, 0]))]
        if k == "planar":
            return [float(t[0]), float(t[1]), float(np.arctan2(e[1, 0], e[0, 0]))]
        if k == "spherical":
            return list(_quat_of_matrix(e))
        if k == "free":
            return [float(t[0]), float(t[1]), float(t[2]), *_quat_of_matrix(e)]
        return []


def _angle_about(e: np.ndarray, u) -> float:
    """Angle of rotation matrix e about unit axis u (the component of e about u)."""
    u0, u1, u2 = (float(x) for x in u)
    k = min(range(3), key=lambda m: abs((u0, u1, u2)[m]))
    x = [1.0 if m == k else 0.0 for m in range(3)]
    d = x[0] * u0 + x[1] * u1 + x[2] * u2
    x = [x[0] - d * u0, x[1] - d * u1, x[2] - d * u2]
    norm = math.sqrt(x[0] ** 2 + x[1] ** 2 + x[2] ** 2)
    x = [c / norm for c in x]
    y = (u1 * x[2] - u2 * x[1], u2 * x[0] - u0 * x[2], u0 * x[1] - u1 * x[0])
    ex = [sum(row[m] * x[m] for m in range(3)) for row in np.asarray(e, dtype=float).tolist()]
    return math.atan2(sum(a * b for a, b in zip(ex, y)), sum(a * b for a, b in zip(ex, x)))


class TreeError(ValueError):
    """The model cannot be put in joint coordinates (a joint type or topology is unsupported)."""


@dataclass(frozen=True)
class Tree:
    """The spanning tree of a model: joints in topological order (parents before children)."""

    model: Model
    joints: tuple[TreeJoint, ...]
    loop_joints: tuple[int, ...]
    nq: int
    nv: int
    #: parent body of every body index (ground 0 maps to itself)
    parent_of: tuple[int, ...]

    @property
    def position_names(self) -> list[str]:
        return [n for j in self.joints for n in j.position_names]

    @property
    def rate_names(self) -> list[str]:
        return [n for j in self.joints for n in j.rate_names]

    @property
    def is_tree(self) -> bool:
        return not self.loop_joints


def build_tree(model: Model) -> Tree:
    """Spanning tree by breadth-first search from the ground over the joint graph."""
    n = model.n_bodies
    adjacency: dict[int, list[int]] = {b: [] for b in range(n + 1)}
    for k, j in enumerate(model.joints):
        if j.kind in TREE_KINDS:
            adjacency[j.marker1.body].append(k)
            adjacency[j.marker2.body].append(k)
    parent_joint: dict[int, tuple[int, bool] | None] = {0: None}
    order: list[int] = []
    used: set[int] = set()

    def bfs(root: int) -> None:
        frontier = [root]
        while frontier:
            nxt = []
            for b in frontier:
                for k in adjacency[b]:
                    if k in used:
                        continue
                    j = model.joints[k]
                    other = j.marker2.body if j.marker1.body == b else j.marker1.body
                    if other in parent_joint:
                        continue
                    used.add(k)
                    parent_joint[other] = (k, j.marker1.body == other)
                    order.append(other)
                    nxt.append(other)
            frontier = nxt

    bfs(0)
    for b in range(1, n + 1):
        if b not in parent_joint:
            parent_joint[b] = None
            order.append(b)
            bfs(b)
    loop = tuple(k for k in range(len(model.joints)) if k not in used)
    joints: list[TreeJoint] = []
    q0 = v0 = 0
    for b in order:
        entry = parent_joint[b]
        if entry is None:
            tj = TreeJoint(f"{model.bodies[b - 1].name}.free", "free", b, 0,
                           (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                           (1.0, 0.0, 0.0, 0.0), (), False, -1, q0, v0)
        else:
            k, rev = entry
            tj = _tree_joint(model, k, rev, q0, v0)
        joints.append(tj)
        q0 += tj.nq
        v0 += tj.nv
    parents = [0] * (n + 1)
    for tj in joints:
        parents[tj.body] = tj.parent
    return Tree(model, tuple(joints), loop, q0, v0, tuple(parents))


def _tree_joint(model: Model, k: int, rev: bool, q0: int, v0: int) -> TreeJoint:
    j = model.joints[k]
    mp, mc = (j.marker2, j.marker1) if rev else (j.marker1, j.marker2)
    kind = j.kind
    sign = -1.0 if rev else 1.0
    ez, ex, ey = (0.0, 0.0, sign), (sign, 0.0, 0.0), (0.0, sign, 0.0)
    axes: tuple = ()
    if kind in ("revolute", "prismatic", "cylindrical"):
        axes = (ez,)
    elif kind == "universal":
        axes = (ey, ex) if rev else (ex, ey)
    fixed_q, fixed_t = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    child, parent = mc.body, mp.body
    tj = TreeJoint(
        j.name, kind, child, parent,
        tuple(float(x) for x in mp.position), _quat_of_matrix(mp.axes),
        tuple(float(x) for x in mc.position), _quat_of_matrix(mc.axes),
        axes, rev, k, q0, v0, fixed_q, fixed_t,
    )
    if kind == "universal" and rev:
        # inverse of Rx(a)·Ry(b) is R(−y, b)·R(−x, a): coordinates stored as (angle2, angle1)
        return _ReversedUniversal(**tj.__dict__)
    return tj


class _ReversedUniversal(TreeJoint):
    """A universal joint written child-first: internal coordinate order (angle2, angle1)."""

    @property
    def position_names(self) -> list[str]:
        return [f"{self.name}.angle2", f"{self.name}.angle1"]

    rate_names = position_names


def initial_positions(tree: Tree) -> np.ndarray:
    """Joint coordinates q (nq,) of the model's initial body poses."""
    model = tree.model
    n = model.n_bodies
    r = np.zeros((n + 1, 3))
    R = np.tile(np.eye(3), (n + 1, 1, 1))
    if n:
        r[1:] = [b.position for b in model.bodies]
        R[1:] = quat.to_matrix(np.array([b.quaternion for b in model.bodies]))
    q = np.zeros(tree.nq)
    for tj in tree.joints:
        if tj.kind == "free":
            b = model.bodies[tj.body - 1]
            q[tj.q0 : tj.q0 + 7] = [*b.position, *quat.normalize(np.asarray(b.quaternion))]
            continue
        j = model.joints[tj.model_joint]
        mp, mc = (j.marker2, j.marker1) if tj.reversed else (j.marker1, j.marker2)
        # the child marker relative to the parent marker: rotation E, translation t
        R1, R2 = R[mp.body] @ mp.axes, R[mc.body] @ mc.axes
        o1, o2 = r[mp.body] + R[mp.body] @ mp.position, r[mc.body] + R[mc.body] @ mc.position
        q[tj.q0 : tj.q0 + tj.nq] = tj.coordinates_of(R1.T @ R2, R1.T @ (o2 - o1))
    return q
