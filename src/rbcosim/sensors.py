"""Sensors: quantities of markers written as results columns `NAME.<field>`, inertial.

  marker    x y z (m), vx vy vz (m/s), ax ay az (m/s²) of the marker's origin
  distance  distance (m) between the origins of marker 1 and marker 2, distance_rate (m/s)
  angle     angle (rad) from x1 to x2 about z1 (x2 projected on marker 1's x–y plane,
            continued over a run), rate (rad/s) = (ω2 − ω1)·z1

The acceleration of a point ρ (inertial lever arm from the centre of mass) of a body is
a = v̇ + α × ρ + ω × (ω × ρ), with v̇ and α = R ω̇^b from the dynamics at the row's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.maximal.constraints import marker_angle
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Marker

FIELDS = {
    "marker": ("x", "y", "z", "vx", "vy", "vz", "ax", "ay", "az"),
    "distance": ("distance", "distance_rate"),
    "angle": ("angle", "rate"),
}
SENSOR_KINDS = tuple(FIELDS)


@dataclass(frozen=True)
class Sensor:
    """A sensor of `kind` on marker1 (and marker2 for distance and angle)."""

    name: str
    kind: str
    marker1: Marker
    marker2: Marker | None = None

    @property
    def columns(self) -> list[str]:
        return [f"{self.name}.{f}" for f in FIELDS[self.kind]]

    @property
    def needs_accelerations(self) -> bool:
        return self.kind == "marker"


def point_motion(marker: Marker, kin: Kinematics, acc: tuple[np.ndarray, np.ndarray] | None):
    """(position, velocity, acceleration or None) (3,) of the marker's origin, inertial;
    acc = (v̇ (n,3) inertial, ω̇^b (n,3) body frame) of the moving bodies."""
    b = marker.body
    rho = kin.R[b] @ marker.position
    w = kin.w_inertial[b]
    position, velocity = kin.r[b] + rho, kin.v[b] + np.cross(w, rho)
    if acc is None or b == 0:
        return position, velocity, None if acc is None else np.zeros(3)
    alpha = kin.R[b] @ acc[1][b - 1]
    return position, velocity, acc[0][b - 1] + np.cross(alpha, rho) + np.cross(w, np.cross(w, rho))


def sensor_values(sensor: Sensor, kin: Kinematics,
                  acc: tuple[np.ndarray, np.ndarray] | None) -> list[float]:
    """The fields of FIELDS[sensor.kind] at `kin` (an angle in (−π, π], before unwrapping)."""
    if sensor.kind == "marker":
        p, v, a = point_motion(sensor.marker1, kin, acc)
        return [*p, *v, *a]
    m1, m2 = sensor.marker1, sensor.marker2
    if sensor.kind == "distance":
        p1, v1, _ = point_motion(m1, kin, None)
        p2, v2, _ = point_motion(m2, kin, None)
        d = p2 - p1
        length = float(np.linalg.norm(d))
        return [length, float(d @ (v2 - v1)) / length if length > 0 else 0.0]
    return list(marker_angle(m1, m2, kin))
