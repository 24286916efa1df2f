"""The rows of a rigid-side FMU's variable table, one function per thing the FMU exposes
(an interface point, a rigid–flexible joint, actuators, bodies, joint coordinates,
parameters, server settings). Each returns table rows (``table.variable_row``) that
``table.numbered_table`` numbers; ``build.describe`` picks the functions an FMU kind needs.
Units SI, kinematics in the inertial frame unless a component's description says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from rbcosim.fmu_export.output_selection import SELECTABLE_KINDS, select_outputs
from rbcosim.fmu_export.table import (
    ACCELERATION_COMPONENTS,
    ADDED_MASS_UNITS,
    BODY_COMPONENTS,
    GAP_COMPONENTS,
    POINT_COMPONENTS,
    SERVER_SETTINGS,
    WRENCH_COMPONENTS,
    WRENCH_DERIVATIVES,
    parameter_start,
    structured_name,
    variable_row,
)

Row = dict[str, Any]


def kinematics_rows(prefix: str, kind: str, causality: str, start, owner: str, what: str,
                    components=POINT_COMPONENTS) -> list[Row]:
    """The 13 ``components`` ``<prefix>.x`` .. ``<prefix>.wz`` with start values ``start``
    (13,)."""
    start = np.asarray(start, dtype=float)
    return [variable_row(f"{prefix}.{comp}", kind, causality, float(start[index]), unit,
                         what + text, owner, index)
            for index, (comp, unit, text) in enumerate(components)]


def wrench_rows(point: str, exchange: bool) -> list[Row]:
    """The point's wrench inputs ``P.fx .. P.mz`` (N, N.m), with ``exchange`` also their
    first to third time derivatives ``P.dfx .. P.d3mz``."""
    rows = []
    for index, (comp, unit, text) in enumerate(WRENCH_COMPONENTS):
        rows.append(variable_row(f"{point}.{comp}", "wrench", "input", 0.0, unit,
                                 f"{point}: {text}", point, index))
        for kind, prefix, suffix, what in WRENCH_DERIVATIVES if exchange else ():
            rows.append(variable_row(f"{point}.{prefix}{comp}", kind, "input", 0.0,
                                     unit + suffix, f"{point}: {what} {text}", point, index))
    return rows


def acceleration_rows(point: str, start, when: str) -> list[Row]:
    """The point's accelerations ``P.ax .. P.alz`` (m/s2, rad/s2) with start values ``start``
    (6,); ``when`` completes their descriptions."""
    values = np.asarray(start, dtype=float)
    return [variable_row(f"{point}.{comp}", "acceleration", "output", float(values[index]), unit,
                         f"{point}: {text}, {when}", point, index)
            for index, (comp, unit, text) in enumerate(ACCELERATION_COMPONENTS)]


def added_mass_rows(point: str) -> list[Row]:
    """The point's added-mass parameters ``P.added_mass[i,j]`` (kg, kg.m, kg.m2; element
    6 (i-1) + (j-1)) and ``P.added_mass_frame``."""
    rows = [variable_row(
        f"{point}.added_mass[{i + 1},{j + 1}]", "added_mass", "parameter", 0.0,
        ADDED_MASS_UNITS[i // 3][j // 3],
        f"{point}: flexible side's added mass on [a; alpha], row {i + 1}, column {j + 1}, in "
        f"the axes of {point}.added_mass_frame; the wrench inputs then exclude its part",
        point, 6 * i + j, variability="fixed") for i in range(6) for j in range(6)]
    rows.append(variable_row(
        f"{point}.added_mass_frame", "added_mass_frame", "parameter", "point", None,
        f"{point}: axes of {point}.added_mass: 'point' (turn with the point) or 'inertial'",
        point, variability="fixed"))
    return rows


def point_rows(point: str, outputs, accelerations=None) -> list[Row]:
    """Everything of interface point ``point``: wrench inputs, kinematics outputs (start
    ``outputs`` (13,)) and, given its start ``accelerations`` (6,), the exchange variables
    (wrench derivatives, accelerations, added mass)."""
    exchange = accelerations is not None
    rows = wrench_rows(point, exchange)
    rows += kinematics_rows(point, "point", "output", outputs, point, f"{point}: ")
    if exchange:
        rows += acceleration_rows(point, accelerations, "under the current wrench")
        rows += added_mass_rows(point)
    return rows


def joint_rows(joint: str, flex_start, gaps, exchange: bool) -> list[Row]:
    """Everything of rigid–flexible joint ``joint``: the flexible node's kinematics inputs
    (start ``flex_start`` (13,)), the gap outputs (start ``gaps`` (4,)) and with ``exchange``
    the flexible side's energy input and the energy residual (J)."""
    rows = kinematics_rows(f"{joint}.flex", "flex", "input", flex_start, joint,
                           f"{joint}: flexible side's interface node, ")
    gap_values = np.asarray(gaps, dtype=float)
    rows += [variable_row(f"{joint}.{comp}", "gap", "output", float(gap_values[index]), unit,
                          f"{joint}: {text}", joint, index)
             for index, (comp, unit, text) in enumerate(GAP_COMPONENTS)]
    if exchange:
        rows.append(variable_row(
            f"{joint}.flex_energy", "flex_energy", "input", 0.0, "J",
            f"{joint}: energy the flexible side reports having delivered through the joint so "
            "far", joint))
        rows.append(variable_row(
            f"{joint}.energy_residual", "energy_residual", "output", 0.0, "J",
            f"{joint}: energy the coupling created (> 0) or destroyed (< 0) so far: work of the "
            f"wrench on the rigid side minus {joint}.flex_energy", joint))
    return rows


