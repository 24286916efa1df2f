"""One client attached to several joints (interfaces/PROTOCOL.md, "One client, several joints"),
through the transport-free service and against the schema: every refusal (unknown joint,
duplicate joint, joint held by another client, arrays of the wrong shape) is a clear error
that changes no state, and one message with all the joints' inputs gives the same step as one
client per joint."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from service_helpers import message

from rbcosim.service import Service
from rbcosim.service.wire import Limits, encode, unpack_header

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
TWO_BEAMS = str(ROOT / "scenarios" / "two_beams.toml")
SCHEMA = ROOT / "interfaces" / "protocol.schema.json"
POINTS = ["side", "tip"]  # the reverse of the scenario's order: rows follow the attach
JOINTS = ["clamp_side", "clamp_tip"]


@pytest.fixture(scope="module")
def call():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    svc = Service()

    def wire(msg: dict) -> dict:
        return unpack_header(encode(msg)[0], Limits())

    def _call(msg: dict, *, valid: bool = True) -> list[dict]:
        """valid=False: a request the schema itself refuses (the server must refuse it too)."""
        if valid:
            validator.validate(wire(msg))
        else:
            assert not validator.is_valid(wire(msg))
        replies = svc.handle(msg, None)
        for _, reply in replies:
            validator.validate(wire(reply))
        return [r for _, r in replies]

    return _call


def ok(replies: list[dict]) -> dict:
    assert len(replies) == 1 and replies[0]["status"] == "ok", replies
    return replies[0]["content"]


def refused(replies: list[dict], code: str, *words: str) -> None:
    assert len(replies) == 1 and replies[0]["status"] == "error", replies
    err = replies[0]["error"]
    assert err["code"] == code and all(w in err["message"] for w in words), err


def session(call) -> str:
    return ok(call(message("create_session", scenario=TWO_BEAMS,
                           overrides={"solver.t_end": "0.001"})))["session"]


def state(call, sid: str) -> dict:
    return ok(call(message("heartbeat", sid)))


def test_refused_attachments_take_no_joint(call):
    sid = session(call)
    refused(call(message("attach", sid, points=POINTS, joints=["clamp_side", "clamp_nope"])),
            "unknown_name", "'clamp_nope'", "'clamp_tip'")
    refused(call(message("attach", sid, points=POINTS, joints=["clamp_tip", "clamp_tip"]), valid=False),
            "invalid_argument", "twice")
    assert state(call, sid)["clients"] == []
    holder = ok(call(message("attach", sid, points=["side"], joints=["clamp_side"],
                             name="side solver")))["client"]
    refused(call(message("attach", sid, points=POINTS, joints=JOINTS)),
            "already_attached", holder, "'side solver'", "clamp_side")
    assert state(call, sid)["clients"] == [holder]
    # clamp_tip stayed free: a client takes it, beside the holder of clamp_side
    other = ok(call(message("attach", sid, points=["tip"], joints=["clamp_tip"])))["client"]
    assert state(call, sid)["clients"] == sorted([holder, other])


def test_wrong_shapes_are_refused_and_the_barrier_keeps_what_it_has(call):
    """A client of both joints next to a client of none (it takes part in the barrier): each
    malformed step of the two-joint client is refused at once, the other stays waiting, the
    session stays at step 0; the well-formed one releases both."""
    sid = session(call)
    multi = ok(call(message("attach", sid, points=POINTS, joints=JOINTS, motions=True)))
    assert multi["points"] == POINTS and np.asarray(multi["motions"]).shape == (2, 19)
    idle = ok(call(message("attach", sid)))["client"]
    assert call(message("step", sid, client=idle, step=0)) == []  # held at the barrier
    outputs = ok(call(message("outputs", sid)))
    rigid = np.asarray(outputs["kinematics"])[[outputs["points"].index(p) for p in POINTS]]
    flex = rigid.copy()
    flex[1, 0] += 5e-4  # the tip's node 0.5 mm off in x, the side's exactly on its point
    good = {"client": multi["client"], "step": 0, "wrench": np.zeros((2, 6)),
            "flex_kinematics": flex}
    for key, value, shape in (
        ("wrench", np.zeros((1, 6)), "[2, 6]"),
        ("flex_kinematics", flex[:1], "[2, 13]"),
        ("wrench_polynomial", np.zeros((2, 4, 6)), "[2, m, 6]"),
        ("interface_jacobian", np.zeros((1, 2, 6, 6)), "[2, 2, 6, 6]"),
    ):
        bad = {**good, key: value}
        if key == "wrench_polynomial":
            del bad["wrench"]
        refused(call(message("step", sid, **bad)), "invalid_array", key, shape)
        now = state(call, sid)
        assert now["step"] == 0 and now["waiting"] == [idle]
    replies = call(message("step", sid, msg_id="multi", **good))
    assert len(replies) == 2 and all(r["status"] == "ok" for r in replies)
    mine = next(r["content"] for r in replies if r["parent_id"] == "multi")
    assert mine["step"] == 1 and np.asarray(mine["kinematics"]).shape == (2, 13)
    gaps = np.asarray(mine["gaps"])
    assert gaps.shape == (2, 4)
    # rows in the attach order: the side's node on its point, the tip's 0.5 mm off
    assert gaps[0, 0] == 0.0 and gaps[1, 0] == pytest.approx(5e-4, rel=1e-9)


def test_one_message_for_both_joints_steps_like_one_client_per_joint(call):
    """The same inputs, once from one two-joint client and once from two one-joint clients,
    in two sessions of one scenario stepped in turn (a barrier half full in one session holds
    nothing of the other): the same kinematics, gaps and motions, bit for bit."""
    rng = np.random.default_rng(7)
    wrench = rng.normal(size=(2, 2, 6))
    offsets = 1e-4 * rng.normal(size=(2, 13))
    offsets[:, 3:7] = 0.0
    multi_sid, single_sid = session(call), session(call)
    multi = ok(call(message("attach", multi_sid, points=POINTS, joints=JOINTS,
                            motions=True)))["client"]
    singles = [ok(call(message("attach", single_sid, points=[p], joints=[j],
                               motions=True)))["client"] for p, j in zip(POINTS, JOINTS)]
    outputs = ok(call(message("outputs", multi_sid)))
    flex = np.asarray(outputs["kinematics"])[[outputs["points"].index(p) for p in POINTS]]
    flex = flex + offsets
    for k in range(3):
        assert call(message("step", single_sid, msg_id=JOINTS[0], client=singles[0], step=k,
                            wrench_polynomial=wrench[:1], flex_kinematics=flex[:1])) == []
        a = ok(call(message("step", multi_sid, client=multi, step=k, wrench_polynomial=wrench,
                            flex_kinematics=flex)))
        b = {r["parent_id"]: r["content"] for r in call(
            message("step", single_sid, msg_id=JOINTS[1], client=singles[1], step=k,
                    wrench_polynomial=wrench[1:], flex_kinematics=flex[1:]))}
        assert sorted(b) == sorted(JOINTS)
        for key in ("kinematics", "gaps", "motions"):
            stacked = np.vstack([np.asarray(b[j][key]) for j in JOINTS])
            assert np.array_equal(stacked, np.asarray(a[key])), key


def test_a_zero_added_mass_row_is_the_same_as_no_added_mass(call):
    """One client hands [M, 0] over for (side, tip); in a second session a client of the side
    hands M over and a client of the tip hands nothing: the same step, bit for bit."""
    mass = np.diag([0.3, 0.3, 0.3, 2e-3, 2e-3, 1e-3])
    mass[0, 4] = mass[4, 0] = 0.01
    wrench = np.array([[1.0, 0.0, -2.0, 0.0, 0.1, 0.0], [0.0, 0.5, -1.0, 0.02, 0.0, 0.0]])
    multi_sid, single_sid = session(call), session(call)
    multi = ok(call(message("attach", multi_sid, points=POINTS, motions=True)))["client"]
    side, tip = (ok(call(message("attach", single_sid, points=[p], motions=True)))["client"]
                 for p in POINTS)
    ok(call(message("set_added_mass", multi_sid, client=multi,
                    added_mass=np.stack([mass, np.zeros((6, 6))]), frames=["point", "point"])))
    ok(call(message("set_added_mass", single_sid, client=side, added_mass=mass[None],
                    frames=["point"])))
    after = []
    for k in range(2):
        a = ok(call(message("step", multi_sid, client=multi, step=k, wrench=wrench)))
        assert call(message("step", single_sid, msg_id="side", client=side, step=k,
                            wrench=wrench[:1])) == []
        b = {r["parent_id"]: r["content"] for r in call(
            message("step", single_sid, msg_id="tip", client=tip, step=k, wrench=wrench[1:]))}
        stacked = np.vstack([np.asarray(b[n]["motions"]) for n in ("side", "tip")])
        assert np.array_equal(stacked, np.asarray(a["motions"]))
        after.append(stacked)
    # the handed-over mass does change the motion: the comparison is not of two no-ops
    plain = session(call)
    lone = ok(call(message("attach", plain, points=POINTS, motions=True)))["client"]
    c = ok(call(message("step", plain, client=lone, step=0, wrench=wrench)))
    assert np.abs(np.asarray(c["motions"])[:, 13:] - after[0][:, 13:]).max() > 1e-3
