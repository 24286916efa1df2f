"""Scenario keys of the ground-contact joints (rolling_disk, knife_edge) and of planar mode.

rolling_disk: body2 (the disk), radius (m), axis (disk axis, inertial, initial
configuration), at (disk centre, inertial; default body2's centre of mass), normal (the ground
plane's normal, default [0, 0, 1]); the plane passes through the initial contact point.
knife_edge: body2, at (blade point, inertial; default body2's centre of mass), blade (blade
direction, in the plane), normal (default [0, 0, 1]); the plane passes through `at`.
Both act against the ground: body1, when given, must be "ground".
[world] planar = { normal = [nx, ny, nz] }: every body moves in the plane of that normal
through its initial centre of mass (`rbcosim.maximal.planar`).
"""

from __future__ import annotations

import numpy as np

from rbcosim.maximal.constraints import Constraints
from rbcosim.maximal.planar import plane_basis
from rbcosim.model import GROUND, Joint, Marker, Model, frozen_array
from rbcosim.scenario.reader import TableReader

CONTACT_KINDS = ("rolling_disk", "knife_edge")


def _direction(r: TableReader, key: str, default=None) -> np.ndarray:
    """A unit vector from key `key` (must be non-zero)."""
    value = r.vector(key, 3, default)
    if np.linalg.norm(value) == 0:
        raise r.error(key, "expected a non-zero direction")
    return value / np.linalg.norm(value)


def contact_joint(builder, name: str, r: TableReader) -> Joint:
    """A rolling_disk or knife_edge joint from its table `r` (builder: the scenario builder,
    for body references and initial poses)."""
    kind = r.string("type")
    if r.has("body1") and builder.body_ref(r, "body1") != GROUND:
        raise r.error("body1", f"a {kind} rolls or slides on the ground plane: expected "
                               "\"ground\" (or leave body1 out)")
    r.raw("body1", None)
    body = builder.body_ref(r, "body2")
    if body == GROUND:
        raise r.error("body2", f"a {kind} needs a moving body, not the ground")
    normal = _direction(r, "normal", [0.0, 0.0, 1.0])
    at = r.vector("at", 3, builder.pose[body][0])
    if kind == "rolling_disk":
        radius = r.number("radius", positive=True)
        axis = _direction(r, "axis")
        rim = normal - (normal @ axis) * axis
        if np.linalg.norm(rim) < 1e-9:
            raise r.error("axis", "the disk lies flat on the plane (axis along the normal): "
                                  "its contact point is not defined")
        plane_point = at - radius * rim / np.linalg.norm(rim)
        body_axes = plane_basis(axis).T
    else:
        radius = 0.0
        blade = _direction(r, "blade")
        if abs(blade @ normal) > 1e-9:
            raise r.error("blade", f"expected a direction in the plane (⟂ normal "
                                   f"{normal.tolist()}), got {blade.tolist()}")
        plane_point = at
        body_axes = np.column_stack([blade, np.cross(normal, blade), normal])
    r.finish()
    ground = Marker(GROUND, frozen_array(plane_point), frozen_array(plane_basis(normal).T))
    return Joint(name, kind, ground, builder.marker_from_inertial(body, at, body_axes),
                 length=radius)


def planar_normal(world: TableReader) -> np.ndarray | None:
    """[world] planar = { normal = [...] }: the plane's unit normal, or None."""
    if not world.has("planar"):
        return None
    p = world.sub("planar")
    normal = _direction(p, "normal")
    p.finish()
    return frozen_array(normal)


def check_planar(model: Model, world: TableReader) -> None:
    """Refuse, naming world.planar, a planar model whose joints act out of its plane."""
    try:
        Constraints(model)
    except ValueError as exc:
        raise world.error("planar", str(exc)) from None
