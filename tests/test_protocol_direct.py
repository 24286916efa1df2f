"""Protocol 1.3: one hop per macro step. After create_session or attach a 1.3 client sends
its session's requests to the session worker's own endpoint; the socket loop keeps set-up,
limits, keys and isolation, and 1.2 clients are still served through it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq
import zmq.utils.monitor
from service_helpers import TOY_TWO_POINTS, running_server, spring_inputs, toy_service

from rbcosim import PROTOCOL_VERSION
from rbcosim.client import Client, ServiceError
from rbcosim.service.server import CurveConfig, generate_keys
from rbcosim.service.wire import Limits

pytestmark = pytest.mark.protocol

V12 = Path(__file__).resolve().parents[1] / "interfaces" / "conformance" / "v1.2"


def _drive(c: Client, steps: int) -> np.ndarray:
    kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
    for k in range(steps):
        kin = c.step(*spring_inputs(kin, k)).kinematics
    return kin


class Raw:
    """A DEALER that sends headers of a given protocol version (no client library)."""

    def __init__(self, address: str, version: str = "1.2", curve: tuple | None = None) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        if curve is not None:
            self.sock.curve_serverkey, self.sock.curve_publickey, self.sock.curve_secretkey = curve
        self.sock.connect(address)
        self.version, self.n = version, 0

    def send(self, msg_type: str, session=None, **content) -> int:
        self.n += 1
        header = {"version": self.version, "msg_id": self.n, "msg_type": msg_type,
                  "session": session, "content": content}
        self.sock.send_multipart([b"", msgpack.packb(header, use_bin_type=True)])
        return self.n

    def receive(self) -> dict:
        assert self.sock.poll(30_000), "no reply"
        frames = self.sock.recv_multipart()
        return msgpack.unpackb(frames[1], raw=False)

    def request(self, msg_type: str, session=None, **content) -> dict:
        msg_id = self.send(msg_type, session, **content)
        reply = self.receive()
        assert reply["parent_id"] == msg_id
        return reply

    def close(self) -> None:
        self.sock.close(0)


def _array(d: dict) -> np.ndarray:
    return np.frombuffer(d["data"], "<f8").reshape(d["shape"])


def test_steps_go_to_the_session_worker_without_the_socket_loop():
    with running_server() as server, Client(server.address, timeout=30) as c:
        assert PROTOCOL_VERSION == "1.3"
        assert "direct_endpoint" in c.hello()["capabilities"]
        created = c.create_session(text=TOY_TWO_POINTS)
        host, port = server.address.rsplit(":", 1)
        endpoint = created["endpoint"]
        # same transport and interface as the server's bind, an OS-chosen port of its own
        assert endpoint.startswith(f"{host}:") and endpoint.rsplit(":", 1)[1] != port
        assert c.direct is not None and c.direct_endpoint == endpoint
        attached = c.attach(["a", "b"], ["a", "b"])
        assert attached["endpoint"] == endpoint
        # Stop the socket loop: the session goes on stepping over its direct endpoint.
        server.stop()
        kin = attached["kinematics"]
        for k in range(10):
            kin = c.step(*spring_inputs(kin, k)).kinematics
        assert c.heartbeat()["step"] == 10
        assert c.close()["step"] == 10
        assert c.direct is None


def test_the_direct_path_gives_the_bits_of_the_path_through_the_socket_loop():
    with running_server() as server:
        with Client(server.address, timeout=30) as c:
            c.create_session(text=TOY_TWO_POINTS)
            direct = _drive(c, 25)
            rows = c.results()["kinematics"]
        raw = Raw(server.address, "1.2")
        created = raw.request("create_session", text=TOY_TWO_POINTS)["content"]
        assert "endpoint" not in created  # a 1.2 client is served through the socket loop
        sid = created["session"]
        attached = raw.request("attach", sid, points=["a", "b"], joints=["a", "b"])["content"]
        assert "endpoint" not in attached
        kin = _array(attached["kinematics"])
        for k in range(25):
            w, f = spring_inputs(kin, k)
            reply = raw.request("step", sid, client=attached["client"], step=k,
                                wrench=w.tolist(), flex_kinematics=f.tolist())
            kin = _array(reply["content"]["kinematics"])
        raw.close()
    np.testing.assert_array_equal(kin, direct)
    assert rows.shape == (26, 2, 13)


def test_a_12_and_a_13_client_share_one_barrier():
    with running_server() as server, Client(server.address, timeout=30) as new:
        new.create_session(text=TOY_TWO_POINTS)
        kin_a = new.attach(["a"], ["a"])["kinematics"]
        old = Raw(server.address, "1.2")
        attached = old.request("attach", new.session, points=["b"], joints=["b"])["content"]
        kin_b, cid = _array(attached["kinematics"]), attached["client"]
        for k in range(5):
            wa, fa = spring_inputs(kin_a, k)
            wb, fb = spring_inputs(kin_b, k)
            msg_id = new.start_step(wa, fa)
            old.send("step", new.session, client=cid, step=k, wrench=wb.tolist(),
                     flex_kinematics=fb.tolist())
            kin_a = new.finish_step(msg_id).kinematics
            kin_b = _array(old.receive()["content"]["kinematics"])
        old.close()
        assert new.heartbeat()["step"] == 5


def test_ipc_servers_offer_an_ipc_endpoint_beside_their_own(tmp_path):
    bind = f"ipc://{tmp_path}/serve.sock"
    with running_server(bind=bind) as server, Client(server.address, timeout=30) as c:
        endpoint = c.create_session(text=TOY_TWO_POINTS)["endpoint"]
        assert endpoint.startswith(f"{bind}.")
        assert os.stat(endpoint[len("ipc://"):]).st_mode & 0o077 == 0
        _drive(c, 3)
        c.close()


def test_the_direct_endpoint_refuses_create_session_and_oversized_messages():
    limits = Limits(max_message_size=4096)
    with running_server(toy_service(limits=limits)) as server, \
            Client(server.address, timeout=30) as c:
        endpoint = c.create_session(text=TOY_TWO_POINTS)["endpoint"]
        raw = Raw(endpoint, PROTOCOL_VERSION)
        reply = raw.request("create_session", text=TOY_TWO_POINTS)
        assert reply["error"]["code"] == "invalid_argument"
        assert "server's endpoint" in reply["error"]["message"]
        raw.send("heartbeat", c.session, pad="x" * 5000)
        reply = raw.receive()  # refused unread, as the server's endpoint does: parent_id nil
        assert reply["error"]["code"] == "message_too_large" and reply["parent_id"] is None
        assert raw.request("heartbeat", c.session)["content"]["step"] == 0
        raw.close()


def _handshake(sock: zmq.Socket, endpoint: str) -> int:
    """Connect `sock` to `endpoint` and return how its CURVE handshake ended (a monitor
    event: HANDSHAKE_SUCCEEDED or HANDSHAKE_FAILED_AUTH)."""
    monitor = sock.get_monitor_socket()
    sock.connect(endpoint)
    try:
        while True:
            event = zmq.utils.monitor.recv_monitor_message(monitor)["event"]
            if event in (zmq.EVENT_HANDSHAKE_SUCCEEDED, zmq.EVENT_HANDSHAKE_FAILED_AUTH,
                         zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
                         zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
                return event
    finally:
        sock.disable_monitor()
        monitor.close(0)


def test_curve_holds_on_the_direct_endpoint(tmp_path):
    keys = generate_keys(tmp_path / "keys", ("server", "client"))
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "client.key").write_bytes(keys["client"][0].read_bytes())
    curve = CurveConfig(keys["server"][1], allowed)
    with running_server(curve=curve) as server, \
            Client(server.address, timeout=30, curve_server_key=keys["server"][0],
                   curve_client_secret_file=keys["client"][1]) as c:
        endpoint = c.create_session(text=TOY_TWO_POINTS)["endpoint"]
        _drive(c, 3)  # the allowed client steps over the direct endpoint
        server_public, _ = zmq.auth.load_certificate(str(keys["server"][0]))
        ctx = zmq.Context.instance()
        stranger = ctx.socket(zmq.DEALER)
        stranger.setsockopt(zmq.LINGER, 0)
        public, secret = zmq.curve_keypair()
        stranger.curve_serverkey, stranger.curve_publickey = server_public, public
        stranger.curve_secretkey = secret
        assert _handshake(stranger, endpoint) == zmq.EVENT_HANDSHAKE_FAILED_AUTH
        stranger.close(0)
        plain = ctx.socket(zmq.DEALER)  # no CURVE at all
        plain.setsockopt(zmq.LINGER, 0)
        assert _handshake(plain, endpoint) != zmq.EVENT_HANDSHAKE_SUCCEEDED
        plain.close(0)
        c.close()


def test_a_lost_worker_tells_its_direct_clients_by_a_notice():
    with running_server() as server, Client(server.address, timeout=30) as a:
        a.create_session(text=TOY_TWO_POINTS)
        kin = a.attach(["a"], ["a"])["kinematics"]
        assert a.direct is not None
        w, f = spring_inputs(kin, 0)
        a.finish_step(a.start_step(w, f))  # alone at the barrier
        (worker,) = [w for w in server.workers.workers.values() if w.session == a.session]
        watcher = Raw(server.address, PROTOCOL_VERSION)
        watcher.request("attach", a.session, points=["b"], joints=["b"])
        pending = a.start_step(*spring_inputs(kin, 1))  # waits for the watcher at the barrier
        os.kill(worker.process.pid, signal.SIGKILL)
        with pytest.raises(ServiceError) as info:
            a.finish_step(pending)
        assert info.value.code == "session_closed" and "killed by signal 9" in info.value.message
        notice = watcher.receive()  # the other 1.3 client is told too, parent_id nil
        assert notice["msg_type"] == "session_ended" and notice["parent_id"] is None
        assert notice["session"] == a.session and notice["status"] == "error"
        assert notice["error"]["code"] == "session_closed"
        watcher.close()
        assert a.direct is None
        with pytest.raises(ServiceError) as later:
            a.heartbeat()
        assert later.value.code == "unknown_session" and "was lost" in later.value.message


def _transcript(path: Path) -> list[tuple[str, int, dict]]:
    out = []
    for line in path.read_text().splitlines():
        way, conn, hexed = line.split()
        out.append((way, int(conn), msgpack.unpackb(bytes.fromhex(hexed), raw=False)))
    return out


def _same(recorded, live, ids: dict, path: str = "") -> None:
    """Recorded and live replies agree, ids mapped, arrays bit for bit."""
    if isinstance(recorded, dict):
        assert isinstance(live, dict), path
        assert set(recorded) == set(live), (path, set(recorded) ^ set(live))
        for key in recorded:
            _same(recorded[key], live[key], ids, f"{path}.{key}")
    elif isinstance(recorded, list):
        assert len(recorded) == len(live), path
        for i, (a, b) in enumerate(zip(recorded, live)):
            _same(a, b, ids, f"{path}[{i}]")
    elif isinstance(recorded, str) and recorded in ids:
        assert live == ids[recorded], path
    elif isinstance(recorded, str) and "session " in recorded:
        for old, new in ids.items():
            recorded = recorded.replace(old, new)
        assert recorded == live, path
    else:
        assert recorded == live, path


def test_the_12_conformance_transcripts_are_still_served():
    """Every request of the recorded 1.2 exchange, sent as recorded (ids of this run put in),
    gets the recorded reply: same fields, values and array bits; only the server's reply ids,
    its own version and its hello lists (which a 1.3 server extends) differ."""
    lines = _transcript(V12 / "exchange.txt")
    with running_server() as server:
        conns = {n: Raw(server.address) for n in (1, 2)}
        ids: dict[str, str] = {}
        for (way, conn, request), (back, conn2, recorded) in zip(lines[::2], lines[1::2]):
            assert (way, back, conn) == (">", "<", conn2)
            assert request["version"] == "1.2"
            packed = msgpack.packb(_renamed(request, ids), use_bin_type=True)
            conns[conn].sock.send_multipart([b"", packed])
            live = conns[conn].receive()
            for key in ("session", "client"):
                old = recorded["content"].get(key)
                if recorded["status"] == "ok" and isinstance(old, str) and old not in ids:
                    ids[old] = live["content"][key]
            assert live["version"] == PROTOCOL_VERSION
            for key in ("version", "msg_id"):
                recorded.pop(key), live.pop(key)
            if recorded["msg_type"] == "hello_reply":
                for key in ("capabilities", "message_types"):
                    assert set(recorded["content"][key]) <= set(live["content"][key])
                for key in ("capabilities", "message_types", "protocol_version", "server",
                            "limits", "root"):
                    recorded["content"].pop(key, None), live["content"].pop(key, None)
            assert "endpoint" not in live["content"]
            if "server_time" in recorded["content"]:  # a clock reading
                recorded["content"].pop("server_time"), live["content"].pop("server_time")
            _same(recorded, live, ids)
        for c in conns.values():
            c.close()


def _renamed(value, ids: dict):
    if isinstance(value, dict):
        return {k: _renamed(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, ids) for v in value]
    if isinstance(value, str):
        return ids.get(value, value)
    return value


def test_a_server_bound_beyond_loopback_binds_its_direct_endpoints_there_too():
    """--allow-remote on all interfaces: the direct endpoint is on the same interface (the
    wildcard), and a client reaches it by the host it reached the server by."""
    with running_server(bind="tcp://0.0.0.0:0", allow_remote=True, insecure=True) as server:
        port = server.address.rsplit(":", 1)[1]
        with Client(f"tcp://127.0.0.1:{port}", timeout=30) as c:
            endpoint = c.create_session(text=TOY_TWO_POINTS)["endpoint"]
            assert endpoint.startswith("tcp://0.0.0.0:")
            assert c.direct_endpoint == f"tcp://127.0.0.1:{endpoint.rsplit(':', 1)[1]}"
            _drive(c, 3)
            c.close()
