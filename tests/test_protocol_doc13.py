"""The nine places of PROTOCOL.md a C developer had to guess (issue 26), each checked: the text
says it, and the server (or the reference flexible solver, where the text is about the
flexible side) does what the text says."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from service_helpers import TOY_TWO_POINTS, message, spring_inputs, toy_service

from rbcosim.service.core import Service

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "interfaces" / "PROTOCOL.md"
PENDULUM = ROOT / "scenarios" / "rigid_flex_pendulum.toml"


def _text() -> str:
    return " ".join(DOC.read_text(encoding="utf-8").split())


def _section(title: str, until: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split(title)[1].split(until)[0]


def _ok(replies) -> dict:
    (_, reply), = replies
    assert reply["status"] == "ok", reply
    return reply["content"]


def _error(replies) -> dict:
    (_, reply), = replies
    assert reply["status"] == "error", reply
    return reply["error"]


def _pendulum(svc: Service, **overrides) -> tuple[str, dict, dict]:
    created = _ok(svc.handle(message("create_session", scenario=str(PENDULUM),
                                     overrides={"cosim.macro_step": "0.001", **overrides})))
    sid = created["session"]
    attached = _ok(svc.handle(message("attach", sid, points=["tip"], joints=["clamp"],
                                      motions=True)))
    return sid, created, attached


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """q ⊗ [0, v] ⊗ q* for a scalar-first unit quaternion."""
    w, u = q[0], q[1:]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


# 1. §7a: the structure's integrator and the frame of the Jacobi wrench
def test_7a_states_the_integrators_and_where_the_jacobi_wrench_is_taken():
    text = " ".join(_section("## 7a.", "## 7b.").split())
    assert "exact discrete propagator" in text and "classic RK4" in text
    assert "at the end of its own previous steps" in text
    assert "**Interface-Jacobian** coupling first moves the structure's frame to m_k" in text
    # what the reference solver does (its bits equal `rbcosim run`'s: test_distributed_cosim)
    from rbcosim.cosim.flex_endpoint import FlexEndpoint
    from rbcosim.flex.runtime.body import FlexBody

    assert "propagator" in inspect.getsource(FlexBody.step)
    assert "self.resync(t, motion)" in inspect.getsource(FlexEndpoint.inputs_for_rigid)
    assert "self.resync" not in inspect.getsource(FlexEndpoint.finish)


# 2. §10's example is its scenario's
def test_10_example_matches_the_scenario_it_names():
    text = _section("## 10. A full exchange", "## 11.")
    assert '"scenario": "scenarios/rigid_flex_pendulum.toml"' in text
    shown = json.loads(re.search(r'"coupling": (\{"scheme"[^}]*\})', text, re.DOTALL).group(1)
                       .replace("\n", " "))
    svc = Service()
    _sid, created, attached = _pendulum(svc)
    assert shown == attached["coupling"] == created["coupling"]
    if shown["added_mass"]:
        assert '"msg_type": "set_added_mass"' in text and '"msg_type": "report"' in text
    quoted = re.search(r'"kinematics": \{"dtype": "<f8", "shape": \[1, 13\],\s*"data": <bin 104: '
                       r'([^>]*)>', text).group(1).split()
    np.testing.assert_allclose([float(v) for v in quoted], attached["kinematics"][0], atol=6e-4)
    assert '"motions": true' in text


# 3. §11's last bullet agrees with §7a
def test_11_tells_a_client_to_step_from_motions_in_the_order_of_its_scheme():
    text = " ".join(DOC.read_text(encoding="utf-8").split("## 11. Notes")[1].split())
    assert "from the returned kinematics" not in text
    assert "**`motions`**" in text
    for scheme in ("Jacobi", "Gauss–Seidel rigid first", "Gauss–Seidel flexible first"):
        assert scheme in text


# 4. interface_jacobian: capability, refused where the scheme does not use it, layout
def test_interface_jacobian_is_announced_refused_outside_its_scheme_and_documented():
    text = _text()
    assert "Index order `[point, d, row, column]`" in text and "**inertial** axes" in text
    svc = Service()
    assert "interface_jacobian" in _ok(svc.handle(message("hello")))["capabilities"]
    sid, _, attached = _pendulum(svc)
    assert attached["coupling"]["scheme"] == "gauss_seidel_flex_first"
    client, kin = attached["client"], attached["kinematics"]
    jacobian = np.zeros((1, 2, 6, 6))
    jacobian[0, 0, 0, 0] = -1.0
    error = _error(svc.handle(message("step", sid, client=client, step=0, wrench=np.zeros((1, 6)),
                                      flex_kinematics=kin, interface_jacobian=jacobian)))
    assert error["code"] == "invalid_argument" and "gauss_seidel_flex_first" in error["message"]
    # an all-zero one is the same as none
    zero = _ok(svc.handle(message("step", sid, client=client, step=0, wrench=np.zeros((1, 6)),
                                  flex_kinematics=kin, interface_jacobian=np.zeros((1, 2, 6, 6)))))
    other = Service()
    sid2, _, attached2 = _pendulum(other)
    plain = _ok(other.handle(message("step", sid2, client=attached2["client"], step=0,
                                     wrench=np.zeros((1, 6)), flex_kinematics=kin)))
    np.testing.assert_array_equal(zero["motions"], plain["motions"])
    # the scheme that uses it takes it
    svc3 = Service()
    sid3, _, attached3 = _pendulum(svc3, **{"cosim.scheme": "interface_jacobian"})
    _ok(svc3.handle(message("step", sid3, client=attached3["client"], step=0,
                            wrench=np.zeros((1, 6)), flex_kinematics=kin,
                            interface_jacobian=jacobian)))


# 5. §7b: the acceleration polynomial at step 0; m_0 is the step-0 report's row
def test_7b_m0_is_the_step0_reports_row_not_attachs():
    text = _text()
    assert "**m_0, the row of t_0, is the `motions` of the step-0 `report` reply**" in text
    assert "step 0 has none, so the accelerations are constant" in text
    svc = Service()
    sid, _, attached = _pendulum(svc)
    client, at_attach = attached["client"], attached["motions"]
    _ok(svc.handle(message("set_added_mass", sid, client=client,
                           added_mass=np.eye(6).reshape(1, 6, 6) * 0.1)))
    wrench = np.zeros((1, 1, 6))
    wrench[0, 0, 2] = -5.0
    report = _ok(svc.handle(message("report", sid, client=client, step=0,
                                    flex_kinematics=attached["kinematics"],
                                    wrench_polynomial=wrench)))
    np.testing.assert_array_equal(report["motions"][:, :13], at_attach[:, :13])
    assert not np.array_equal(report["motions"][:, 13:], at_attach[:, 13:])
    # attach still answers the motions as of creation until a step: only the report has m_0
    again = _ok(svc.handle(message("attach", sid, motions=True)))
    assert again["step"] == 0


# 6. mixing report and step at one barrier; when report is allowed
def test_mixing_report_and_step_at_one_barrier_is_invalid_argument_and_changes_nothing():
    text = _text()
    assert "**When `report` is allowed:**" in text and "**Mixing:**" in text
    svc = toy_service()
    sid = _ok(svc.handle(message("create_session", text=TOY_TWO_POINTS)))["session"]
    a = _ok(svc.handle(message("attach", sid, points=["a"], joints=["a"])))
    b = _ok(svc.handle(message("attach", sid, points=["b"], joints=["b"])))
    wa, fa = spring_inputs(a["kinematics"], 0)
    wb, fb = spring_inputs(b["kinematics"], 0)
    assert svc.handle(message("step", sid, client=a["client"], step=0, wrench=wa,
                              flex_kinematics=fa)) == []
    error = _error(svc.handle(message("report", sid, client=b["client"], step=0,
                                      flex_kinematics=fb)))
    assert error["code"] == "invalid_argument" and "send 'step' too" in error["message"]
    beat = _ok(svc.handle(message("heartbeat", sid)))
    assert beat["step"] == 0 and beat["waiting"] == [a["client"]]
    released = svc.handle(message("step", sid, client=b["client"], step=0, wrench=wb,
                                  flex_kinematics=fb))
    assert len(released) == 2 and all(r["content"]["step"] == 1 for _, r in released)
    # a report at the session's step index, twice: allowed, no step taken
    for _ in range(2):
        assert svc.handle(message("report", sid, client=a["client"], step=1,
                                  flex_kinematics=fa)) == []
        replies = svc.handle(message("report", sid, client=b["client"], step=1,
                                     flex_kinematics=fb))
        assert [r["content"]["step"] for _, r in replies] == [1, 1]


# 7. §7b energy with added mass: the physical wrench
def test_7b_energy_uses_the_physical_wrench_even_with_added_mass():
    text = _text()
    assert "W is the structure's **physical** wrench on the rigid body" in text
    from rbcosim.cosim.nodes import CompiledNode, NodeSet

    for powers in (CompiledNode.powers, NodeSet.powers):  # the endpoint's power, per body kind
        power = inspect.getsource(powers)
        assert "self.body.wrench" in power and "rigid_input" not in power


# 8. replies whose parent_id is nil
def test_replies_with_a_nil_parent_id_are_described():
    text = _text()
    assert "**Replies whose `parent_id` is nil.**" in text
    assert "`session_ended` (1.3)" in text
    # the server's behaviour: test_protocol_v12.test_refused_envelopes_carry_the_requests_parent_id
    # (error_reply) and test_protocol_direct.test_a_lost_worker_tells_its_direct_clients_by_a_notice


# 9. the quaternion's direction, in PROTOCOL.md itself
def test_the_quaternion_maps_the_point_frame_to_inertial():
    assert "**The quaternion's direction: point frame → inertial.**" in _text()
    svc = Service()
    _, _, attached = _pendulum(svc)
    row = attached["kinematics"][0]
    # the tip's point frame has its x axis along the link (x_axis = [0, 0, -1] in the link's
    # axes), from the link's centre to the tip; the link is 0.5 m long
    centre = np.array([0.125, 0.0, -0.21650635094610965])
    along = (row[0:3] - centre) / 0.25
    np.testing.assert_allclose(_rotate(row[3:7], np.array([1.0, 0.0, 0.0])), along, atol=1e-12)
