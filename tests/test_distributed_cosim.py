"""`rbcosim cosim`: the multi-process run gives the in-process run's bits, on one and on two
flexible bodies, and fails with a sentence (no traceback) when it cannot run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rbcosim.cli.main import main
from rbcosim.results import Results

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = ROOT / "scenarios" / "rigid_flex_pendulum.toml"
TWO_BEAMS = ROOT / "scenarios" / "two_beams.toml"


def in_process(tmp_path: Path, scenario: Path, *sets: str, summary: bool = False) -> Results:
    out = tmp_path / f"{scenario.stem}.run.csv"
    args = ["run", str(scenario), "--out", str(out), *([] if summary else ["--quiet"])]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return Results.read_csv(out)


def multi_process(tmp_path: Path, scenario: Path, *sets: str, plot: bool = False,
                  summary: bool = False) -> Results:
    out = tmp_path / f"{scenario.stem}.cosim.csv"
    args = ["cosim", str(scenario), "--out", str(out), *([] if summary else ["--quiet"])]
    args += [] if plot else ["--no-plot"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return Results.read_csv(out)


def assert_bitwise(a: Results, b: Results) -> None:
    assert a.columns == b.columns
    assert a.data.shape == b.data.shape
    differ = [a.columns[i] for i in np.flatnonzero((a.data != b.data).any(axis=0))]
    assert not differ, f"columns that differ: {differ}"


@pytest.mark.parametrize(
    "scheme", ["gauss_seidel_flex_first", "jacobi", "interface_jacobian", "gauss_seidel_rigid_first"]
)
def test_pendulum_multi_process_equals_in_process_bitwise(tmp_path, scheme):
    sets = ("solver.t_end=0.025", f'cosim.scheme="{scheme}"', "solver.output_every=10")
    assert_bitwise(in_process(tmp_path, PENDULUM, *sets), multi_process(tmp_path, PENDULUM, *sets))


def test_pendulum_writes_summary_and_plot_in_the_layout_of_run(tmp_path, capsys):
    """`cosim` and `run` of one scenario print and write summaries with the same keys."""
    # without --quiet: it prints no summary (issue 27)
    results = multi_process(tmp_path, PENDULUM, "solver.t_end=0.01", plot=True, summary=True)
    assert results.columns[0] == "t" and "beam.tip.x" in results.columns
    cosim_out = capsys.readouterr().out
    in_process(tmp_path, PENDULUM, "solver.t_end=0.01", summary=True)
    run_out = capsys.readouterr().out
    png = tmp_path / "rigid_flex_pendulum.cosim.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cosim = json.loads((tmp_path / "rigid_flex_pendulum.cosim.summary.json").read_text())
    run = json.loads((tmp_path / "rigid_flex_pendulum.run.summary.json").read_text())
    assert list(cosim) == list(run)
    assert set(cosim["joints"]["clamp"]) == set(run["joints"]["clamp"])
    assert cosim["status"] == run["status"] == "ok" and cosim["macro_steps"] == 40
    assert cosim["rows"] == run["rows"] == len(results.data)
    printed = [[line.split(":")[0] for line in out.splitlines() if not line.startswith(" ")]
               for out in (cosim_out, run_out)]
    assert printed[0] == printed[1]
    assert "macro_steps: 40" in cosim_out and "max_gap_pos_m" in cosim_out


def test_two_beams_each_in_its_own_process_equals_in_process_bitwise(tmp_path):
    sets = ("solver.t_end=0.05",)
    a = in_process(tmp_path, TWO_BEAMS, *sets)
    b = multi_process(tmp_path, TWO_BEAMS, *sets)
    assert_bitwise(a, b)
    assert {"beam_tip.tip.x", "beam_side.tip.x", "clamp_tip.gap_pos", "clamp_side.gap_pos"} <= set(
        b.columns
    )


def test_two_beams_jacobi_bitwise(tmp_path):
    sets = ("solver.t_end=0.02", 'cosim.scheme="jacobi"', "solver.output_every=8")
    assert_bitwise(in_process(tmp_path, TWO_BEAMS, *sets), multi_process(tmp_path, TWO_BEAMS, *sets))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: PLW1510 - callers assert the code
        [sys.executable, "-m", "rbcosim", *args], capture_output=True, text=True, timeout=120
    )


def test_missing_scenario_is_a_sentence(tmp_path):
    r = cli("cosim", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "no such scenario" in r.stderr


def test_unreachable_server_is_a_sentence(tmp_path):
    r = cli("cosim", str(PENDULUM), "--connect", "tcp://127.0.0.1:9", "--connect-timeout", "0.5",
            "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "no rbcosim server answers" in r.stderr


def test_iterative_scheme_is_refused_with_the_reason(tmp_path):
    r = cli("cosim", str(PENDULUM), "--set", 'cosim.scheme="iterative"',
            "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "in process only" in r.stderr
