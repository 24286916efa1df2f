"""The session workers' fork server preloads what a session's model build imports, so that a
forked worker builds without importing anything (each import there would be paid again by
every session)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"

PROBE = """
import sys
import rbcosim.service.preload
before = set(sys.modules)
from rbcosim.cosim.rigid_side import RigidSide
RigidSide.from_scenario(sys.argv[1])
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_building_the_main_jobs_rigid_side_imports_nothing_after_the_preload():
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(SCENARIOS / "rigid_flex_pendulum.toml")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == []
