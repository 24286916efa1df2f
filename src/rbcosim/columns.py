"""What each results column is: its kind (quantity, unit, plot panel), a one-line
description, and selection of columns by name or shell-style pattern.

The single source of column units and descriptions: the plots label their panels with it and
the HDF5 files carry it as per-column attributes. Frames: positions and velocities of bodies,
interface points and flexible output nodes are inertial; angular velocities `w*` are in the
body frame (rbcosim.state.State); so are body angular accelerations `alpha*`; marker sensors
positions, velocities and accelerations are inertial (rbcosim.sensors, rbcosim.derived)."""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass

from rbcosim.errors import ScenarioError

#: result field -> (quantity, unit)
FIELD_KINDS = {
    **dict.fromkeys(("x", "y", "z"), ("position", "m")),
    **dict.fromkeys(("q0", "q1", "q2", "q3"), ("orientation quaternion", "1")),
    **dict.fromkeys(("vx", "vy", "vz"), ("velocity", "m/s")),
    **dict.fromkeys(("wx", "wy", "wz"), ("angular velocity", "rad/s")),
    **dict.fromkeys(("fx", "fy", "fz"), ("force", "N")),
    **dict.fromkeys(("mx", "my", "mz"), ("moment", "N·m")),
    **dict.fromkeys(("ax", "ay", "az"), ("acceleration", "m/s²")),
    **dict.fromkeys(("alphax", "alphay", "alphaz"), ("angular acceleration", "rad/s²")),
}
#: joint coordinate and sensor field -> (quantity, unit); rbcosim.joint_coordinates, .sensors
RELATIVE_KINDS = {
    **dict.fromkeys(("angle", "angle1", "angle2"), ("relative angle", "rad")),
    **dict.fromkeys(("rate", "rate1", "rate2"), ("relative angular rate", "rad/s")),
    "disp": ("joint displacement", "m"),
    "speed": ("joint displacement rate", "m/s"),
    **dict.fromkeys(("rotx", "roty", "rotz"), ("joint rotation vector", "rad")),
    **dict.fromkeys(("ratex", "ratey", "ratez"), ("joint relative angular velocity", "rad/s")),
    "distance": ("distance", "m"),
    "distance_rate": ("distance rate", "m/s"),
}
#: joint result field -> (quantity, unit, log scale)
JOINT_KINDS = {
    "gap_pos": ("continuity gap, position", "m", True),
    "gap_rot": ("continuity gap, rotation", "rad", True),
    "gap_vel": ("continuity gap, velocity", "m/s", True),
    "gap_angvel": ("continuity gap, angular velocity", "rad/s", True),
    "energy_residual": ("coupling energy residual", "J", False),
}


@dataclass(frozen=True)
class Kind:
    """One panel: its title, y unit, log scale, and whether its columns are relative to t=0."""

    title: str
    unit: str
    log: bool = False
    relative: bool = False


def classify(column: str, columns: set[str]) -> Kind:
    """The kind of a column, from its name and its siblings in the table."""
    stem, _, field = column.rpartition(".")
    if column == "t":
        return Kind("time", "s")
    if column == "energy":
        return Kind("energy", "J")
    if column == "constraint_drift":
        return Kind("constraint drift ‖Φ‖∞", "m", log=True)
    if field in JOINT_KINDS and f"{stem}.gap_pos" in columns:
        title, unit, log = JOINT_KINDS[field]
        return Kind(title, unit, log=log)
    if field.startswith("eta") and field[3:].isdigit():
        return Kind("modal coordinates", "1")
    flex = stem.rpartition(".")[0]
    if field in ("x", "y", "z") and flex and f"{flex}.eta1" in columns:
        return Kind("flexible output node position", "m", relative=True)
    if field in ("ux", "uy", "uz") and flex and f"{flex}.eta1" in columns:
        return Kind("flexible output node deflection, floating frame", "m")
    if field in ("arc_ux", "arc_uy", "arc_uz") and flex and f"{flex}.eta1" in columns:
        return Kind("flexible output node displacement on the inextensible axis", "m")
    if field in RELATIVE_KINDS and stem and not stem.startswith(("q.", "qd.")):
        return Kind(*RELATIVE_KINDS[field])
    if field in FIELD_KINDS and stem:
        quantity, unit = FIELD_KINDS[field]
        owner = "interface point" if f"{stem}.fx" in columns else "body"
        if f"{stem}.ax" in columns and f"{stem}.q0" not in columns:
            owner = "marker sensor"
        return Kind(f"{owner} {quantity}", unit, relative=quantity == "position")
    return Kind(column, "")


def describe(column: str, columns: set[str]) -> tuple[str, str]:
    """(unit, description) of a column, e.g. ('m', 'body position, x of rod1')."""
    kind = classify(column, columns)
    stem, _, field = column.rpartition(".")
    if not stem or kind.title == column:
        return kind.unit, kind.title
    return kind.unit, f"{kind.title}, {field} of {stem}"


def match_columns(columns: list[str], patterns: list[str], what: str = "in the results") -> list[str]:
    """Columns matching any of `patterns` (names or shell-style patterns such as
    ``*.gap_pos``), in table order. ScenarioError names a pattern that matches nothing and
    lists close column names."""
    chosen: set[str] = set()
    for pattern in patterns:
        matches = fnmatch.filter(columns, pattern)
        if not matches:
            close = difflib.get_close_matches(pattern, columns, n=5, cutoff=0.5)
            hint = f"; close matches: {', '.join(close)}" if close else ""
            raise ScenarioError(f"no column {pattern!r} {what}{hint} (columns: "
                                f"{', '.join(columns[:12])}{', ...' if len(columns) > 12 else ''})")
        chosen.update(matches)
    return [c for c in columns if c in chosen]
