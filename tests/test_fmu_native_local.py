"""The self-contained native FMU (`export-fmu --native` without --address): the rigid core of
librbcosim and the model inside the binary and resources/model.bin, no Python, server or
rbcosim where it runs; FMI 2 and 3 in FMPy and in the C pendulum host (empty environment)
against `rbcosim run` / run_cosimulation."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.fmi2 import FMU2Slave
from fmpy.validation import validate_fmu
from native_build import REPO
from test_fmu_pendulum_host import OUTPUTS, _build_host, setup_text

from rbcosim.cli.main import main
from rbcosim.cosim.master import build_endpoints, run_cosimulation
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.maximal.simulate import simulate
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

DOUBLE = REPO / "scenarios" / "double_pendulum.toml"
PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"
PLATFORM = {2: "linux64", 3: "x86_64-linux"}


def _unzip(fmu: Path, folder: Path) -> Path:
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    return folder


def _only_libc(binary: Path) -> None:
    linked = subprocess.run(["ldd", str(binary)], check=True, capture_output=True,
                            text=True).stdout
    assert "python" not in linked.lower() and "zmq" not in linked and "msgpack" not in linked, \
        linked


@pytest.fixture(scope="module")
def double_reference():
    s = load_scenario(DOUBLE, {"solver.t_end": "1.0"})
    return simulate(s.model, s.solver, progress=False)


@pytest.mark.parametrize("version", [2, 3])
def test_double_pendulum_in_fmpy_equals_rbcosim_run(version, double_reference, tmp_path):
    fmu = export_native_fmu(DOUBLE, tmp_path / "dp.fmu", fmi_version=version,
                            self_contained=True)
    assert validate_fmu(str(fmu)) == []
    folder = _unzip(fmu, tmp_path / "unzipped")
    _only_libc(folder / "binaries" / PLATFORM[version] / "double_pendulum.so")
    md = fmpy.read_model_description(str(fmu))
    names = {v.name for v in md.modelVariables}
    assert "server.address" not in names and not any(n.startswith("bodies.") for n in names)
    ref = double_reference
    outputs = [c for c in ref.columns if c.startswith("rod")]
    assert len(outputs) == 26
    got = fmpy.simulate_fmu(str(fmu), stop_time=1.0, step_size=0.01, output=outputs,
                            output_interval=0.01)
    for name in outputs:
        scale = max(1.0, np.abs(ref[name]).max())
        assert np.abs(got[name] - ref[name]).max() <= 1e-12 * scale, name


def test_state_get_set_serialize_is_bitwise(tmp_path):
    fmu = export_native_fmu(DOUBLE, tmp_path / "dp.fmu", fmi_version=2, self_contained=True)
    folder = _unzip(fmu, tmp_path / "unzipped")
    md = fmpy.read_model_description(str(folder / "modelDescription.xml"))
    vrs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    slave = FMU2Slave(guid=md.guid, unzipDirectory=str(folder),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="a")
    slave.instantiate()
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.exitInitializationMode()
    t, h = 0.0, 0.005
    for _ in range(20):
        slave.doStep(t, h)
        t += h
    state = slave.getFMUstate()
    blob = slave.serializeFMUstate(state)
    first = []
    for _ in range(30):
        slave.doStep(t + h * len(first), h)
        first.append(np.array(slave.getReal(vrs)))
    slave.setFMUstate(state)
    again = []
    for _ in range(30):
        slave.doStep(t + h * len(again), h)
        again.append(np.array(slave.getReal(vrs)))
    slave.setFMUstate(slave.deSerializeFMUstate(blob))
    third = []
    for _ in range(30):
        slave.doStep(t + h * len(third), h)
        third.append(np.array(slave.getReal(vrs)))
    assert np.array(first).tobytes() == np.array(again).tobytes() == np.array(third).tobytes()
    slave.freeFMUstate(state)
    slave.terminate()
    slave.freeInstance()


def test_cli_native_is_self_contained_unless_address(tmp_path, capsys):
    out = tmp_path / "cli.fmu"
    assert main(["export-fmu", str(DOUBLE), "-o", str(out), "--native"]) == 0
    assert "native, self-contained" in capsys.readouterr().out
    with zipfile.ZipFile(out) as z:
        assert "resources/model.bin" in z.namelist()
        assert "sources/librbcosim/rigid/macro.c" in z.namelist()


@pytest.mark.parametrize(("version", "steps"), [(2, 8000), (3, 2000)], ids=["fmi2", "fmi3"])
def test_pendulum_host_in_an_empty_environment_matches_rbcosim_run(version, steps, tmp_path):
    """rigid_flex_pendulum's rigid side as a self-contained FMU in the C pendulum host (its
    own floating beam), run with no environment at all (no PATH, no PYTHON*): the link's tip,
    the gap, the beam's modal coordinates and tip equal run_cosimulation's to 1e-12."""
    scenario = load_scenario(PENDULUM, {"solver.t_end": "2.0", "solver.output_every": "1"})
    reference = run_cosimulation(scenario, progress=False)
    host = _build_host(tmp_path)
    fmu = export_native_fmu(PENDULUM, tmp_path / "pendulum.fmu", fmi_version=version,
                            self_contained=True)
    folder = _unzip(fmu, tmp_path / "unzipped")
    binary = folder / "binaries" / PLATFORM[version] / "rigid_flex_pendulum.so"
    _only_libc(binary)
    resources = (folder / "resources").as_uri() if version == 2 else f"{folder}/resources/"
    md = fmpy.read_model_description(str(folder / "modelDescription.xml"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    vr["server.address"] = 0  # none: the host is told "-"
    cosim = scenario.cosim
    body = build_endpoints(scenario, cosim.macro_step)["clamp"].body
    setup = tmp_path / "setup.txt"
    setup.write_text(setup_text(body, cosim.macro_step, steps, cosim.extrapolation, "-", vr,
                                tmp_path / "beam.body"))
    out = tmp_path / "host.csv"
    done = subprocess.run([str(host), str(version), str(binary), resources, md.guid,
                           str(setup), str(out)], check=False, capture_output=True, text=True,
                          timeout=300, env={})
    assert done.returncode == 0, done.stderr
    got = np.loadtxt(out, delimiter=",")
    k = body.modal_coordinates.size
    names = [*OUTPUTS, "clamp.gap_pos", *(f"beam.eta{i + 1}" for i in range(k)),
             "beam.tip.x", "beam.tip.y", "beam.tip.z"]
    assert got.shape == (steps + 1, 1 + len(names))
    np.testing.assert_allclose(got[:, 0], reference.t[: steps + 1], rtol=0, atol=1e-12)
    for col, name in enumerate(names, start=1):
        ref = reference[name][: steps + 1]
        scale = (np.abs([reference["tip.x"], reference["tip.z"]]).max()
                 if name == "clamp.gap_pos" else np.abs(ref).max())
        err = np.abs(got[:, col] - ref).max()
        assert err <= 1e-12 * scale, f"{name}: {err:.3g} against {scale:.3g}"
