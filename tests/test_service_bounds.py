"""Bounds in seconds and keys that hold while the server runs: a busy session can be closed
and asked for a heartbeat, a request longer than --request-timeout stops its session alone,
an idle session closes itself and frees its process, CURVE keys removed from the allowed
folder are refused from then on, and every option an error names exists."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import time

import pytest
from service_helpers import TOY_TWO_POINTS, running_server, spring_inputs

from rbcosim.client import Client, ServiceError, ServiceTimeout

pytestmark = pytest.mark.protocol

LONG_STEP = TOY_TWO_POINTS + "step_seconds = 600.0\n"


def _gone(pid: int, within: float = 20.0) -> bool:
    """Whether /proc/PID is gone or a zombie within `within` s (a bounded poll)."""
    for _ in range(int(within / 0.05)):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _start_long_step(c: Client) -> str:
    c.create_session(text=LONG_STEP)
    kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
    wrench, flex = spring_inputs(kin, 0)
    return c.send("step", {"client": c.client_id, "step": 0, "wrench": wrench.tolist(),
                           "flex_kinematics": flex.tolist()})


def _wait_busy(observer: Client, session: str) -> dict:
    for _ in range(400):
        beat = observer.request("heartbeat", session=session)
        if "busy" in beat:
            return beat
        time.sleep(0.05)
    raise AssertionError("the session never showed busy")


@pytest.mark.parametrize("direct", [True, False])
def test_a_busy_session_answers_heartbeat_and_close_stops_it(direct):
    with running_server() as server, Client(server.address, timeout=30, direct=direct) as c, \
            Client(server.address, timeout=10, direct=False) as observer:
        step = _start_long_step(c)  # 600 s: on the direct endpoint when `direct`
        (worker,) = server.workers.workers.values()
        beat = _wait_busy(observer, c.session)
        assert beat["step"] == 0 and beat["time"] == 0.0 and beat["busy"] >= 0.0
        closed = observer.request("close", session=c.session)
        assert closed == {"session": c.session, "step": 0, "time": 0.0, "stopped": True}
        with pytest.raises(ServiceError) as info:
            c.receive(step)
        assert info.value.code == "session_closed" and "was stopped" in info.value.message
        assert _gone(worker.process.pid)
        with pytest.raises(ServiceError) as later:
            observer.request("heartbeat", session=c.session)
        assert later.value.code == "unknown_session"


@pytest.mark.parametrize("direct", [True, False])
def test_a_request_past_the_request_timeout_stops_its_session_alone(direct):
    with running_server(request_timeout=1.0) as server, \
            Client(server.address, timeout=60, direct=direct) as c, \
            Client(server.address, timeout=30) as victim:
        victim.create_session(text=TOY_TWO_POINTS)
        kin = victim.attach(["a", "b"], ["a", "b"])["kinematics"]
        step = _start_long_step(c)
        with pytest.raises(ServiceError) as info:
            c.receive(step)
        assert info.value.code == "session_closed"
        assert "ran longer than 1 s (serve --request-timeout)" in info.value.message
        for k in range(5):  # the other session is untouched
            kin = victim.step(*spring_inputs(kin, k)).kinematics
        assert victim.hello()["limits"]["request_timeout"] == 1.0


def test_an_idle_session_is_closed_and_its_process_freed():
    with running_server(session_idle=0.5) as server, Client(server.address, timeout=10) as c:
        assert c.hello()["limits"]["session_idle"] == 0.5
        c.create_session(text=TOY_TWO_POINTS)
        (worker,) = server.workers.workers.values()
        assert _gone(worker.process.pid)
        for _ in range(200):  # the socket loop reaps it
            if not server.workers.workers:
                break
            time.sleep(0.05)
        assert server.workers.workers == {}
        reason = "after 0.5 s without a request (serve --session-idle)"
        with pytest.raises(ServiceError) as notice:  # the session_ended notice of 1.3
            c.heartbeat()
        assert notice.value.code == "session_closed" and reason in notice.value.message
        with pytest.raises(ServiceError) as info:
            c.heartbeat()
        assert info.value.code == "unknown_session" and reason in info.value.message


def test_a_request_longer_than_the_idle_time_does_not_make_its_session_idle():
    with running_server(session_idle=3.0) as server, Client(server.address, timeout=30) as c:
        c.create_session(text=TOY_TWO_POINTS + "step_seconds = 4.0\n")
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
        assert c.step(*spring_inputs(kin, 0)).step == 1  # 4 s, longer than the idle time
        time.sleep(1.0)  # idle time counts from the end of the step: 2 s are left
        assert c.heartbeat()["step"] == 1


def test_curve_keys_are_read_again_when_the_folder_changes(tmp_path):
    from rbcosim.service import CurveConfig, generate_keys

    keys = generate_keys(tmp_path / "keys", ("server", "client", "other"))
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    for name in ("client", "other"):
        shutil.copy(keys[name][0], allowed)
    curve = CurveConfig(keys["server"][1], allowed)

    def hello(name: str) -> dict:
        with Client(server.address, timeout=3, curve_server_key=keys["server"][0],
                    curve_client_secret_file=keys[name][1]) as c:
            return c.hello()

    def direct_heartbeat(name: str, endpoint: str, session: str) -> bool:
        """Whether a fresh connection with `name`'s key to a direct endpoint is answered."""
        with Client(endpoint, timeout=3, curve_server_key=keys["server"][0],
                    curve_client_secret_file=keys[name][1], direct=False) as c:
            try:
                return c.request("heartbeat", session=session)["step"] == 0
            except ServiceTimeout:
                return False

    with running_server(bind="tcp://0.0.0.0:0", allow_remote=True, curve=curve) as server, \
            Client(server.address, timeout=10, curve_server_key=keys["server"][0],
                   curve_client_secret_file=keys["other"][1]) as owner:
        owner.create_session(text=TOY_TWO_POINTS)
        endpoint = owner.direct_endpoint.replace("0.0.0.0", "127.0.0.1")
        assert hello("client")["protocol_version"]
        assert direct_heartbeat("client", endpoint, owner.session)
        os.remove(allowed / "client.key")
        with pytest.raises(ServiceTimeout):  # the handshake is refused: no reply at all
            hello("client")
        assert not direct_heartbeat("client", endpoint, owner.session)  # the session's too
        assert hello("other")["protocol_version"]
        assert direct_heartbeat("other", endpoint, owner.session)
        shutil.copy(keys["client"][0], allowed)
        assert hello("client")["protocol_version"]


