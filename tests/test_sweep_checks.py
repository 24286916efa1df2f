"""What a sweep tells before and after it runs: the missing extra in one line, bad overrides
and probes before the cluster starts, each failed case's reason, and a per-case timeout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rbcosim.cli.main import main

SCENARIO = Path(__file__).parents[1] / "scenarios" / "two_mass_oscillator.toml"
PENDULUM = Path(__file__).parents[1] / "scenarios" / "double_pendulum.toml"


def _sweep(capsys, out: Path, *argv) -> tuple[int, str, str]:
    code = main(["sweep", str(SCENARIO), "-q", "--workers", "1", "-o", str(out), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def test_without_the_sweep_extra_one_line_names_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    code, _, err = _sweep(capsys, tmp_path / "sw", "--grid", "solver.t_end=0.1,0.2")
    assert code == 1
    assert err == ("rbcosim sweep: error: sweeps need dask.distributed, which is not "
                   "installed: pip install 'rbcosim[sweep]'")


def test_a_misspelled_override_stops_before_the_cluster(tmp_path, capsys):
    out = tmp_path / "sw"
    code, _, err = _sweep(capsys, out, "--grid", "bodies.mass1.masss=1,2")
    assert code == 1 and "bodies.mass1.masss: unknown key (did you mean 'mass'? " in err
    assert not out.exists()  # nothing started, nothing written


@pytest.mark.parametrize("probe, message", [
    ("mass1.xx@0.1", ("--probe mass1.xx@0.1: no column 'mass1.xx' in the cases' results "
                      "(did you mean mass1.x")),
    ("mass1.x@5", "--probe mass1.x@5: the time is outside the run (0 to solver.t_end = 0.3 s)"),
])
def test_a_bad_probe_stops_before_the_cluster(tmp_path, capsys, probe, message):
    out = tmp_path / "sw"
    code, _, err = _sweep(capsys, out, "--set", "solver.t_end=0.3", "--grid",
                          "forces.k1.stiffness=5,10", "--probe", probe)
    assert code == 1 and message in err, err
    assert not out.exists()


@pytest.mark.slow
def test_failed_cases_print_their_reasons_and_a_case_past_its_timeout_fails(tmp_path, capsys):
    """Three cases of the double pendulum: a short one (10 steps), one diverged (dt = 0.2) and
    one of 1e7 RK4 steps (t_end = 1e4 s, minutes) stopped by --case-timeout 3."""
    out = tmp_path / "sw"
    code = main(["sweep", str(PENDULUM), "-q", "--workers", "1", "-o", str(out),
                 "--case-timeout", "3", "--grid", "solver.t_end=0.01,10000",
                 "--grid", "solver.dt=0.001,0.2"])
    printed = capsys.readouterr().out
    assert code == 1
    lines = [line for line in printed.splitlines() if line.startswith("failed case ")]
    timeouts = [line for line in lines if "case timeout: still running after 3 s" in line]
    diverged = [line for line in lines if "diverged" in line and "fastest time scale" in line]
    # (1e4, 1e-3) times out; (1e4, 0.2) and (0.01, 0.2) diverge or are refused as unusable;
    # (0.01, 1e-3) passes
    assert len(timeouts) == 1 and len(diverged) >= 1
    assert "cases: 4, ok: 1, failed: 3" in printed
