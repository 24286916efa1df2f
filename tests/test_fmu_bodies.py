"""What every exported FMU exposes of its rigid bodies, and its name, against `rbcosim run`."""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu
from test_fmu_support import REPO, bits

from rbcosim.cli import export_fmu_cmd
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.packaging.python_fmu import model_identifier
from rbcosim.results import Results, body_columns
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

PENDULUM = REPO / "scenarios" / "double_pendulum.toml"
STOP = 0.5


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """`rbcosim run` of the double pendulum to STOP, its results file read back."""
    out = tmp_path_factory.mktemp("run") / "run.csv"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rbcosim",
            "run",
            str(PENDULUM),
            "--t-end",
            str(STOP),
            "--out",
            str(out),
            "--quiet",
        ],
        check=True,
    )
    return Results.read_csv(out)


@pytest.mark.parametrize("version", [2, 3])
def test_pendulum_fmu_outputs_equal_rbcosim_run_to_the_bit(reference, tmp_path, version):
    path = export_fmu(PENDULUM, tmp_path / "p.fmu", ExportOptions(fmi_version=version))
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    assert md.modelName == md.coSimulation.modelIdentifier == "double_pendulum"
    names = {x.name: x for x in md.modelVariables}
    assert not [n for n in names if n.startswith("flex_bodies")]
    columns = body_columns(load_scenario(PENDULUM).model)
    assert [c for c in columns if c.startswith("rod")] == columns and len(columns) == 26
    assert all(names[c].causality == "output" for c in columns)

    solver = load_scenario(PENDULUM).solver
    result = fmpy.simulate_fmu(
        str(path),
        stop_time=STOP,
        output_interval=solver.dt * solver.output_every,
        output=columns,
    )
    assert len(result) == len(reference.t) == 51
    assert bits(result["time"]) == bits(reference.t)
    for column in columns:
        assert bits(result[column]) == bits(reference[column]), column
    assert np.ptp(result["rod2.x"]) > 0.1  # it swings


def test_model_identifier_is_the_scenario_stem_made_a_c_identifier(tmp_path):
    assert model_identifier(tmp_path / "two-mass 1.toml") == "two_mass_1"
    assert model_identifier(tmp_path / "3d.toml") == "_3d"
    assert model_identifier(PENDULUM, "Arm") == "Arm"
    for bad in ("1x", "a-b", "class", "FmuCore", ""):
        with pytest.raises(ValueError):
            model_identifier(PENDULUM, bad)


@pytest.mark.parametrize("version", [2, 3])
def test_name_option_renames_model_and_binary(tmp_path, version):
    out = tmp_path / "x.fmu"
    parser = argparse.ArgumentParser(prog="rbcosim")
    export_fmu_cmd.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["export-fmu", str(PENDULUM), "-o", str(out), "--fmi", str(version), "--name", "Arm"]
    )
    assert args.handler(args) == 0
    md = fmpy.read_model_description(str(out))
    assert md.modelName == md.coSimulation.modelIdentifier == "Arm"
    with zipfile.ZipFile(out) as archive:
        binaries = [n for n in archive.namelist() if n.startswith("binaries/")]
    assert binaries and all(n.rsplit("/", 1)[1].startswith("Arm.") for n in binaries)
    result = fmpy.simulate_fmu(str(out), stop_time=0.02, output=["rod1.x"])
    assert np.isfinite(result["rod1.x"]).all()