@pytest.mark.parametrize("make", ["missing", "empty", "garbage"])
def test_a_missing_empty_or_garbage_key_folder_is_refused_at_start(tmp_path, capsys, make):
    from rbcosim.cli.serve_cmd import main
    from rbcosim.service import generate_keys

    keys = generate_keys(tmp_path / "keys", ("server",))
    folder = tmp_path / "clients"
    if make != "missing":
        folder.mkdir()
    if make == "garbage":
        (folder / "x.key").write_text("not a certificate\n")
    rc = main(["--bind", "tcp://127.0.0.1:0", "--root", str(tmp_path), "--curve-secret",
               str(keys["server"][1]), "--curve-clients", str(folder)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, err
    expected = {"missing": "not a folder", "empty": "holds no client public key (*.key)",
                "garbage": "x.key: not a public key certificate"}[make]
    assert err[0].startswith(f"rbcosim serve: error: --curve-clients {folder}")
    assert expected in err[0]


def test_the_memory_bound_error_names_an_option_serve_has():
    from service_helpers import message

    from rbcosim.cli.serve_cmd import add_parser
    from rbcosim.service.core import Service
    from rbcosim.service.wire import encode
    from rbcosim.service.worker_process import VIA_SERVER, _serve

    class OutOfMemory(Service):
        def handle(self, msg, peer=None):
            raise MemoryError

    (_, reply), = _serve(OutOfMemory(), (b"id", True, False, VIA_SERVER),
                         encode(message("heartbeat")), None)
    text = reply["error"]["message"]
    parser = argparse.ArgumentParser()
    serve = add_parser(parser.add_subparsers())
    named = re.findall(r"--[a-z][a-z-]+", text)
    assert reply["error"]["code"] == "limit_exceeded" and named == ["--session-memory"]
    assert all(option in serve._option_string_actions for option in named)


def test_the_outbox_keeps_at_most_its_bytes_and_loses_nothing_else():
    """100 replies of 100 kB to a client that reads none: the queue holds at most 1 MB, every
    reply is either delivered (once the client reads) or counted as dropped."""
    import zmq

    from rbcosim.service.outbox import Outbox

    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind("tcp://127.0.0.1:0")
    reader = ctx.socket(zmq.DEALER)
    reader.setsockopt(zmq.IDENTITY, b"r")
    reader.setsockopt(zmq.RCVHWM, 1)
    reader.setsockopt(zmq.RCVBUF, 4096)
    reader.connect(router.getsockopt(zmq.LAST_ENDPOINT).decode())
    reader.send(b"hi")
    router.recv_multipart()
    outbox = Outbox(router, 1_000_000, 1000)
    for _ in range(100):
        outbox.send([b"r", bytes(100_000)])
        outbox.flush()
    assert 0 < outbox.queued_bytes(b"r") <= 1_000_000
    received = 0
    while reader.poll(1000):
        assert len(reader.recv()) == 100_000
        received += 1
        outbox.flush()
    assert received + outbox.dropped == 100 and outbox.dropped > 50
    assert not outbox.pending and outbox.queued_bytes(b"r") == 0
    ctx.destroy(linger=0)
