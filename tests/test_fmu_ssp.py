"""Both sides of a co-simulation as FMUs: `export-fmu --flex` and `export-ssp`, the package run
in a master that is not rbcosim's (libcosim's fixed-step algorithm), against `rbcosim run`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from fmpy.validation import validate_fmu

from rbcosim.fmu_export.packaging.ssp import SSD, export_ssp
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

pytest.importorskip("libcosimpy")
pytestmark = pytest.mark.fmu

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "two_mass_oscillator.toml"
STEPS = 500  # 0.5 s at H = 1 ms: a quarter period of the slow mode
COLUMNS = {  # results column -> component:variable of the SSP system
    "mass1.x": "rigid:mass1.x",
    "mass1.vx": "rigid:mass1.vx",
    "structure.eta1": "structure:structure.eta1",
}  # states only: gaps and energy residuals are observed one exchange apart in libcosim


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return export_ssp(SCENARIO, tmp_path_factory.mktemp("ssp") / "two_mass.ssp")


def test_the_package_holds_both_fmus_and_connects_every_input_once(package):
    with zipfile.ZipFile(package) as z:
        names = set(z.namelist())
        root = ElementTree.fromstring(z.read("SystemStructure.ssd"))
        for fmu in ("rigid", "structure"):
            z.extract(f"resources/{fmu}.fmu", package.parent)
            assert validate_fmu(str(package.parent / "resources" / f"{fmu}.fmu")) == []
    assert {"SystemStructure.ssd", "resources/rigid.fmu", "resources/structure.fmu"} <= names
    ends = [(c.get("endElement"), c.get("endConnector"))
            for c in root.iter(f"{{{SSD}}}Connection")]
    assert len(ends) == len(set(ends))
    # 19 motion values to the structure; 24 wrench values, 13 node values and the energy back.
    assert sum(e == "structure" for e, _ in ends) == 19
    assert sum(e == "rigid" for e, _ in ends) == 24 + 13 + 1


def test_libcosim_runs_the_system_as_rbcosim_runs_the_jacobi_scheme(package, tmp_path):
    """libcosim steps both FMUs from t_n and then exchanges: the scenario's own scheme
    (Jacobi, linear extrapolation through the flexible side's wrench outputs). The coupled
    trajectory equals `rbcosim run`'s to round-off (measured 2e-17 m), far below the scheme's
    own error, which the last assertion bounds from an independent run at H / 4."""
    out = tmp_path / "libcosim.npz"
    run = subprocess.run([sys.executable, str(REPO / "tests" / "ssp_master.py"), str(package),
                          "1e-3", str(STEPS), str(out), *COLUMNS.values()],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    got = np.load(out)
    t_end = repr(STEPS * 1e-3)
    reference = run_scenario(load_scenario(SCENARIO, {"solver.t_end": t_end,
                                                      "solver.output_every": "1"}),
                             progress=False)
    np.testing.assert_allclose(got["t"], reference.t[1:], rtol=0, atol=1e-12)
    for column, name in COLUMNS.items():
        scale = max(1.0, np.abs(reference[column]).max())
        assert np.abs(got[name] - reference[column][1:]).max() <= 1e-12 * scale, column
    finer = run_scenario(load_scenario(SCENARIO, {"solver.t_end": t_end,
                                                  "cosim.macro_step": "2.5e-4",
                                                  "solver.output_every": "4"}), progress=False)
    scheme_error = np.abs(finer["mass1.x"] - reference["mass1.x"]).max()
    assert scheme_error > 1e3 * np.abs(got["rigid:mass1.x"] - reference["mass1.x"][1:]).max()


def test_bad_exports_exit_1_naming_the_problem(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rbcosim", *args], capture_output=True,
                              text=True, timeout=600, check=False)

    r = cli("export-fmu", str(SCENARIO), "--flex", "nope", "-o", str(tmp_path / "x.fmu"))
    assert r.returncode == 1 and "'nope'" in r.stderr and "structure" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("export-ssp", str(REPO / "scenarios" / "double_pendulum.toml"),
            "-o", str(tmp_path / "x.ssp"))
    assert r.returncode == 1 and "couplings" in r.stderr and "Traceback" not in r.stderr
    r = cli("export-ssp", str(SCENARIO), "-o", str(tmp_path / "x.zip"))
    assert r.returncode == 2 and ".ssp" in r.stderr