def actuator_rows(specs: Iterable[dict[str, Any]]) -> list[Row]:
    """The joints' actuator inputs (kind ``actuator``: N.m or N) and drivers' targets (kind
    ``driver_target``, index 0..2) of rbcosim.fmu_export.runtime.actuators specs, ``owner`` the
    joint."""
    rows = []
    for spec in specs:
        driver = "driver" in spec
        for index, (name, unit, start) in enumerate(
                zip(spec["inputs"], spec["units"], spec["starts"])):
            if driver:
                what = ("coordinate", "rate", "acceleration")[index]
                text = (f"{spec['joint']}: driver's {what} at the communication point (the "
                        "motion over the next step: target + rate t + acceleration t^2/2)")
            else:
                what = "torque about" if unit == "N.m" else "force along"
                text = (f"{spec['joint']}: actuator {what} the joint's axis on body 2 (its "
                        "opposite on body 1), held over the next step")
            rows.append(variable_row(name, "driver_target" if driver else "actuator", "input",
                                     start, unit, text, spec["joint"], index))
    return rows


def body_rows(bodies: Mapping[str, np.ndarray]) -> list[Row]:
    """Each body's pose and velocities as outputs (the results file's ``B.x`` .. ``B.wz``,
    angular velocity in the body frame), start values its (13,) state."""
    return [row for body, state in bodies.items()
            for row in kinematics_rows(body, "body", "output", state, body, f"body {body}: ",
                                       BODY_COMPONENTS)]


def coordinate_rows(coordinates: Mapping[str, tuple[float, str, str]]) -> list[Row]:
    """The joints' coordinates as outputs: results column ``JOINT.<field>`` -> (start value,
    unit, description); ``owner`` the column."""
    return [variable_row(column, "joint_coordinate", "output", float(value), unit, description,
                         column)
            for column, (value, unit, description) in coordinates.items()]


def selected(rows: list[Row], patterns: Iterable[str] | None) -> list[Row]:
    """``rows`` with only the body and joint outputs matching ``patterns`` (fnmatch; None:
    all); ValueError for a pattern matching none (output_selection)."""
    if patterns is None:
        return rows
    kept = select_outputs([r["name"] for r in rows if r["kind"] in SELECTABLE_KINDS], patterns)
    return [r for r in rows if r["kind"] not in SELECTABLE_KINDS or r["name"] in kept]


def parameter_rows(parameters: Mapping[str, float | int | bool | str],
                   info: Mapping[str, tuple[str | None, str]]) -> list[Row]:
    """Scenario parameters (key -> value): Real, or Boolean, Integer, String for a bool, int,
    str value; ``info`` a key's (unit, description) (default none, "scenario parameter KEY")."""
    rows = []
    for key, value in parameters.items():
        unit, description = info.get(key, (None, f"scenario parameter {key}"))
        rows.append(variable_row(structured_name(key), "parameter", "parameter",
                                 parameter_start(key, value), unit, description, key,
                                 variability="fixed"))
    return rows


def vector_parameter_rows(vectors: Mapping[str, tuple[Iterable[float], str, str]]) -> list[Row]:
    """The parameters ``KEY[1]`` .. ``KEY[3]`` of 3-vectors (scenario key -> (values, unit,
    description); kind ``vector_parameter``, ``owner`` the key)."""
    return [variable_row(f"{structured_name(key)}[{index + 1}]", "vector_parameter",
                         "parameter", float(value), unit,
                         f"{description}, component {'xyz'[index]}", key, index,
                         variability="fixed")
            for key, (values, unit, description) in vectors.items()
            for index, value in enumerate(values)]


def server_rows(settings: Mapping[str, str | float]) -> list[Row]:
    """Remote mode's parameters ``server.<setting>`` with these defaults (SERVER_SETTINGS)."""
    return [variable_row(f"server.{setting}", "server", "parameter",
                         value if isinstance(value, str) else float(value),
                         SERVER_SETTINGS[setting][0], SERVER_SETTINGS[setting][1], setting,
                         variability="fixed")
            for setting, value in settings.items()]
