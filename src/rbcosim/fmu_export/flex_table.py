"""The variable table of a flexible-body FMU (``export-fmu --flex BODY``).

Per coupling of the body, with ``P`` its interface point and ``J`` the joint, the names match
the rigid-side FMU's so that an SSP connects equal names:

- inputs ``P.x`` .. ``P.wz`` and ``P.ax`` .. ``P.alz``: the rigid point's motion (the rigid
  FMU's outputs);
- outputs ``P.fx`` .. ``P.mz`` and their first to third time derivatives ``P.dfx`` ..
  ``P.d3mz``: the wrench the rigid side applies over the next macro step (the rigid FMU's
  inputs), the flexible side's extrapolation polynomial W + Ẇ τ + ½ Ẅ τ² + ⅙ W⃛ τ³;
- outputs ``J.flex.x`` .. ``J.flex.wz`` and ``J.flex_energy``: the interface node's kinematics
  and the energy the body has delivered through the joint (the rigid FMU's inputs, for the
  continuity checks);
- outputs ``P.added_mass[i,j]``: the added mass the body hands to the rigid side at the start
  (all zeros when none), constant over the run, for the rigid FMU's parameters of that name;

and per body its modal coordinates ``B.eta1`` .. and named output nodes ``B.NODE.x`` .. as
outputs, and the scalar keys of ``[flex_bodies.B]`` as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rbcosim.fmu_export.table import (
    ACCELERATION_COMPONENTS,
    ADDED_MASS_UNITS,
    POINT_COMPONENTS,
    WRENCH_COMPONENTS,
    WRENCH_DERIVATIVES,
    VariableTable,
    numbered_table,
    variable_row,
)
from rbcosim.fmu_export.table_rows import parameter_rows

#: Output kinds of the wrench polynomial, by derivative order 0..3.
WRENCH_KINDS = ("flex_wrench",) + tuple(f"flex_{kind}" for kind, *_ in WRENCH_DERIVATIVES)


def build_flex_table(
    *,
    couplings: Sequence[tuple[str, str]],
    motions: Mapping[str, np.ndarray],
    wrenches: Mapping[str, np.ndarray],
    nodes: Mapping[str, np.ndarray],
    added_mass: Mapping[str, np.ndarray],
    outputs: Sequence[tuple[str, str | None, float]],
    parameters: Mapping[str, float | int | bool | str],
    parameter_info: Mapping[str, tuple[str | None, str]],
) -> VariableTable:
    """Table of a flexible-body FMU. ``couplings``: (joint, point) pairs; start values:
    ``motions[joint]`` (19,) the rigid point's motion, ``wrenches[joint]`` (4, 6) the wrench
    and its derivatives, ``nodes[joint]`` (13,) the interface node's kinematics,
    ``added_mass[joint]`` (6, 6) the mass handed to the rigid side (kg, kg.m, kg.m2); ``outputs``:
    (name, unit, start) of the body's own outputs; ``parameters``: scenario key -> value (typed
    as table_rows.parameter_rows's), ``parameter_info``: key -> (unit, description)."""
    rows = []
    for joint, point in couplings:
        motion = np.asarray(motions[joint], dtype=float)
        for index, (comp, unit, text) in enumerate(POINT_COMPONENTS + ACCELERATION_COMPONENTS):
            rows.append(variable_row(f"{point}.{comp}", "motion", "input", float(motion[index]),
                                     unit, f"{point}: rigid point's {text}", joint, index))
        wrench = np.asarray(wrenches[joint], dtype=float)
        prefixes = [("", "", "")] + [(p, s, what + " ") for _, p, s, what in WRENCH_DERIVATIVES]
        for order, (kind, (prefix, suffix, what)) in enumerate(zip(WRENCH_KINDS, prefixes)):
            for index, (comp, unit, text) in enumerate(WRENCH_COMPONENTS):
                rows.append(variable_row(
                    f"{point}.{prefix}{comp}", kind, "output", float(wrench[order, index]),
                    unit + suffix, f"{point}: {what}{text}, from the flexible side", joint,
                    index))
        node = np.asarray(nodes[joint], dtype=float)
        for index, (comp, unit, text) in enumerate(POINT_COMPONENTS):
            rows.append(variable_row(f"{joint}.flex.{comp}", "flex_node", "output",
                                     float(node[index]), unit,
                                     f"{joint}: flexible side's interface node, {text}", joint,
                                     index))
        rows.append(variable_row(f"{joint}.flex_energy", "flex_energy", "output", 0.0, "J",
                                 f"{joint}: energy the flexible side has delivered through the "
                                 "joint so far", joint))
        mass = np.asarray(added_mass[joint], dtype=float).reshape(6, 6)
        for i in range(6):
            for k in range(6):
                rows.append(variable_row(
                    f"{point}.added_mass[{i + 1},{k + 1}]", "flex_added_mass", "output",
                    float(mass[i, k]), ADDED_MASS_UNITS[i // 3][k // 3],
                    f"{point}: added mass the flexible side hands to the rigid side, row "
                    f"{i + 1}, column {k + 1} (constant; zeros: none)", joint, 6 * i + k))
    for index, (name, unit, start) in enumerate(outputs):
        rows.append(variable_row(name, "flex_output", "output", float(start), unit,
                                 f"the results file's column {name}", "", index))
    rows += parameter_rows(parameters, parameter_info)
    points = tuple(point for _, point in couplings)
    return numbered_table(rows, points, tuple(joint for joint, _ in couplings))
