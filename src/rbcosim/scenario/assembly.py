"""Assembly from joint coordinates: the `initial` key of revolute, prismatic and cylindrical
joints.

`initial = { angle = RAD | angle_deg = DEG, rate = RAD/S }` (revolute),
`{ displacement = M, rate = M/S }` (prismatic) or `{ angle | angle_deg, rate, displacement,
displacement_rate = M/S }` (cylindrical) sets the joint's coordinates (as defined for drivers:
angle from x1 to x2 about z1, displacement of origin 2 along z1) and their rates at t = 0.

Method: a spanning tree of the joints (the ones with `initial` first) is rooted at the ground
(a component without the ground at its first body). Root to leaf, the subtree beyond each
joint with `initial` is turned about (slid along) the joint's current z1 through its current
origin 1 until the coordinate has its value; then, on the final poses, each such joint adds
the rigid velocity field ω = δ·z1, v += ω × (r − p1) (sliding: v += δ·z1) to its subtree,
δ being the wanted rate minus the current one. Rigid motions superpose exactly, and markers move
with their bodies, so every tree joint still holds. A loop-closing joint is not moved: the
run's projection (solver.projection) then makes the state consistent, and `rbcosim check`
reports the residual. A joint with `initial` that would close a loop is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rbcosim.maximal.constraints import joint_coordinate
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Body, Joint, frozen_array
from rbcosim.scenario.contact import CONTACT_KINDS
from rbcosim.scenario.reader import TableReader
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

#: Joint types that take `initial`.
START_KINDS = ("revolute", "prismatic", "cylindrical")


@dataclass(frozen=True)
class JointStart:
    """A joint's (angle rad, rate rad/s) and (displacement m, rate m/s) at t = 0, None for
    the one its type lacks; `r` is the joint's table, for errors."""

    joint: int
    turn: tuple[float, float] | None
    slide: tuple[float, float] | None
    r: TableReader


def read_start(r: TableReader, kind: str, joint: int) -> JointStart | None:
    """The `initial` key of joint table `r` of type `kind` (None without it)."""
    if not r.has("initial"):
        r.raw("initial", None)
        return None
    if kind not in START_KINDS:
        raise r.error("initial", f"only revolute, prismatic and cylindrical joints take "
                                 f"initial coordinates; this joint is {kind}")
    s = r.sub("initial")
    turn = slide = None
    if kind != "prismatic":
        if s.has("angle") and s.has("angle_deg"):
            raise s.error("angle_deg", "give angle (rad) or angle_deg, not both")
        angle = np.radians(s.number("angle_deg")) if s.has("angle_deg") else s.number("angle", 0.0)
        turn = (float(angle), s.number("rate", 0.0))
    if kind != "revolute":
        rate_key = "rate" if kind == "prismatic" else "displacement_rate"
        slide = (s.number("displacement", 0.0), s.number(rate_key, 0.0))
    s.finish()
    return JointStart(joint, turn, slide, r)


def _spanning_forest(n_bodies: int, joints: list[Joint],
                     starts: list[JointStart]) -> list[list[tuple[int, int]]]:
    """Per body (ground 0): its (neighbour, joint index) along a spanning forest of the joints,
    taken with those of `starts` first; drivers and contact joints are not edges."""
    parent = list(range(n_bodies + 1))

    def root(b: int) -> int:
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        return b

    with_start = {s.joint: s for s in starts}
    candidates = [*with_start, *(j for j in range(len(joints)) if j not in with_start)]
    adjacent: list[list[tuple[int, int]]] = [[] for _ in range(n_bodies + 1)]
    for j in candidates:
        joint = joints[j]
        if joint.kind == "driver" or joint.kind in CONTACT_KINDS:
            continue
        a, b = joint.marker1.body, joint.marker2.body
        ra, rb = root(a), root(b)
        if ra == rb:
            if j in with_start:
                raise with_start[j].r.error(
                    "initial", "this joint closes a kinematic loop of joints that all have "
                               "initial coordinates: leave initial out on one joint of the loop")
            continue
        parent[ra] = rb
        adjacent[a].append((b, j))
        adjacent[b].append((a, j))
    return adjacent


def _subtrees(n_bodies: int, joints: list[Joint],
              starts: list[JointStart]) -> list[tuple[JointStart, int, np.ndarray]]:
    """(start, child, bodies beyond the joint) of every start, root to leaf: the forest is
    walked depth first from the ground, then from each body not reached yet; `child` is the
    joint's body farther from the root, the first of `bodies`."""
    adjacent = _spanning_forest(n_bodies, joints, starts)
    child: dict[int, int] = {}
    preorder: list[int] = []
    first, last = np.zeros(n_bodies + 1, int), np.zeros(n_bodies + 1, int)
    seen = np.zeros(n_bodies + 1, bool)
    for root in range(n_bodies + 1):
        if seen[root]:
            continue
        seen[root] = True
        first[root] = len(preorder)
        preorder.append(root)
        stack = [(root, iter(adjacent[root]))]
        while stack:
            body, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                last[body] = len(preorder)
                stack.pop()
            elif not seen[step[0]]:
                other, j = step
                seen[other] = True
                child[j] = other
                first[other] = len(preorder)
                preorder.append(other)
                stack.append((other, iter(adjacent[other])))
    order = np.array(preorder)
    starts = sorted(starts, key=lambda s: first[child[s.joint]])
    return [(s, child[s.joint], order[first[child[s.joint]]:last[child[s.joint]]])
            for s in starts]


def assemble(bodies: list[Body], joints: list[Joint], starts: list[JointStart],
             particles: frozenset[int] = frozenset()) -> list[Body]:
    """The bodies with their initial poses and velocities moved so that every joint of
    `starts` has its coordinate and rate (see the module docstring). Point masses (indices
    `particles`) move with their subtree but keep their attitude and ω = 0."""
    if not starts:
        return bodies
    subtrees = _subtrees(len(bodies), joints, starts)
    kin = Kinematics.of(State(0.0, [b.position for b in bodies], [b.quaternion for b in bodies],
                              [b.velocity for b in bodies],
                              [b.angular_velocity for b in bodies]))
    for s, child, sub in subtrees:
        joint, sign = joints[s.joint], _sign(joints[s.joint], child)
        p, z = _axis(joint, kin)
        if s.turn is not None:
            angle = _coordinate(joint, "revolute", kin)[0]
            turn = quat.from_axis_angle(z, sign * (s.turn[0] - angle))
            kin.r[sub] = p + (kin.r[sub] - p) @ quat.to_matrix(turn).T
            kin.q[sub] = quat.normalize(quat.multiply(turn, kin.q[sub]))
            kin.R[sub] = quat.to_matrix(kin.q[sub])
        if s.slide is not None:
            kin.r[sub] += sign * (s.slide[0] - _coordinate(joint, "prismatic", kin)[0]) * z
    for s, child, sub in subtrees:
        joint, sign = joints[s.joint], _sign(joints[s.joint], child)
        p, z = _axis(joint, kin)
        spin = speed = 0.0
        if s.turn is not None:
            spin = sign * (s.turn[1] - _coordinate(joint, "revolute", kin)[1])
        if s.slide is not None:
            speed = sign * (s.slide[1] - _coordinate(joint, "prismatic", kin)[1])
        kin.w_inertial[sub] += spin * z
        kin.v[sub] += np.cross(spin * z, kin.r[sub] - p) + speed * z
    moved = np.zeros(len(bodies) + 1, bool)
    for _, _, sub in subtrees:
        moved[sub] = True
    for i in particles:
        kin.q[i], kin.R[i], kin.w_inertial[i] = bodies[i - 1].quaternion, np.eye(3), 0.0
    return [Body(b.name, b.mass, b.inertia, frozen_array(kin.r[i]), frozen_array(kin.q[i]),
                 frozen_array(kin.v[i]), frozen_array(kin.R[i].T @ kin.w_inertial[i]))
            if moved[i] else b for i, b in enumerate(bodies, start=1)]


def _coordinate(joint: Joint, kind: str, kin: Kinematics) -> tuple[float, float]:
    """(coordinate, rate) of `joint` read as a `kind` ("revolute": angle rad about z1;
    "prismatic": displacement m along z1), e.g. both of a cylindrical joint."""
    return joint_coordinate(replace(joint, kind=kind), kin)


def _sign(joint: Joint, child: int) -> float:
    """+1 when the moved side is the joint's body 2 (its coordinate grows with the move)."""
    return 1.0 if child == joint.marker2.body else -1.0


def _axis(joint: Joint, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
    """Marker 1's origin (m) and z axis, inertial, at the poses of `kin`."""
    m1 = joint.marker1
    R = kin.R[m1.body]
    return kin.r[m1.body] + R @ m1.position, R @ m1.axes[:, 2]
