"""Bad input at the FMI boundary gives an FMI error or discard status and a log line, never a
crash of the host; the instance is then in the error state, and restoring a saved FMU state
makes it usable again (test_fmu_state_machine.py has the state machine itself)."""

from __future__ import annotations

import math

import pytest
from fmpy.fmi1 import FMICallException
from test_fmu_support import open_fmu, rigid_side_class, scenario_with_points

from rbcosim.fmu_export import ExportOptions, export_fmu

pytestmark = pytest.mark.fmu

#: A refused doStep is Error in both versions (FMI 2's pythonfmu says Discard; the FMU's
#: wrapper shim makes it Error, wrapper_shim.c).
REFUSED = {2: 3, 3: 3}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return scenario_with_points(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, scenario, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"boundary_fmi{request.param}.fmu"
    return export_fmu(scenario, out, ExportOptions(fmi_version=request.param))


@pytest.fixture
def fmu(fmu_path, tmp_path):
    fmu = open_fmu(fmu_path, tmp_path / "u")
    fmu.saved = fmu.get_state()
    yield fmu
    fmu.close()


def _refused_then_recovers(fmu, t0, H):
    """After a refused call the instance refuses doStep until a saved state is restored."""
    with pytest.raises(FMICallException):
        fmu.do_step(t0, H)
    fmu.set_state(fmu.saved)
    fmu.do_step(t0, H)


def _t0_H(fmu):
    e = fmu.description.defaultExperiment
    return float(e.startTime), float(e.stepSize)


def _first_force(fmu):
    return next(x.name for x in fmu.description.modelVariables if x.name.endswith(".fx"))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_input_refused_then_recovers(fmu, bad):
    t0, H = _t0_H(fmu)
    force = _first_force(fmu)
    fmu.set([force], [bad])
    with pytest.raises(FMICallException) as info:
        fmu.do_step(t0, H)
    assert info.value.status == REFUSED[fmu.fmi_version]
    assert f"non-finite inputs {force}" in fmu.messages()
    _refused_then_recovers(fmu, t0, H)  # nothing moved: the same step then succeeds


def test_wrong_current_time_refused(fmu):
    t0, H = _t0_H(fmu)
    with pytest.raises(FMICallException) as info:
        fmu.do_step(t0 + 3 * H, H)
    assert info.value.status == REFUSED[fmu.fmi_version]
    assert "does not match the FMU's time" in fmu.messages()
    _refused_then_recovers(fmu, t0, H)


@pytest.mark.parametrize("step", [0.0, -1e-3, math.nan])
def test_non_positive_step_refused(fmu, step):
    t0, H = _t0_H(fmu)
    with pytest.raises(FMICallException) as info:
        fmu.do_step(t0, step)
    assert info.value.status == REFUSED[fmu.fmi_version]
    assert "step size must be positive" in fmu.messages()
    _refused_then_recovers(fmu, t0, H)


def test_setting_a_parameter_after_initialization_is_refused_and_logged(fmu):
    param = next(x for x in fmu.description.modelVariables if x.causality == "parameter")
    with pytest.raises(FMICallException):
        fmu.set([param.name], [123.0])
    assert "fixed once initialization has ended" in fmu.messages()
    assert fmu.get([param.name]) == [float(param.start)]


def test_bad_parameter_fails_initialization_without_killing_the_host(fmu_path, tmp_path):
    RigidSide = rigid_side_class()
    fmu = open_fmu(fmu_path, tmp_path / "v", initialize=False)
    mass = next(
        x for x in fmu.description.modelVariables
        if x.causality == "parameter" and x.name.endswith(".mass")
    )
    t0, _ = _t0_H(fmu)
    if fmu.fmi_version == 2:
        fmu.slave.setupExperiment(startTime=t0)
        fmu.slave.enterInitializationMode()
    else:
        fmu.slave.enterInitializationMode(startTime=t0)
    fmu.set([mass.name], [-1.0])
    with pytest.raises(FMICallException):
        fmu.slave.exitInitializationMode()
    assert "initialization failed" in fmu.messages()
    assert RigidSide is not None  # the host's Python goes on
    fmu.slave.freeInstance()
