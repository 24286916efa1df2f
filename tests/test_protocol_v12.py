"""Protocol 1.2: what a client written from PROTOCOL.md alone must never have to guess —
parent_id on every refusal it can attribute, exact error codes, messages in msgpack terms, the
coupling sent to every attaching client, and a document whose example runs."""

from __future__ import annotations

import re
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq
from service_helpers import TOY_TWO_POINTS, message, running_server, toy_service

from rbcosim import PROTOCOL_VERSION
from rbcosim.scenario.loader import load_scenario
from rbcosim.service.core import Service

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "interfaces" / "PROTOCOL.md"
PYTHON_TYPE_NAMES = re.compile(r"\b(NoneType|list|dict|str|int|float|bytes|tuple|bool)\b")


def _raw_exchange(address: str, header: bytes) -> dict:
    """Send one raw header frame from a DEALER; return the decoded reply header."""
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(address)
    try:
        sock.send_multipart([b"", header])
        assert sock.poll(10_000), "no reply"
        frames = sock.recv_multipart()
        return msgpack.unpackb(frames[1], raw=False)
    finally:
        sock.close()


def test_refused_envelopes_carry_the_requests_parent_id():
    with running_server() as server:
        cases = {
            "incompatible_version": {"version": "2.0", "msg_id": 41, "msg_type": "hello"},
            "bad_message": {"version": "one", "msg_id": "m-42", "msg_type": "hello"},
        }
        for code, header in cases.items():
            reply = _raw_exchange(server.address, msgpack.packb(header))
            assert reply["error"]["code"] == code
            assert reply["parent_id"] == header["msg_id"]
            assert reply["msg_type"] == "hello_reply"
            assert reply["content"] == {}
        # a header that is not a map cannot be attributed: parent_id nil, error_reply
        reply = _raw_exchange(server.address, msgpack.packb([1, 2]))
        assert reply["error"]["code"] == "bad_message" and reply["parent_id"] is None
        assert reply["msg_type"] == "error_reply"
        assert "an array" in reply["error"]["message"]


def test_missing_fields_are_invalid_argument_and_messages_name_no_python_types():
    svc = toy_service()
    (_, created), = svc.handle(message("create_session", text=TOY_TWO_POINTS))
    sid = created["content"]["session"]
    (_, attached), = svc.handle(message("attach", sid, points=["a", "b"], joints=["a", "b"]))
    cid = attached["content"]["client"]
    kin = np.zeros((2, 13))
    refusals = [
        (message("step", sid, client=cid, step=0, flex_kinematics=kin), "invalid_argument",
         "'wrench'"),
        (message("step", sid, client=cid, step=0, wrench=np.zeros((2, 6))), "invalid_argument",
         "'flex_kinematics'"),
        (message("step", sid, client=cid, step=0, wrench=[[1.0] * 6], flex_kinematics=kin),
         "invalid_array", "wrench"),
        (message("step", sid, client=cid, step=0, wrench="six numbers", flex_kinematics=kin),
         "invalid_array", "got a string"),
        (message("attach", sid, points="a"), "invalid_argument", "got a string"),
        (message("step", sid, client=cid, step=[0], wrench=np.zeros((2, 6)),
                 flex_kinematics=kin), "invalid_argument", "got an array"),
        (message("create_session", text=TOY_TWO_POINTS, overrides=[1]), "invalid_argument",
         "got an array"),
        (message("save", sid, name={"a": 1}), "invalid_argument", "got a map"),
        (message("set_state", sid, state=None), "invalid_argument", "'state'"),
    ]
    for msg, code, phrase in refusals:
        (_, reply), = svc.handle(msg)
        assert reply["status"] == "error", msg
        assert reply["error"]["code"] == code, (msg, reply["error"])
        text = reply["error"]["message"]
        assert phrase in text, text
        assert not PYTHON_TYPE_NAMES.search(text), text
        assert reply["content"] == {}
    # none of the refusals moved the session
    (_, hb), = svc.handle(message("heartbeat", sid))
    assert hb["content"]["step"] == 0 and hb["content"]["waiting"] == []


def test_attach_and_create_session_send_the_scenarios_coupling():
    path = ROOT / "scenarios" / "two_mass_oscillator.toml"
    overrides = {"cosim.scheme": '"gauss_seidel_flex_first"', "cosim.extrapolation": "2",
                 "solver.t_end": "0.5"}
    scenario = load_scenario(path, [f"{k}={v}" for k, v in overrides.items()])
    svc = Service()
    (_, created), = svc.handle(message("create_session", scenario=str(path), overrides=overrides))
    sid = created["content"]["session"]
    (_, attached), = svc.handle(message("attach", sid, points=["interface"],
                                        joints=["coupling"], motions=True))
    expected = {
        "scheme": "gauss_seidel_flex_first",
        "extrapolation": 2,
        "micro_steps": scenario.cosim.micro_steps,
        "macro_step": scenario.cosim.macro_step,
        "t_end": 0.5,
        "n_steps": 500,  # 0.5 s / 1e-3 s
        "output_every": scenario.solver.output_every,
        "added_mass": scenario.cosim.added_mass,
    }
    assert attached["content"]["coupling"] == expected
    assert created["content"]["coupling"] == expected
    (_, hello), = svc.handle(message("hello"))
    assert "coupling_info" in hello["content"]["capabilities"]
    # 1.3 (direct endpoints) keeps every 1.2 field; test_protocol_direct replays 1.2 transcripts
    assert hello["content"]["protocol_version"] == PROTOCOL_VERSION == "1.3"


def test_the_documents_full_exchange_runs_as_written():
    """Section 10's create_session and attach, taken from the document's text, work."""
    text = DOC.read_text(encoding="utf-8").split("## 10. A full exchange")[1].split("## 11.")[0]
    scenario = re.search(r'"scenario": "([^"]+)"', text).group(1)
    overrides = dict(re.findall(r'"overrides": \{"([^"]+)": "([^"]+)"\}', text))
    points = re.search(r'"msg_type": "attach".*?"points": \["(\w+)"\], "joints": \["(\w+)"\]',
                       text, re.DOTALL)
    svc = Service()
    (_, created), = svc.handle(message("create_session", scenario=str(ROOT / scenario),
                                       overrides=overrides))
    assert created["status"] == "ok", created
    assert created["content"]["macro_step"] == float(next(iter(overrides.values())))
    sid = created["content"]["session"]
    (_, attached), = svc.handle(message("attach", sid, points=[points.group(1)],
                                        joints=[points.group(2)]))
    assert attached["status"] == "ok", attached
    assert created["content"]["joint_points"] == {points.group(2): points.group(1)}
