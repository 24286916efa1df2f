"""A server whose temporary folder (TMPDIR) is too long for a socket path (107 bytes) still
starts its session workers (their ipc sockets and the fork server's go to /tmp) and leaves no
folder behind when it stops; `rbcosim cosim` started that way gives `rbcosim run`'s bits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.protocol

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def test_a_long_tmpdir_still_runs_a_cosim_and_leaves_nothing(tmp_path):
    long_tmp = tmp_path / ("t" * max(1, 110 - len(str(tmp_path))))
    long_tmp.mkdir()
    assert len(str(long_tmp)) > 107
    sets = ["--set", "solver.t_end=0.01", "--set", "solver.output_every=4"]
    pendulum = SCENARIOS / "rigid_flex_pendulum.toml"
    out = {}
    for command in ("run", "cosim"):
        out[command] = tmp_path / f"{command}.csv"
        args = [sys.executable, "-m", "rbcosim", command, str(pendulum), *sets, "-q",
                "-o", str(out[command])] + (["--no-plot"] if command == "cosim" else [])
        done = subprocess.run(args, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TMPDIR": str(long_tmp)})
        assert done.returncode == 0, done.stderr
    assert out["run"].read_bytes() == out["cosim"].read_bytes()
    assert list(long_tmp.iterdir()) == []
