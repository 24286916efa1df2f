"""Cheap frames (protocol 1.3): the Python client sends a step's arrays as raw little-endian
float64 buffer frames after the header, the server answers in kind, and both sides share one
codec (rbcosim.service.wire)."""

from __future__ import annotations

import ast
import struct
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

import rbcosim.client
from rbcosim.client import Client
from rbcosim.service.outbox import Outbox
from rbcosim.service.testing import TOY_TWO_POINTS, running_server, spring_inputs

pytestmark = pytest.mark.protocol


def _fake_server(sock: zmq.Socket, seen: list) -> None:
    """Answer one attach, then record one step request's frames and answer it with frames
    of known values."""
    for _ in range(2):
        identity, empty, header, *buffers = sock.recv_multipart()
        request = msgpack.unpackb(header, raw=False)
        seen.append((request, buffers))
        if request["msg_type"] == "attach":
            content = {"client": "c1", "step": 0, "kinematics": {"dtype": "<f8", "shape": [1, 13],
                                                                "data": bytes(104)}}
            frames = []
        else:
            kin = struct.pack("<13d", *range(13))
            gaps = struct.pack("<4d", 0.5, 0.25, 0.125, 1.0)
            content = {"step": 1, "time": 0.01,
                       "kinematics": {"dtype": "<f8", "shape": [1, 13], "frame": 1},
                       "gaps": {"dtype": "<f8", "shape": [1, 4], "frame": 0}}
            frames = [gaps, kin]
        reply = {"version": "1.3", "msg_id": "r", "msg_type": request["msg_type"] + "_reply",
                 "session": request["session"], "parent_id": request["msg_id"],
                 "status": "ok", "content": content}
        sock.send_multipart([identity, empty, msgpack.packb(reply, use_bin_type=True),
                             *frames])


def test_client_sends_step_arrays_as_little_endian_buffer_frames_and_reads_framed_replies():
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    seen: list = []
    thread = threading.Thread(target=_fake_server, args=(sock, seen), daemon=True)
    thread.start()
    try:
        with Client(f"tcp://127.0.0.1:{port}", timeout=10) as c:
            c.session = "s1"
            c.attach(["tip"], ["tip"])
            wrench = [1.5, -2.0, 3.25, 0.0, 1e-300, -7.0]
            flex = [0.1 * i for i in range(13)]
            r = c.step(wrench, flex)
    finally:
        thread.join(10)
        sock.close()
    request, buffers = seen[1]
    content = request["content"]
    w, f = content["wrench"], content["flex_kinematics"]
    assert (w["dtype"], w["shape"], f["dtype"], f["shape"]) == ("<f8", [1, 6], "<f8", [1, 13])
    assert sorted([w["frame"], f["frame"]]) == [0, 1] and "data" not in w and "data" not in f
    assert buffers[w["frame"]] == struct.pack("<6d", *wrench)
    assert buffers[f["frame"]] == struct.pack("<13d", *flex)
    assert r.kinematics.tolist() == [[float(i) for i in range(13)]]
    assert r.gaps.tolist() == [[0.5, 0.25, 0.125, 1.0]]


def test_server_answers_a_framed_step_with_frames_equal_to_the_inline_answer():
    with running_server() as server, Client(server.address, timeout=10) as c:
        c.create_session(text=TOY_TWO_POINTS)
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
        c.save()
        wrench, flex = spring_inputs(kin, 0)
        framed = c.step(wrench, flex)
        c.restore()
        raw = zmq.Context.instance().socket(zmq.DEALER)
        raw.setsockopt(zmq.LINGER, 0)
        raw.connect(server.address)
        header = {"version": "1.2", "msg_id": 7, "msg_type": "step", "session": c.session,
                  "content": {"client": c.client_id, "step": 0,
                              "wrench": {"dtype": "<f8", "shape": [2, 6],
                                         "data": wrench.astype("<f8").tobytes()},
                              "flex_kinematics": {"dtype": "<f8", "shape": [2, 13],
                                                  "data": flex.astype("<f8").tobytes()}}}
        raw.send_multipart([b"", msgpack.packb(header, use_bin_type=True)])
        assert raw.poll(10000)
        frames = raw.recv_multipart()
        raw.close()
    assert len(frames) == 2  # inline: [empty, header] only
    inline = msgpack.unpackb(frames[1], raw=False)["content"]
    np.testing.assert_array_equal(
        framed.kinematics, np.frombuffer(inline["kinematics"]["data"], "<f8").reshape(2, 13))
    np.testing.assert_array_equal(
        framed.gaps, np.frombuffer(inline["gaps"]["data"], "<f8").reshape(2, 4))


def test_a_queued_reply_keeps_the_values_of_when_it_was_sent():
    """The server sends views of its arrays; a reply that must wait for a slow client is
    copied, so a later change of the array does not reach that client."""
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RCVHWM, 1)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    dealer.send(b"hi")
    identity, _ = router.recv_multipart()
    outbox = Outbox(router, 1 << 20, 10_000)
    values = np.zeros(512)
    sent = []
    for k in range(200):  # more than the pipes hold: the rest waits in the outbox
        values[:] = k
        outbox.send([identity, memoryview(values)])
        sent.append(k)
    assert outbox.pending
    got = []
    while len(got) < len(sent):
        outbox.flush()
        if dealer.poll(10):
            got.append(np.frombuffer(dealer.recv(), "<f8")[0])
    router.close()
    dealer.close()
    assert got == [float(k) for k in sent]


def test_client_and_server_share_one_codec():
    tree = ast.parse(Path(rbcosim.client.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "msgpack" not in imported
    assert "rbcosim.service.wire" in imported


def _raw_step(address: str, session: str, client: str, frames: list, content: dict) -> dict:
    """Send one step request with these buffer frames on a raw DEALER; the decoded reply."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(address)
    header = {"version": "1.3", "msg_id": 8, "msg_type": "step", "session": session,
              "content": {"client": client, "step": 0, **content}}
    sock.send_multipart([b"", msgpack.packb(header, use_bin_type=True), *frames])
    assert sock.poll(10000)
    reply = sock.recv_multipart()
    sock.close()
    return msgpack.unpackb(reply[1], raw=False)


def test_protocol_doc_frame_of_the_wrong_length_or_a_missing_frame_is_invalid_array():
    """PROTOCOL.md §4: "A frame of the wrong length is an invalid_array ("needs 48 bytes, got
    40"), an index without a frame too"; the session stays where it was."""
    with running_server() as server, Client(server.address, timeout=10) as c:
        c.create_session(text=TOY_TWO_POINTS)
        c.attach(["a"])
        short = _raw_step(server.address, c.session, c.client_id, [bytes(40)],
                          {"wrench": {"dtype": "<f8", "shape": [1, 6], "frame": 0}})
        missing = _raw_step(server.address, c.session, c.client_id, [bytes(48)],
                            {"wrench": {"dtype": "<f8", "shape": [1, 6], "frame": 1}})
        assert c.outputs()["step"] == 0
    assert short["error"]["code"] == "invalid_array"
    assert "needs 48 bytes, got 40" in short["error"]["message"]
    assert missing["error"]["code"] == "invalid_array"
    assert "frame 1 does not exist; the message has 1 buffer frame(s)" in \
        missing["error"]["message"]
