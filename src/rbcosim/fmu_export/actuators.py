"""Actuator inputs of an embedded rigid-side FMU (`export-fmu --inputs PATTERN,...`).

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
from rbcosim.scenario import Scenario

#: joint type -> (input name, unit, first wrench component it drives: 0 force, 3 torque)
ACTUATED = {"revolute": ("torque", "N.m", 3), "prismatic": ("force", "N", 0)}


def actuator_specs(scenario: Scenario, patterns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The actuators of the joints matching ``patterns`` (fnmatch on joint names), as stored
    in the FMU's configuration: joint, input name, unit, and per moving body the hidden point
    (name, body index, position m and axis in the body frame, sign). ValueError naming a
    pattern that matches no joint, a driver, or a joint of another type."""
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
        if joint.kind not in ACTUATED:
            what = ("a driver: driver targets are not FMU inputs (its motion is part of the "
                    "model)") if joint.kind == "driver" else f"a {joint.kind} joint"
            raise ValueError(f"--inputs: joint {joint.name!r} is {what}; only revolute "
                             "(J.torque) and prismatic (J.force) joints take actuator inputs")
        field, unit, first = ACTUATED[joint.kind]
        points = []
        for end, (marker, sign) in enumerate(((joint.marker1, -1.0), (joint.marker2, 1.0)), 1):
            if marker.body == GROUND:
                continue  # the ground takes the reaction
            points.append({"name": f"{joint.name}.actuator{end}", "body": int(marker.body),
                           "position": np.asarray(marker.position).tolist(),
                           "axes": np.asarray(marker.axes).tolist(), "sign": sign})
        specs.append({"joint": joint.name, "input": f"{joint.name}.{field}", "unit": unit,
                      "first": first, "points": points})
    return specs


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
