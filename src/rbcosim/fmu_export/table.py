"""The FMU's variable table: every variable, its value reference, and what it is bound to.

The table is computed once at export from the scenario and stored in the FMU's resources as JSON;
the FMI 2 and FMI 3 slaves register exactly its rows, so value references never depend on
registration order. Value reference 0 is the independent variable ``time`` (FMI 3 only); the
other variables are numbered 1..N in sorted order of their names, so two builds of the same
scenario give the same references.

Embedded-mode FMUs also carry what an FMI master needs to reproduce the in-process
co-simulation (``CosimMaster``) exactly: the points' accelerations, the first and second time
derivatives of the wrench inputs (the extrapolation polynomial), the flexible side's added mass
as parameters, and per joint the energy the flexible side reports and the energy residual.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

#: Version of the table layout inside the FMU's resources; 2 added the exchange variables, 3
#: typed parameters (int and bool start values: Integer and Boolean variables).
TABLE_FORMAT = 3
#: Layouts this version reads (a format-1 table simply has no exchange variables, formats 1
#: and 2 no Integer or Boolean variables).
READABLE_FORMATS = (1, 2, 3)

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

#: Components of a body's outputs, in RigidSide.body_outputs() order (the results file's
#: columns): centre of mass and its velocity inertial, angular velocity in the body frame.
BODY_COMPONENTS: tuple[tuple[str, str | None, str], ...] = (
    *((c, u, t.replace("position", "centre-of-mass position")) for c, u, t in POINT_COMPONENTS[:3]),
    *POINT_COMPONENTS[3:7],
    *((c, u, t.replace("velocity", "centre-of-mass velocity")) for c, u, t in POINT_COMPONENTS[7:10]),
    *((c, u, t.replace("inertial frame", "body frame")) for c, u, t in POINT_COMPONENTS[10:]),
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

#: Components of a point's acceleration outputs, in RigidSide.point_accelerations() order.
ACCELERATION_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("ax", "m/s2", "acceleration x, inertial frame"),
    ("ay", "m/s2", "acceleration y, inertial frame"),
    ("az", "m/s2", "acceleration z, inertial frame"),
    ("alx", "rad/s2", "angular acceleration x, inertial frame"),
    ("aly", "rad/s2", "angular acceleration y, inertial frame"),
    ("alz", "rad/s2", "angular acceleration z, inertial frame"),
)

#: Time derivatives of the wrench inputs: (kind, name prefix, unit suffix, what). Over a doStep
#: from t_n the point carries W(t_n + τ) = W + Ẇ τ + ½ Ẅ τ² + ⅙ W⃛ τ³ (τ = t − t_n).
WRENCH_DERIVATIVES: tuple[tuple[str, str, str, str], ...] = (
    ("wrench_rate", "d", "/s", "first time derivative at the communication point of the"),
    ("wrench_rate2", "d2", "/s2", "second time derivative at the communication point of the"),
    ("wrench_rate3", "d3", "/s3", "third time derivative at the communication point of the"),
)

#: The flexible side's added mass at a point: a 6x6 matrix on [a_p; α_p], rows and columns
#: 1-3 linear, 4-6 angular; unit of element (i, j) by block.
ADDED_MASS_UNITS = (("kg", "kg.m"), ("kg.m", "kg.m2"))
ADDED_MASS_FRAMES = ("point", "inertial")

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
UNITS: dict[str, dict[str, float]] = {
    "s": {"s": 1},
    "deg": {"rad": 1, "factor": 0.017453292519943295},  # pi / 180
    "m": {"m": 1},
    "m/s": {"m": 1, "s": -1},
    "rad": {"rad": 1},
    "rad/s": {"rad": 1, "s": -1},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "m/s2": {"m": 1, "s": -2},
    "rad/s2": {"rad": 1, "s": -2},
    "N/s": {"kg": 1, "m": 1, "s": -3},
    "N.m/s": {"kg": 1, "m": 2, "s": -3},
    "N/s2": {"kg": 1, "m": 1, "s": -4},
    "N.m/s2": {"kg": 1, "m": 2, "s": -4},
    "N/s3": {"kg": 1, "m": 1, "s": -5},
    "N.m/s3": {"kg": 1, "m": 2, "s": -5},
    "kg": {"kg": 1},
    "kg.m": {"kg": 1, "m": 1},
    "kg.m2": {"kg": 1, "m": 2},
    "J": {"kg": 1, "m": 2, "s": -2},
    "N/m": {"kg": 1, "s": -2},
    "N.s/m": {"kg": 1, "s": -1},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
    "Pa": {"kg": 1, "m": -1, "s": -2},
    "kg/m3": {"kg": 1, "m": -3},
    "m2": {"m": 2},
    "m4": {"m": 4},
}

# One segment of an FMI "structured" name: a B-name with optional array indices.
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(\[[0-9]+(,[0-9]+)*\])?")
_QCHAR_FORBIDDEN = re.compile(r"['\\\n\r\t\v\f\a\b\"?]")


@dataclass(frozen=True)
class Variable:
    """One FMU variable.

    ``kind`` says what it is bound to: ``wrench``, ``wrench_rate``, ``wrench_rate2`` and
    ``flex`` (inputs: ``owner`` is the point or joint, ``index`` the component), ``flex_energy``
    (input of a joint), ``point``, ``acceleration`` and ``gap`` (outputs, same),
    ``energy_residual`` (output of a joint), ``body`` (output: ``owner`` is the rigid body,
    ``index`` the component of its pose and velocities), ``joint_coordinate`` (output: ``owner``
    is the results column ``JOINT.<field>``), ``added_mass`` (parameter of a point, ``index``
    6 i + j, row-major) and ``added_mass_frame`` (String parameter of a point), ``parameter``
    (``owner`` is the scenario key), ``server`` (remote-mode settings: ``owner`` is
    ``address``, ``session`` or ``timeout``) or ``time``.
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
        """Outputs are ``calculated`` (listed as initial unknowns): their first value is the
        model's after initialization, which parameters set before may change; ``start`` is
        the exported scenario's, kept for the instance's values before initialization."""
        return "calculated" if self.causality == "output" else None

    @property
    def type(self) -> str:
        """The FMI type, from the start value's Python type (kept through the table's JSON):
        ``Boolean`` (bool), ``Integer`` (int; Int32 in FMI 3), ``String`` (str), else
        ``Real`` (Float64 in FMI 3)."""
        return value_type(self.start)

    @property
    def is_real(self) -> bool:
        return self.type == "Real"


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

    def units(self) -> dict[str, dict[str, float]]:
        """Unit definitions used by the variables, name -> base-unit exponents (and
        ``factor``: value in the base units = factor * value)."""
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
        if data.get("format") not in READABLE_FORMATS:
            raise ValueError(
                f"FMU variable table has format {data.get('format')!r}, expected one of "
                f"{list(READABLE_FORMATS)}"
            )
        return cls(
            variables=tuple(Variable(**row) for row in data["variables"]),
            point_names=tuple(data["point_names"]),
            joint_names=tuple(data["joint_names"]),
        )


