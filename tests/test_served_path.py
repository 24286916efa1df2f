"""The session worker's C step path (rbcosim.service.served_path over _core.served_step /
_core.served_loop): for the same session and the same requests it gives the reply bytes, the
errors and the session state (results, saved state) of the Python path (`stepping`), and the
worker really takes it."""

from __future__ import annotations

import itertools
import threading
import warnings
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from rbcosim import _core
from rbcosim.service import requests, worker_process
from rbcosim.service.core import Service
from rbcosim.service.served_path import ServedPath

ROOT = Path(__file__).resolve().parents[1] / "scenarios"


@pytest.fixture(autouse=True)
def same_ids(monkeypatch):
    """Both services name their session and client alike (the replies are compared bytewise)."""
    monkeypatch.setattr("secrets.token_hex", lambda n: "0" * (2 * n))
    warnings.simplefilter("ignore")  # (on_violation = "warn" in a few requests below)


def header(msg_type: str, content: dict, msg_id="m", session="s-000000000000") -> bytes:
    return msgpack.packb({"version": "1.3", "msg_id": msg_id, "msg_type": msg_type,
                          "session": session, "content": content}, use_bin_type=True)


def descriptor(a) -> dict:
    a = np.ascontiguousarray(a, dtype="<f8")
    return {"dtype": "<f8", "shape": list(a.shape), "data": a.tobytes()}


class Pair:
    """One Python-path service and one C-first service fed the same request bytes."""

    def __init__(self, scenario: str, motions=False, **create) -> None:
        self.py, self.c = Service(max_sessions=1), Service(max_sessions=1)
        self.fast = ServedPath()
        self.taken = 0
        self.ids = itertools.count(1)
        content = {"scenario": str(ROOT / scenario), **create}
        self.send(header("create_session", content, msg_id="cs", session=None), c_path=False)
        s = self.session(self.py)
        attach = {"points": list(s.points), "joints": list(s.joints), "motions": motions}
        reply = self.send(header("attach", attach), c_path=False)
        self.client = msgpack.unpackb(reply, raw=False)["content"]["client"]

    @staticmethod
    def session(service: Service):
        (s,) = service.sessions.values()
        return s

    def send(self, frame: bytes, c_path=True) -> bytes:
        """The Python path's reply bytes, after checking the C-first service's are the same."""
        first = next(self.ids)
        requests.number_replies_from(first)
        want = python_reply(self.py, frame)
        requests.number_replies_from(first)
        got = None
        if c_path:
            session = self.fast.enter(self.c)
            if session is not None:
                try:
                    got = _core.served_step(frame, session)
                finally:
                    self.fast.leave()
                self.taken += got is not None
        if got is None:
            got = python_reply(self.c, frame)
        assert got == want
        return want

    def step_content(self, k: int, m: int = 1, energy=True, scale=1.0) -> dict:
        """Step k's inputs: each joint's report the rigid side's point outputs now (gaps 0),
        a wrench polynomial of m rows (m = 0: a held wrench)."""
        s = self.session(self.py)
        outs = s.rigid.point_outputs_array()
        rows = [s.points.index(s.rigid.joint_point(j)) for j in s.joints]
        content = {"client": self.client, "step": k}
        if s.joints:
            content["flex_kinematics"] = descriptor(outs[rows])
            if energy:
                content["flex_energy"] = descriptor(0.01 * k * np.arange(1, len(rows) + 1))
        n = len(s.points)
        coefficients = scale * np.sin(np.arange(n * max(m, 1) * 6) + 0.1 * k).reshape(n, -1, 6)
        if m == 0:
            content["wrench"] = descriptor(coefficients[:, 0])
        else:
            content["wrench_polynomial"] = descriptor(coefficients)
        return content

    def step(self, k: int, **kw) -> bytes:
        return self.send(header("step", self.step_content(k, **kw), msg_id=f"k{k}"))

    def same_state(self) -> None:
        """results (history, rows, diagnostics) and the saved state are the same bytes."""
        for msg_type in ("results", "get_state", "outputs"):
            self.send(header(msg_type, {}), c_path=False)
        a, b = self.session(self.py), self.session(self.c)
        assert (a.step, a.reported_step, a.rigid.time) == (b.step, b.reported_step, b.rigid.time)
        assert repr(a.rigid.diagnostics()) == repr(b.rigid.diagnostics())  # (NaN after a failure)


