"""`rbcosim cosim` starts its server before it loads the scenario: a scenario it then refuses
leaves no server process and no server folder behind, with the same one-line error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from service_helpers import processes_naming

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def test_a_refused_scenario_stops_the_server_started_for_it(tmp_path):
    root = tmp_path / "scenarios"
    root.mkdir()
    shutil.copy(SCENARIOS / "rigid_flex_pendulum.toml", root)
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "rbcosim", "cosim", str(root / "rigid_flex_pendulum.toml"),
         "--set", "cosim.scheme=iterative", "--no-plot", "-q", "-o", str(tmp_path / "r.csv")],
        check=False, capture_output=True, text=True, env={**os.environ, "TMPDIR": str(temp)},
        timeout=120)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1].startswith(
        f"rbcosim cosim: error: {root / 'rigid_flex_pendulum.toml'}: cosim.scheme = 'iterative' "
        "restores and repeats each macro step and runs in process only")
    assert processes_naming(str(root), "serve") == []
    assert list(temp.iterdir()) == []
    assert not (tmp_path / "r.csv").exists()
