"""Protocol 1.1 pieces a flexible solver needs (motions, report, set_added_mass, flex_energy,
result rows, wait_for_joints, auto snapshots), through the transport-free service, against the
schema, and their refusals."""

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
PENDULUM = str(ROOT / "scenarios" / "rigid_flex_pendulum.toml")
TWO_BEAMS = str(ROOT / "scenarios" / "two_beams.toml")
SCHEMA = ROOT / "interfaces" / "protocol.schema.json"


@pytest.fixture
def call():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    svc = Service()

    def wire(msg: dict) -> dict:
        return unpack_header(encode(msg)[0], Limits())

    def _call(msg: dict, peer=None, *, valid: bool = True) -> list[dict]:
        if valid:
            validator.validate(wire(msg))
        replies = svc.handle(msg, peer)
        for _, reply in replies:
            validator.validate(wire(reply))
        return [r for _, r in replies]

    _call.service = svc
    return _call


def ok(replies: list[dict]) -> dict:
    assert len(replies) == 1 and replies[0]["status"] == "ok", replies
    return replies[0]["content"]


def error(replies: list[dict]) -> str:
    assert len(replies) == 1 and replies[0]["status"] == "error", replies
    return replies[0]["error"]["code"]


def test_flexible_solver_sequence_validates_and_records_rows(call):
    created = ok(call(message("create_session", scenario=PENDULUM, output_every=2,
                              snapshot_every=2, overrides={"solver.t_end": "0.001"})))
    sid = created["session"]
    assert created["columns"][0] == "t" and "clamp.energy_residual" in created["columns"]
    att = ok(call(message("attach", sid, points=["tip"], joints=["clamp"], motions=True)))
    cid, motions0 = att["client"], att["motions"]
    assert np.asarray(motions0).shape == (1, 19)
    mass = np.diag([0.5, 0.5, 0.5, 0.01, 0.01, 0.01])[None]
    assert ok(call(message("set_added_mass", sid, client=cid, added_mass=mass,
                           frames=["point"])))["points"] == ["tip"]
    # the attach motions stay those of the last step; the report's include the added mass
    again = ok(call(message("attach", sid, points=["tip"], joints=["clamp"], motions=True,
                            force=True)))
    cid = again["client"]
    kin = call.service.sessions[sid].all_kinematics()
    rep = ok(call(message("report", sid, client=cid, step=0, flex_kinematics=kin,
                          flex_energy=np.zeros(1), wrench=np.zeros((1, 6)))))
    assert rep["step"] == 0 and "motions" in rep
    for k in range(4):
        r = ok(call(message("step", sid, client=cid, step=k, wrench_polynomial=np.zeros((1, 2, 6)),
                            flex_kinematics=kin, flex_energy=np.zeros(1))))
        assert r["step"] == k + 1 and "motions" in r
    ok(call(message("report", sid, client=cid, step=4, flex_kinematics=kin,
                    flex_energy=np.zeros(1))))
    res = ok(call(message("results", sid)))
    assert res["row_steps"] == [0, 2, 4]
    assert res["rows"].shape == (3, len(created["columns"]))
    assert "joints" in res["diagnostics"]
    hb = ok(call(message("heartbeat", sid)))
    assert hb["last_row_step"] == 4 and hb["reported_step"] == 4
    # the "auto" snapshot is taken when a step's barrier releases: the last one at step 2
    assert ok(call(message("restore", sid, name="auto")))["step"] == 2
    assert ok(call(message("results", sid)))["row_steps"] == [0]


def test_refusals(call):
    sid = ok(call(message("create_session", scenario=PENDULUM)))["session"]
    cid = ok(call(message("attach", sid, points=["tip"], joints=["clamp"])))["client"]
    lopsided = np.zeros((1, 6, 6))
    lopsided[0, 0, 1] = 1.0
    assert error(call(message("set_added_mass", sid, client=cid, added_mass=lopsided))) == (
        "invalid_argument")
    assert error(call(message("set_added_mass", sid, client=cid, added_mass=np.zeros((1, 6, 6)),
                              frames=["body"]), valid=False)) == "invalid_argument"
    nan = np.full((1, 6, 6), np.nan)
    assert error(call(message("set_added_mass", sid, client=cid, added_mass=nan))) == "non_finite"
    kin = call.service.sessions[sid].all_kinematics()
    assert error(call(message("step", sid, client=cid, step=0, wrench=np.zeros((1, 6)),
                              flex_kinematics=kin, flex_energy=np.array([np.inf])))) == "non_finite"
    assert error(call(message("report", sid, client=cid, step=0, flex_kinematics=kin,
                              interface_jacobian=np.zeros((1, 2, 6, 6))))) == "invalid_argument"
    # a step without its required node report is a missing field, not a malformed array
    assert error(call(message("step", sid, client=cid, step=0, wrench=np.zeros((1, 6))))) == (
        "invalid_argument")


def test_barrier_waits_for_every_joint_and_does_not_mix_reports_and_steps(call):
    sid = ok(call(message("create_session", scenario=TWO_BEAMS, wait_for_joints=True)))["session"]
    s = call.service.sessions[sid]
    a = ok(call(message("attach", sid, points=["tip"], joints=["clamp_tip"]), "A"))["client"]
    kin = s.all_kinematics()
    assert call(message("report", sid, client=a, step=0, flex_kinematics=kin[:1]), "A") == []
    b = ok(call(message("attach", sid, points=["side"], joints=["clamp_side"]), "B"))["client"]
    assert ok(call(message("set_added_mass", sid, client=b,
                           added_mass=np.eye(6)[None] * 0.1), "B"))
    assert error(call(message("step", sid, client=b, step=0, wrench=np.zeros((1, 6)),
                              flex_kinematics=kin[1:]), "B")) == "invalid_argument"
    replies = call(message("report", sid, client=b, step=0, flex_kinematics=kin[1:]), "B")
    assert [r["status"] for r in replies] == ["ok", "ok"]
    assert s.row_steps == [0]
