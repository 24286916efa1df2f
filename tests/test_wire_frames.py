"""Cheap frames: the Python client sends large arrays as raw little-endian float64 buffer
frames after the header (a macro step's small ones inline), the server answers in kind, and
both sides share one codec (rbcosim.service.wire)."""

from __future__ import annotations

import ast
import struct
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq
from service_helpers import TOY_TWO_POINTS, running_server, spring_inputs

import rbcosim.client
from rbcosim.client import Client
from rbcosim.service.outbox import Outbox

pytestmark = pytest.mark.protocol


def _fake_server(sock: zmq.Socket, seen: list, n: int) -> None:
    """Answer one attach, then record one step request's frames and answer it with buffer
    frames of known values (n points)."""
    for _ in range(2):
        identity, empty, header, *buffers = sock.recv_multipart()
        request = msgpack.unpackb(header, raw=False)
        seen.append((request, buffers))
        if request["msg_type"] == "attach":
            content = {"client": "c1", "step": 0, "kinematics": {
                "dtype": "<f8", "shape": [n, 13], "data": bytes(104 * n)}}
            frames = []
        else:
            kin = struct.pack(f"<{13 * n}d", *range(13 * n))
            gaps = struct.pack("<4d", 0.5, 0.25, 0.125, 1.0)
            content = {"step": 1, "time": 0.01,
                       "kinematics": {"dtype": "<f8", "shape": [n, 13], "frame": 1},
                       "gaps": {"dtype": "<f8", "shape": [1, 4], "frame": 0}}
            frames = [gaps, kin]
        reply = {"version": "1.3", "msg_id": "r", "msg_type": request["msg_type"] + "_reply",
                 "session": request["session"], "parent_id": request["msg_id"],
                 "status": "ok", "content": content}
        sock.send_multipart([identity, empty, msgpack.packb(reply, use_bin_type=True),
                             *frames])


def _step_through_fake_server(n: int, wrench: list, flex: list):
    """(the step request's header, its buffer frames, the client's StepResult) for a client
    of n points and one joint."""
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    seen: list = []
    thread = threading.Thread(target=_fake_server, args=(sock, seen, n), daemon=True)
    thread.start()
    try:
        with Client(f"tcp://127.0.0.1:{port}", timeout=10) as c:
            c.session = "s1"
            c.attach([f"p{i}" for i in range(n)], ["p0"])
            r = c.step(np.reshape(wrench, (n, 6)), flex)
    finally:
        thread.join(10)
        sock.close()
    return seen[1][0], seen[1][1], r


def test_client_sends_large_arrays_as_little_endian_buffer_frames_and_reads_framed_replies():
    n = 1400  # 1400 x 6 doubles: 67,200 bytes, over FRAME_MIN_BYTES
    wrench = [0.5 * i - 7.0 for i in range(6 * n)]
    flex = [0.1 * i for i in range(13)]
    request, buffers, r = _step_through_fake_server(n, wrench, flex)
    w, f = request["content"]["wrench"], request["content"]["flex_kinematics"]
    assert (w["dtype"], w["shape"], f["dtype"], f["shape"]) == ("<f8", [n, 6], "<f8", [1, 13])
    assert sorted([w["frame"], f["frame"]]) == [0, 1] and "data" not in w and "data" not in f
    assert buffers[w["frame"]] == struct.pack(f"<{6 * n}d", *wrench)
    assert buffers[f["frame"]] == struct.pack("<13d", *flex)
    assert r.kinematics.ravel().tolist() == [float(i) for i in range(13 * n)]
    assert r.gaps.tolist() == [[0.5, 0.25, 0.125, 1.0]]


def test_client_sends_a_macro_steps_small_arrays_inline():
    """Below FRAME_MIN_BYTES the arrays travel inline (measured cheaper than one ZeroMQ part
    each), as the same little-endian bytes."""
    wrench = [1.5, -2.0, 3.25, 0.0, 1e-300, -7.0]
    flex = [0.1 * i for i in range(13)]
    request, buffers, _ = _step_through_fake_server(1, wrench, flex)
    assert buffers == []
    assert request["content"]["wrench"] == {"dtype": "<f8", "shape": [1, 6],
                                            "data": struct.pack("<6d", *wrench)}
    assert request["content"]["flex_kinematics"]["data"] == struct.pack("<13d", *flex)


