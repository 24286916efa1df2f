"""Joint-coordinate outputs of the native FMUs (fmu/native/fmu_joints.c), self-contained and
server-client, FMI 2 and 3, against `rbcosim run --joint-coordinates` through FMPy.

The slider-crank has every kind but the cylindrical joint (revolute crank turning past π
several times, spherical, universal, prismatic); a sleeve on a cylindrical shaft, turning and
sliding freely, has the closed form angle = 0.5 + 2 t, disp = 0.1 + 0.3 t.
"""

from __future__ import annotations

import shutil

import fmpy
import numpy as np
import pytest
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.cli.main import main
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.joint_coordinates import coordinate_columns
from rbcosim.results import Results
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

SLIDER_CRANK = REPO / "scenarios" / "slider_crank.toml"
STOP = 1.0  # s: the crank turns through 13 rad
SLEEVE = """
title = "a sleeve turning and sliding on a cylindrical shaft"
[world]
gravity = [0.0, 0.0, 0.0]
[bodies.sleeve]
mass = 0.5
inertia = [0.01, 0.01, 0.01]
position = [3.0, 0.0, 0.0]
[joints.shaft]
type = "cylindrical"
body1 = "ground"
body2 = "sleeve"
at = [3.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
initial = { angle = 0.5, rate = 2.0, displacement = 0.1, displacement_rate = 0.3 }
[solver]
integrator = "rk4"
dt = 1e-3
t_end = 2.0
output_every = 10
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    return tmp_path_factory.mktemp("native_joints")


def _run(scenario, stop, out) -> Results:
    assert main(["run", str(scenario), "--t-end", str(stop), "--joint-coordinates", "--out",
                 str(out), "--quiet"]) == 0
    return Results.read_csv(out)


def _export(scenario, path, fmi, kind):
    if kind == "local":
        return export_native_fmu(scenario, path, fmi_version=fmi, self_contained=True)
    return export_native_fmu(scenario, path, fmi_version=fmi, address="")  # starts a server


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", ["local", "server"])
def test_joint_outputs_equal_rbcosim_run(kind, fmi, work):
    path = _export(SLIDER_CRANK, work / f"sc_{kind}{fmi}.fmu", fmi, kind)
    columns = coordinate_columns(load_scenario(SLIDER_CRANK).model)
    assert len(columns) == 14  # revolute 2, spherical 6, universal 4, prismatic 2
    variables = {v.name: v for v in fmpy.read_model_description(str(path)).modelVariables}
    for column in columns:
        assert variables[column].causality == "output", column
    assert variables["crank_pivot.angle"].unit == "rad"
    assert variables["slide.speed"].unit == "m/s"
    got = fmpy.simulate_fmu(str(path), stop_time=STOP, output_interval=0.01, output=columns)
    ref = _run(SLIDER_CRANK, STOP, work / f"sc_run_{kind}{fmi}.csv")
    assert bits(got["time"]) == bits(ref.t)
    for column in columns:
        np.testing.assert_allclose(got[column], ref[column], rtol=0, atol=1e-12,
                                   err_msg=column)
    # the crank's angle is continued past ±π, as in the run (a wrapped one jumps by 2π)
    assert abs(got["crank_pivot.angle"][-1]) > 3 * np.pi
    assert np.abs(np.diff(got["crank_pivot.angle"])).max() < 0.5
    assert np.ptp(got["crank_pin.ratey"]) > 1 and np.ptp(got["wrist.angle1"]) > 0.1


def test_cylindrical_joint_follows_its_closed_form(work):
    scenario = work / "sleeve.toml"
    scenario.write_text(SLEEVE, "utf-8")
    path = export_native_fmu(scenario, work / "sleeve.fmu", self_contained=True)
    columns = ["shaft.angle", "shaft.rate", "shaft.disp", "shaft.speed"]
    got = fmpy.simulate_fmu(str(path), stop_time=2.0, output_interval=0.01, output=columns)
    t = got["time"]
    np.testing.assert_allclose(got["shaft.angle"], 0.5 + 2.0 * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["shaft.rate"], 2.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["shaft.disp"], 0.1 + 0.3 * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["shaft.speed"], 0.3, rtol=0, atol=1e-12)
    assert got["shaft.angle"][-1] > np.pi
    ref = _run(scenario, 2.0, work / "sleeve_run.csv")
    for column in columns:
        np.testing.assert_allclose(got[column], ref[column], rtol=0, atol=1e-12)


@pytest.mark.parametrize("fmi", [2, 3])
def test_restored_state_continues_the_angles(fmi, work):
    """A state saved after the crank passed π, restored in a fresh instance (and before its
    initialization): the next angle is continued from the saved one, as in the first."""
    path = _export(SLIDER_CRANK, work / f"sc_state{fmi}.fmu", fmi, "local")
    a = open_fmu(path, work / f"a{fmi}")
    H, t = 0.01, 0.0
    for _ in range(50):
        a.do_step(t, H)
        t += H
    blob = a.serialize(a.get_state())
    a.do_step(t, H)
    expected = a.get(["crank_pivot.angle", "wrist.angle1", "wrist.angle2"])
    a.close()
    assert abs(expected[0]) > np.pi
    b = open_fmu(path, work / f"b{fmi}", initialize=False)
    b.set_state(b.deserialize(blob))
    b.do_step(t, H)
    got = b.get(["crank_pivot.angle", "wrist.angle1", "wrist.angle2"])
    b.close()
    assert bits(got) == bits(expected)
