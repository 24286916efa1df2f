"""The FE exports shipped for the docs (scenarios/data/fe_models, written by its make_files.py)
run the documented commands: CalculiX rewrites its matrix files byte for byte from the shipped
deck, the CalculiX, Abaqus and Nastran files give one reduced body, and a Nastran SET1 id names
the set on the command line (``--interface rigid=1``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from native_build import native_unavailable

from rbcosim.cli.main import main
from rbcosim.errors import ScenarioError
from rbcosim.flex.io.fe_import import parse_interface

DATA = Path(__file__).resolve().parent.parent / "scenarios" / "data" / "fe_models"
FIX = "1,10,15,24,29,34,43,48"  # the face x = 0 of cantilever.inp (its *NSET FIX)


def test_calculix_writes_the_shipped_matrices(tmp_path):
    if shutil.which("ccx") is None:
        native_unavailable("CalculiX (ccx, Debian's calculix-ccx) is not installed")
    shutil.copy(DATA / "cantilever.inp", tmp_path)
    subprocess.run(["ccx", "-i", "cantilever"], cwd=tmp_path, check=True, capture_output=True,
                   timeout=120)
    for suffix in (".sti", ".mas", ".dof"):
        assert (tmp_path / f"cantilever{suffix}").read_bytes() == (
            DATA / f"cantilever{suffix}").read_bytes(), suffix


@pytest.mark.parametrize("args", [
    ["--from", "abaqus", "--inp", "cantilever.inp", "--stiffness", "cantilever_STIF2.mtx",
     "--mass", "cantilever_MASS2.mtx", "--interface", "rigid=FIX"],
    ["--from", "nastran", "--bdf", "cantilever.bdf", "--stiffness", "cantilever.pch",
     "--interface", "rigid=1"],
    ["--from", "nastran", "--bdf", "cantilever.bdf", "--stiffness", "cantilever.pch",
     "--interface", f"rigid={FIX}"],
])
def test_the_codes_files_give_the_calculix_body(tmp_path, args):
    """Each code's files, converted as the README shows, give CalculiX's reduced body (the
    files hold the same K and M; the Nastran set SET1 1 is the face FIX)."""
    out = {}
    for name, extra in (("ccx", ["--from", "calculix", "--inp", "cantilever.inp",
                                 "--interface", "rigid=FIX"]), ("other", args)):
        out[name] = tmp_path / f"{name}.npz"
        assert main(["convert-structure", *[str(DATA / a) if a.startswith("cantilever") else a
                                            for a in extra],
                     "--output-node", "tip=9", "--modes", "4", "--out", str(out[name])]) == 0
    with np.load(out["ccx"]) as a, np.load(out["other"]) as b:
        for key in ("M", "K", "output_rows", "gravity_load"):
            assert np.allclose(a[key], b[key], rtol=0, atol=1e-9 * np.abs(a[key]).max()), key


def test_one_name_after_the_tie_is_a_node_set():
    assert parse_interface("rigid=1", "--interface") == {"tie": "rigid", "set": "1"}
    assert parse_interface("average=FIX", "--interface") == {"tie": "average", "set": "FIX"}
    assert parse_interface("rigid=3,4", "--interface") == {"tie": "rigid", "nodes": [3, 4]}
    assert parse_interface("12", "--interface") == {"node": 12}
    with pytest.raises(ScenarioError, match="expected NODE or rigid=SET"):
        parse_interface("FIX", "--interface")
