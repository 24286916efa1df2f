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
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.results import Results, body_columns
from rbcosim.scenario.loader import load_scenario

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
    (REPO / "scenarios" / "kane_spinup.toml", ("spin_up",),
     "--inputs: driver 'spin_up': target inputs need a polynomial motion"),
    (REPO / "scenarios" / "heavy_top.toml", ("*",), "is a spherical joint; only revolute"),
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
    with pytest.raises(ScenarioError, match="driver targets are inputs of the Python FMU only"):
        export_native_fmu(REPO / "scenarios" / "four_bar.toml", tmp_path / "x.fmu",
                          self_contained=True, inputs=("spin",))
    assert not (tmp_path / "x.fmu").exists()


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


def _four_bar_run(path, tmp_path, name, law, steps=200):
    """The four-bar FMU stepped `steps` macro steps; `law(t)` -> (f, f', f'') of the driver
    set at each communication point (None: targets never set). Rows: A.angle, then the body
    outputs."""
    md = fmpy.read_model_description(str(path))
    h = float(md.defaultExperiment.stepSize)
    bodies = [v.name for v in md.modelVariables if v.causality == "output"
              and v.name.split(".")[0] in ("crank", "coupler", "rocker")]
    fmu = open_fmu(path, tmp_path / name, initialize=False)
    try:
        fmu.slave.setupExperiment(startTime=0.0)
        fmu.slave.enterInitializationMode()
        t, rows = 0.0, []
        for n in range(steps + 1):
            if law is not None:
                fmu.set(["spin.target", "spin.rate", "spin.acceleration"], law(t))
            if n == 0:
                fmu.slave.exitInitializationMode()
            rows.append(fmu.get(["A.angle", *bodies]))
            if n < steps:
                fmu.do_step(t, h)
                t = (n + 1) * h
    finally:
        fmu.close()
    return np.array(rows), h


def test_driver_targets_prescribe_the_driven_joint(tmp_path):
    """spin.target/rate/acceleration set by the master at each communication point: with the
    scenario's own law (π/2) t² the FMU gives the FMU without inputs (1e-12), with another law
    (π/4) t² the driven joint A follows that law (its coordinate output, 1e-9 rad)."""
    path = export_fmu(REPO / "scenarios" / "four_bar.toml", tmp_path / "fb.fmu",
                      ExportOptions(inputs=("spin",)))
    plain = export_fmu(REPO / "scenarios" / "four_bar.toml", tmp_path / "plain.fmu",
                       ExportOptions())
    md = fmpy.read_model_description(str(path))
    units = {v.name: v.unit for v in md.modelVariables if v.causality == "input"}
    assert units == {"spin.target": "rad", "spin.rate": "rad/s", "spin.acceleration": "rad/s2"}
    own, h = _four_bar_run(path, tmp_path, "own", lambda t: [np.pi / 2 * t * t, np.pi * t, np.pi])
    ref, _ = _four_bar_run(plain, tmp_path, "plain", None)
    unset, _ = _four_bar_run(path, tmp_path, "unset", None)
    assert bits(unset) == bits(ref)  # until the master sets them, the scenario's motion
    assert np.abs(own - ref).max() <= 1e-12
    slow, _ = _four_bar_run(path, tmp_path, "slow", lambda t: [np.pi / 4 * t * t,
                                                                np.pi / 2 * t, np.pi / 2])
    t = h * np.arange(len(slow))
    assert np.abs(slow[:, 0] - np.pi / 4 * t * t).max() <= 1e-9
    assert np.abs(ref[-1, 0] - slow[-1, 0]) > 0.1 * ref[-1, 0]
