"""Sessions are isolated from each other and confined to the server's root: a slow model
build, a dead worker, a client that never reads, a FIFO or a path outside the root cost only
the session or the request that caused them."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq
from service_helpers import TOY_TWO_POINTS, running_server, spring_inputs, toy_service

from rbcosim.client import Client, ServiceError

pytestmark = pytest.mark.protocol

SLOW_BUILD = TOY_TWO_POINTS + "build_seconds = {seconds}\n"


def _drive(address: str, steps: int) -> np.ndarray:
    with Client(address, timeout=30) as c:
        c.create_session(text=TOY_TWO_POINTS)
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
        for k in range(steps):
            kin = c.step(*spring_inputs(kin, k)).kinematics
        return kin


def test_a_slow_build_does_not_hold_up_another_session():
    events: list[str] = []
    with running_server() as server:
        reference = _drive(server.address, 20)
        with Client(server.address, timeout=60) as builder:
            thread = threading.Thread(target=lambda: (
                builder.create_session(text=SLOW_BUILD.format(seconds=3.0)),
                events.append("build finished")))
            thread.start()
            # The other session steps 20 times while the 3 s build runs in its own process.
            kin = _drive(server.address, 20)
            events.append("other session done")
            thread.join(30)
    assert events == ["other session done", "build finished"]
    np.testing.assert_array_equal(kin, reference)


def test_a_build_past_the_timeout_is_stopped_and_the_server_goes_on():
    with running_server(build_timeout=0.5) as server:
        with Client(server.address, timeout=30) as c, pytest.raises(ServiceError) as info:
            c.create_session(text=SLOW_BUILD.format(seconds=60.0))
        assert info.value.code == "limit_exceeded"
        assert "--build-timeout" in info.value.message
        _drive(server.address, 3)


def test_a_dead_worker_answers_its_waiting_client_and_spares_the_others():
    with running_server() as server, Client(server.address, timeout=30) as a:
        a.create_session(text=TOY_TWO_POINTS)
        kin = a.attach(["a"], ["a"])["kinematics"]
        a.attach(["b"], ["b"])  # a second client id of `a`'s session that never steps
        waiting = a.send("step", {"client": a.client_id, "step": 0,
                                  "wrench": spring_inputs(kin, 0)[0][:1].tolist(),
                                  "flex_kinematics": spring_inputs(kin, 0)[1][:1].tolist()})
        (worker,) = [w for w in server.workers.workers.values() if w.session == a.session]
        os.kill(worker.process.pid, signal.SIGKILL)
        with pytest.raises(ServiceError) as info:
            a.receive(waiting)
        assert info.value.code == "session_closed"
        assert "killed by signal 9" in info.value.message
        with pytest.raises(ServiceError) as later:
            a.heartbeat()
        assert later.value.code == "unknown_session" and "was lost" in later.value.message
        _drive(server.address, 3)  # the server and new sessions are unaffected


def test_a_client_that_never_reads_has_its_replies_dropped_not_queued():
    # The owner stays on the server's endpoint, so that its heartbeat below is answered only
    # after the lazy client's requests queued before it (a direct endpoint would overtake them).
    with running_server(send_hwm=50) as server, \
            Client(server.address, timeout=30, direct=False) as owner:
        owner.create_session(text=TOY_TWO_POINTS)
        kin = owner.attach(["a", "b"], ["a", "b"])["kinematics"]
        for k in range(300):  # a results reply of 300 rows: about 70 kB
            kin = owner.step(*spring_inputs(kin, k)).kinematics
        ctx = zmq.Context.instance()
        lazy = ctx.socket(zmq.DEALER)
        lazy.setsockopt(zmq.RCVHWM, 50)
        lazy.setsockopt(zmq.RCVBUF, 4096)  # little room in the kernel either
        lazy.setsockopt(zmq.LINGER, 0)
        lazy.connect(server.address)
        head = {"version": "1.2", "msg_type": "results", "session": owner.session}
        sent = 1000
        for n in range(sent):
            lazy.send_multipart([b"", msgpack.packb({**head, "msg_id": n})])
        _drive(server.address, 5)  # another session is served meanwhile
        # every request was handled: the lazy one's are all in (a request the session's worker
        # answers in turn; a heartbeat to a busy session is answered by the socket loop at once)
        owner.outputs()
        received = 0
        while lazy.poll(200):
            lazy.recv_multipart()
            received += 1
        lazy.close()
    # Replies beyond the high-water marks (the server's queue to the client, the client's
    # own and the kernel's buffers) were dropped: of 70 MB of replies most never existed.
    assert 0 < received < sent / 2, received


def test_state_files_are_confined_typed_and_atomic(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"precious")
    os.mkfifo(root / "fifo")
    (root / "zero").symlink_to("/dev/zero")
    with running_server(toy_service(root=root)) as server, Client(server.address,
                                                                   timeout=60) as c:
        c.create_session(text=TOY_TWO_POINTS)
        c.attach(["a", "b"], ["a", "b"])
        for path in ("../outside.bin", str(outside), "zero"):
            with pytest.raises(ServiceError) as info:
                c.request("save", {"path": path})
            assert info.value.code == "forbidden_path", path
        assert outside.read_bytes() == b"precious"
        with pytest.raises(ServiceError) as info:  # a FIFO answers at once, not never
            c.request("restore", {"path": "fifo"})
        assert info.value.code == "io_error" and "not a regular file" in info.value.message
        with pytest.raises(ServiceError) as info:
            c.request("restore", {"path": "no/such/file"})
        assert info.value.code == "io_error"
        with pytest.raises(ServiceError) as info:  # existence outside is never revealed
            c.request("restore", {"path": "../outside.bin"})
        assert info.value.code == "forbidden_path"
        saved = c.request("save", {"path": "snap.state"})
        assert Path(saved["path"]) == root / "snap.state"
        assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")] == []
        c.request("restore", {"path": "snap.state"})
        with pytest.raises(ServiceError) as info:  # a scenario reaching outside the root
            c.create_session(text=TOY_TWO_POINTS, base_dir=str(tmp_path))
        assert info.value.code == "forbidden_path"


def test_structure_files_named_by_a_scenario_must_lie_in_the_root(tmp_path):
    from rbcosim.service.core import Service

    root = tmp_path / "root"
    root.mkdir()
    scenario = (Path(__file__).resolve().parents[1] / "scenarios" /
                "two_mass_oscillator.toml").read_text()
    (root / "s.toml").write_text(scenario.replace('"two_mass_flex.npz"',
                                                  '"../two_mass_flex.npz"'))
    svc = Service(root=root)
    from service_helpers import message

    (_, reply), = svc.handle(message("create_session", scenario="s.toml"))
    assert reply["error"]["code"] == "forbidden_path"
    assert "flex_bodies.structure.file" in reply["error"]["message"]


def test_step_indices_beyond_the_range_are_refused_and_change_nothing():
    with running_server() as server, Client(server.address, timeout=60) as c:
        c.create_session(text=TOY_TWO_POINTS)
        blob = c.request("get_state")["state"]
        for step in (2**64 - 1, 2**53 + 1, -1):
            with pytest.raises(ServiceError) as info:
                c.request("set_state", {"state": blob, "step": step})
            assert info.value.code == "invalid_argument"
        assert c.heartbeat()["step"] == 0


def test_a_model_over_a_limit_is_refused_before_it_is_built_and_hello_reports_the_limits():
    from service_helpers import message

    from rbcosim.limits import RunLimits
    from rbcosim.service.core import Service

    svc = Service(run_limits=RunLimits(bodies=100))
    (_, reply), = svc.handle(message(
        "create_session", scenario="scenarios/chain.toml",
        overrides={"generators.chain.links": "5000"}))  # refused before the solver is built
    assert reply["error"]["code"] == "limit_exceeded"
    assert "bodies = 5000" in reply["error"]["message"]
    assert "--limit bodies=5000" in reply["error"]["message"]
    assert svc.sessions == {}
    (_, hello), = svc.handle(message("hello"))
    assert hello["content"]["limits"]["bodies"] == 100
    with running_server(svc, build_timeout=7.0, send_hwm=33) as server, \
            Client(server.address, timeout=60) as c:
        limits = c.hello()["limits"]
    assert (limits["build_timeout"], limits["send_hwm"], limits["bodies"]) == (7.0, 33, 100)


def test_serve_without_root_reads_and_writes_only_its_sessions_folder(tmp_path):
    """`rbcosim serve` with no --root: a save aimed outside lands nowhere (finding: any file
    the server user could write was overwritten)."""
    import subprocess
    import sys

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rbcosim.cli.serve_cmd", "--bind", "tcp://127.0.0.1:0",
         "--rigid-factory", "toy_side:ToySide.from_scenario"],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            str(Path(__file__).resolve().parents[1] / d) for d in ("src", "tests"))})
    try:
        address = proc.stdout.readline().split()[2]
        with Client(address, timeout=30) as c:
            c.create_session(text=TOY_TWO_POINTS)
            for path in ("../victim.txt", str(victim), "../../" * 8 + str(victim)[1:]):
                with pytest.raises(ServiceError) as info:
                    c.request("save", {"path": path})
                assert info.value.code == "forbidden_path"
            saved = Path(c.request("save", {"path": "mine.state"})["path"])
    finally:
        proc.terminate()
        proc.wait(30)
    assert victim.read_text() == "keep me"
    assert saved == work / "rbcosim-sessions" / "mine.state" and saved.is_file()
