"""Relative coordinates and rates of joints, from the bodies' state (any route).

Marker 1's axes (x1, y1, z1) are the reference; ω1, ω2 are the bodies' inertial angular
velocities. Per joint kind, the fields of its `JOINT.<field>` columns:

  revolute     angle (rad) from x1 to x2 about z1, rate (rad/s) = (ω2 − ω1)·z1
  prismatic    disp (m) of origin 2 from origin 1 along z1, speed (m/s) its rate
  cylindrical  angle, rate, disp, speed as above
  universal    angle1 (rad) about x1, then angle2 about y2 (marker 2's axes = Rx(angle1)
               Ry(angle2) in marker 1's); rate1 = ω_rel·x1, rate2 = ω_rel·y2 (rad/s)
  spherical    rotx, roty, rotz (rad): rotation vector of marker 2 relative to marker 1, in
               marker 1's axes (|·| ≤ π); ratex, ratey, ratez (rad/s): ω2 − ω1 in those axes

Angles (not rotation vectors) are continuous over a run (`unwrap`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rbcosim.maximal.constraints import joint_coordinate
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Joint, Model
from rbcosim.spatial import quaternion as quat

FIELDS = {
    "revolute": ("angle", "rate"),
    "prismatic": ("disp", "speed"),
    "cylindrical": ("angle", "rate", "disp", "speed"),
    "universal": ("angle1", "rate1", "angle2", "rate2"),
    "spherical": ("rotx", "roty", "rotz", "ratex", "ratey", "ratez"),
}
#: fields that are angles continued over a run, and their rates
ANGLES = {"angle": "rate", "angle1": "rate1", "angle2": "rate2"}


def coordinate_columns(model: Model) -> list[str]:
    """`JOINT.<field>` for every joint with relative coordinates, in model order."""
    return [f"{j.name}.{f}" for j in model.joints for f in FIELDS.get(j.kind, ())]


def joint_values(joint: Joint, kin: Kinematics) -> list[float]:
    """The fields of FIELDS[joint.kind] at `kin` (angles in (−π, π], before `unwrap`)."""
    if joint.kind in ("revolute", "prismatic"):
        return list(joint_coordinate(joint, kin))
    if joint.kind == "cylindrical":
        return [*joint_coordinate(replace(joint, kind="revolute"), kin),
                *joint_coordinate(replace(joint, kind="prismatic"), kin)]
    m1, m2 = joint.marker1, joint.marker2
    a1 = kin.R[m1.body] @ m1.axes
    rel = a1.T @ (kin.R[m2.body] @ m2.axes)
    w_rel = a1.T @ (kin.w_inertial[m2.body] - kin.w_inertial[m1.body])
    if joint.kind == "universal":
        angle1 = float(np.arctan2(rel[2, 1], rel[1, 1]))
        angle2 = float(np.arctan2(rel[0, 2], rel[0, 0]))
        return [angle1, float(w_rel[0]), angle2, float(w_rel @ rel[:, 1])]
    q = quat.from_matrix(rel)  # q0 ≥ 0: rotation angle in [0, π]
    s = float(np.linalg.norm(q[1:]))
    rotation = q[1:] * (2 * np.arctan2(s, q[0]) / s if s > 1e-300 else 2.0)
    return [*rotation.tolist(), *w_rel.tolist()]


def unwrap(values: np.ndarray, rates: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Angles (rad) continued over rows: each row takes the branch nearest to the previous
    angle advanced by the mean of the two rows' rates over the interval (so a joint may turn
    up to about π between rows relative to that prediction)."""
    out = np.array(values, dtype=float)
    for k in range(1, out.size):
        guess = out[k - 1] + 0.5 * (rates[k - 1] + rates[k]) * (t[k] - t[k - 1])
        out[k] += 2 * np.pi * np.round((guess - out[k]) / (2 * np.pi))
    return out
