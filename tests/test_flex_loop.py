"""The flexible solver's macro-step loop in the C core (rbcosim._core.flex_loop): its step
requests are the Python encoder's bytes, and whatever reply it does not take (an error, a wrong
status or step, a truncated header, an extra field, non-finite motions), a timeout, a request
ZeroMQ does not take and a signal end as the Python client ends them, with the same errors.
`rbcosim cosim` == `rbcosim run` bit for bit through the loop: tests/test_distributed_*.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import zmq

from rbcosim import PROTOCOL_VERSION, _core
from rbcosim.client import Client, ServiceError, ServiceTimeout
from rbcosim.distributed.flex_solver import _Side, endpoints_for
from rbcosim.errors import SimulationError
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.scenario.loader import load_scenario
from rbcosim.service.errors import ProtocolError
from rbcosim.service.wire import Limits, RequestEncoder, decode, decode_reply, encode

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = ROOT / "scenarios" / "rigid_flex_pendulum.toml"
H = 2.5e-4
rng = np.random.default_rng(26)


# --- the request's bytes ------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("prefix,session,client", [
    ("py12-ab-", "s-a15f09dc4fc7", "c-644534fe0edf"),
    ("p" * 40 + "-", "s" * 300, "c"),  # a str 8 msg_id, a str 16 session
])
def test_c_request_is_the_python_encoders_bytes(n, prefix, session, client):
    encoder = RequestEncoder(PROTOCOL_VERSION)
    pieces = encoder.step_pieces(prefix, session, client, n)
    steps = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**53]
    ids = [1, 9, 10, 99, 12345, 2**40]
    for i, k in enumerate(steps):
        m = 1 + i % 4
        kin = rng.normal(size=(n, 13)) * 10.0 ** rng.integers(-300, 300, size=(n, 13))
        kin[0, :3] = (-0.0, 5e-324, np.inf)  # a negative zero, a subnormal, an infinity
        energy = rng.normal(size=n)
        poly = rng.normal(size=(n, m, 6)) * 1e3
        msg_id = ids[i % len(ids)]
        want = encoder.encode(f"{prefix}{msg_id}", "step", session, {
            "client": client, "step": k, "flex_kinematics": kin, "flex_energy": energy,
            "wrench_polynomial": poly})
        assert len(want) == 1
        assert _core.flex_request(pieces, msg_id, k, kin, energy, poly) == bytes(want[0])


# --- a flexible side and a server under the test's control ---------------------------------

ROWS = np.zeros((1, 19))  # the rigid point's motion: at rest
ROWS[0, :7] = (0.25, 0.0, -0.43, 1.0, 0.0, 0.0, 0.0)


SCHEMES = ["gauss_seidel_flex_first", "jacobi", "gauss_seidel_rigid_first"]


def _side(scheme: str = SCHEMES[0]) -> tuple[_Side, np.ndarray]:
    """The pendulum's flexible side (coupled by `scheme`), its body placed at ROWS at t = 0;
    and ROWS."""
    scenario = load_scenario(PENDULUM, [f'cosim.scheme="{scheme}"'])
    side = _Side(endpoints_for(scenario, ["clamp"]))
    for ep, ms in zip(side.endpoints, side.motions(ROWS, 0.0)):
        ep.initialize(0.0, ms)
    return side, ROWS


def _reply(msg: dict, rows: np.ndarray, use_frames: bool = False, **changes) -> list[bytes]:
    """The server's ok reply to a step request (its own encoder; use_frames: arrays in buffer
    frames): step + 1, motions `rows`; `changes` replace envelope fields, or content fields
    when named content_*."""
    step = msg["content"]["step"]
    content = {"step": step + 1, "time": (step + 1) * H, "kinematics": rows[:, :13],
               "gaps": np.zeros((1, 4)), "motions": rows}
    reply = {"version": PROTOCOL_VERSION, "msg_id": f"r-{step}", "msg_type": "step_reply",
             "session": msg["session"], "parent_id": msg["msg_id"], "status": "ok"}
    for key, value in changes.items():
        if key.startswith("content_"):
            content[key[len("content_"):]] = value
        else:
            reply[key] = value
    reply["content"] = content
    return encode(reply, use_frames)


class FakeServer:
    """A ROUTER answering each step request with answer(msg, n): the messages to send back
    (lists of frames; none: no reply); n counts the requests. Records the requests."""

    def __init__(self, answer):
        self.context = zmq.Context()
        self.router = self.context.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.bind("tcp://127.0.0.1:0")
        self.address = self.router.getsockopt_string(zmq.LAST_ENDPOINT)
        self.requests: list[dict] = []
        self.answer = answer
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self.router.poll(20):
                continue
            peer, _, *frames = self.router.recv_multipart()
            msg = decode(frames, Limits())
            self.requests.append(msg)
            for out in self.answer(msg, len(self.requests)):
                self.router.send_multipart([peer, b"", *out])

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.router.close(0)
        self.context.term()


def _client(address: str, timeout: float | None = 30.0) -> Client:
    client = Client(address, timeout=timeout)
    client.session, client.client_id = "s-1", "c-1"
    client.points, client.joints = ("tip",), ("clamp",)
    return client


def _run(answer, stop: int = 6, timeout: float | None = 30.0, scheme: str = SCHEMES[0],
         on_start=None):
    """side.advance from step 0 towards `stop` against a FakeServer answering `answer`, until
    it gets there: (the outcome (step, time) or the exception, the requests seen, the
    server's address). on_start: called as the stepping starts."""
    side, rows = _side(scheme)
    server = FakeServer(answer)
    client = _client(server.address, timeout)
    k, t, m = 0, 0.0, rows
    try:
        if on_start is not None:
            on_start()
        while k < stop:
            k, t, m = side.advance(client, k, t, m, stop)
        outcome = (k, t)
    except BaseException as exc:  # noqa: BLE001 (the outcome under test)
        outcome = exc
    finally:
        client.close_socket()
        server.close()
    return outcome, server.requests, server.address


@pytest.mark.parametrize("use_frames", [False, True])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_loop_takes_ok_replies_and_sends_each_step_once(monkeypatch, scheme, use_frames):
    """Every step in C: Python's step and reply reading are never called."""
    def python_path(*args, **kwargs):
        raise AssertionError("a step went through Python")

    monkeypatch.setattr(_Side, "step", python_path)
    monkeypatch.setattr(Client, "finish_step", python_path)
    rows = ROWS
    outcome, requests, _ = _run(lambda msg, n: [_reply(msg, rows, use_frames)], scheme=scheme)
    assert outcome == (6, 6 * H)
    assert [r["content"]["step"] for r in requests] == list(range(6))
    assert [r["msg_id"] for r in requests] == [f"{requests[0]['msg_id'][:-1]}{i}"
                                               for i in range(1, 7)]


def _bad_at(n_bad: int, rows: np.ndarray, bad):
    """Ok replies, then at request n_bad the frames bad(msg)."""
    return lambda msg, n: [bad(msg) if n == n_bad else _reply(msg, rows)]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_error_reply_raises_its_code_and_message(scheme):
    rows = ROWS
    error = {"code": "stale_step", "message": "step 2 was already taken"}
    outcome, _, _ = _run(_bad_at(3, rows, lambda msg: _reply(msg, rows, status="error",
                                                            error=error)), scheme=scheme)
    assert isinstance(outcome, ServiceError)
    assert (outcome.code, outcome.message) == ("stale_step", "step 2 was already taken")
    assert str(outcome) == "stale_step: step 2 was already taken"


def test_a_reply_with_another_status_is_an_unknown_error():
    rows = ROWS
    outcome, _, _ = _run(_bad_at(2, rows, lambda msg: _reply(msg, rows, status="fine")))
    assert isinstance(outcome, ServiceError) and outcome.code == "unknown"


def test_a_truncated_header_is_the_python_decoders_error():
    rows = ROWS
    cut = lambda msg: [_reply(msg, rows)[0][:-7]]
    outcome, _, _ = _run(_bad_at(4, rows, cut))
    with pytest.raises(ProtocolError) as want:
        decode_reply(cut({"content": {"step": 3}, "session": "s-1", "msg_id": "x"}))
    assert isinstance(outcome, ProtocolError)
    assert (outcome.code, outcome.message) == (want.value.code, want.value.message)


def test_a_truncated_buffer_frame_is_the_python_decoders_error():
    rows = ROWS

    def cut(msg):
        frames = _reply(msg, rows, use_frames=True)
        return [*frames[:-1], bytes(frames[-1])[:-8]]  # the motions' frame one value short

    outcome, _, _ = _run(_bad_at(3, rows, cut))
    with pytest.raises(ValueError) as want:
        decode_reply(cut({"content": {"step": 2}, "session": "s-1", "msg_id": "x"}))
    assert type(outcome) is type(want.value) and str(outcome) == str(want.value)
    assert "cannot reshape array of size 18 into shape (1,19)" in str(outcome)


def test_a_reply_of_another_step_is_taken_as_python_takes_it():
    """The Python client takes the step a reply names (the loop hands the reply over); the
    body, a step behind it, then refuses the next step with its message."""
    rows = ROWS
    jump = lambda msg: _reply(msg, rows, content_step=4, content_time=4 * H)
    outcome, requests, _ = _run(_bad_at(2, rows, jump))
    assert [r["content"]["step"] for r in requests] == [0, 1]
    assert isinstance(outcome, SimulationError)
    assert str(outcome) == (f"step: time {4 * H!r} does not match the flexible body's time "
                            f"{np.float64(2 * H)!r}")


def test_a_reply_with_a_field_it_does_not_know_is_taken_by_python():
    rows = ROWS
    extra = lambda msg: _reply(msg, rows, content_note="hello")
    outcome, requests, _ = _run(_bad_at(3, rows, extra))
    assert outcome == (6, 6 * H) and len(requests) == 6


def test_a_late_reply_to_another_request_is_dropped():
    rows = ROWS

    def answer(msg, n):
        good = _reply(msg, rows)
        return [_reply(msg, rows, parent_id="py1-0-1"), good] if n == 2 else [good]

    outcome, requests, _ = _run(answer, stop=4)
    assert outcome == (4, 4 * H) and len(requests) == 4


@pytest.mark.parametrize("scheme", SCHEMES)
def test_non_finite_motions_are_refused_with_the_motions_message(scheme):
    rows = ROWS
    bad_rows = rows.copy()
    bad_rows[0, 8] = np.nan
    outcome, requests, _ = _run(_bad_at(2, rows, lambda msg: _reply(msg, bad_rows)),
                                scheme=scheme)
    with pytest.raises(ValueError) as want:
        InterfaceMotion.from_array(bad_rows[0], 2 * H)
    assert isinstance(outcome, ValueError) and str(outcome) == str(want.value)
    assert "velocity: contains non-finite values" in str(outcome)
    assert len(requests) == 2  # nothing sent from the non-finite motions


@pytest.mark.parametrize("scheme", SCHEMES)
def test_no_reply_within_the_timeout_raises_service_timeout(scheme):
    rows = ROWS
    outcome, requests, address = _run(lambda msg, n: [] if n == 3 else [_reply(msg, rows)],
                                      timeout=0.2, scheme=scheme)
    assert isinstance(outcome, ServiceTimeout)
    assert str(outcome) == f"no reply to {requests[2]['msg_id']} from {address} within 0.2 s"


def test_a_request_zeromq_does_not_take_times_out_as_send_does():
    """The send queue full (no server reads): the loop hands the request to the client's
    send, which waits its timeout and names why."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    side, rows = _side()
    client = _client(f"tcp://127.0.0.1:{port}", timeout=0.05)
    try:
        for _ in range(100_000):  # fill ZeroMQ's queue (SNDHWM 1000)
            client.socket.send(b"", zmq.NOBLOCK)
    except zmq.Again:
        pass
    try:
        with pytest.raises(ServiceTimeout) as caught:
            side.advance(client, 0, 0.0, rows, 5)
    finally:
        client.close_socket()
    assert str(caught.value) == (f"cannot send step to tcp://127.0.0.1:{port} within 0.05 s: "
                                 "no connection takes it (no server, a refused CURVE key, or "
                                 "1000 requests unread)")


def test_a_signal_while_waiting_for_the_reply_reaches_python():
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        outcome, _, _ = _run(lambda msg, n: [], timeout=None, on_start=timer.start)
    finally:
        timer.cancel()
    assert isinstance(outcome, KeyboardInterrupt)


def test_without_a_loaded_libzmq_the_loop_says_so():
    """The core finds libzmq at run time, in the process's loaded objects: a process that has
    not imported zmq gets a sentence, not a crash."""
    code = ("import sys, numpy as np\n"
            "from rbcosim import _core\n"
            "assert not any('zmq' in m for m in sys.modules)\n"
            "try:\n"
            "    _core.flex_loop(1, 0, 1.0, (b'',) * 9, (), 2, 2, 1e-3, 0, 0.0,"
            " np.zeros((1, 19)), 5, 1)\n"
            "except RuntimeError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out == ("rbcosim's C core cannot use ZeroMQ: no libzmq is loaded in this process "
                   "(import zmq first; pyzmq bundles it)\n")


def test_a_step_whose_range_checks_may_warn_is_undone_and_taken_by_python(monkeypatch):
    """A spin above the body's quiet floor: the loop undoes its step and Python's step runs
    it with the checks; the body ends in the same bits as a side stepped by Python alone."""
    spinning = ROWS.copy()
    spinning[0, 11] = 50.0  # ω_y rad/s: ω² above the spin check's quiet floor
    states, steps_in_python = [], []
    original = _Side.step

    def counted(self, *args):
        steps_in_python.append(self)
        return original(self, *args)

    monkeypatch.setattr(_Side, "step", counted)
    for in_c in (True, False):
        side, _ = _side()
        assert side.endpoints[0].checks.quiet[0] < 50.0**2
        if not in_c:
            side._now = None  # every step by Python's code
        server = FakeServer(lambda msg, n: [_reply(msg, spinning)])
        client = _client(server.address)
        try:
            k, t, m = 0, 0.0, spinning
            while k < 6:
                k, t, m = side.advance(client, k, t, m, 6)
        finally:
            client.close_socket()
            server.close()
        ep = side.endpoints[0]
        states.append((ep.body.get_state(), ep.energy.tobytes(), ep.rigid_input().tobytes()))
        assert steps_in_python.count(side) == 6
    assert states[0] == states[1]


def test_a_run_that_turns_unquiet_sends_what_pythons_steps_send():
    """Quiet steps, then a spin above the quiet floor from the 4th reply on: the loop hands
    that step back before sending anything of it, so the requests (reports, polynomials) and
    the body's end state are those of a side stepped by Python alone."""
    spinning = ROWS.copy()
    spinning[0, 11] = 50.0  # ω_y rad/s: ω² above the spin check's quiet floor
    outcomes = []
    for in_c in (True, False):
        side, _ = _side()
        if not in_c:
            side._now = None  # every step by Python's code
        server = FakeServer(lambda msg, n: [_reply(msg, spinning if n >= 4 else ROWS)])
        client = _client(server.address)
        try:
            k, t, m = 0, 0.0, ROWS
            while k < 8:
                k, t, m = side.advance(client, k, t, m, 8)
        finally:
            client.close_socket()
            server.close()
        sent = [r["content"] for r in server.requests]  # (its arrays as raw bytes)
        outcomes.append((sent, side.endpoints[0].body.get_state()))
    assert [c["step"] for c in outcomes[0][0]] == list(range(8))
    assert outcomes[0] == outcomes[1]


def test_a_signal_while_stepping_reaches_python():
    """A server that always answers: the loop never waits long, and still stops for SIGINT."""
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        outcome, requests, _ = _run(lambda msg, n: [_reply(msg, ROWS)], stop=10**9,
                                    on_start=timer.start)
    finally:
        timer.cancel()
    assert isinstance(outcome, KeyboardInterrupt) and len(requests) > 1


@pytest.mark.parametrize("scheme", SCHEMES)
def test_with_the_real_server_every_step_is_taken_in_c(monkeypatch, scheme):
    """Against rbcosim's own server the loop recognises every step reply: Python's step never
    runs (a change of the reply that the C reader does not know would send every step back
    to Python: slower, and caught here)."""
    from service_helpers import running_server

    from rbcosim.distributed.flex_solver import run_flex_solver
    from rbcosim.service import Service

    def python_path(*args, **kwargs):
        raise AssertionError("a step went through Python")

    monkeypatch.setattr(_Side, "step", python_path)
    monkeypatch.setattr(_Side, "_complete", python_path)
    sets = ["solver.t_end=0.01", f'cosim.scheme="{scheme}"']  # 40 macro steps
    with running_server(Service()) as server, Client(server.address) as client:
        session = client.create_session(PENDULUM, overrides=dict(s.split("=", 1) for s in sets),
                                        wait_for_joints=True)["session"]
        results = run_flex_solver(load_scenario(PENDULUM, sets), ["clamp"], client, session)
        assert client.heartbeat()["step"] == 40
    assert results["beam"].steps == [0, 20, 40]
