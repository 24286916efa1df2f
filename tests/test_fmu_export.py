"""Exported FMUs under FMPy: validation, simulate_fmu, variables, step-by-step equality."""

from __future__ import annotations

import math

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu
from test_fmu_support import bits, open_fmu, rigid_side_class, scenario_paths

from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.table import structured_name

#: Scenario keys of the run around an FMU, not FMU parameters (fmu/README.md).
OUTSIDE_THE_FMU = ("solver.t_end", "solver.output_every", "solver.dt", "cosim.macro_step",
                   "cosim.extrapolation", "cosim.tolerance", "cosim.max_iterations",
                   "solver.rtol", "solver.atol")

pytestmark = [
    pytest.mark.fmu,
    pytest.mark.filterwarnings("ignore::rbcosim.cosim.continuity.ContinuityWarning"),
]

VERSIONS = (2, 3)


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    return scenario_paths(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture(scope="module")
def fmus(scenarios, tmp_path_factory):
    """Every scenario exported as FMI 2 and FMI 3, built once for the module."""
    out = tmp_path_factory.mktemp("fmus")
    return {
        (name, v): export_fmu(path, out / f"{name}_fmi{v}.fmu", ExportOptions(fmi_version=v))
        for name, path in scenarios.items()
        for v in VERSIONS
    }


def test_every_fmu_passes_fmpy_validation(fmus):
    problems = {key: validate_fmu(str(path)) for key, path in fmus.items()}
    assert problems == {key: [] for key in fmus}


def test_simulate_fmu_runs_each(fmus, scenarios):
    for (name, v), path in fmus.items():
        md = fmpy.read_model_description(str(path))
        H = float(md.defaultExperiment.stepSize)
        t0 = float(md.defaultExperiment.startTime)
        outputs = [x.name for x in md.modelVariables if x.causality == "output"]
        result = fmpy.simulate_fmu(
            str(path), stop_time=t0 + 10 * H, output_interval=H, output=outputs
        )
        assert len(result) == 11, (name, v)
        for column in outputs:
            assert np.all(np.isfinite(result[column])), (name, v, column)


def test_variables_have_units_descriptions_and_stable_references(fmus, scenarios, tmp_path):
    for (name, v), path in fmus.items():
        md = fmpy.read_model_description(str(path))
        variables = {x.name: x for x in md.modelVariables}
        side = rigid_side_class().from_scenario(scenarios[name])
        for point in side.point_names:
            assert variables[f"{point}.fx"].unit == "N"
            assert variables[f"{point}.mz"].unit == "N.m"
            assert variables[f"{point}.z"].unit == "m"
            assert variables[f"{point}.wy"].unit == "rad/s"
            assert variables[f"{point}.q0"].causality == "output"
            assert variables[f"{point}.q0"].initial == "calculated"
            # The exchange variables (embedded mode) an FMI master needs to reproduce
            # CosimMaster: accelerations, wrench derivatives, added mass.
            assert (variables[f"{point}.ax"].unit, variables[f"{point}.alz"].unit) == (
                "m/s2",
                "rad/s2",
            )
            assert variables[f"{point}.aly"].causality == "output"
            assert variables[f"{point}.aly"].initial == "calculated"
            assert (variables[f"{point}.dfx"].unit, variables[f"{point}.d2mz"].unit) == (
                "N/s",
                "N.m/s2",
            )
            assert variables[f"{point}.d2fy"].causality == "input"
            assert [
                variables[f"{point}.added_mass[{i},{j}]"].unit for i, j in ((1, 1), (1, 4), (6, 6))
            ] == ["kg", "kg.m", "kg.m2"]
            assert variables[f"{point}.added_mass[2,5]"].causality == "parameter"
            assert variables[f"{point}.added_mass_frame"].start == "point"
        for joint in side.joint_names:
            assert variables[f"{joint}.gap_rot"].unit == "rad"
            assert variables[f"{joint}.flex.vx"].causality == "input"
            assert variables[f"{joint}.flex_energy"].causality == "input"
            assert variables[f"{joint}.energy_residual"].unit == "J"
        # The scenario's parameters, but none of the flexible bodies (not inside the FMU) and
        # none of the settings of the run around the FMU (fmu/README.md); the rigid solver's
        # settings inside the FMU whether written or not.
        settings = {"solver.integrator", "solver.projection", "cosim.micro_steps"} | {
            f"couplings.{joint}.{key}" for joint in side.joint_names
            for key in ("on_violation", "wrench_frame")}
        listed = {
            x.name
            for x in md.modelVariables
            if x.causality == "parameter" and not x.name.endswith((".added_mass_frame", "]"))
        }
        assert listed == settings | {
            structured_name(k) for k in side.parameters()
            if not k.startswith("flex_bodies.") and k not in OUTSIDE_THE_FMU
        }
        for body in side.scenario.model.body_names:
            assert variables[f"{body}.q3"].causality == "output"
            assert variables[f"{body}.vz"].unit == "m/s"
        assert all(x.description for x in md.modelVariables)

        rebuilt = export_fmu(
            scenarios[name], tmp_path / f"again{v}.fmu", ExportOptions(fmi_version=v)
        )
        again = fmpy.read_model_description(str(rebuilt))
        assert [(x.name, x.valueReference) for x in again.modelVariables] == [
            (x.name, x.valueReference) for x in md.modelVariables
        ]


def _drive(side_or_fmu, points, joints, steps, H, t0):
    """Apply a deterministic wrench and flex-node history; return the outputs after each step."""
    history = []
    t = t0
    for n in range(steps):
        wrench = {
            p: np.array([0.3 * math.sin(n + i), 0.0, -0.2 * i, 0.0, 0.01 * n, 0.0])
            for i, p in enumerate(points)
        }
        flex = {j: np.array([0.01 * n, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0.0]) for j in joints}
        history.append(side_or_fmu(t, H, wrench, flex))
        t += H
    return history


def _in_process(side):
    """One step of a RigidSide as the FMU does it: inputs, step, outputs and gaps."""
    points, joints = side.point_names, side.joint_names

    def step(t, H, wrench, flex):
        for p, w in wrench.items():
            side.set_wrench(p, w)
        for j, k in flex.items():
            side.set_flex_kinematics(j, k)
        side.step(H)
        o, g = side.point_outputs(), side.gaps()
        return [*(x for p in points for x in o[p]), *(x for j in joints for x in g[j])]

    return step


def _through_fmu(fmu, out_names):
    """One doStep through FMPy: set the inputs, step, get the outputs."""

    def step(t, H, wrench, flex):
        for p, w in wrench.items():
            fmu.set([f"{p}.{c}" for c in ("fx", "fy", "fz", "mx", "my", "mz")], w)
        for j, k in flex.items():
            fmu.set(
                [
                    f"{j}.flex.{c}"
                    for c in (
                        "x",
                        "y",
                        "z",
                        "q0",
                        "q1",
                        "q2",
                        "q3",
                        "vx",
                        "vy",
                        "vz",
                        "wx",
                        "wy",
                        "wz",
                    )
                ],
                k,
            )
        fmu.do_step(t, H)
        return fmu.get(out_names)

    return step


def test_step_by_step_through_fmpy_equals_in_process_to_the_bit(fmus, scenarios, tmp_path):
    for (name, v), path in fmus.items():
        side = rigid_side_class().from_scenario(scenarios[name])
        points, joints, H, t0 = side.point_names, side.joint_names, side.macro_step, side.time
        out_names = [
            f"{p}.{c}"
            for p in points
            for c in ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
        ]
        out_names += [
            f"{j}.{c}" for j in joints for c in ("gap_pos", "gap_rot", "gap_vel", "gap_angvel")
        ]
        fmu = open_fmu(path, tmp_path / f"{name}{v}")
        expected = _drive(_in_process(side), points, joints, 20, H, t0)
        got = _drive(_through_fmu(fmu, out_names), points, joints, 20, H, t0)
        fmu.close()
        assert bits(got) == bits(expected), (name, v)


def test_parameters_apply_as_overrides(fmus, scenarios, tmp_path):
    for (name, v), path in fmus.items():
        RigidSide = rigid_side_class()
        side = RigidSide.from_scenario(scenarios[name])
        key, value = next((k, x) for k, x in side.parameters().items() if "mass" in k)
        md = fmpy.read_model_description(str(path))
        param = next(x for x in md.modelVariables if x.name == structured_name(key))
        assert float(param.start) == value

        changed = RigidSide.from_scenario(scenarios[name], overrides={key: repr(2.5 * value)})
        fmu = open_fmu(path, tmp_path / f"{name}{v}", start_values={param.name: 2.5 * value})
        outputs = [f"{p}.z" for p in side.point_names]
        for _ in range(5):
            fmu.do_step(changed.time, changed.macro_step)
            changed.step(changed.macro_step)
        got = fmu.get(outputs)
        fmu.close()
        assert bits(got) == bits([changed.point_outputs()[p][2] for p in side.point_names])
