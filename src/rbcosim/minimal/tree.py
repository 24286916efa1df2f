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

from rbcosim import quaternion as quat
from rbcosim.model import Model

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
    return tuple(quat.from_matrix(np.asarray(m, dtype=float)).tolist())


def _qmul(p, q):
    p0, p1, p2, p3 = p
    q0, q1, q2, q3 = q
    return (
        p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
        p0 * q1 + p1 * q0 + p2 * q3 - p3 * q2,
        p0 * q2 - p1 * q3 + p2 * q0 + p3 * q1,
        p0 * q3 + p1 * q2 - p2 * q1 + p3 * q0,
    )


def _conj(q):
    return (q[0], -q[1], -q[2], -q[3])


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

    def local(self, q) -> tuple[tuple, tuple]:
        """(E as a quaternion, t (3,)) of the child marker relative to the parent marker."""
        k = self.kind
        i = self.q0
        if k == "revolute":
            h = 0.5 * q[i]
            s = math.sin(h)
            u = self.axes[0]
            return (math.cos(h), s * u[0], s * u[1], s * u[2]), (0.0, 0.0, 0.0)
        if k == "prismatic":
            d = q[i]
            u = self.axes[0]
            return (1.0, 0.0, 0.0, 0.0), (d * u[0], d * u[1], d * u[2])
        if k == "cylindrical":
            h = 0.5 * q[i]
            d = q[i + 1]
            s = math.sin(h)
            u = self.axes[0]
            return (math.cos(h), s * u[0], s * u[1], s * u[2]), (d * u[0], d * u[1], d * u[2])
        if k == "universal":
            u1, u2 = self.axes
            s1, s2 = math.sin(0.5 * q[i]), math.sin(0.5 * q[i + 1])
            e1 = (math.cos(0.5 * q[i]), s1 * u1[0], s1 * u1[1], s1 * u1[2])
            e2 = (math.cos(0.5 * q[i + 1]), s2 * u2[0], s2 * u2[1], s2 * u2[2])
            return _qmul(e1, e2), (0.0, 0.0, 0.0)
        if k == "planar":
            h = 0.5 * q[i + 2]
            return (math.cos(h), 0.0, 0.0, math.sin(h)), (q[i], q[i + 1], 0.0)
        if k == "spherical":
            e = q[i : i + 4]
            n = 1.0 / math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3])
            return (e[0] * n, e[1] * n, e[2] * n, e[3] * n), (0.0, 0.0, 0.0)
        if k == "free":
            e = q[i + 3 : i + 7]
            n = 1.0 / math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3])
            return (e[0] * n, e[1] * n, e[2] * n, e[3] * n), (q[i], q[i + 1], q[i + 2])
        return self.fixed_q, self.fixed_t

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
    u = np.asarray(u, dtype=float)
    x = np.eye(3)[int(np.argmin(np.abs(u)))]
    x = x - (x @ u) * u
    x /= np.linalg.norm(x)
    y = np.cross(u, x)
    ex = e @ x
    return float(np.arctan2(ex @ y, ex @ x))


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

    def quaternion_slices(self) -> list[tuple[int, int]]:
        """(start, stop) in q of every quaternion coordinate block (renormalised after steps)."""
        out = []
        for j in self.joints:
            if j.kind == "spherical":
                out.append((j.q0, j.q0 + 4))
            elif j.kind == "free":
                out.append((j.q0 + 3, j.q0 + 7))
        return out


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


def _pose(model: Model, body: int) -> tuple[np.ndarray, np.ndarray]:
    if body == 0:
        return np.zeros(3), np.eye(3)
    b = model.bodies[body - 1]
    return np.asarray(b.position, float), quat.to_matrix(b.quaternion)


def _relative(model: Model, mp, mc) -> tuple[np.ndarray, np.ndarray]:
    """(E, t) of the child marker relative to the parent marker in the initial configuration."""
    rp, Rp = _pose(model, mp.body)
    rc, Rc = _pose(model, mc.body)
    R1 = Rp @ mp.axes
    R2 = Rc @ mc.axes
    o1 = rp + Rp @ mp.position
    o2 = rc + Rc @ mc.position
    return R1.T @ R2, R1.T @ (o2 - o1)


def initial_positions(tree: Tree) -> np.ndarray:
    """Joint coordinates q (nq,) of the model's initial body poses."""
    model = tree.model
    q = np.zeros(tree.nq)
    for tj in tree.joints:
        if tj.kind == "free":
            b = model.bodies[tj.body - 1]
            q[tj.q0 : tj.q0 + 7] = [*b.position, *quat.normalize(np.asarray(b.quaternion))]
            continue
        j = model.joints[tj.model_joint]
        mp, mc = (j.marker2, j.marker1) if tj.reversed else (j.marker1, j.marker2)
        e, t = _relative(model, mp, mc)
        q[tj.q0 : tj.q0 + tj.nq] = tj.coordinates_of(e, t)
    return q
