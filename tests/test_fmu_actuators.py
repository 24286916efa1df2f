"""`export-fmu --inputs`: joint actuator inputs of the embedded FMU (J.torque, J.force) against
the same torques given as scenario loads in `rbcosim run`, and against the wrench inputs."""

from __future__ import annotations

import shutil
import subprocess
import sys

import fmpy
import numpy as np
import pytest
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.cli.main import main
from rbcosim.errors import ScenarioError
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.native import export_native_fmu
from rbcosim.results import Results, body_columns
from rbcosim.scenario import load_scenario

pytestmark = pytest.mark.fmu

PENDULUM = REPO / "scenarios" / "double_pendulum.toml"
TWO_MASS = REPO / "scenarios" / "two_mass_oscillator.toml"
STOP = 0.5
TAU1, TAU2 = 0.7, -0.3  # N.m about the hinge axes (+y)


def _run(scenario, out):
    subprocess.run([sys.executable, "-m", "rbcosim", "run", str(scenario), "--t-end", str(STOP),
                    "--out", str(out), "--quiet"], check=True)
    return Results.read_csv(out)


@pytest.mark.parametrize(("kind", "version"),
                         [("embedded", 2), ("embedded", 3), ("native", 2), ("native", 3)])
def test_joint_torques_equal_the_same_torques_as_scenario_loads(tmp_path, kind, version):
    """shoulder.torque and elbow.torque set by the master (initialization mode: from t = 0)
    give `rbcosim run` of the scenario with loads of the same torques: rod1 carries
    shoulder's torque and the reaction of elbow's, rod2 elbow's (the swing is planar, so the
    hinge axes stay along +y). The Python FMU and the self-contained native one."""
    if kind == "embedded":
        path = export_fmu(PENDULUM, tmp_path / "p.fmu",
                          ExportOptions(fmi_version=version, inputs=("shoulder", "elb*")))
    else:
        if shutil.which("cc") is None and shutil.which("gcc") is None:
            pytest.skip("no C compiler")
        path = export_native_fmu(PENDULUM, tmp_path / "p.fmu", fmi_version=version,
                                 self_contained=True, inputs=("shoulder", "elb*"))
    md = fmpy.read_model_description(str(path))
    inputs = {v.name: v for v in md.modelVariables if v.causality == "input"}
    assert sorted(inputs) == ["elbow.torque", "shoulder.torque"]
    assert {v.unit for v in inputs.values()} == {"N.m"}
    columns = body_columns(load_scenario(PENDULUM).model)
    solver = load_scenario(PENDULUM).solver
    result = fmpy.simulate_fmu(str(path), stop_time=STOP,
                               output_interval=solver.dt * solver.output_every, output=columns,
                               start_values={"shoulder.torque": TAU1, "elbow.torque": TAU2})

    loaded = tmp_path / "loaded.toml"
    loaded.write_text(PENDULUM.read_text() + f"""
[forces.shoulder_and_elbow_on_rod1]
type = "load"
body = "rod1"
torque = [0.0, {TAU1 - TAU2!r}, 0.0]

[forces.elbow_on_rod2]
type = "load"
body = "rod2"
torque = [0.0, {TAU2!r}, 0.0]
""")
    ref = _run(loaded, tmp_path / "loaded.csv")
    free = _run(PENDULUM, tmp_path / "free.csv")
    assert bits(result["time"]) == bits(ref.t)
    worst = max(np.abs(result[c] - ref[c]).max() for c in columns)
    assert worst <= 1e-12, worst
    assert np.abs(result["rod2.x"] - free["rod2.x"]).max() > 1e-3  # the torques act


def test_prismatic_force_equals_the_wrench_input_at_the_slider(tmp_path):
    """slider.force (N along the slider's axis, +x) on the two-mass oscillator's mass equals
    the same force as the interface point's wrench input (the point is at the mass's centre),
    to the bit; set in step mode it changes no output before the next doStep."""
    path = export_fmu(TWO_MASS, tmp_path / "t.fmu", ExportOptions(inputs=("slider",)))
    rows = {}
    for name in ("slider.force", "interface.fx"):
        fmu = open_fmu(path, tmp_path / name)
        try:
            out, t, h = [], 0.0, 1e-3
            for n in range(100):
                before = fmu.get(["mass1.x", "mass1.vx", "interface.ax"])
                fmu.set([name], [2.0 + np.sin(n / 10)])
                assert bits(fmu.get(["mass1.x", "mass1.vx", "interface.ax"])) == bits(before)
                fmu.do_step(t, h)
                t += h
                out.append(fmu.get(["mass1.x", "mass1.vx", "interface.ax"]))
        finally:
            fmu.close()
        rows[name] = np.array(out)
    assert bits(rows["slider.force"]) == bits(rows["interface.fx"])
    assert rows["slider.force"][-1, 0] > 0.1 + 1e-3  # pushed along +x (spring at rest)


@pytest.mark.parametrize(("scenario", "patterns", "message"), [
    (PENDULUM, ("knee",), "--inputs: 'knee' match no joint (there are: shoulder, elbow)"),
    (REPO / "scenarios" / "four_bar.toml", ("*",),
     "is a driver: driver targets are not FMU inputs"),
])
def test_bad_patterns_are_refused_naming_them(tmp_path, scenario, patterns, message):
    with pytest.raises(ScenarioError, match="cannot export as FMU") as info:
        export_fmu(scenario, tmp_path / "x.fmu", ExportOptions(inputs=patterns))
    assert message in str(info.value)
    assert not (tmp_path / "x.fmu").exists()


def test_inputs_need_the_rigid_solver_in_the_fmu(tmp_path):
    with pytest.raises(ValueError, match="embedded rigid-side FMUs only"):
        ExportOptions(mode="remote", inputs=("slider",))
    with pytest.raises(ValueError, match="not with --address"):
        export_native_fmu(TWO_MASS, tmp_path / "x.fmu", inputs=("slider",))


@pytest.mark.parametrize(("extra", "message"), [
    (["--mode", "remote"], ("--inputs (joint actuators) needs the rigid solver in the FMU: "
                            "embedded rigid-side FMUs only (not with --mode remote or --flex)")),
    (["--native", "--address", "tcp://127.0.0.1:9"],
     "--native builds the rigid side's C FMU; --inputs with --address is not available with it"),
    ([], "--inputs: empty pattern in 'slider,'"),
])
def test_cli_refusals_exit_2_naming_the_option(tmp_path, capsys, extra, message):
    patterns = "slider," if not extra else "slider"
    out = tmp_path / "x.fmu"
    assert main(["export-fmu", str(TWO_MASS), "-o", str(out), "--inputs", patterns,
                 *extra]) == 2
    assert capsys.readouterr().err == f"rbcosim export-fmu: error: {message}\n"
    assert not out.exists()
