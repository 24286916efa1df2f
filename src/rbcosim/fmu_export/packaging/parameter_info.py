"""Which scenario keys are FMU parameters, of which FMI type, and their units and descriptions.

Units and descriptions follow docs/scenario-format.md; a key it does not describe keeps the
plain description "scenario parameter KEY" and no unit. A parameter's type is that of the
scenario key: Integer for the counts, Boolean for the switches, String for the choices (the
allowed values in the description), Real for every other number.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from rbcosim.maximal.integrators import FIXED_STEP
from rbcosim.scenario.loader import Scenario, scalar_parameters
from rbcosim.settings import VIOLATION_ACTIONS

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
    # The tolerances of the adaptive integrators: the FMU steps a fixed-step one.
    "solver.rtol",
    "solver.atol",
)
#: Counts that make the FMU's variables (the chain's bodies, the flexible body's modal
#: coordinates and boundary): fixed at export, not parameters.
STRUCTURAL = ("generators.chain.links", "flex_bodies.*.modes", "flex_bodies.*.n_boundary")

#: Number keys that are counts (Integer parameters; in FMI 3 Int32, which every count's range
#: fits) and written switches that are Boolean parameters.
INTEGER_KEYS = ("cosim.micro_steps", "flex_bodies.*.elements")
BOOLEAN_KEYS = ("bodies.*.point_mass", "flex_bodies.*.planar",
                "flex_bodies.*.geometric_stiffening")


def _choices(values) -> str:
    return ", ".join(f"'{v}'" for v in values)


#: (key pattern, force type or None for any, unit, description with {1}, {2}, ... the key's
#: dotted segments).
_DOCUMENTED: tuple[tuple[str, str | None, str | None, str], ...] = (
    ("bodies.*.mass", None, "kg", "mass of body {2}"),
    ("bodies.*.orientation.angle", None, "rad", ("initial rotation angle of body {2} about its "
     "orientation axis")),
    ("bodies.*.orientation.angle_deg", None, "deg", ("initial rotation angle of body {2} about "
     "its orientation axis, degrees")),
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
    ("solver.integrator", None, None, ("fixed-step integrator of the rigid solver: one of "
                                       f"{_choices(FIXED_STEP)}")),
    ("solver.projection", None, None, ("project positions and velocities onto the constraints "
                                       "after every step")),
    ("couplings.*.on_violation", None, None, ("joint {2}: what a gap over its tolerance does: "
                                              f"one of {_choices(VIOLATION_ACTIONS)}")),
    ("couplings.*.wrench_frame", None, None, ("joint {2}: frame of the wrench inputs: one of "
                                              "'inertial', 'body' (the interface point's axes)")),
    ("bodies.*.point_mass", None, None, "body {2} is a particle (no rotational inertia)"),
    ("flex_bodies.*.elements", None, None, "flexible body {2}: number of beam finite elements"),
    ("flex_bodies.*.length", None, "m", "flexible body {2}: beam length"),
    ("flex_bodies.*.youngs_modulus", None, "Pa", "flexible body {2}: Young's modulus"),
    ("flex_bodies.*.shear_modulus", None, "Pa", "flexible body {2}: shear modulus"),
    ("flex_bodies.*.poissons_ratio", None, None, "flexible body {2}: Poisson's ratio"),
    ("flex_bodies.*.density", None, "kg/m3", "flexible body {2}: density"),
    ("flex_bodies.*.width", None, "m", "flexible body {2}: section width (along y)"),
    ("flex_bodies.*.height", None, "m", "flexible body {2}: section height (along z)"),
    ("flex_bodies.*.diameter", None, "m", "flexible body {2}: circular section diameter"),
    ("flex_bodies.*.area", None, "m2", "flexible body {2}: section area"),
    ("flex_bodies.*.second_moment_[yz]", None, "m4", "flexible body {2}: section second moment"),
    ("flex_bodies.*.torsion_constant", None, "m4", "flexible body {2}: section torsion constant"),
    ("flex_bodies.*.damping.modal_ratio", None, None, "flexible body {2}: modal damping ratio"),
    ("flex_bodies.*.planar", None, None, "flexible body {2}: in-plane beam model"),
    ("flex_bodies.*.geometric_stiffening", None, None, ("flexible body {2}: geometric stiffening "
                                                        "by the inertial axial load")),
)


def fmu_parameters(scenario: Scenario, prefix: str = "") -> dict[str, float | int | bool | str]:
    """The FMU parameters of a built scenario whose keys start with ``prefix``, key -> start
    value typed as the parameter (table.value_type): every number written in the file (an int
    at INTEGER_KEYS, a float else), every switch at BOOLEAN_KEYS written in it, and the rigid
    solver's settings inside an FMU, written or not: ``solver.integrator``,
    ``solver.projection``, ``cosim.micro_steps`` and each joint's ``on_violation`` and
    ``wrench_frame``. Keys of NOT_IN_FMU and STRUCTURAL are left out."""
    raw = scenario.raw
    found: dict[str, float | int | bool | str] = {
        key: int(value) if _matches(key, INTEGER_KEYS) else value
        for key, value in scalar_parameters(raw).items()
    }
    found.update((key, value) for key, value in _switches(raw, "") if _matches(key, BOOLEAN_KEYS))
    found.update({
        "solver.integrator": scenario.solver.integrator,
        "solver.projection": scenario.solver.projection,
        "cosim.micro_steps": scenario.cosim.micro_steps,
    })
    for c in scenario.couplings:
        found[f"couplings.{c.name}.on_violation"] = c.on_violation
        found[f"couplings.{c.name}.wrench_frame"] = c.wrench_frame
    return {key: value for key, value in sorted(found.items())
            if key.startswith(prefix) and key not in NOT_IN_FMU
            and not _matches(key, STRUCTURAL)}


def _matches(key: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(key, pattern) for pattern in patterns)


def _switches(raw: dict, prefix: str):
    """(dotted key, value) of every boolean in ``raw``."""
    for key, value in raw.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _switches(value, path)
        elif isinstance(value, bool):
            yield path, value


def describe_parameter(key: str, raw: dict) -> tuple[str | None, str]:
    """(unit, description) of the scenario key ``key`` of the scenario ``raw`` (parsed TOML)."""
    parts = key.split(".")
    force_type = raw.get("forces", {}).get(parts[1], {}).get("type") if len(parts) > 1 else None
    for pattern, kind, unit, text in _DOCUMENTED:
        if fnmatchcase(key, pattern) and kind in (None, force_type):
            return unit, text.format(None, *parts)
    if parts[-1].endswith("_deg"):  # every angle written in degrees (initial_angle_deg, ...)
        return "deg", f"scenario parameter {key}, degrees"
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