def value_type(value: Any) -> str:
    """The FMI type of a variable whose start value is ``value`` (see Variable.type)."""
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    return "String" if isinstance(value, str) else "Real"


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


def parameter_start(key: str, value: float | bool | str) -> float | int | bool | str:
    """The start value of the parameter at scenario key ``key``: ``value`` as it is for a
    Boolean, Integer or String parameter, a float else. ValueError for a non-finite float."""
    if isinstance(value, (bool, int, str)):
        return value
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"scenario parameter {key!r} is not finite: {value!r}")
    return value


def variable_row(
    name, kind, causality, start, unit, description, owner, index=0, variability="continuous"
) -> dict[str, Any]:
    """One table row (a Variable without its value reference)."""
    return {
        "name": name,
        "kind": kind,
        "causality": causality,
        "variability": variability,
        "start": start,
        "unit": unit,
        "description": description,
        "owner": owner,
        "index": index,
    }


def numbered_table(
    rows: list[dict[str, Any]], point_names: tuple[str, ...], joint_names: tuple[str, ...]
) -> VariableTable:
    """The table of ``rows``: ``time`` is value reference 0, the rest 1..N in name order.

    Raises ValueError naming colliding variable names.
    """
    counts = Counter(row["name"] for row in rows)
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"FMU variable names collide: {', '.join(duplicates)}")

    time_row = Variable(
        name="time",
        vr=0,
        kind="time",
        causality="independent",
        variability="continuous",
        start=None,
        unit="s",
        description="simulation time",
    )
    ordered = sorted(rows, key=lambda row: row["name"])
    variables = (time_row,) + tuple(
        Variable(vr=vr, **row) for vr, row in enumerate(ordered, start=1)
    )
    return VariableTable(variables=variables, point_names=point_names, joint_names=joint_names)
