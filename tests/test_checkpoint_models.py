"""Saved states carry a digest of their model: a checkpoint or a session state file resumed into
another model (mass x50, gravity flipped, E/100) is refused with one line naming the file and
both digests, and changes nothing; state files' step indices are checked like `set_state`'s;
the temporary file of a writer killed mid-write is removed by the next writer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest
from service_helpers import TOY_TWO_POINTS, message, toy_service

from rbcosim.cli.main import main
from rbcosim.cosim.flex_bodies import build_endpoints
from rbcosim.scenario.loader import load_scenario
from rbcosim.serialization import codec
from rbcosim.serialization.model_digest import model_digest
from rbcosim.service import Service

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
DOUBLE = SCENARIOS / "double_pendulum.toml"
PENDULUM = SCENARIOS / "rigid_flex_pendulum.toml"
HEAVIER = "bodies.rod2.mass=50.0"
UPSIDE_DOWN = "world.gravity=[0.0, 0.0, 9.81]"
SOFTER = "flex_bodies.beam.youngs_modulus=2.1e9"  # E / 100
SHORT = ["--set", "solver.t_end=0.01"]  # 40 macro steps


def rigid_digest(path: Path, *sets: str) -> str:
    return model_digest(load_scenario(path, list(sets)).model)


def flex_digest(*sets: str) -> str:
    scenario = load_scenario(PENDULUM, list(sets))
    body = next(iter(build_endpoints(scenario, scenario.cosim.macro_step).values())).body
    return model_digest(body.model, body.gravity)


def refused(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("change", [HEAVIER, UPSIDE_DOWN])
def test_a_rigid_checkpoint_is_refused_by_another_model(capsys, tmp_path, change):
    checkpoint, out = tmp_path / "run.ckpt", tmp_path / "resumed.csv"
    assert main(["run", str(DOUBLE), "-q", "--t-end", "0.1", "--out", str(tmp_path / "a.csv"),
                 "--checkpoint", str(checkpoint), "--checkpoint-every", "50"]) == 0
    saved, other = rigid_digest(DOUBLE), rigid_digest(DOUBLE, change)
    assert saved != other
    line = refused(capsys, ["run", str(DOUBLE), "-q", "--t-end", "0.2", "--set", change,
                            "--out", str(out), "--resume", str(checkpoint)])
    assert line == (f"rbcosim run: error: {checkpoint}: not a checkpoint of this scenario: "
                    f"state.model: saved from another model (digest {saved}; this model has "
                    f"{other})")
    assert not out.exists()


@pytest.mark.parametrize("change, what", [(HEAVIER.replace("rod2", "link"), "model"),
                                          (SOFTER, "flexible body")])
def test_a_cosimulation_checkpoint_is_refused_by_another_model(capsys, tmp_path, change, what):
    checkpoint = tmp_path / "run.ckpt"
    assert main(["run", str(PENDULUM), "-q", *SHORT, "--out", str(tmp_path / "a.csv"),
                 "--checkpoint", str(checkpoint), "--checkpoint-every", "20"]) == 0
    if what == "model":
        saved, other = rigid_digest(PENDULUM), rigid_digest(PENDULUM, change)
    else:
        saved, other = flex_digest(), flex_digest(change)
    assert saved != other
    line = refused(capsys, ["run", str(PENDULUM), "-q", "--set", "solver.t_end=0.02", "--set",
                            change, "--out", str(tmp_path / "b.csv"), "--resume",
                            str(checkpoint)])
    assert line.startswith(f"rbcosim run: error: {checkpoint}: not a checkpoint of this scenario")
    assert line.endswith(f"state.model: saved from another {what} (digest {saved}; this {what} "
                         f"has {other})")
    # The same model still resumes.
    assert main(["run", str(PENDULUM), "-q", "--set", "solver.t_end=0.02", "--out",
                 str(tmp_path / "c.csv"), "--resume", str(checkpoint)]) == 0


def test_a_session_state_file_is_refused_by_another_model_and_changes_nothing(tmp_path):
    service = Service()
    first = service.request(message("create_session", scenario=str(PENDULUM)))["content"]
    saved = tmp_path / "pendulum.state"
    reply = service.request(message("save", first["session"], path=str(saved)))
    assert reply["status"] == "ok", reply
    other = service.request(message("create_session", scenario=str(PENDULUM),
                                    overrides={"bodies.link.mass": "50.0"}))["content"]
    before = service.request(message("get_state", other["session"]))["content"]["state"]
    reply = service.request(message("restore", other["session"], path=str(saved)))
    digests = (rigid_digest(PENDULUM), rigid_digest(PENDULUM, "bodies.link.mass=50.0"))
    assert reply["status"] == "error" and reply["error"] == {
        "code": "state_error",
        "message": f"{str(saved)!r}: the rigid side refused the state: not a saved rigid-side "
                   f"state of this scenario: state.model: saved from another model (digest "
                   f"{digests[0]}; this model has {digests[1]})"}, reply
    assert service.request(message("get_state", other["session"]))["content"]["state"] == before
    # The session it was saved from takes it back.
    reply = service.request(message("restore", first["session"], path=str(saved)))
    assert reply["status"] == "ok" and reply["content"]["step"] == 0, reply


@pytest.mark.parametrize("bad", [2**64 - 1, -7, 2**60, True, 1.5, None])
def test_a_state_file_step_index_is_checked_like_set_state(tmp_path, bad):
    service = toy_service()
    sid = service.request(message("create_session", text=TOY_TWO_POINTS))["content"]["session"]
    good = tmp_path / "good.state"
    assert service.request(message("save", sid, path=str(good)))["status"] == "ok"
    data = msgpack.unpackb(good.read_bytes(), raw=False)
    data["step"] = bad
    path = tmp_path / "bad.state"
    path.write_bytes(msgpack.packb(data, use_bin_type=True))
    reply = service.request(message("restore", sid, path=str(path)))
    assert reply["status"] == "error" and reply["error"] == {
        "code": "state_error",
        "message": f"the step index of the state file {str(path)!r} must be an integer from 0 "
                   f"to 2**53, got {bad!r}"}, reply
    # set_state refuses the same numbers (invalid_argument: a request field), the session's
    # step stays 0, and the good file restores.
    blob = service.request(message("get_state", sid))["content"]["state"]
    if not isinstance(bad, bool) and isinstance(bad, int):
        reply = service.request(message("set_state", sid, state=blob, step=bad))
        assert reply["error"]["code"] == "invalid_argument", reply
    assert service.request(message("heartbeat", sid))["content"]["step"] == 0
    assert service.request(message("restore", sid, path=str(good)))["status"] == "ok"


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_writer_killed_mid_write_leaves_no_temporary_behind(tmp_path):
    target = tmp_path / "run.ckpt"
    stale = tmp_path / f"run.ckpt.{_dead_pid()}.tmp"
    live = tmp_path / f"run.ckpt.{os.getppid()}.tmp"  # the parent of this test runs
    other = tmp_path / f"results.csv.{_dead_pid()}.tmp"
    for p in (stale, live, other):
        p.write_bytes(b"half a checkpoint")
    codec.write_atomically(target, b"whole")
    assert target.read_bytes() == b"whole"
    assert not stale.exists() and live.exists() and other.exists()
    assert codec.remove_stale_temporaries(tmp_path) == [other]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name])


@pytest.mark.protocol
def test_flex_resume_refuses_another_flexible_body_and_clears_dead_temporaries(tmp_path):
    """`rbcosim flex --resume` with E/100 is refused naming the checkpoint and both digests; a
    checkpoint temporary of a dead solver is gone once a solver has started, a live one's stays;
    the same model then resumes to the first run's rows, bit for bit."""
    from service_helpers import running_server

    from rbcosim.client import Client
    from rbcosim.distributed.driver import CosimOptions, start_flex
    from rbcosim.distributed.flex_solver import read_results

    sets = ["solver.t_end=0.03"]  # 120 macro steps: snapshots and checkpoints at 50 and 100
    ckpt = tmp_path / "ckpt"
    options = CosimOptions(checkpoint_every=50, checkpoint_dir=ckpt, timeout=60)
    with running_server(Service()) as server, Client(server.address, timeout=30) as client:
        sid = client.create_session(PENDULUM, overrides=dict(s.split("=", 1) for s in sets),
                                    wait_for_joints=True, snapshot_every=50,
                                    barrier_timeout=1.0)["session"]
        runs = {}
        for name, extra in (("first", []), ("softer", [SOFTER]), ("same", [])):
            if name != "first":
                assert client.restore("auto")["step"] == 100
            (tmp_path / name).mkdir()
            runs[name] = start_flex(server.address, sid, ["clamp"], PENDULUM, sets + extra,
                                    tmp_path / name, options, resume=name != "first")
            code = runs[name].proc.wait(120)
            assert code == (1 if name == "softer" else 0), runs[name].log.read_text()
            if name == "first":
                assert sorted(p.name for p in ckpt.iterdir()) == ["clamp.100.ckpt",
                                                                  "clamp.50.ckpt"]
                stale = ckpt / f"clamp.100.ckpt.{_dead_pid()}.tmp"
                live = ckpt / f"clamp.50.ckpt.{os.getppid()}.tmp"
                stale.write_bytes(b"half")
                live.write_bytes(b"half")
    assert runs["softer"].log.read_text().strip().splitlines()[-1] == (
        f"rbcosim flex: error: {ckpt / 'clamp.100.ckpt'}: not a checkpoint of these joints: "
        f"state.model: saved from another flexible body (digest {flex_digest(*sets)}; this "
        f"flexible body has {flex_digest(*sets, SOFTER)})")
    assert not stale.exists() and live.exists()
    first, same = (read_results(runs[n].out)["beam"] for n in ("first", "same"))
    assert same.steps == first.steps and same.table().tobytes() == first.table().tobytes()
