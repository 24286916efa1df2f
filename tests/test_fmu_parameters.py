"""The FMU's scenario parameters: units and descriptions of the documented keys
(docs/scenario-format.md), and no parameters for what means nothing inside an FMU."""

from __future__ import annotations

import fmpy
import pytest
from fmpy.validation import validate_fmu

from rbcosim.fmu_export import ExportOptions, export_fmu

pytestmark = pytest.mark.fmu

SCENARIO = """
[bodies.arm]
mass = 2.0
inertia = [0.05, 0.05, 0.001]
position = [0.25, 0.0, 0.0]
orientation = { axis = [0.0, 1.0, 0.0], angle = 0.1 }

[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "arm"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[forces.spring]
type = "spring_damper"
body1 = "ground"
point1 = [0.5, 0.0, 0.5]
body2 = "arm"
point2 = [0.25, 0.0, 0.0]
stiffness = 40.0
damping = 0.5

[forces.coil]
type = "torsional_spring_damper"
joint = "hinge"
stiffness = 3.0
damping = 0.1
rest_angle = 0.2

[interface_points.tip]
body = "arm"
position = [0.25, 0.0, 0.0]

[flex_bodies.beam]

[couplings.clamp]
point = "tip"
flex_body = "beam"
tolerances = { position = 1e-3, rotation = 2e-3, velocity = 1e-2, angular_velocity = 0.1 }

[solver]
t_end = 2.0
dt = 1e-3
output_every = 10
rtol = 1e-9

[cosim]
macro_step = 0.01
micro_steps = 5
extrapolation = 1
tolerance = 1e-9
max_iterations = 7
"""

#: name -> (unit, description) as the scenario format documents the key.
EXPECTED = {
    "bodies.arm.mass": ("kg", "mass of body arm"),
    "bodies.arm.orientation.angle": ("rad", ("initial rotation angle of body arm about its "
                                            "orientation axis")),
    "forces.spring.stiffness": ("N/m", "spring-damper spring: stiffness"),
    "forces.spring.damping": ("N.s/m", "spring-damper spring: damping"),
    "forces.coil.stiffness": ("N.m/rad", "torsional spring-damper coil: stiffness"),
    "forces.coil.damping": ("N.m.s/rad", "torsional spring-damper coil: damping"),
    "forces.coil.rest_angle": ("rad", "torsional spring-damper coil: rest angle"),
    "couplings.clamp.tolerances.position": ("m", ("joint clamp: continuity tolerance on the "
                                                 "position gap")),
    "couplings.clamp.tolerances.angular_velocity": ("rad/s", ("joint clamp: continuity "
                                                    "tolerance on the angular-velocity gap")),
    "cosim.micro_steps": (None, "rigid solver steps per macro step"),
}


@pytest.mark.parametrize("version", [2, 3])
def test_parameters_carry_the_documented_units_and_only_mean_something(tmp_path, version):
    scenario = tmp_path / "arm.toml"
    scenario.write_text(SCENARIO)
    path = export_fmu(scenario, tmp_path / "arm.fmu", ExportOptions(fmi_version=version))
    assert validate_fmu(str(path)) == []
    variables = {v.name: v for v in fmpy.read_model_description(str(path)).modelVariables}
    for name, (unit, description) in EXPECTED.items():
        assert variables[name].causality == "parameter", name
        assert (variables[name].unit, variables[name].description) == (unit, description)
    assert float(variables["forces.spring.stiffness"].start) == 40.0
    for meaningless in ("solver.t_end", "solver.dt", "solver.output_every", "cosim.macro_step",
                        "cosim.extrapolation", "cosim.tolerance", "cosim.max_iterations",
                        "solver.rtol"):
        assert meaningless not in variables
    assert not [n for n in variables if n.startswith("flex_bodies")]


@pytest.mark.parametrize("version", [2, 3])
def test_initial_state_vectors_are_parameters_applied_as_set(tmp_path, version):
    """bodies.B.angular_velocity[2] set before initialization gives the run of
    `--set bodies.B.angular_velocity=[...]`, to the bit; the FMU state keeps it."""
    from test_fmu_support import bits, open_fmu, rigid_side_class

    scenario = tmp_path / "arm.toml"
    scenario.write_text(SCENARIO)
    path = export_fmu(scenario, tmp_path / "arm.fmu", ExportOptions(fmi_version=version))
    variables = {v.name: v for v in fmpy.read_model_description(str(path)).modelVariables}
    assert [variables[f"bodies.arm.position[{i}]"].unit for i in (1, 2, 3)] == ["m"] * 3
    assert [float(variables[f"bodies.arm.position[{i}]"].start) for i in (1, 2, 3)] == [
        0.25, 0.0, 0.0]
    assert variables["bodies.arm.velocity[3]"].unit == "m/s"
    assert variables["bodies.arm.angular_velocity[2]"].description == (
        "body arm: angular velocity at t = 0, body frame, component y")

    reference = rigid_side_class().from_scenario(
        scenario, overrides={"bodies.arm.angular_velocity": "[0.0, 1.5, 0.0]"})
    start_wy = reference.body_outputs()["arm"][11]  # projected onto the hinge's constraints
    assert start_wy > 0.1  # the override took effect
    fmu = open_fmu(path, tmp_path / "u", start_values={"bodies.arm.angular_velocity[2]": 1.5})
    try:
        saved = fmu.get_state()
        names = [f"arm.{c}" for c in ("x", "z", "q2", "vx", "wy")]
        t, H = reference.time, reference.macro_step
        for _ in range(5):
            fmu.do_step(t, H)
            reference.step(H)
            t += H
        expected = [reference.body_outputs()["arm"][i] for i in (0, 2, 5, 7, 11)]
        assert bits(fmu.get(names)) == bits(expected)
        fmu.set_state(saved)  # a state with the vector override is this FMU's
        assert fmu.get(["arm.wy"]) == [start_wy]
    finally:
        fmu.close()
