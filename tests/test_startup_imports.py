"""The processes of the main job (`rbcosim cosim scenarios/rigid_flex_pendulum.toml`) import
only what they use: no progress-bar library before a bar is shown, no scipy.sparse to reduce a
dense flexible body (each is paid again by every process that starts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rbcosim.progress import Progress

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "rigid_flex_pendulum.toml"

FLEX = f"""
from rbcosim.distributed.flex_solver import endpoints_for, select_joints
from rbcosim.scenario.loader import load_scenario

scenario = load_scenario({str(SCENARIO)!r})
assert endpoints_for(scenario, select_joints(scenario, ["clamp"], [])), "no flexible body"
"""
#: What each process of the main job imports before it steps.
PROCESSES = {"rbcosim cosim": "import rbcosim.cli.cosim_cmd, rbcosim.distributed.driver",
             "the session workers' fork server": "import rbcosim.service.preload",
             "rbcosim flex": "import rbcosim.cli.flex_cmd\n" + FLEX}


def _loaded(code: str) -> list[str]:
    probe = code + "\nimport sys\nprint(' '.join(m for m in ('tqdm', 'scipy.sparse', " \
        "'scipy.linalg') if m in sys.modules))"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.split()


def test_the_main_jobs_processes_load_no_progress_bar_and_no_unused_scipy():
    assert {name: _loaded(code) for name, code in PROCESSES.items()} == {
        "rbcosim cosim": [],
        # the rigid build's reverse Cuthill-McKee ordering (scipy.sparse.csgraph, which
        # imports scipy.linalg)
        "the session workers' fork server": ["scipy.sparse", "scipy.linalg"],
        "rbcosim flex": ["scipy.linalg"],  # the reduction's dense eigensolver and Cholesky
    }


def test_a_progress_bar_still_shows_once_it_is_due(capsys):
    with Progress(4, label="cosim", delay=0.0) as bar:
        bar.update(0)
    assert "cosim:   0%|" in capsys.readouterr().err
