"""Scenario keys of the bodies and their named frames: [bodies.NAME] with its initial pose
(inertial `position`/`orientation`, or `placement` relative to a marker), [bodies.NAME.markers.M]
(body frame) and [ground.markers.M] (inertial).

A placement puts the body frame at (position, orientation) in the axes of a parent marker
"BODY.M" or "ground.M": origin = p_M + R_M·position, axes R = R_M·R(orientation). Placements
are resolved in dependency order (a parent body may come later in the file); cycles and unknown
markers are refused naming the `placement.parent` key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbcosim.model import GROUND, Body, Marker, frozen_array
from rbcosim.scenario.frames import read_axes, read_inertia, read_orientation
from rbcosim.scenario.particles import lumped_masses, point_mass
from rbcosim.scenario.reader import TableReader
from rbcosim.spatial import quaternion as quat


@dataclass
class BodyTables:
    """What [bodies] and [ground] define: bodies (index 1..n), names -> index (ground 0),
    centre-of-mass offsets in the body frames (m), markers by "BODY.M" (positions from the
    centre of mass), the initial poses {index: (centre of mass m, R body -> inertial)} and the
    indices of the point masses (`rbcosim.scenario.particles`)."""

    bodies: list[Body] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=lambda: {"ground": GROUND})
    com_offset: dict[str, np.ndarray] = field(default_factory=lambda: {"ground": np.zeros(3)})
    markers: dict[str, Marker] = field(default_factory=dict)
    pose: dict[int, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=lambda: {GROUND: (np.zeros(3), np.eye(3))})
    particles: set[int] = field(default_factory=set)


@dataclass
class _Pending:
    """A body read except for its pose: q and origin (m) are inertial, or relative to marker
    `parent` when `placement` (its reader) is given; velocities as in Body."""

    name: str
    r: TableReader
    mass: float
    inertia: np.ndarray
    com: np.ndarray
    q: np.ndarray
    origin: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    placement: TableReader | None = None
    parent: str = ""
    particle: bool = False


def _read_markers(r: TableReader, owner: str, index: int, com: np.ndarray,
                  out: dict[str, Marker]) -> None:
    """The [*.markers.M] of table `r` as "owner.M" on body `index` (positions from its centre
    of mass, `com` m in its frame; the ground's are inertial)."""
    for mname, m in r.items("markers"):
        pos = m.vector("position", 3, [0.0, 0.0, 0.0]) - com
        out[f"{owner}.{mname}"] = Marker(index, frozen_array(pos), frozen_array(read_axes(m)))
        m.finish()


def _pending(name: str, r: TableReader) -> _Pending:
    """Body `name`'s keys but its markers, from its table `r`."""
    particle = r.boolean("point_mass", False)
    if particle:
        (mass, inertia), com = point_mass(r), np.zeros(3)
    else:
        mass, inertia, com = lumped_masses(r, r.number("mass", positive=True), read_inertia(r),
                                           r.vector("center_of_mass", 3, [0.0, 0.0, 0.0]))
    if r.has("placement"):
        for key in ("position", "orientation"):
            if r.has(key):
                raise r.error(key, "give either placement (relative to a marker) or the "
                                   "inertial position/orientation, not both")
        p = r.sub("placement")
        if particle and p.has("orientation"):
            raise p.error("orientation", "a point mass (point_mass = true) has no attitude: "
                                         "its placement gives a position only")
        q, origin, parent = (read_orientation(p, "orientation"),
                             p.vector("position", 3, [0.0, 0.0, 0.0]), p.string("parent"))
    else:
        p, parent = None, ""
        q, origin = read_orientation(r, "orientation"), r.vector("position", 3, [0.0, 0.0, 0.0])
    return _Pending(name, r, mass, inertia, com, q, origin,
                    r.vector("velocity", 3, [0.0, 0.0, 0.0]),
                    r.vector("angular_velocity", 3, [0.0, 0.0, 0.0]), p, parent, particle)


def read_bodies(root: TableReader) -> BodyTables:
    """The bodies of [bodies.NAME] and the markers of bodies and [ground.markers.M]."""
    out = BodyTables()
    ground = root.sub("ground", {})
    _read_markers(ground, "ground", GROUND, np.zeros(3), out.markers)
    ground.finish()
    entries = root.items("bodies")
    if not entries:
        raise root.error("bodies", "missing: a scenario needs at least one [bodies.NAME]")
    pending: dict[str, _Pending] = {}
    for k, (name, r) in enumerate(entries):
        if name == "ground":
            raise r.error_at(r.path, "'ground' is reserved for the inertial frame")
        pending[name] = _pending(name, r)
        out.index[name] = k + 1
        out.com_offset[name] = pending[name].com
        if pending[name].particle:
            out.particles.add(k + 1)
        _read_markers(r, name, k + 1, pending[name].com, out.markers)
    names = list(pending)
    for name in names:
        for entry in _dependency_chain(name, pending, names, out):
            _place(entry, out)
    for name, p in pending.items():
        position, R = out.pose[out.index[name]]
        q = p.q if p.placement is None else quat.from_matrix(R)
        out.bodies.append(Body(name, p.mass, frozen_array(p.inertia), frozen_array(position),
                               frozen_array(q), frozen_array(p.velocity),
                               frozen_array(p.angular_velocity)))
        if p.placement is not None:
            p.placement.finish()
        p.r.finish()
    return out


def _dependency_chain(name: str, pending: dict[str, _Pending], names: list[str],
                      out: BodyTables) -> list[_Pending]:
    """`name` and the bodies its pose depends on, not yet placed, parents first (names: the
    bodies in index order)."""
    chain: list[_Pending] = []
    seen: set[str] = set()
    current = name
    while out.index[current] not in out.pose:
        entry = pending[current]
        if current in seen:
            start = [e.name for e in chain].index(current)
            cycle = " -> ".join([e.name for e in chain[start:]] + [current])
            raise entry.placement.error("parent", f"placements form a cycle: {cycle}")
        seen.add(current)
        chain.append(entry)
        if entry.placement is None:
            break
        if entry.parent not in out.markers:
            raise entry.placement.error("parent", f"no marker {entry.parent!r}; valid names: "
                                                  f"{sorted(out.markers)}")
        owner = out.markers[entry.parent].body
        current = "ground" if owner == GROUND else names[owner - 1]
    return chain[::-1]


def _place(entry: _Pending, out: BodyTables) -> None:
    """Pose (centre of mass, R) of `entry`, its parent (if any) being placed already."""
    R = quat.to_matrix(entry.q)
    origin = entry.origin
    if entry.placement is not None:
        m = out.markers[entry.parent]
        r_parent, R_parent = out.pose[m.body]
        R_marker = R_parent @ m.axes
        R = np.eye(3) if entry.particle else R_marker @ R  # a particle keeps the inertial axes
        origin = r_parent + R_parent @ m.position + R_marker @ origin
    out.pose[out.index[entry.name]] = (origin + R @ entry.com, R)
