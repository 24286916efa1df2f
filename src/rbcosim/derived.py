"""Columns computed after a run from each written row's state (the integration is unchanged):
joint coordinates (`solver.joint_coordinates`, rbcosim.joint_coordinates), sensors
(`[sensors.NAME]`, rbcosim.sensors) and body accelerations (`solver.accelerations`):

  BODY.ax .ay .az              m/s²    centre-of-mass acceleration, inertial
  BODY.alphax .alphay .alphaz  rad/s²  angular acceleration ω̇^b, body frame

Accelerations come from the dynamics at the row's state: the maximal route's multiplier
solve, or on the minimal route of a tree the joint-coordinate solution (its q, v columns).
"""

from __future__ import annotations

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.joint_coordinates import ANGLES, coordinate_columns, joint_values, unwrap
from rbcosim.joint_coordinates import FIELDS as JOINT_FIELDS
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.reactions import state_of_row
from rbcosim.results import Results
from rbcosim.sensors import sensor_values

ACCELERATION_FIELDS = ("ax", "ay", "az", "alphax", "alphay", "alphaz")


def needs_accelerations(scenario) -> bool:
    """True when some derived column needs the dynamics (accelerations, marker sensors)."""
    return scenario.solver.accelerations or any(s.needs_accelerations for s in scenario.sensors)


def derived_columns(scenario) -> list[str]:
    """Names of the derived columns, in the order they are appended."""
    model, solver = scenario.model, scenario.solver
    cols = coordinate_columns(model) if solver.joint_coordinates else []
    for sensor in scenario.sensors:
        cols += sensor.columns
    if solver.accelerations:
        cols += [f"{b}.{f}" for b in model.body_names for f in ACCELERATION_FIELDS]
    return cols


def check_cosimulation(scenario) -> None:
    """ScenarioError when a co-simulation asks for columns that need the rigid dynamics alone
    (the interface wrenches are not in the written rows)."""
    if scenario.solver.accelerations:
        raise ScenarioError(f"{scenario.source}: solver.accelerations: rigid runs only, not "
                            "co-simulations")
    for sensor in scenario.sensors:
        if sensor.needs_accelerations:
            raise ScenarioError(f"{scenario.source}: sensors.{sensor.name}: a marker sensor "
                                "(it has accelerations) works in rigid runs only, not "
                                "co-simulations")


def with_derived(scenario, results: Results, minimal_system=None) -> Results:
    """`results` with the derived columns appended (unchanged when there are none). Pass the
    minimal route's system to take a tree's accelerations from its joint coordinates."""
    columns = derived_columns(scenario)
    if not columns:
        return results
    model, solver = scenario.model, scenario.solver
    accelerate = _accelerations(scenario, results, minimal_system) \
        if needs_accelerations(scenario) else None
    joints = [j for j in model.joints if j.kind in JOINT_FIELDS] if solver.joint_coordinates \
        else []
    rows = []
    for i in range(results.data.shape[0]):
        state = state_of_row(model, results, i)
        kin = Kinematics.of(state)
        acc = accelerate(i, state) if accelerate else None
        row = [x for j in joints for x in joint_values(j, kin)]
        for sensor in scenario.sensors:
            row += sensor_values(sensor, kin, acc)
        if solver.accelerations:
            row += np.hstack(acc).ravel().tolist()
        rows.append(row)
    data = np.array(rows, dtype=float).reshape(len(rows), len(columns))
    for k, name in enumerate(columns):
        stem, _, field = name.rpartition(".")
        if field in ANGLES:
            rate = data[:, columns.index(f"{stem}.{ANGLES[field]}")]
            data[:, k] = unwrap(data[:, k], rate, results.t)
    return Results([*results.columns, *columns], np.hstack([results.data, data]),
                   results.diagnostics)


def _accelerations(scenario, results: Results, minimal_system):
    """f(row index, state) -> (v̇ (n,3) inertial, ω̇^b (n,3) body frame) at that row."""
    if minimal_system is not None and not minimal_system.has_loops:
        first = results.columns.index("constraint_drift") + 1
        width = minimal_system.nq + minimal_system.nv
        return lambda i, state: minimal_system.body_accelerations(
            state.t, results.data[i, first:first + width])
    system = MaximalSystem(scenario.model, baumgarte=scenario.solver.baumgarte)
    return lambda i, state: system.accelerations(state)[:2]
