"""The service over real ZeroMQ sockets: tcp with an OS-chosen port, ipc, the CLI, CURVE."""

from __future__ import annotations

import os
import subprocess
import sys

import msgpack
import numpy as np
import pytest
import zmq
from service_helpers import TOY_TWO_POINTS, running_server, spring_inputs, toy_service

from rbcosim import PROTOCOL_VERSION
from rbcosim.client import Client, ServiceError
from rbcosim.service import CurveConfig, Limits, Server, generate_keys

pytestmark = pytest.mark.protocol


def run_session(address: str, steps: int = 5) -> np.ndarray:
    with Client(address, timeout=10) as c:
        assert c.hello()["protocol_version"] == PROTOCOL_VERSION
        c.create_session(text=TOY_TWO_POINTS)
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
        for k in range(steps):
            r = c.step(*spring_inputs(kin, k))
            assert r.step == k + 1
            kin = r.kinematics
        res = c.results()
        assert res["kinematics"].shape == (steps + 1, 2, 13)
        c.close()
        with pytest.raises(ServiceError) as info:
            c.outputs()
        assert info.value.code == "unknown_session"
        return res["kinematics"]


def test_round_trip_over_tcp_with_os_chosen_port():
    with running_server(bind="tcp://127.0.0.1:0") as server:
        assert server.address.startswith("tcp://127.0.0.1:") and not server.address.endswith(":0")
        run_session(server.address)


def test_round_trip_over_ipc(tmp_path):
    with running_server(bind=f"ipc://{tmp_path}/rb.sock") as server:
        tcp = run_session(server.address)
    with running_server() as server:
        np.testing.assert_array_equal(run_session(server.address), tcp)


def test_inline_and_frame_arrays_give_the_same_reply():
    with running_server() as server, Client(server.address) as c:
        c.create_session(text=TOY_TWO_POINTS)
        c.attach(["a", "b"])
        wrench = np.arange(12.0).reshape(2, 6)
        c.save()
        inline = c.step(wrench)
        c.restore()
        header = {
            "version": PROTOCOL_VERSION,
            "msg_id": "f1",
            "msg_type": "step",
            "session": c.session,
            "content": {
                "client": c.client_id,
                "step": 0,
                "wrench": {"dtype": "<f8", "shape": [2, 6], "frame": 0},
            },
        }
        c.socket.send_multipart([b"", msgpack.packb(header), wrench.astype("<f8").tobytes()])
        frames = c.socket.recv_multipart()
        reply = msgpack.unpackb(frames[1])
        assert reply["status"] == "ok" and reply["parent_id"] == "f1"
        desc = reply["content"]["kinematics"]
        assert desc["frame"] == 0 and len(frames) == 4
        np.testing.assert_array_equal(
            np.frombuffer(frames[2 + desc["frame"]], "<f8").reshape(desc["shape"]),
            inline.kinematics,
        )


def test_server_survives_garbage_and_oversized_messages():
    service = toy_service(limits=Limits(max_message_size=4096))
    with running_server(service) as server, Client(server.address, timeout=10) as c:
        for frames in (
            [b"", b"\xc1"],
            [b"", b""],
            [b""],
            [b"", b"\x93\x01\x02"],
            [b"\xff\xfe"],
            [b"", b"x" * 5000],
        ):
            c.socket.send_multipart(frames)
            reply_frames = c.socket.recv_multipart()
            reply = msgpack.unpackb(reply_frames[-1] if reply_frames[0] else reply_frames[1])
            assert reply["status"] == "error" and reply["parent_id"] is None
        assert reply["error"]["code"] == "message_too_large"
        assert c.hello()["protocol_version"] == PROTOCOL_VERSION


def test_wrong_major_version_over_the_wire():
    with running_server() as server, Client(server.address, timeout=10) as c:
        header = {
            "version": "2.0",
            "msg_id": "v",
            "msg_type": "hello",
            "session": None,
            "content": {},
        }
        c.socket.send_multipart([b"", msgpack.packb(header)])
        reply = msgpack.unpackb(c.socket.recv_multipart()[1])
        assert reply["error"]["code"] == "incompatible_version"
        assert "2.0" in reply["error"]["message"] and PROTOCOL_VERSION in reply["error"]["message"]


def test_req_socket_client_works_too():
    with running_server() as server:
        ctx = zmq.Context.instance()
        req = ctx.socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        req.connect(server.address)
        header = {"version": PROTOCOL_VERSION, "msg_id": 7, "msg_type": "hello", "content": {}}
        req.send(msgpack.packb(header))
        assert req.poll(10000)
        reply = msgpack.unpackb(req.recv())
        assert reply["status"] == "ok" and reply["parent_id"] == 7
        req.close()


def test_refuses_non_loopback_without_flags():
    with pytest.raises(ValueError, match="loopback"):
        Server(toy_service(), "tcp://0.0.0.0:0")
    with pytest.raises(ValueError, match="insecure"):
        Server(toy_service(), "tcp://0.0.0.0:0", allow_remote=True)


def test_curve_allow_list(tmp_path):
    keys = generate_keys(tmp_path / "keys", ("server", "client", "stranger"))
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "client.key").write_bytes(keys["client"][0].read_bytes())
    curve = CurveConfig(keys["server"][1], allowed)
    with running_server(bind="tcp://0.0.0.0:0", allow_remote=True, curve=curve) as server:
        port = server.address.rsplit(":", 1)[1]
        address = f"tcp://127.0.0.1:{port}"
        with Client(
            address,
            timeout=10,
            curve_server_key=keys["server"][0],
            curve_client_secret_file=keys["client"][1],
        ) as c:
            assert c.hello()["protocol_version"] == PROTOCOL_VERSION
        with (
            Client(
                address,
                timeout=0.5,
                curve_server_key=keys["server"][0],
                curve_client_secret_file=keys["stranger"][1],
            ) as c,
            pytest.raises(TimeoutError),
        ):
            c.hello()


def test_cli_serve_prints_the_bound_address_and_serves(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1",  # tests/ holds the toy rigid side
           "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__),
                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rbcosim.cli.serve_cmd",
            "--bind",
            "tcp://127.0.0.1:0",
            "--rigid-factory",
            "toy_side:ToySide.from_scenario",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving on tcp://127.0.0.1:"), line + proc.stderr.read()
        run_session(line.split()[-1], steps=2)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_cli_serve_refuses_remote_bind_and_generates_keys(tmp_path, capsys):
    from rbcosim.cli import serve_cmd

    assert serve_cmd.main(["--bind", "tcp://0.0.0.0:0"]) == 1
    assert "loopback" in capsys.readouterr().err
    assert serve_cmd.main(["--generate-keys", str(tmp_path)]) == 0
    assert (tmp_path / "server.key").is_file() and (tmp_path / "client.key_secret").is_file()
