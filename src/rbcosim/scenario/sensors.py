"""`[sensors.NAME]` tables -> Sensor (rbcosim.sensors), read with the scenario builder's
body and marker references (positions and axes inertial, initial configuration)."""

from __future__ import annotations

import numpy as np

from rbcosim.model import Marker
from rbcosim.scenario.frames import read_axes
from rbcosim.scenario.reader import TableReader
from rbcosim.sensors import SENSOR_KINDS, Sensor


def read_sensors(builder, root: TableReader, taken: set[str]) -> list[Sensor]:
    """Every `[sensors.NAME]`; `taken`: names of bodies and joints, which a sensor's name
    must not repeat (their columns would collide)."""
    sensors = []
    for name, r in root.items("sensors"):
        if name in taken:
            raise r.error_at(r.path, f"the name {name!r} is already a body or joint's; "
                                     "columns NAME.* would collide")
        kind = r.string("type", choices=SENSOR_KINDS)
        if kind == "marker":
            sensors.append(Sensor(name, kind, _one_marker(builder, r, "marker", "body", "at")))
        elif kind == "distance":
            sensors.append(Sensor(name, kind, _one_marker(builder, r, "marker1", "body1", "point1"),
                                  _one_marker(builder, r, "marker2", "body2", "point2")))
        else:
            sensors.append(Sensor(name, kind, *_axes_pair(builder, r)))
        r.finish()
    return sensors


def _one_marker(builder, r: TableReader, marker_key: str, body_key: str, at_key: str) -> Marker:
    """A declared marker `"body.marker"` under `marker_key`, or a point on `body_key` at the
    inertial position `at_key` (m, initial configuration)."""
    if r.has(marker_key):
        return builder.marker_ref(r, marker_key)
    body = builder.body_ref(r, body_key)
    return builder.marker_from_inertial(body, r.vector(at_key, 3), np.eye(3))


def _axes_pair(builder, r: TableReader) -> tuple[Marker, Marker]:
    """An angle sensor's frames: marker1/marker2, or body1/body2 sharing the axes `axis`
    (z, inertial) and `x_axis` in the initial configuration (angle 0 there)."""
    if r.has("marker1") or r.has("marker2"):
        return builder.marker_ref(r, "marker1"), builder.marker_ref(r, "marker2")
    b1, b2 = builder.body_ref(r, "body1"), builder.body_ref(r, "body2")
    if not r.has("axis"):
        raise r.error("axis", "missing (required): the axis the angle is measured about, "
                              "inertial, or give marker1/marker2")
    axes = read_axes(r)  # as the joints read `axis`/`x_axis`
    return (builder.marker_from_inertial(b1, np.zeros(3), axes),
            builder.marker_from_inertial(b2, np.zeros(3), axes))
