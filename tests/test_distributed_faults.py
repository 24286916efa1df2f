"""A flexible-solver process killed with SIGKILL mid-run: the server reports it to the other
solver of its session, another session on the same server finishes unaffected, and the session
restored from its last snapshot, driven by new solver processes from their checkpoints,
finishes bitwise equal to an uninterrupted run."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import numpy as np
import pytest
from service_helpers import running_server

from rbcosim.cli.main import main
from rbcosim.client import Client
from rbcosim.distributed.driver import CosimOptions, merge_results, start_flex
from rbcosim.distributed.flex_solver import read_results
from rbcosim.results import Results
from rbcosim.scenario.loader import load_scenario
from rbcosim.service import Service

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = ROOT / "scenarios" / "rigid_flex_pendulum.toml"
TWO_BEAMS = ROOT / "scenarios" / "two_beams.toml"
BEAMS_SETS = ["solver.t_end=0.06", "solver.output_every=8"]  # 240 macro steps
PENDULUM_SETS = ["solver.t_end=0.03"]
EVERY = 40  # server snapshots and solver checkpoints
KILL_AFTER = 100


def in_process(tmp_path: Path, scenario: Path, sets: list[str]) -> Results:
    out = tmp_path / f"{scenario.stem}.run.csv"
    args = ["run", str(scenario), "--out", str(out), "--quiet"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return Results.read_csv(out)


def session(client: Client, scenario: Path, sets: list[str], **kwargs) -> str:
    overrides = dict(s.split("=", 1) for s in sets)
    return client.create_session(scenario, overrides=overrides, wait_for_joints=True,
                                 **kwargs)["session"]


def wait_for(predicate, what: str, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def merged(client: Client, scenario: Path, sets: list[str], procs) -> tuple[list[str], np.ndarray]:
    sc = load_scenario(scenario, sets)
    flex = {b: r for p in procs for b, r in read_results(p.out).items()}
    return merge_results(sc, client.results(), flex)


def test_sigkill_is_reported_others_go_on_and_resume_is_bitwise(tmp_path):
    reference_beams = in_process(tmp_path, TWO_BEAMS, BEAMS_SETS)
    reference_pendulum = in_process(tmp_path, PENDULUM, PENDULUM_SETS)
    options = CosimOptions(checkpoint_every=EVERY, checkpoint_dir=tmp_path / "ckpt", timeout=60)
    plain = CosimOptions(timeout=60)
    with running_server(Service()) as server, Client(server.address, timeout=30) as beams, \
            Client(server.address, timeout=30) as other:
        addr = server.address
        sid = session(beams, TWO_BEAMS, BEAMS_SETS, snapshot_every=EVERY, barrier_timeout=1.0)
        (tmp_path / "first").mkdir()
        first = {j: start_flex(addr, sid, [j], TWO_BEAMS, BEAMS_SETS, tmp_path / "first", options)
                 for j in ("clamp_tip", "clamp_side")}
        other_sid = session(other, PENDULUM, PENDULUM_SETS)
        (tmp_path / "other").mkdir()
        other_proc = start_flex(addr, other_sid, ["clamp"], PENDULUM, PENDULUM_SETS,
                                tmp_path / "other", plain)

        wait_for(lambda: beams.heartbeat()["step"] >= KILL_AFTER, "the run to get going")
        victim = first["clamp_side"]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(30)
        assert victim.failure() and "SIGKILL" in victim.failure()

        # The server tells the other solver of the session, which stops with that sentence.
        survivor = first["clamp_tip"]
        assert survivor.proc.wait(60) == 1
        log = survivor.log.read_text()
        assert "timeout" in log and "clamp_side" in log and "Traceback" not in log
        state = beams.heartbeat()
        assert {"side", "clamp_side"} <= set(state["orphans"])

        # The other session on the same server is untouched.
        assert other_proc.proc.wait(120) == 0, other_proc.log.read_text()
        columns, data = merged(other, PENDULUM, PENDULUM_SETS, [other_proc])
        assert columns == reference_pendulum.columns
        assert np.array_equal(data, reference_pendulum.data)

        # Resume: the session from its last snapshot, new solvers from their checkpoints.
        restored = beams.restore("auto")
        assert restored["step"] % EVERY == 0 and 0 < restored["step"] <= state["step"]
        (tmp_path / "second").mkdir()
        second = [start_flex(addr, sid, [j], TWO_BEAMS, BEAMS_SETS, tmp_path / "second", options,
                             resume=True) for j in ("clamp_tip", "clamp_side")]
        for p in second:
            assert p.proc.wait(120) == 0, p.log.read_text()
        columns, data = merged(beams, TWO_BEAMS, BEAMS_SETS, second)
    assert columns == reference_beams.columns
    differ = [columns[i] for i in np.flatnonzero((data != reference_beams.data).any(axis=0))]
    assert not differ, f"columns that differ after the resume: {differ}"
