"""Actuator inputs of an embedded rigid-side FMU (`export-fmu --inputs PATTERN,...`): joint
torques and forces, and drivers' targets (driver_spec).

A revolute joint ``J`` named by a pattern gets the input ``J.torque`` (N.m): a torque about
its axis (marker 1's z) on body 2 and its opposite on body 1, as a torsional spring-damper's
moment acts. A prismatic joint gets ``J.force`` (N): a force along marker 1's z on body 2 at
marker 2's origin and its opposite on body 1 at marker 1's origin (on one line: no couple).

The FMU applies them through interface points of its own, one per moving body of the joint at
the joint's marker (``J.actuator1``, ``J.actuator2``; not FMU variables), whose wrench is held
in the body frame: the actuator turns with the joint. Like the wrench inputs, a value set at
t_n acts over the next doStep (held), one set in initialization mode from the start.
"""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from rbcosim.model import GROUND, InterfacePoint
from rbcosim.scenario.loader import Scenario

#: joint type -> (input name, unit, first wrench component it drives: 0 force, 3 torque)
ACTUATED = {"revolute": ("torque", "N.m", 3), "prismatic": ("force", "N", 0)}


def actuator_specs(scenario: Scenario, patterns: tuple[str, ...],
                   t0: float = 0.0) -> list[dict[str, Any]]:
    """The actuators of the joints matching ``patterns`` (fnmatch on joint names), as stored
    in the FMU's configuration: joint, input name, unit, and per moving body the hidden point
    (name, body index, position m and axis in the body frame, sign); a driver's target
    inputs (driver_spec; starts at ``t0`` s). ValueError naming a pattern that matches no
    joint or a joint of another type."""
    joints = scenario.model.joints
    names = [j.name for j in joints]
    unmatched = [p for p in patterns if not any(fnmatchcase(n, p) for n in names)]
    if unmatched:
        raise ValueError(f"--inputs: {', '.join(repr(p) for p in unmatched)} match no joint "
                         f"(there are: {', '.join(names) or 'none'})")
    specs = []
    for joint in joints:
        if not any(fnmatchcase(joint.name, p) for p in patterns):
            continue
        if joint.kind == "driver":
            specs.append(driver_spec(scenario, joint, t0))
            continue
        if joint.kind not in ACTUATED:
            raise ValueError(f"--inputs: joint {joint.name!r} is a {joint.kind} joint; only "
                             "revolute (J.torque) and prismatic (J.force) joints and drivers "
                             "(D.target, D.rate, D.acceleration) take inputs")
        field, unit, first = ACTUATED[joint.kind]
        points = []
        for end, (marker, sign) in enumerate(((joint.marker1, -1.0), (joint.marker2, 1.0)), 1):
            if marker.body == GROUND:
                continue  # the ground takes the reaction
            points.append({"name": f"{joint.name}.actuator{end}", "body": int(marker.body),
                           "position": np.asarray(marker.position).tolist(),
                           "axes": np.asarray(marker.axes).tolist(), "sign": sign})
        specs.append({"joint": joint.name, "inputs": [f"{joint.name}.{field}"], "units": [unit],
                      "starts": [0.0], "first": first, "points": points})
    return specs


def driver_spec(scenario: Scenario, driver, t0: float) -> dict[str, Any]:
    """A driver's target inputs: its coordinate, rate and acceleration at each communication
    point t_n (start: the scenario's motion at the start time), which the FMU prescribes over
    the next step as f(t_n + τ) = target + rate τ + ½ acceleration τ². The driver's motion
    must be a polynomial of at least 3 coefficients (the model's slots)."""
    motion = driver.motion
    if motion.kind != "polynomial" or len(motion.coefficients) < 3:
        raise ValueError(f"--inputs: driver {driver.name!r}: target inputs need a polynomial "
                         "motion of at least 3 coefficients (write it as "
                         "motion = {{ polynomial = [c0, c1, c2] }})")
    drivers = [j.name for j in scenario.model.joints if j.kind == "driver"]
    driven = scenario.model.joints[driver.driven_joint]
    unit = "rad" if driven.kind == "revolute" else "m"
    start = motion.evaluate(t0)
    names = [f"{driver.name}.{n}" for n in ("target", "rate", "acceleration")]
    return {"joint": driver.name, "driver": drivers.index(driver.name), "inputs": names,
            "units": [unit, f"{unit}/s", f"{unit}/s2"], "starts": [float(x) for x in start],
            "points": []}


def apply_driver(side, spec: dict[str, Any], target: float, rate: float,
                 acceleration: float) -> None:
    """Prescribe f(t) = target + rate τ + ½ acceleration τ², τ = t − t_n (t_n the side's time),
    as the driver's polynomial in t (the model's motion coefficients, changed in place)."""
    rows = side.sim.system.tables.rows
    j = spec["driver"]
    lo, hi = int(rows.motion_start[j]), int(rows.motion_start[j + 1])
    t, c = side.time, 0.5 * acceleration
    coefficients = np.zeros(hi - lo)
    coefficients[:3] = [target - rate * t + c * t * t, rate - 2.0 * c * t, c]
    rows.motion_data[lo:hi] = coefficients


def actuated(scenario: Scenario, specs: list[dict[str, Any]]) -> Scenario:
    """``scenario`` with the actuators' hidden interface points added to its model."""
    extra = tuple(InterfacePoint(p["name"], p["body"], np.array(p["position"]),
                                 np.array(p["axes"]))
                  for spec in specs for p in spec["points"])
    return replace(scenario, model=replace(scenario.model,
                                           points=scenario.model.points + extra))


def hold_frames(side, specs: list[dict[str, Any]]) -> None:
    """Mark the hidden points' wrenches as given in their body's frame (RigidSide inputs)."""
    for spec in specs:
        for p in spec["points"]:
            side.inputs.flags[side.points.index(p["name"]), 0] = 1


def unit_wrench(spec: dict[str, Any], point: dict[str, Any]) -> np.ndarray:
    """The wrench (6,) at one of the actuator's points per unit input, in its body's frame:
    ± marker z in the force or the torque rows."""
    wrench = np.zeros(6)
    wrench[spec["first"]:spec["first"] + 3] = point["sign"] * np.array(point["axes"])[:, 2]
    return wrench


def apply(side, spec: dict[str, Any], value: float) -> None:
    """Hold the actuator's ``value`` (N.m or N) over the next step at its points."""
    for p in spec["points"]:
        side.set_wrench(p["name"], value * unit_wrench(spec, p))
