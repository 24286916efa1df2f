"""`export-fmu --outputs`: the model description holds exactly the selected body and joint
outputs, with `rbcosim run`'s values (double pendulum: bitwise, as in test_fmu_bodies)."""

from __future__ import annotations

import subprocess
import sys

import fmpy
import pytest
from test_fmu_support import REPO, bits

from rbcosim.errors import ScenarioError
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.output_selection import parse_patterns
from rbcosim.results import Results

pytestmark = pytest.mark.fmu
PENDULUM = REPO / "scenarios" / "double_pendulum.toml"
RODS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")


def test_selected_outputs_only_and_unchanged(tmp_path):
    run = tmp_path / "run.csv"
    subprocess.run([sys.executable, "-m", "rbcosim", "run", str(PENDULUM), "--t-end", "0.2",
                    "--joint-coordinates", "--out", str(run), "--quiet"], check=True)
    reference = Results.read_csv(run)
    path = export_fmu(PENDULUM, tmp_path / "p.fmu",
                      ExportOptions(outputs=parse_patterns("rod1.*, elbow.angle")))
    md = fmpy.read_model_description(str(path))
    outputs = sorted(v.name for v in md.modelVariables if v.causality == "output")
    assert outputs == sorted([f"rod1.{f}" for f in RODS] + ["elbow.angle"])
    result = fmpy.simulate_fmu(str(path), stop_time=0.2, output_interval=0.01, output=outputs)
    for name in outputs:
        assert bits(result[name]) == bits(reference[name]), name


def test_pattern_matching_nothing_is_named(tmp_path):
    with pytest.raises(ScenarioError, match="'rod3.\\*' match no body or joint"):
        export_fmu(PENDULUM, tmp_path / "p.fmu", ExportOptions(outputs=("rod1.x", "rod3.*")))
    with pytest.raises(ValueError, match="empty pattern"):
        parse_patterns("rod1.x,,")


def test_cli_refuses_outputs_it_cannot_select(tmp_path, capsys):
    """`rbcosim export-fmu --outputs`: a pattern matching nothing exits 1, --outputs with
    --native or remote mode (no body outputs there) is a usage error (2); each names the problem
    and writes nothing."""
    from rbcosim.cli.main import main

    out = tmp_path / "x.fmu"
    assert main(["export-fmu", str(PENDULUM), "-o", str(out), "--outputs", "nobody.*"]) == 1
    assert "nobody.*" in capsys.readouterr().err
    for extra in (["--native"], ["--mode", "remote"]):
        assert main(["export-fmu", str(PENDULUM), "-o", str(out), "--outputs", "rod1.*",
                     *extra]) == 2
        assert "--outputs" in capsys.readouterr().err
    assert not out.exists()
