"""Property-based fuzzing over a real socket: every bad message gets an error reply, the server
stays up, and a healthy session stepped in between gives the numbers it gives alone."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_helpers import (
    TOY_TWO_POINTS,
    message,
    running_server,
    spring_inputs,
    toy_service,
)

from rbcosim import PROTOCOL_VERSION
from rbcosim.client import Client
from rbcosim.service import Limits

pytestmark = pytest.mark.protocol

MAX_SIZE = 64 * 1024
HEALTHY_STEPS = 60

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(),
    st.text(max_size=20),
    st.binary(max_size=40),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
bad_versions = st.one_of(
    st.sampled_from(["2.0", "0.1", "99.0", "1", "", "x.y", "1.0.0"]),
    st.integers(-(2**63), 2**63),
    st.floats(),
    st.none(),
    st.binary(max_size=4),
)
array_bytes_len = st.integers(0, 200).filter(lambda n: n != 96)


def healthy_reference() -> list[bytes]:
    """Kinematics of the healthy session when it runs alone, in process."""
    svc = toy_service()
    sid = svc.request(message("create_session", text=TOY_TWO_POINTS))["content"]["session"]
    cid = svc.request(message("attach", sid, points=["a", "b"], joints=["a", "b"]))["content"][
        "client"
    ]
    kin = svc.request(message("outputs", sid))["content"]["kinematics"]
    out = []
    for k in range(HEALTHY_STEPS):
        w, f = spring_inputs(kin, k)
        kin = svc.request(message("step", sid, client=cid, step=k, wrench=w, flex_kinematics=f))[
            "content"
        ]["kinematics"]
        out.append(kin.tobytes())
    return out


class Fuzzer:
    def __init__(self, address: str) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(address)
        self.victim = Client(address, timeout=10)
        self.victim.create_session(text=TOY_TWO_POINTS)
        self.victim.attach(["a", "b"], ["a", "b"])

    def exchange(self, frames: list[bytes]) -> dict:
        self.sock.send_multipart([b"", *frames])
        assert self.sock.poll(10000), "the server did not answer"
        reply = self.sock.recv_multipart()
        assert reply[0] == b""
        return msgpack.unpackb(reply[1], raw=False)

    def envelope(self, msg_type: str, content, session=..., version=PROTOCOL_VERSION) -> dict:
        return {
            "version": version,
            "msg_id": "fz",
            "msg_type": msg_type,
            "session": self.victim.session if session is ... else session,
            "content": content,
        }


def kinds(fz: Fuzzer):
    """Strategies of (frames, expected error codes or None for 'any error')."""
    pack = msgpack.packb

    def step(content: dict) -> dict:
        base = {
            "client": fz.victim.client_id,
            "step": 0,
            "wrench": {"dtype": "<f8", "shape": [2, 6], "data": bytes(96)},
            "flex_kinematics": {"dtype": "<f8", "shape": [2, 13], "data": bytes(208)},
        }
        return fz.envelope("step", {**base, **content})

    def nonfinite_array(bad: float, row: int, col: int) -> bytes:
        a = np.zeros((2, 6))
        a[row, col] = bad
        return a.tobytes()

    return st.one_of(
        st.binary(min_size=1, max_size=64).map(lambda b: ([b"\xc1" + b], {"bad_message"})),
        st.integers(1, 40).map(
            lambda n: ([pack(fz.envelope("hello", {"client_name": "x" * 50}))[:n]], {"bad_message"})
        ),
        values.filter(lambda v: not isinstance(v, dict)).map(
            lambda v: ([pack(v)], {"bad_message"})
        ),
        bad_versions.map(
            lambda v: (
                [pack(fz.envelope("hello", {}, version=v))],
                {"bad_message", "incompatible_version"},
            )
        ),
        st.text(max_size=12)
        .filter(
            lambda t: (
                t
                not in {
                    "hello",
                    "create_session",
                    "heartbeat",
                    "attach",
                    "step",
                    "get_state",
                    "set_state",
                    "save",
                    "restore",
                    "outputs",
                    "results",
                    "close",
                    "detach",
                }
            )
        )
        .map(lambda t: ([pack(fz.envelope(t, {}))], {"unknown_msg_type"})),
        st.sampled_from(
            [
                "attach",
                "step",
                "get_state",
                "set_state",
                "save",
                "restore",
                "outputs",
                "results",
                "close",
                "detach",
            ]
        ).flatmap(
            lambda t: values.map(
                lambda v: (
                    [pack(fz.envelope(t, v if isinstance(v, dict) else {}, session="s-unknown"))],
                    {"unknown_session"},
                )
            )
        ),
        st.lists(
            st.text(max_size=5).filter(lambda n: n not in ("a", "b")),
            min_size=1,
            max_size=3,
            unique=True,
        ).map(lambda names: ([pack(fz.envelope("attach", {"points": names}))], {"unknown_name"})),
        st.one_of(st.integers(-(2**63), -1), st.integers(1, 2**64 - 1)).map(
            # indices are 0 ... 2**53; beyond that range they are refused as arguments
            lambda k: ([pack(step({"step": k}))], {"step_out_of_order"} if 0 < k <= 2**53
                       else {"invalid_argument"})
        ),
        values.filter(lambda v: not isinstance(v, int) or isinstance(v, bool)).map(
            lambda v: ([pack(step({"step": v}))], {"invalid_argument"})
        ),
        st.tuples(
            st.sampled_from([math.nan, math.inf, -math.inf]), st.integers(0, 1), st.integers(0, 5)
        ).map(
            lambda t: (
                [
                    pack(
                        step(
                            {
                                "wrench": {
                                    "dtype": "<f8",
                                    "shape": [2, 6],
                                    "data": nonfinite_array(*t),
                                }
                            }
                        )
                    )
                ],
                {"non_finite"},
            )
        ),
        array_bytes_len.map(
            lambda n: (
                [pack(step({"wrench": {"dtype": "<f8", "shape": [2, 6], "data": bytes(n)}}))],
                {"invalid_array"},
            )
        ),
        st.lists(st.integers(0, 20), max_size=3)
        .filter(lambda s: s != [2, 6])
        .map(
            lambda s: (
                [
                    pack(
                        step(
                            {
                                "wrench": {
                                    "dtype": "<f8",
                                    "shape": s,
                                    "data": bytes(8 * math.prod(s)),
                                }
                            }
                        )
                    )
                ],
                {"invalid_array"},
            )
        ),
        values.filter(lambda v: not isinstance(v, (dict, list))).map(
            # nil is a missing field; any other scalar a malformed array
            lambda v: ([pack(step({"wrench": v}))],
                       {"invalid_argument" if v is None else "invalid_array"})
        ),
        st.sampled_from(["<f4", ">f8", "float64", "<i8"]).map(
            lambda d: (
                [pack(step({"wrench": {"dtype": d, "shape": [2, 6], "data": bytes(96)}}))],
                {"invalid_array"},
            )
        ),
        st.integers(1, 8).map(
            lambda n: (
                [pack(step({"wrench": {"dtype": "<f8", "shape": [2, 6], "frame": n}}))],
                {"invalid_array"},
            )
        ),
        st.integers(MAX_SIZE + 1, 2 * MAX_SIZE).map(
            lambda n: ([pack(fz.envelope("hello", {"pad": bytes(n)}))], {"message_too_large"})
        ),
        st.integers(0, 3).map(
            lambda n: (
                [pack(fz.envelope("hello", {}))] + [bytes(MAX_SIZE // 2)] * (n + 2),
                {"message_too_large"},
            )
        ),
    )


@pytest.mark.slow
def test_fuzzed_messages_get_error_replies_and_do_not_disturb_a_healthy_session():
    reference = healthy_reference()
    with running_server(toy_service(limits=Limits(max_message_size=MAX_SIZE))) as server:
        fz = Fuzzer(server.address)
        healthy = Client(server.address, timeout=10)
        healthy.create_session(text=TOY_TWO_POINTS)
        kin = healthy.attach(["a", "b"], ["a", "b"])["kinematics"]
        seen: list[bytes] = []

        def healthy_step():
            nonlocal kin
            if healthy.step_index < HEALTHY_STEPS:
                r = healthy.step(*spring_inputs(kin, healthy.step_index))
                kin = r.kinematics
                seen.append(kin.tobytes())

        @settings(
            max_examples=250,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(st.data())
        def fuzz(data):
            frames, codes = data.draw(kinds(fz))
            reply = fz.exchange(frames)
            assert reply["status"] == "error", (frames[0][:80], reply)
            assert reply["error"]["code"] in codes, (frames[0][:80], reply["error"])
            assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
            healthy_step()

        fuzz()
        while healthy.step_index < HEALTHY_STEPS:
            healthy_step()
        assert seen == reference
        assert fz.victim.outputs()["step"] == 0
        assert healthy.hello()["protocol_version"] == PROTOCOL_VERSION