def python_reply(service: Service, frame: bytes) -> bytes:
    """The reply of the Python path (create_session: through the socket loop's route)."""
    if frame.startswith(b"\x85\xa7version\xa31.3\xa6msg_id\xa2cs"):  # (create_session, below)
        (_, reply), = worker_process._handle(service, [b"id", b"d", frame])
    else:
        (_, reply), = worker_process._handle_direct(service, [b"id", b"", frame], None)
    return b"".join(bytes(f) for f in worker_process.encode(reply))


@pytest.mark.parametrize("scenario, create, motions, expect_c", [
    ("rigid_flex_pendulum.toml", {"output_every": 4}, True, 30),   # one point, one joint
    ("two_beams.toml", {"output_every": 1}, False, 0),              # a row at every step
    ("two_beams.toml", {"output_every": 3, "snapshot_every": 5}, False, 21),
    ("flexible_slider_crank.toml", {"output_every": 2}, True, 20),  # two points and joints
])
def test_c_path_gives_the_python_paths_replies_and_state(scenario, create, motions, expect_c):
    pair = Pair(scenario, motions, **create)
    for k in range(40):
        pair.step(k, m=k % 4, energy=k % 3 != 0)
    assert pair.taken == expect_c  # every step but the row and snapshot steps
    pair.same_state()
    s = pair.session(pair.c)
    assert s.history.n == 41 and s.step == 40


def test_restore_then_c_steps_as_python():
    pair = Pair("rigid_flex_pendulum.toml", output_every=7, snapshot_every=10)
    for k in range(23):
        pair.step(k, m=2)
    pair.send(header("restore", {"name": "auto"}), c_path=False)  # back to step 20
    for k in range(20, 30):
        pair.step(k, m=3)
    assert pair.taken > 20
    pair.same_state()


def unusual_requests(pair: Pair, k: int):
    """(what, content or frame) of requests the C path leaves to Python at step k."""
    good = pair.step_content(k, m=2)
    nan_wrench = dict(good, wrench_polynomial=descriptor(np.full((1, 2, 6), np.nan)))
    bad_shape = dict(good, flex_kinematics=descriptor(np.zeros((1, 12))))
    return [
        ("stale", dict(good, step=k - 1)),
        ("ahead", dict(good, step=k + 1)),
        ("client", dict(good, client="c-nobody")),
        ("non-finite", nan_wrench),
        ("shape", bad_shape),
        ("both wrenches", dict(good, wrench=descriptor(np.zeros((1, 6))))),
        ("no wrench", {key: v for key, v in good.items() if key != "wrench_polynomial"}),
        ("energy only", {key: v for key, v in good.items() if key != "flex_kinematics"}),
        ("gap over tolerance", dict(good, flex_kinematics=descriptor(np.ones((1, 13))))),
        ("diverges", pair.step_content(k, m=1, scale=1e300)),
        ("long msg_id", header("step", good, msg_id="x" * 300)),
        ("session", header("step", good, session="s-other")),
        ("float step", dict(good, step=float(k))),
        ("jacobian", dict(good, interface_jacobian=descriptor(np.zeros((1, 2, 6, 6))))),
        ("at end", dict(good, flex_kinematics_at="end")),
        ("extra envelope", msgpack.packb({"version": "1.3", "msg_id": "e", "msg_type": "step",
                                          "session": "s-000000000000", "content": good,
                                          "x": 1})),
        ("trailing bytes", header("step", good, msg_id="t") + b"\xc0"),
        ("msg_id not UTF-8", header("step", good, msg_id="ab").replace(b"\xa2ab", b"\xa2\xff\xfe")),
        ("msg_id UTF-8", header("step", good, msg_id="\u00e9t\u00e9")),
        ("version 2", msgpack.packb({"version": "2.0", "msg_id": "v", "msg_type": "step",
                                     "session": "s-000000000000", "content": good})),
    ]


