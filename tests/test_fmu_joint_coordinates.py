"""Joint coordinates as outputs of the embedded FMU, against `rbcosim run` and the four-bar's
driver: φ_A = (π/2) t², so the crank angle passes π at t = √2 and must be continued."""

from __future__ import annotations

import subprocess
import sys

import fmpy
import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.derived import with_derived
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.runtime.fmustate import decode_state, encode_state
from rbcosim.joint_coordinates import coordinate_columns
from rbcosim.results import Results, body_columns
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

FOUR_BAR = REPO / "scenarios" / "four_bar.toml"
STOP = 1.6  # s: φ_A = 4.02 rad > π
UNITS = {"angle": "rad", "rate": "rad/s"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """`rbcosim run --joint-coordinates` of the four-bar to STOP, read back."""
    out = tmp_path_factory.mktemp("run") / "run.csv"
    subprocess.run([sys.executable, "-m", "rbcosim", "run", str(FOUR_BAR), "--t-end", str(STOP),
                    "--joint-coordinates", "--out", str(out), "--quiet"], check=True)
    return Results.read_csv(out)


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"four_bar_fmi{request.param}.fmu"
    return export_fmu(FOUR_BAR, out, ExportOptions(fmi_version=request.param))


def test_joint_outputs_equal_rbcosim_run_and_the_driver(reference, fmu_path):
    assert validate_fmu(str(fmu_path)) == []
    names = {v.name: v for v in fmpy.read_model_description(str(fmu_path)).modelVariables}
    scenario = load_scenario(FOUR_BAR, {"solver.joint_coordinates": "true"})
    columns = coordinate_columns(scenario.model)
    assert columns == ["A.angle", "A.rate", "B.angle", "B.rate", "C.angle", "C.rate",
                       "D.angle", "D.rate"]
    for column in columns:
        assert names[column].causality == "output"
        assert names[column].unit == UNITS[column.rpartition(".")[2]], column
    result = fmpy.simulate_fmu(str(fmu_path), stop_time=STOP, output_interval=0.01,
                               output=columns)
    assert bits(result["time"]) == bits(reference.t) and len(result) == 161
    # The four-bar's bodies (a driven loop) agree with `rbcosim run` to round-off that grows
    # to ~2e-12 by 1.6 s, not bit for bit (the double pendulum's are: test_fmu_bodies), and so
    # do the coordinates; the coordinates of the FMU's own body outputs, computed as `rbcosim
    # run` computes its columns after the run (rbcosim.derived), are its joint outputs to the bit.
    bodies = body_columns(scenario.model)
    state = fmpy.simulate_fmu(str(fmu_path), stop_time=STOP, output_interval=0.01,
                              output=bodies)
    for column in bodies + columns:
        values = (state if column in bodies else result)[column]
        np.testing.assert_allclose(values, reference[column], rtol=0, atol=1e-11, err_msg=column)
    rows = Results(["t", *bodies], np.column_stack([state[c] for c in ["time", *bodies]]))
    derived = with_derived(scenario, rows)
    for column in columns:
        assert bits(result[column]) == bits(derived[column]), column
    t = result["time"]
    # the driver's motion, continued past ±π (a wrapped angle would jump by 2π)
    np.testing.assert_allclose(result["A.angle"], 0.5 * np.pi * t**2, rtol=0, atol=1e-9)
    np.testing.assert_allclose(result["A.rate"], np.pi * t, rtol=0, atol=1e-9)
    assert result["A.angle"][-1] > np.pi and np.all(np.abs(np.diff(result["A.angle"])) < 0.1)


def test_restored_state_continues_the_angles(fmu_path, tmp_path):
    """A state saved after the crank passed π, restored in a fresh instance: the next angle is
    continued (φ_A = (π/2) t²), not taken back into (−π, π]."""
    a = open_fmu(fmu_path, tmp_path / "a")
    H, t = 0.05, 0.0
    while t < 1.6 - 1e-9:
        a.do_step(t, H)
        t += H
    blob = a.serialize(a.get_state())
    a.do_step(t, H)
    expected = a.get(["A.angle", "B.angle"])
    a.close()
    b = open_fmu(fmu_path, tmp_path / "b")
    b.set_state(b.deserialize(blob))
    b.do_step(t, H)
    got = b.get(["A.angle", "B.angle"])
    b.close()
    assert bits(got) == bits(expected)
    assert got[0] == pytest.approx(0.5 * np.pi * (t + H) ** 2, abs=1e-9)


def test_state_with_foreign_angle_memory_is_refused(fmu_path, tmp_path):
    a = open_fmu(fmu_path, tmp_path / "a")
    a.do_step(0.0, 0.1)
    state = decode_state(a.serialize(a.get_state()))
    assert len(state["joint_angles"]) == 4  # A, B, C, D: [t, angle, rate] each
    before = a.get(["A.angle"])
    state["joint_angles"] = state["joint_angles"][:3]
    with pytest.raises(FMICallException):
        a.set_state(a.deserialize(encode_state(state)))
    assert "joint-angle memory" in a.messages()
    assert a.get(["A.angle"]) == before
    a.close()