def _raw_request(address: str, header: dict, buffers: list) -> list:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(address)
    sock.send_multipart([b"", msgpack.packb(header, use_bin_type=True), *buffers])
    assert sock.poll(10000)
    frames = sock.recv_multipart()
    sock.close()
    return frames


def test_server_answers_a_framed_step_with_frames_equal_to_the_inline_answer():
    with running_server() as server, Client(server.address, timeout=10) as c:
        c.create_session(text=TOY_TWO_POINTS)
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
        c.save()
        wrench, flex = (a.astype("<f8").tobytes() for a in spring_inputs(kin, 0))
        header = {"version": "1.3", "msg_id": 7, "msg_type": "step", "session": c.session,
                  "content": {"client": c.client_id, "step": 0,
                              "wrench": {"dtype": "<f8", "shape": [2, 6], "frame": 1},
                              "flex_kinematics": {"dtype": "<f8", "shape": [2, 13], "frame": 0}}}
        framed = _raw_request(server.address, header, [flex, wrench])
        c.restore()
        header["content"]["wrench"] = {"dtype": "<f8", "shape": [2, 6], "data": wrench}
        header["content"]["flex_kinematics"] = {"dtype": "<f8", "shape": [2, 13], "data": flex}
        inline = _raw_request(server.address, header, [])
    assert len(inline) == 2  # [empty, header]: arrays inline
    answer = msgpack.unpackb(framed[1], raw=False)["content"]
    expected = msgpack.unpackb(inline[1], raw=False)["content"]
    for key, shape in (("kinematics", [2, 13]), ("gaps", [2, 4])):
        assert answer[key]["shape"] == expected[key]["shape"] == shape
        assert framed[2 + answer[key]["frame"]] == expected[key]["data"]


def _router_and_slow_client():
    """A ROUTER and a DEALER peer that holds one message at a time (it reads late), with
    the DEALER's identity on the ROUTER."""
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
    return router, dealer, identity


def test_a_queued_reply_keeps_the_values_of_when_it_was_sent():
    """The server sends views of its arrays; a reply that must wait for a slow client is
    copied, so a later change of the array does not reach that client."""
    router, dealer, identity = _router_and_slow_client()
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


def test_multipart_replies_reach_a_slow_client_whole_and_in_order():
    """Replies of four frames (delimiter, header, two array views) to a client that reads
    late: each arrives with all its frames, in the order sent; a reply to an identity with no
    peer is counted as dropped and sends nothing."""
    router, dealer, identity = _router_and_slow_client()
    outbox = Outbox(router, 1 << 22, 10_000)
    a, b = np.zeros(300), np.zeros(7)
    for k in range(100):
        a[:], b[:] = k, -k - 1
        outbox.send([identity, b"", f"h{k}".encode(), memoryview(a), memoryview(b)])
    outbox.send([b"nobody", b"", b"lost"])
    assert outbox.pending and outbox.dropped == 1
    got = []
    while len(got) < 100:
        outbox.flush()
        if dealer.poll(10):
            got.append(dealer.recv_multipart())
    assert not dealer.poll(50)
    router.close()
    dealer.close()
    assert got == [[b"", f"h{k}".encode(), np.full(300, float(k)).tobytes(),
                    np.full(7, -k - 1.0).tobytes()] for k in range(100)]


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


def test_the_client_loads_the_codec_without_the_server():
    """rbcosim.service loads its names on first use: `rbcosim flex` imports the client (and
    with it rbcosim.service.wire) without the server's modules."""
    import subprocess
    import sys

    code = ("import sys, rbcosim.client; "
            "print(sorted(m for m in sys.modules if m.startswith('rbcosim.service')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['rbcosim.service', 'rbcosim.service.errors', 'rbcosim.service.wire']"