def test_unusual_requests_get_the_python_paths_reply_and_change_nothing():
    pair = Pair("rigid_flex_pendulum.toml", output_every=50)
    k = 0
    for k in range(3):
        pair.step(k)
    taken = pair.taken
    codes = {}
    for what, request in unusual_requests(pair, 3):
        frame = request if isinstance(request, bytes) else header("step", request, msg_id=what)
        reply = msgpack.unpackb(pair.send(frame), raw=False)
        codes[what] = reply.get("error", {}).get("code", reply["status"])
        if reply["status"] == "ok" or what == "diverges":  # (a step taken, or the session failed)
            pair.same_state()
            pair = Pair("rigid_flex_pendulum.toml", output_every=50)
            for k in range(3):
                pair.step(k)
        assert pair.taken == taken or reply["status"] == "ok"
        taken = pair.taken
    assert codes == {
        "stale": "stale_step", "ahead": "step_out_of_order", "client": "unknown_client",
        "non-finite": "non_finite", "shape": "invalid_array", "both wrenches": "invalid_argument",
        "no wrench": "invalid_argument", "energy only": "invalid_argument",
        "gap over tolerance": "ok", "diverges": "simulation_error", "long msg_id": "bad_message",
        "session": "unknown_session", "float step": "invalid_argument", "jacobian": "ok",
        "at end": "ok", "extra envelope": "ok", "trailing bytes": "bad_message",
        "msg_id not UTF-8": "bad_message", "msg_id UTF-8": "ok",
        "version 2": "incompatible_version"}
    pair.step(3)  # and the C path goes on from where it was
    assert pair.taken == taken + 1
    pair.same_state()


def test_history_full_goes_to_python_which_grows_it():
    pair = Pair("rigid_flex_pendulum.toml", output_every=1000)
    for service in (pair.py, pair.c):
        h = pair.session(service).history
        h.time, h.kin, h.gaps = h.time[:4].copy(), h.kin[:4].copy(), h.gaps[:4].copy()
    for k in range(10):
        pair.step(k)
    assert pair.taken == 10 - 3  # Python: the row of step 0, and the full history at 3 and 7
    assert pair.session(pair.c).history.capacity == 16
    pair.same_state()


# --- the worker's wait: the C loop over real sockets --------------------------------------------


FREE_BODY = """
[bodies.box]
mass = 2.0
inertia = [0.1, 0.1, 0.1]
position = [0.0, 0.0, 0.0]
[interface_points.p0]
body = "box"
position = [0.1, 0.0, 0.0]
[flex_bodies.beam]
kind = "beam"
attachment = "floating"
length = 0.5
youngs_modulus = 2.1e11
density = 7850.0
section = "square"
width = 0.01
elements = 2
modes = 1
planar = true
[couplings.p0]
point = "p0"
flex_body = "beam"
tolerances = { position = 1e30, rotation = 1e30, velocity = 1e30, angular_velocity = 1e30 }
[cosim]
macro_step = 1e-3
[solver]
integrator = "rk4"
t_end = 10.0
"""


