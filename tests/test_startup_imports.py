"""The processes of the main job (`rbcosim cosim scenarios/rigid_flex_pendulum.toml`) import
only what they use: no progress-bar library before a bar is shown, no scipy.sparse to reduce a
dense flexible body (each is paid again by every process that starts); the cyclic garbage
collector is paused while they load, which is then frozen (rbcosim.gc_pause)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from rbcosim.gc_pause import loading
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


LOADING = """
import gc, sys
from rbcosim import gc_pause
if sys.argv[1] == "program":
    gc_pause.program_run()
try:
    with gc_pause.loading():
        print(gc.isenabled())
        kept = [[] for _ in range(1000)]
        raise ValueError("loading fails")
except ValueError:
    pass
print(gc.isenabled(), gc.get_freeze_count() >= len(kept))
"""


def _loading(who: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", LOADING, who], capture_output=True,
                          text=True, check=True).stdout.split()


def test_loading_pauses_the_collector_then_a_program_freezes_what_it_loaded():
    """Objects made while loading are never scanned again (frozen) in a program's own
    process; the collector runs again, also when loading fails."""
    assert _loading("program") == ["False", "True", "True"]


def test_a_callers_objects_stay_the_collectors():
    assert _loading("caller") == ["False", "True", "False"]


def test_a_collector_paused_before_stays_paused():
    gc.disable()
    try:
        with loading():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_fork_server_freezes_what_it_preloads_and_collects_again():
    """Its workers' collections then scan only their own objects (and write no shared page)."""
    code = ("import gc, rbcosim.service.preload\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 10000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "True"]
