"""A flexible body coupled at two interface nodes as an FMU: `export-ssp` of
`scenarios/pinned_beam_two_sliders.toml` (a free–free beam pinned to two sprung sliders) packs
the rigid FMU and ONE beam FMU with both couplings' connectors, and masters built elsewhere
(libcosim, and a hand-written FMPy Jacobi master, FMI 2 and 3) reproduce `rbcosim run` with
the Jacobi scheme the FMU pair runs. Each master runs in a child process (tests/ssp_master.py,
tests/ssp_fmpy_master.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rbcosim.fmu_export.flex_table import WRENCH_KINDS
from rbcosim.fmu_export.packaging.python_fmu import describe_flex
from rbcosim.fmu_export.packaging.ssp import export_ssp
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "pinned_beam_two_sliders.toml"
STEPS = 200  # 0.02 s at H = 1e-4 s: the sliders' first quarter period, the beam's modes
#: results column -> component:variable (both sliders, the beam's modes and mid-span)
COLUMNS = {"a.z": "rigid:a.z", "a.vz": "rigid:a.vz", "b.z": "rigid:b.z", "b.vz": "rigid:b.vz",
           "beam.eta1": "beam:beam.eta1", "beam.eta2": "beam:beam.eta2",
           "beam.mid.z": "beam:beam.mid.z"}


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    made = {}

    def get(fmi):
        if fmi not in made:
            folder = tmp_path_factory.mktemp(f"pinned_fmi{fmi}")
            made[fmi] = export_ssp(SCENARIO, folder / "pinned.ssp", fmi)
        return made[fmi]

    return get


@pytest.fixture(scope="module")
def reference():
    """`rbcosim run` with the Jacobi scheme (what the FMU pair runs), a row every step."""
    t_end = repr(STEPS * load_scenario(SCENARIO).cosim.macro_step)
    return run_scenario(load_scenario(SCENARIO, {
        "solver.t_end": t_end, "solver.output_every": "1", "cosim.scheme": '"jacobi"'}),
        progress=False)


def _run_and_compare(command, out, reference):
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False,
                         cwd=out.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.load(out)
    np.testing.assert_allclose(got["t"], reference.t[1:], rtol=0, atol=1e-12)
    worst = {}
    for column, variable in COLUMNS.items():
        scale = max(1.0, np.abs(reference[column]).max())
        worst[column] = np.abs(got[variable] - reference[column][1:]).max() / scale
    assert max(worst.values()) <= 1e-12, worst
    # the run moved: slider a swings, the beam bends, both pins carry the beam
    assert np.abs(reference["a.z"]).max() > 1e-3 and np.abs(reference["beam.eta1"]).max() > 0


def test_one_beam_fmu_carries_both_couplings(packages):
    """The package holds one FMU for the beam, whose table has each coupling's motion inputs,
    wrench polynomial outputs, node kinematics and energy; its start wrenches are the two
    pins' (no moment about the pin axis, y of the planar beam)."""
    import zipfile

    with zipfile.ZipFile(packages(2)) as z:
        assert sorted(z.namelist()) == ["SystemStructure.ssd", "resources/beam.fmu",
                                        "resources/rigid.fmu"]
    table, config = describe_flex(SCENARIO, "beam")
    by_name = table.by_name()
    for point, joint in (("pa", "left"), ("pb", "right")):
        assert by_name[f"{point}.z"].causality == "input"
        assert by_name[f"{point}.fz"].causality == "output"
        assert by_name[f"{joint}.flex.z"].causality == "output"
        assert by_name[f"{joint}.flex_energy"].causality == "output"
    assert {v.owner for v in table.by_kind(WRENCH_KINDS[0])} == {"left", "right"}
    assert by_name["pa.my"].start == 0.0 and by_name["pb.my"].start == 0.0
    assert config["flex_body"] == "beam"


def test_libcosim_runs_the_two_node_body_as_rbcosim_runs(packages, reference):
    package = packages(2)
    h = load_scenario(SCENARIO).cosim.macro_step
    out = package.parent / "libcosim.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_master.py"), str(package),
                      repr(h), str(STEPS), str(out), *COLUMNS.values()], out, reference)


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_hand_written_master_runs_the_two_node_body_as_rbcosim_runs(packages, reference,
                                                                       fmi):
    package = packages(fmi)
    out = package.parent / "read-first.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_fmpy_master.py"), "read-first",
                      str(package), str(STEPS), str(out), *COLUMNS.values()], out, reference)