def worker_sockets(tmp_path, service, rcvhwm=1000):
    """The worker's direct ROUTER and server DEALER, a client DEALER on the direct one, and
    the worker's `_Wait` over them (its status file and outbox)."""
    ctx = zmq.Context.instance()
    direct, server, client, other = (ctx.socket(t) for t in (zmq.ROUTER, zmq.DEALER,
                                                               zmq.DEALER, zmq.ROUTER))
    name = tmp_path.name
    outbox = worker_process.Outbox(direct, 1 << 20, 100)  # (its pipe bounds: before connects)
    direct.bind(f"inproc://direct-{name}")
    other.bind(f"inproc://server-{name}")
    server.setsockopt(zmq.IDENTITY, b"w")
    server.connect(f"inproc://server-{name}")
    client.setsockopt(zmq.RCVHWM, rcvhwm)
    client.connect(f"inproc://direct-{name}")
    status = worker_process.WorkerStatus(str(tmp_path / "status"))
    status.create()
    settings = worker_process.WorkerSettings("", b"w", {}, None, "", session_idle=1.0,
                                             request_timeout=None)  # (no wait forever)
    poller = zmq.Poller()
    poller.register(direct, zmq.POLLIN)
    poller.register(server, zmq.POLLIN)
    wait = worker_process._Wait(poller, direct, server, settings, status, outbox, service)
    return wait, (direct, server, client, other), status, outbox


def serve_once(wait, service, status, outbox, last):
    """One turn of the worker's loop (run_worker's): a request, the C path, or a wait."""
    source, frames, last = wait.next(last)
    if source is wait.direct_sock:
        frames = frames or wait.direct_sock.recv_multipart()
        replies = worker_process._handle_direct(service, frames, None, status)
    elif source is wait.sock:
        replies = worker_process._handle(service, wait.sock.recv_multipart(), None, status)
    else:
        replies = []
    for peer, reply in replies:
        worker_process._send(wait.sock, outbox, peer, reply)
    if outbox.pending:
        outbox.flush()
    return source, last


def test_the_worker_takes_the_c_path(tmp_path):
    """The worker's own wait (`_Wait`) serves steps on its direct ROUTER socket by the C loop;
    a request it leaves to Python comes back as frames. Fails when the C path is off
    (RBCOSIM_C_STEP_PATH=0) or broken."""
    pair = Pair("rigid_flex_pendulum.toml", output_every=10)
    service = pair.c
    wait, sockets, status, outbox = worker_sockets(tmp_path, service)
    assert wait.fast is not None, "the worker's C step path is off (RBCOSIM_C_STEP_PATH=0)"
    client, other = sockets[2], sockets[3]
    replies = []

    def flexible_side():
        for k in range(25):
            client.send_multipart([b"", header("step", pair.step_content(k), msg_id=f"k{k}")])
            replies.append(client.recv_multipart()[1])
            if k == 14:  # a heartbeat through the server: the next step is Python's
                other.send_multipart([b"w", b"c", b"d", header("heartbeat", {})])
                assert other.recv_multipart()[1] == b"reply"
        client.send_multipart([b"", header("heartbeat", {})])
        replies.append(client.recv_multipart()[1])

    pair.session = lambda svc: Pair.session(service)  # (step_content reads the served session)
    thread = threading.Thread(target=flexible_side)
    thread.start()
    last, handled = 0.0, []
    while len(replies) < 26:
        source, last = serve_once(wait, service, status, outbox, last)
        if source is wait.direct_sock:
            handled.append(service.sessions and Pair.session(service).step)
    thread.join(10)
    assert wait.fast.steps == 25 - 4  # all but the row steps 0, 10, 20 and step 15
    assert handled == [1, 11, 16, 21, 25]  # (the session's step after each: heartbeat's 25)
    assert [msgpack.unpackb(r, raw=False)["content"]["step"] for r in replies[:25]] == \
        list(range(1, 26))
    assert status.read()[1:] == (25.0, Pair.session(service).rigid.time)
    for s in sockets:
        s.close(0)


