"""Scenario keys of point masses (`point_mass = true`) and of lumped masses on rigid bodies.

A point mass is a particle: mass, position, velocity, no extent and no rotational inertia. It
is a body whose inertia is m·(1 m²)·I (any positive value would do) whose orientation stays
the identity: everything that acts on it acts at its centre (spherical and distance joints,
loads without torque, spring–dampers, all attached at its position), so no moment ever reaches
it, ω stays exactly zero and the inertia never enters the motion. Keys that would give it
extent or attitude are refused by name.

Lumped masses `[bodies.NAME.point_masses.P] = { mass, position }` (kg; m in the body frame,
from the body-frame origin) are folded into their body: total mass, combined centre of mass
and the inertia about it by the parallel-axis theorem, I = Σ (I_k + m_k (|d_k|² 1 − d_k d_kᵀ)),
d_k from the combined centre of mass.
"""

from __future__ import annotations

import numpy as np

from rbcosim.model import Model
from rbcosim.scenario.reader import TableReader

#: The radius of gyration (m) of a point mass's stand-in inertia m·(1 m)²·I.
RADIUS_OF_GYRATION = 1.0
#: Joint kinds that hold a point without holding an attitude.
POINT_JOINTS = ("spherical", "distance")
#: Largest distance (m) of an attachment from a point mass's centre.
CENTRE_TOL = 1e-12
_NO_EXTENT = ("inertia", "center_of_mass", "orientation", "angular_velocity", "point_masses")


def point_mass(r: TableReader) -> tuple[float, np.ndarray]:
    """(mass kg, stand-in inertia kg·m²) of a `point_mass = true` body table."""
    for key in _NO_EXTENT:
        if r.has(key):
            raise r.error(key, "a point mass (point_mass = true) has no extent, attitude or "
                               "rotational inertia: give mass, position and velocity only")
    mass = r.number("mass", positive=True)
    return mass, mass * RADIUS_OF_GYRATION**2 * np.eye(3)


def lumped_masses(r: TableReader, mass: float, inertia: np.ndarray,
                  com: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass kg, inertia kg·m² about the combined centre of mass, combined centre of mass m,
    body frame) of a body (mass, inertia about com, com) and its [point_masses.P] tables."""
    masses, points = [mass], [com]
    for _, p in r.items("point_masses"):
        masses.append(p.number("mass", positive=True))
        points.append(p.vector("position", 3))
        p.finish()
    m, x = np.array(masses), np.array(points)
    total = float(m.sum())
    centre = m @ x / total
    d = x - centre
    shift = np.einsum("k,kij->ij", m, np.einsum("ki,ki->k", d, d)[:, None, None] * np.eye(3)
                      - np.einsum("ki,kj->kij", d, d))
    return total, inertia + shift, centre


def check_point_masses(builder, model: Model) -> None:
    """Refuse, naming the key, whatever would give a point mass extent or attitude: joints
    other than spherical and distance, attachment points, markers and load points off its
    centre, load torques, interface points."""
    particles = set(model.point_masses)
    if not particles:
        return
    root = builder.root
    names = {b: model.bodies[b - 1].name for b in particles}

    def reader(section: str, name: str) -> TableReader:
        return TableReader(root.source, f"{section}.{name}", root.table[section][name],
                           root.parameters)

    def off_centre(marker) -> bool:
        return marker.body in particles and np.linalg.norm(marker.position) > CENTRE_TOL

    for mname, marker in builder.markers.items():
        if off_centre(marker):
            body, m = mname.split(".", 1)
            raise root.error_at(f"bodies.{body}.markers.{m}.position",
                                f"point mass {body!r} has no extent: a marker on it sits at "
                                "its centre, [0, 0, 0]")
    for j in model.joints:
        if j.kind == "driver" or not {j.marker1.body, j.marker2.body} & particles:
            continue
        r = reader("joints", j.name)
        body = names[j.marker1.body if j.marker1.body in particles else j.marker2.body]
        if j.kind not in POINT_JOINTS:
            raise r.error("type", f"point mass {body!r} takes spherical and distance joints "
                                  f"only (a {j.kind} joint would hold an attitude it does not "
                                  "have)")
        _check_ends(r, (j.marker1, j.marker2), off_centre, names, "at")
    for s in model.springs:
        _check_ends(reader("forces", s.name), (s.marker1, s.marker2), off_centre, names, None)
    for load in model.loads:
        if load.body not in particles:
            continue
        r = reader("forces", load.name)
        if np.linalg.norm(load.point) > CENTRE_TOL:
            raise r.error("point", f"point mass {names[load.body]!r} has no extent: a load "
                                   "acts at its centre, [0, 0, 0]")
        if np.any(load.values[:, 3:]):
            raise r.error("table" if r.has("table") else "torque",
                          f"point mass {names[load.body]!r} takes no torque")
    for p in model.points:
        if p.body in particles:
            raise reader("interface_points", p.name).error(
                "body", f"{names[p.body]!r} is a point mass; an interface point needs a rigid "
                        "body (it carries a moment)")


def _check_ends(r: TableReader, markers, off_centre, names, one_point_key) -> None:
    """Refuse a joint or spring end off a point mass's centre, naming the key it came from."""
    for k, marker in enumerate(markers, start=1):
        if not off_centre(marker):
            continue
        key = (f"marker{k}" if r.has(f"marker{k}") else f"point{k}" if r.has(f"point{k}")
               else one_point_key or f"point{k}")
        raise r.error(key, f"{np.linalg.norm(marker.position):.3g} m from point mass "
                           f"{names[marker.body]!r}'s centre; a particle has no extent: attach "
                           "at its position")
