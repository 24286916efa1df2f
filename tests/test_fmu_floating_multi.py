"""A floating flexible body with two interface nodes in 3D as an FMU: `export-ssp` of
`scenarios/flexible_slider_crank_3d.toml` (the 3D rod floating between the crank pin and the
slider) packs the rigid FMU, which carries the rod's stretch spring `rod.stretch`, and ONE rod
FMU with both pins' connectors; libcosim and a hand-written FMPy Jacobi master (FMI 2 and 3)
reproduce `rbcosim run` with the Jacobi scheme the FMU pair runs; the hand master also runs the
planar chord rod of `scenarios/flexible_slider_crank.toml` (two pins, in-plane bending). Each master runs in a child
process (tests/ssp_master.py, tests/ssp_fmpy_master.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rbcosim.fmu_export.packaging.ssp import export_ssp
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "flexible_slider_crank_3d.toml"
STEPS = 150  # 2.9 ms at H = 19.6 µs: the crank turns 0.44 rad, the rod's modes ring
#: results column -> component:variable (the slider, the crank pin, the rod's modes, mid-span)
COLUMNS = {"slider.x": "rigid:slider.x", "slider.vx": "rigid:slider.vx",
           "crank_pin.z": "rigid:crank_pin.z",
           "rod.eta1": "rod:rod.eta1", "rod.eta2": "rod:rod.eta2", "rod.eta4": "rod:rod.eta4",
           "rod.mid.uz": "rod:rod.mid.uz"}


def _reference(scenario):
    """`rbcosim run --set cosim.scheme='"jacobi"'` (what the FMU pair runs), a row per step."""
    t_end = repr(STEPS * load_scenario(scenario).cosim.macro_step)
    return run_scenario(load_scenario(scenario, {
        "solver.t_end": t_end, "solver.output_every": "1", "cosim.scheme": '"jacobi"'}),
        progress=False)


#: the 3D rod and the planar chord rod (`flexible_slider_crank.toml`), the same columns
CRANKS = [SCENARIO, REPO / "scenarios" / "flexible_slider_crank.toml"]


@pytest.mark.parametrize("scenario", CRANKS, ids=["3d", "planar"])
@pytest.mark.parametrize("fmi", [2, 3])
def test_a_hand_written_master_runs_the_floating_rod_as_rbcosim_runs(tmp_path, fmi, scenario):
    package = export_ssp(scenario, tmp_path / "crank.ssp", fmi)
    out = tmp_path / "read-first.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_fmpy_master.py"), "read-first",
                      str(package), str(STEPS), str(out), *COLUMNS.values()], out,
                     _reference(scenario))


def test_libcosim_runs_the_floating_rod_as_rbcosim_runs(tmp_path):
    """libcosim steps in whole nanoseconds: the scenario at H = 20 µs instead of 19.63 µs."""
    text = SCENARIO.read_text()
    assert 'macro_step = "6*pi/Omega/6400"' in text
    scenario = tmp_path / "crank3d_20us.toml"
    scenario.write_text(text.replace('macro_step = "6*pi/Omega/6400"', "macro_step = 2e-5"))
    package = export_ssp(scenario, tmp_path / "crank3d.ssp", 2)
    out = tmp_path / "libcosim.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_master.py"), str(package),
                      "2e-5", str(STEPS), str(out), *COLUMNS.values()], out, _reference(scenario))


def _run_and_compare(command, out, reference):
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False,
                         cwd=out.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.load(out)
    np.testing.assert_allclose(got["t"], reference.t[1:], rtol=0, atol=1e-12)
    worst = {}
    for column, variable in COLUMNS.items():
        scale = np.abs(reference[column]).max()
        worst[column] = np.abs(got[variable] - reference[column][1:]).max() / scale
    assert max(worst.values()) <= 1e-12, worst
    # the run moved: the pin swings up, the rod bends, the stretch spring pulls the slider
    assert reference["crank_pin.z"].max() > 0.05 and np.abs(reference["rod.mid.uz"]).max() > 0
    assert np.ptp(reference["slider.x"]) > 1e-3
