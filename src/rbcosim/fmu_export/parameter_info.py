"""Which scenario keys are FMU parameters, and their units and descriptions.

Units and descriptions follow docs/scenario-format.md; a key it does not describe keeps the
plain description "scenario parameter KEY" and no unit.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

#: Keys of the run around the FMU rather than of the model in it: the master owns the time
#: span and the output, the FMU steps the exported macro step (its default experiment) in
#: cosim.micro_steps steps of the solver, and the coupling scheme's settings are the master's.
NOT_IN_FMU = (
    "solver.t_end",
    "solver.output_every",
    "solver.dt",
    "cosim.macro_step",
    "cosim.extrapolation",
    "cosim.tolerance",
    "cosim.max_iterations",
)

#: (key pattern, force type or None for any, unit, description with {1}, {2}, ... the key's
#: dotted segments).
_DOCUMENTED: tuple[tuple[str, str | None, str | None, str], ...] = (
    ("bodies.*.mass", None, "kg", "mass of body {2}"),
    ("bodies.*.orientation.angle", None, "rad", ("initial rotation angle of body {2} about its "
     "orientation axis")),
    ("bodies.*.orientation.angle_deg", None, None, ("initial rotation angle of body {2} about its "
     "orientation axis, degrees")),
    ("joints.*.length", None, "m", "distance joint {2}: distance of the attachment points"),
    ("forces.*.stiffness", "spring_damper", "N/m", "spring-damper {2}: stiffness"),
    ("forces.*.damping", "spring_damper", "N.s/m", "spring-damper {2}: damping"),
    ("forces.*.free_length", "spring_damper", "m", "spring-damper {2}: free length"),
    ("forces.*.stiffness", "torsional_spring_damper", "N.m/rad",
     "torsional spring-damper {2}: stiffness"),
    ("forces.*.damping", "torsional_spring_damper", "N.m.s/rad",
     "torsional spring-damper {2}: damping"),
    ("forces.*.rest_angle", "torsional_spring_damper", "rad",
     "torsional spring-damper {2}: rest angle"),
    ("couplings.*.tolerances.position", None, "m", ("joint {2}: continuity tolerance on the "
     "position gap")),
    ("couplings.*.tolerances.rotation", None, "rad", ("joint {2}: continuity tolerance on the "
     "rotation gap")),
    ("couplings.*.tolerances.velocity", None, "m/s", ("joint {2}: continuity tolerance on the "
     "velocity gap")),
    ("couplings.*.tolerances.angular_velocity", None, "rad/s", ("joint {2}: continuity "
     "tolerance on the angular-velocity gap")),
    ("cosim.micro_steps", None, None, "rigid solver steps per macro step"),
    ("solver.rtol", None, None, "relative tolerance of the adaptive integrators"),
    ("solver.atol", None, None, "absolute tolerance of the adaptive integrators"),
)


def describe_parameter(key: str, raw: dict) -> tuple[str | None, str]:
    """(unit, description) of the scenario key ``key`` of the scenario ``raw`` (parsed TOML)."""
    parts = key.split(".")
    force_type = raw.get("forces", {}).get(parts[1], {}).get("type") if len(parts) > 1 else None
    for pattern, kind, unit, text in _DOCUMENTED:
        if fnmatchcase(key, pattern) and kind in (None, force_type):
            return unit, text.format(None, *parts)
    return None, f"scenario parameter {key}"


#: A body's initial-state 3-vectors: key, unit, description (docs/scenario-format.md).
_INITIAL_STATES = (
    ("position", "m", "inertial position of the body-frame origin at t = 0"),
    ("velocity", "m/s", "centre-of-mass velocity at t = 0, inertial"),
    ("angular_velocity", "rad/s", "angular velocity at t = 0, body frame"),
)


def initial_states(raw: dict) -> dict[str, tuple[list[float], str, str]]:
    """``bodies.B.position`` / ``velocity`` / ``angular_velocity`` of every body of the
    scenario ``raw`` -> (the scenario's 3 values, default zeros; unit; description). Vectors
    written with expressions are derived, not parameters (their inputs are), and neither is the
    position of a body placed relative to a marker."""
    out = {}
    for body, table in raw.get("bodies", {}).items():
        for key, unit, text in _INITIAL_STATES:
            if not isinstance(table, dict) or (key == "position" and "placement" in table):
                continue
            value = table.get(key, [0.0, 0.0, 0.0])
            if isinstance(value, list) and len(value) == 3 and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
                out[f"bodies.{body}.{key}"] = ([float(x) for x in value], unit,
                                               f"body {body}: {text}")
    return out
