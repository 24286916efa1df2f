"""The FMU's variable table: every variable, its value reference, and what it is bound to.

The table is computed once at export from the scenario and stored in the FMU's resources as JSON;
the FMI 2 and FMI 3 slaves register exactly its rows, so value references never depend on
registration order. Value reference 0 is the independent variable ``time`` (FMI 3 only); the
other variables are numbered 1..N in sorted order of their names, so two builds of the same
scenario give the same references.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: Version of the table layout inside the FMU's resources.
TABLE_FORMAT = 1

#: Components of an interface point's outputs, in RigidSide.point_outputs() order.
POINT_COMPONENTS: tuple[tuple[str, str | None, str], ...] = (
    ("x", "m", "position x, inertial frame"),
    ("y", "m", "position y, inertial frame"),
    ("z", "m", "position z, inertial frame"),
    ("q0", None, "orientation quaternion, scalar part (body-to-inertial)"),
    ("q1", None, "orientation quaternion, vector part x"),
    ("q2", None, "orientation quaternion, vector part y"),
    ("q3", None, "orientation quaternion, vector part z"),
    ("vx", "m/s", "velocity x, inertial frame"),
    ("vy", "m/s", "velocity y, inertial frame"),
    ("vz", "m/s", "velocity z, inertial frame"),
    ("wx", "rad/s", "angular velocity x, inertial frame"),
    ("wy", "rad/s", "angular velocity y, inertial frame"),
    ("wz", "rad/s", "angular velocity z, inertial frame"),
)

#: Components of a wrench input, in RigidSide.set_wrench() order.
WRENCH_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("fx", "N", "force x applied at the point, inertial frame"),
    ("fy", "N", "force y applied at the point, inertial frame"),
    ("fz", "N", "force z applied at the point, inertial frame"),
    ("mx", "N.m", "moment x applied at the point, inertial frame"),
    ("my", "N.m", "moment y applied at the point, inertial frame"),
    ("mz", "N.m", "moment z applied at the point, inertial frame"),
)

#: Components of a joint's continuity gaps, in RigidSide.gaps() order.
GAP_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("gap_pos", "m", "continuity check: position gap between rigid point and flexible node"),
    ("gap_rot", "rad", "continuity check: rotation angle between rigid point and flexible node"),
    ("gap_vel", "m/s", "continuity check: velocity gap between rigid point and flexible node"),
    ("gap_angvel", "rad/s", "continuity check: angular-velocity gap, rigid point vs flexible node"),
)

#: Remote-mode settings: name -> (unit, description).
SERVER_SETTINGS: dict[str, tuple[str | None, str]] = {
    "address": (None, "remote mode: ZeroMQ endpoint of the running `rbcosim serve`"),
    "session": (None, "remote mode: session to join; empty creates one from the FMU's scenario"),
    "timeout": ("s", "remote mode: seconds to wait for each reply before the call fails"),
}

#: Units used by the table, as SI base-unit exponents (FMI UnitDefinitions/BaseUnit attributes).
UNITS: dict[str, dict[str, int]] = {
    "s": {"s": 1},
    "m": {"m": 1},
    "m/s": {"m": 1, "s": -1},
    "rad": {"rad": 1},
    "rad/s": {"rad": 1, "s": -1},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
}

# One segment of an FMI "structured" name: a B-name with optional array indices.
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(\[[0-9]+(,[0-9]+)*\])?")
_QCHAR_FORBIDDEN = re.compile(r"['\\\n\r\t\v\f\a\b\"?]")


@dataclass(frozen=True)
class Variable:
    """One FMU variable.

    ``kind`` says what it is bound to: ``wrench`` / ``flex`` (inputs: ``owner`` is the point or
    joint, ``index`` the component), ``point`` / ``gap`` (outputs, same), ``parameter`` (``owner``
    is the scenario key), ``server`` (remote-mode settings: ``owner`` is ``address``,
    ``session`` or ``timeout``) or ``time``.
    """

    name: str
    vr: int
    kind: str
    causality: str
    variability: str
    start: float | str | None
    unit: str | None
    description: str
    owner: str = ""
    index: int = 0

    @property
    def initial(self) -> str | None:
        """Outputs are ``exact``: their start value is the scenario's initial state, and FMPy's
        validation wants outputs without it listed as initial unknowns, which pythonfmu 0.7
        does not write."""
        return "exact" if self.causality == "output" else None

    @property
    def is_real(self) -> bool:
        return not isinstance(self.start, str)


@dataclass(frozen=True)
class VariableTable:
    """All variables of one exported scenario, ordered by value reference."""

    variables: tuple[Variable, ...]
    point_names: tuple[str, ...]
    joint_names: tuple[str, ...]

    def by_kind(self, kind: str) -> list[Variable]:
        return [v for v in self.variables if v.kind == kind]

    def by_name(self) -> dict[str, Variable]:
        return {v.name: v for v in self.variables}

    def units(self) -> dict[str, dict[str, int]]:
        """Unit definitions used by the variables, name -> base-unit exponents."""
        used = {v.unit for v in self.variables if v.unit is not None}
        return {name: UNITS[name] for name in UNITS if name in used}

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": TABLE_FORMAT,
                "point_names": list(self.point_names),
                "joint_names": list(self.joint_names),
                "variables": [asdict(v) for v in self.variables],
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> VariableTable:
        data = json.loads(text)
        if data.get("format") != TABLE_FORMAT:
            raise ValueError(
                f"FMU variable table has format {data.get('format')!r}, expected {TABLE_FORMAT}"
            )
        return cls(
            variables=tuple(Variable(**row) for row in data["variables"]),
            point_names=tuple(data["point_names"]),
            joint_names=tuple(data["joint_names"]),
        )


def structured_name(key: str) -> str:
    """An FMI structured variable name for a dotted scenario key.

    Segments that are not legal B-names (``0``, ``k-1``) are quoted as Q-names (``'0'``).
    """
    parts = []
    for segment in key.split("."):
        if _SEGMENT.fullmatch(segment):
            parts.append(segment)
        elif segment and not _QCHAR_FORBIDDEN.search(segment):
            parts.append(f"'{segment}'")
        else:
            raise ValueError(f"scenario key {key!r} cannot be an FMI variable name")
    return ".".join(parts)


def build_table(
    *,
    point_names: Iterable[str],
    joint_names: Iterable[str],
    parameters: Mapping[str, float],
    point_outputs: Mapping[str, np.ndarray],
    gaps: Mapping[str, np.ndarray],
    flex_start: Mapping[str, np.ndarray],
    server: Mapping[str, str | float] | None = None,
) -> VariableTable:
    """Build the table from a freshly built scenario.

    ``point_outputs`` and ``gaps`` give the start values of the outputs (``initial=exact``);
    ``flex_start`` the start values of each joint's flexible-node kinematics inputs, shape (13,).
    ``server`` (remote mode) adds the parameters ``server.<setting>`` with these defaults.
    """
    point_names = tuple(point_names)
    joint_names = tuple(joint_names)
    rows: list[dict[str, Any]] = []

    for point in point_names:
        for index, (comp, unit, text) in enumerate(WRENCH_COMPONENTS):
            rows.append(
                dict(name=f"{point}.{comp}", kind="wrench", causality="input",
                     variability="continuous", start=0.0, unit=unit,
                     description=f"{point}: {text}", owner=point, index=index)
            )
        values = np.asarray(point_outputs[point], dtype=float)
        for index, (comp, unit, text) in enumerate(POINT_COMPONENTS):
            rows.append(
                dict(name=f"{point}.{comp}", kind="point", causality="output",
                     variability="continuous", start=float(values[index]), unit=unit,
                     description=f"{point}: {text}", owner=point, index=index)
            )
    for joint in joint_names:
        values = np.asarray(flex_start[joint], dtype=float)
        for index, (comp, unit, text) in enumerate(POINT_COMPONENTS):
            rows.append(
                dict(name=f"{joint}.flex.{comp}", kind="flex", causality="input",
                     variability="continuous", start=float(values[index]), unit=unit,
                     description=f"{joint}: flexible side's interface node, {text}",
                     owner=joint, index=index)
            )
        gap_values = np.asarray(gaps[joint], dtype=float)
        for index, (comp, unit, text) in enumerate(GAP_COMPONENTS):
            rows.append(
                dict(name=f"{joint}.{comp}", kind="gap", causality="output",
                     variability="continuous", start=float(gap_values[index]), unit=unit,
                     description=f"{joint}: {text}", owner=joint, index=index)
            )
    for key, value in parameters.items():
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"scenario parameter {key!r} is not finite: {value!r}")
        rows.append(
            dict(name=structured_name(key), kind="parameter", causality="parameter",
                 variability="fixed", start=value, unit=None,
                 description=f"scenario parameter {key}", owner=key, index=0)
        )
    for setting, value in (server or {}).items():
        rows.append(
            dict(name=f"server.{setting}", kind="server", causality="parameter",
                 variability="fixed", start=value, unit=SERVER_SETTINGS[setting][0],
                 description=SERVER_SETTINGS[setting][1], owner=setting)
        )

    counts = Counter(row["name"] for row in rows)
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"FMU variable names collide: {', '.join(duplicates)}")

    time_row = Variable(name="time", vr=0, kind="time", causality="independent",
                        variability="continuous", start=None, unit="s",
                        description="simulation time")
    ordered = sorted(rows, key=lambda row: row["name"])
    variables = (time_row,) + tuple(
        Variable(vr=vr, **row) for vr, row in enumerate(ordered, start=1)
    )
    return VariableTable(variables=variables, point_names=point_names, joint_names=joint_names)