def test_mutated_requests_get_the_python_paths_replies():
    """Step requests with random bytes changed, inserted or cut (a fixed seed): whatever the C
    path reads of them, the replies and the state are the Python path's."""
    rng = np.random.default_rng(26)
    pair = Pair("flexible_slider_crank.toml", output_every=1000)
    k, statuses, taken = 0, set(), 0
    for i in range(400):
        frame = bytearray(header("step", pair.step_content(k, m=1 + i % 3), msg_id=f"f{i}"))
        at = int(rng.integers(len(frame)))
        op = i % 4
        if op == 0:
            frame[at] ^= 1 << int(rng.integers(8))
        elif op == 1:
            frame[at] = int(rng.integers(256))
        elif op == 2:
            frame.insert(int(rng.integers(len(frame) + 1)), int(rng.integers(256)))
        else:
            del frame[at:]
        reply = msgpack.unpackb(pair.send(bytes(frame)), raw=False)
        code = reply.get("error", {}).get("code", reply["status"])
        statuses.add(code)
        if code == "ok":
            k = reply["content"]["step"]
        elif code == "simulation_error":  # (a value's bits made the step diverge): a new session
            pair.same_state()
            taken += pair.taken
            pair, k = Pair("flexible_slider_crank.toml", output_every=1000), 0
    assert taken + pair.taken > 100  # many mutations leave a valid request (a value's bits)
    assert {"bad_message", "invalid_array", "simulation_error", "ok"} <= statuses
    pair.same_state()


def test_a_reply_zeromq_does_not_take_waits_in_the_outbox(tmp_path):
    """Requests sent back to back to a client that reads only later: the C path's replies that
    ZeroMQ's pipe does not take go to the outbox (the Python path then), in order."""
    (tmp_path / "free.toml").write_text(FREE_BODY)
    pair = Pair(str(tmp_path / "free.toml"), output_every=1000)
    service = pair.c
    wait, sockets, status, outbox = worker_sockets(tmp_path, service, rcvhwm=1)
    client = sockets[2]
    ones = {"flex_kinematics": descriptor(np.ones((1, 13))), "wrench": descriptor(np.ones((1, 6)))}
    for k in range(12):
        client.send_multipart([b"", header("step", {"client": pair.client, "step": k, **ones},
                                           msg_id=f"k{k}")])
    last, sources = 0.0, []
    while Pair.session(service).step < 12:
        source, last = serve_once(wait, service, status, outbox, last)
        sources.append(source)
    replies = []
    while len(replies) < 12:
        if client.poll(0):
            replies.append(msgpack.unpackb(client.recv_multipart()[1], raw=False))
        elif outbox.pending:
            outbox.flush()
    assert [r["content"]["step"] for r in replies] == list(range(1, 13))
    assert [r["parent_id"] for r in replies] == [f"k{k}" for k in range(12)]
    assert worker_process.REPLIED in sources and outbox.dropped == 0
    assert wait.fast.steps >= 1
    for s in sockets:
        s.close(0)


def test_a_request_of_many_frames_reaches_python_whole(tmp_path):
    """A step whose arrays come as buffer frames, with more parts than the C path keeps: it
    hands all of them to Python, which answers (arrays as frames too)."""
    (tmp_path / "free.toml").write_text(FREE_BODY)
    pair = Pair(str(tmp_path / "free.toml"), output_every=1000)
    service = pair.c
    wait, sockets, status, outbox = worker_sockets(tmp_path, service)
    client = sockets[2]
    arrays = {"flex_kinematics": np.ones((1, 13)), "wrench": np.ones((1, 6))}
    for k in range(3):
        content = {"client": pair.client, "step": k}
        extra = [bytes(8 * i) for i in range(4)]  # (unused buffer frames, first)
        for i, (name, a) in enumerate(arrays.items()):
            content[name] = {"dtype": "<f8", "shape": list(a.shape), "frame": len(extra) + i}
        client.send_multipart([b"", header("step", content, msg_id=f"k{k}"), *extra,
                               *(a.tobytes() for a in arrays.values())])
        last = 0.0
        while not client.poll(0):
            _, last = serve_once(wait, service, status, outbox, last)
        reply = client.recv_multipart()
        head = msgpack.unpackb(reply[1], raw=False)
        assert (head["status"], head["content"]["step"], len(reply)) == ("ok", k + 1, 4)
        kin = np.frombuffer(reply[2], "<f8")
        np.testing.assert_array_equal(kin, Pair.session(service).rigid.point_outputs_array()[0])
    assert wait.fast.steps == 0
    for s in sockets:
        s.close(0)
