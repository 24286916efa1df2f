"""Typed parameters of the remote FMUs (the native C FMU, FMI 2 and 3, and the Python remote
FMU): Integer / Int32, Boolean and String set through the typed FMI calls reach the session as
the same `--set` overrides; a bad value is refused at exitInitializationMode naming the key."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu
from native_build import REPO, native_unavailable
from server_process import rbcosim_serve
from test_fmu_support import bits, open_fmu, rigid_side_class

from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.scenario.loader import split_overrides

pytestmark = pytest.mark.fmu

SCENARIO = REPO / "scenarios" / "two_mass_oscillator.toml"
SETS = ("cosim.micro_steps=1", "solver.integrator=sdirk2", "solver.projection=false")
#: The same settings as typed FMU start values.
TYPED = {"cosim.micro_steps": 1, "solver.integrator": "sdirk2", "solver.projection": False}
STEPS = 20
INTEGER = {2: "Integer", 3: "Int32"}


@pytest.fixture(scope="module")
def server():
    with rbcosim_serve(root=Path(tempfile.gettempdir())) as address:
        yield address


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def native_fmu(request, tmp_path_factory):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        native_unavailable("no C compiler (cc, gcc) is installed")
    out = tmp_path_factory.mktemp("native") / f"two_mass{request.param}.fmu"
    return export_native_fmu(SCENARIO, out, fmi_version=request.param)


def _reference(*sets: str) -> np.ndarray:
    """interface.x after each macro step of the rigid side under `--set SETS`, no wrench."""
    side = rigid_side_class().from_scenario(SCENARIO,
                                            overrides=split_overrides(list(sets), "--set"))
    x = [side.point_outputs()["interface"][0]]
    for _ in range(STEPS):
        side.step(side.macro_step)
        x.append(side.point_outputs()["interface"][0])
    return np.array(x)


def test_native_types_and_forwards_typed_parameters(native_fmu, server, tmp_path):
    """The native FMU declares the types, FMPy validates it, and the typed values set through
    fmi2SetInteger/SetBoolean/SetString (fmi3SetInt32/...) give the run of the same `--set`
    to the bit, as the Python remote FMU does."""
    assert validate_fmu(str(native_fmu)) == []
    md = fmpy.read_model_description(str(native_fmu))
    version = int(md.fmiVersion[0])
    variables = {v.name: v for v in md.modelVariables}
    assert (variables["cosim.micro_steps"].type, variables["cosim.micro_steps"].start) == (
        INTEGER[version], "4")
    assert (variables["solver.projection"].type, variables["solver.projection"].start) == (
        "Boolean", "true")
    assert variables["solver.integrator"].type == "String"
    remote = export_fmu(SCENARIO, tmp_path / "remote.fmu",
                        ExportOptions(fmi_version=version, mode="remote"))
    H = float(md.defaultExperiment.stepSize)
    runs = [fmpy.simulate_fmu(str(path), stop_time=STEPS * H, output_interval=H,
                              output=["interface.x"],
                              start_values={"server.address": server, **TYPED})["interface.x"]
            for path in (native_fmu, remote)]
    expected = _reference(*SETS)
    assert bits(runs[0]) == bits(runs[1]) == bits(expected)
    assert np.abs(expected - _reference()).max() > 1e-12  # the settings took effect


def test_native_refuses_bad_typed_values_naming_the_key(native_fmu, server, tmp_path):
    cases = [("cosim.micro_steps", -2, "cosim.micro_steps: expected a positive number"),
             ("solver.integrator", "euler", "solver.integrator: expected one of"),
             ("couplings.coupling.on_violation", "abort",
              "couplings.coupling.on_violation: expected one of")]
    for n, (name, value, reason) in enumerate(cases):
        fmu = open_fmu(native_fmu, tmp_path / f"u{n}", initialize=False)
        version = fmu.fmi_version
        if version == 2:
            fmu.slave.setupExperiment(startTime=0.0)
            fmu.slave.enterInitializationMode()
        else:
            fmu.slave.enterInitializationMode(startTime=0.0)
        fmu.slave.setString(fmu.vr("server.address"), [server])
        if isinstance(value, str):
            fmu.slave.setString(fmu.vr(name), [value])
        elif version == 2:
            fmu.slave.setInteger(fmu.vr(name), [value])
        else:
            fmu.slave.setInt32(fmu.vr(name), [value])
        with pytest.raises(FMICallException):
            fmu.slave.exitInitializationMode()
        assert "scenario_error" in fmu.messages() and reason in fmu.messages(), fmu.messages()
        fmu.slave.freeInstance()
    fmu = open_fmu(native_fmu, tmp_path / "u_type", initialize=False)
    with pytest.raises(FMICallException):  # a Real into the Boolean parameter, refused whole
        fmu.set(["solver.projection"], [0.0])
    assert "(solver.projection) is not a Real variable" in fmu.messages()
    fmu.slave.freeInstance()
