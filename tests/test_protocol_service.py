"""The transport-free Service, called directly with decoded messages (no sockets)."""

from __future__ import annotations

import numpy as np
import pytest
from service_helpers import TOY_TWO_POINTS, message, spring_inputs, toy_service

from rbcosim import PROTOCOL_VERSION
from rbcosim.service import ERROR_CODES, MESSAGE_TYPES, Service

pytestmark = pytest.mark.protocol


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ok(reply: dict) -> dict:
    assert reply["status"] == "ok", reply.get("error")
    return reply["content"]


def err(reply: dict, code: str) -> str:
    assert reply["status"] == "error", reply
    assert reply["error"]["code"] == code, reply["error"]
    assert code in ERROR_CODES
    return reply["error"]["message"]


def new_session(svc: Service, text: str = TOY_TWO_POINTS, **content) -> str:
    return ok(svc.request(message("create_session", text=text, **content)))["session"]


def attach(svc: Service, sid: str, points=(), joints=(), peer=None, **kw) -> str:
    return ok(
        svc.request(message("attach", sid, points=list(points), joints=list(joints), **kw), peer)
    )["client"]


def test_hello_reports_version_and_capabilities():
    c = ok(toy_service().request(message("hello", client_name="t")))
    assert c["protocol_version"] == PROTOCOL_VERSION
    assert set(c["message_types"]) == set(MESSAGE_TYPES)


@pytest.mark.parametrize("version", ["2.0", "0.9", "10.1"])
def test_incompatible_major_version_is_refused_with_a_sentence(version):
    svc = toy_service()
    from rbcosim.service.errors import ProtocolError
    from rbcosim.service.wire import check_envelope

    msg = message("hello")
    msg["version"] = version
    with pytest.raises(ProtocolError) as info:
        check_envelope(msg)
    assert info.value.code == "incompatible_version"
    assert version in info.value.message and PROTOCOL_VERSION in info.value.message
    assert svc.sessions == {}


def test_minor_version_of_same_major_is_accepted():
    from rbcosim.service.wire import check_envelope

    msg = message("hello")
    msg["version"] = PROTOCOL_VERSION.split(".")[0] + ".99"
    assert check_envelope(msg)["msg_type"] == "hello"


def test_reply_envelope_links_to_request():
    svc = toy_service()
    reply = svc.request(message("hello", msg_id="abc-1"))
    assert reply["parent_id"] == "abc-1"
    assert reply["msg_type"] == "hello_reply"
    assert reply["version"] == PROTOCOL_VERSION
    assert reply["msg_id"] != "abc-1"


def test_create_attach_step_close_round_trip():
    svc = toy_service()
    created = ok(
        svc.request(message("create_session", text=TOY_TWO_POINTS, overrides={"toy.mass": "4.0"}))
    )
    assert created["points"] == ["a", "b"] and created["parameters"]["mass"] == 4.0
    sid = created["session"]
    cid = attach(svc, sid, ["a", "b"], ["a", "b"])
    kin = ok(svc.request(message("outputs", sid)))["kinematics"]
    for k in range(3):
        wrench, flex = spring_inputs(kin, k)
        out = ok(
            svc.request(
                message("step", sid, client=cid, step=k, wrench=wrench, flex_kinematics=flex)
            )
        )
        assert out["step"] == k + 1 and out["time"] == pytest.approx(0.01 * (k + 1))
        assert out["kinematics"].shape == (2, 13) and out["gaps"].shape == (2, 4)
        kin = out["kinematics"]
    res = ok(svc.request(message("results", sid)))
    assert res["time"].shape == (4,) and res["kinematics"].shape == (4, 2, 13)
    np.testing.assert_array_equal(res["kinematics"][-1], kin)
    ok(svc.request(message("close", sid)))
    err(svc.request(message("outputs", sid)), "unknown_session")


def test_unknown_names_list_the_valid_ones():
    svc = toy_service()
    sid = new_session(svc)
    text = err(svc.request(message("attach", sid, points=["nope"])), "unknown_name")
    assert "'nope'" in text and "['a', 'b']" in text


@pytest.mark.parametrize(
    "content, code",
    [
        ({"wrench": np.zeros((1, 6))}, "invalid_array"),
        ({"wrench": np.zeros((2, 5))}, "invalid_array"),
        ({"wrench": {"dtype": "<f4", "shape": [2, 6], "data": bytes(48)}}, "invalid_array"),
        ({"wrench": {"dtype": "<f8", "shape": [2, 6], "data": bytes(95)}}, "invalid_array"),
        ({"wrench": {"dtype": "<f8", "shape": [2, 6], "frame": 3}}, "invalid_array"),
        ({"wrench": "zeros"}, "invalid_array"),
        ({"wrench": np.full((2, 6), np.nan)}, "non_finite"),
        ({"wrench": np.full((2, 6), np.inf)}, "non_finite"),
        ({"step": "0"}, "invalid_argument"),
        ({"step": 3}, "step_out_of_order"),
        ({"client": "c-unknown"}, "unknown_client"),
    ],
)
def test_bad_step_inputs_get_error_replies_and_leave_the_session_untouched(content, code):
    svc = toy_service()
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"])
    before = ok(svc.request(message("get_state", sid)))["state"]
    request = {"client": cid, "step": 0, "wrench": np.zeros((2, 6)), **content}
    err(svc.request(message("step", sid, **request)), code)
    assert ok(svc.request(message("get_state", sid)))["state"] == before
    ok(svc.request(message("step", sid, client=cid, step=0, wrench=np.zeros((2, 6)))))


def test_finiteness_check_passes_values_whose_sum_overflows_and_names_the_nan_row():
    """check_finite (every array input of a step): values near the float64 maximum are finite
    although their sum is not; a NaN or infinity is reported at its own row's name."""
    from rbcosim.service.errors import ProtocolError
    from rbcosim.service.requests import check_finite

    big = np.full((2, 6), 1.5e308)
    with np.errstate(over="ignore"):  # the premise: their sum overflows
        assert np.isinf(big.sum())
    check_finite(big, "wrench", ("a", "b"))
    for bad in (np.nan, np.inf, -np.inf):
        rows = np.zeros((3, 6))
        rows[1, 4] = bad
        with pytest.raises(ProtocolError) as info:
            check_finite(rows, "wrench", ("a", "b", "c"))
        assert info.value.code == "non_finite"
        assert info.value.message.startswith("wrench for 'b' holds NaN or infinity")


def test_stale_step_and_duplicates_are_refused():
    svc = toy_service()
    sid = new_session(svc)
    a = attach(svc, sid, ["a"], peer="A")
    b = attach(svc, sid, ["b"], peer="B")
    assert svc.handle(message("step", sid, client=a, step=0, wrench=np.zeros((1, 6))), "A") == []
    err(
        svc.request(message("step", sid, client=a, step=0, wrench=np.zeros((1, 6))), "A"),
        "duplicate_step",
    )
    replies = svc.handle(message("step", sid, client=b, step=0, wrench=np.zeros((1, 6))), "B")
    assert sorted(p for p, _ in replies) == ["A", "B"]
    err(
        svc.request(message("step", sid, client=b, step=0, wrench=np.zeros((1, 6))), "B"),
        "stale_step",
    )


def test_barrier_advances_only_when_every_client_sent_and_equals_a_single_client_run():
    two = toy_service()
    sid = new_session(two)
    a = attach(two, sid, ["a"], ["a"], peer="A")
    b = attach(two, sid, ["b"], ["b"], peer="B")
    one = toy_service()
    sid1 = new_session(one)
    c = attach(one, sid1, ["a", "b"], ["a", "b"])
    kin = ok(one.request(message("outputs", sid1)))["kinematics"]
    for k in range(5):
        wrench, flex = spring_inputs(kin, k)
        ref = ok(
            one.request(
                message("step", sid1, client=c, step=k, wrench=wrench, flex_kinematics=flex)
            )
        )
        first = two.handle(
            message("step", sid, client=b, step=k, wrench=wrench[1:], flex_kinematics=flex[1:]), "B"
        )
        assert first == []
        assert ok(two.request(message("heartbeat", sid)))["waiting"] == [b]
        replies = dict(
            two.handle(
                message("step", sid, client=a, step=k, wrench=wrench[:1], flex_kinematics=flex[:1]),
                "A",
            )
        )
        np.testing.assert_array_equal(ok(replies["A"])["kinematics"], ref["kinematics"][:1])
        np.testing.assert_array_equal(ok(replies["B"])["kinematics"], ref["kinematics"][1:])
        np.testing.assert_array_equal(ok(replies["B"])["gaps"], ref["gaps"][1:])
        kin = ref["kinematics"]


def test_points_cannot_be_attached_twice_unless_forced_or_stale():
    clock = FakeClock()
    svc = toy_service(clock=clock, barrier_timeout=5.0)
    sid = new_session(svc)
    attach(svc, sid, ["a"])
    err(svc.request(message("attach", sid, points=["a"])), "already_attached")
    attach(svc, sid, ["a"], force=True)
    clock.now += 6.0
    attach(svc, sid, ["a"])


def test_vanished_client_times_out_others_are_told_and_session_stays_consistent():
    clock = FakeClock()
    svc = toy_service(clock=clock, barrier_timeout=2.0)
    sid = new_session(svc)
    other = new_session(svc)
    oc = attach(svc, other, ["a", "b"])
    a = attach(svc, sid, ["a"], peer="A")
    b = attach(svc, sid, ["b"], peer="B")
    for k in range(2):
        svc.handle(message("step", sid, client=a, step=k, wrench=np.ones((1, 6))), "A")
        svc.handle(message("step", sid, client=b, step=k, wrench=np.ones((1, 6))), "B")
    ok(svc.request(message("save", sid, name="last")))
    state = ok(svc.request(message("get_state", sid)))["state"]
    assert svc.handle(message("step", sid, client=a, step=2, wrench=np.ones((1, 6))), "A") == []
    clock.now += 1.0
    assert svc.poll_timeouts() == []
    assert svc.next_deadline() == pytest.approx(clock.now + 1.0)
    clock.now += 1.5
    [(peer, reply)] = svc.poll_timeouts()
    assert peer == "A"
    text = err(reply, "timeout")
    assert b in text and "step 2" in text
    assert ok(svc.request(message("get_state", sid)))["state"] == state
    err(
        svc.request(message("step", sid, client=a, step=2, wrench=np.ones((1, 6))), "A"),
        "incomplete_session",
    )
    err(
        svc.request(message("step", sid, client=b, step=2, wrench=np.ones((1, 6))), "B"),
        "unknown_client",
    )
    ok(svc.request(message("step", other, client=oc, step=0, wrench=np.ones((2, 6)))))
    c = attach(svc, sid, ["b"], peer="C")
    ok(svc.request(message("restore", sid, name="last")))
    svc.handle(message("step", sid, client=a, step=2, wrench=np.ones((1, 6))), "A")
    replies = dict(svc.handle(message("step", sid, client=c, step=2, wrench=np.ones((1, 6))), "C"))
    assert ok(replies["A"])["step"] == 3


def test_save_restore_is_bitwise_and_rewinds_history():
    svc = toy_service()
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"], ["a", "b"])
    kin = ok(svc.request(message("outputs", sid)))["kinematics"]

    def run(k0, n):
        nonlocal kin
        outs = []
        for k in range(k0, k0 + n):
            wrench, flex = spring_inputs(kin, k)
            out = ok(
                svc.request(
                    message("step", sid, client=cid, step=k, wrench=wrench, flex_kinematics=flex)
                )
            )
            kin = out["kinematics"]
            outs.append(out["kinematics"].tobytes() + out["gaps"].tobytes())
        return outs

    run(0, 3)
    ok(svc.request(message("save", sid, name="s3")))
    saved_kin = kin
    first = run(3, 4)
    err(svc.request(message("restore", sid, name="nope")), "state_error")
    assert ok(svc.request(message("restore", sid, name="s3")))["step"] == 3
    kin = saved_kin
    assert run(3, 4) == first
    assert ok(svc.request(message("results", sid)))["time"].shape == (8,)


def test_save_to_file_and_restore_in_a_new_session(tmp_path):
    svc = toy_service(root=tmp_path)
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"])
    ok(svc.request(message("step", sid, client=cid, step=0, wrench=np.ones((2, 6)))))
    saved = ok(svc.request(message("save", sid, path="state.bin")))
    assert saved["step"] == 1 and (tmp_path / "state.bin").is_file()
    sid2 = new_session(svc)
    assert ok(svc.request(message("restore", sid2, path="state.bin")))["step"] == 1
    a = ok(svc.request(message("get_state", sid)))["state"]
    assert ok(svc.request(message("get_state", sid2)))["state"] == a
    err(svc.request(message("save", sid, path="../escape.bin")), "forbidden_path")
    err(svc.request(message("restore", sid, path="/etc/passwd")), "forbidden_path")
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01junk")
    err(svc.request(message("restore", sid, path="junk.bin")), "state_error")
    err(svc.request(message("restore", sid, path="missing.bin")), "io_error")
    other = new_session(svc, text='[toy]\npoints = ["x"]\n')
    err(svc.request(message("restore", other, path="state.bin")), "state_error")


def test_set_state_roundtrip_and_bad_blob():
    svc = toy_service()
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"])
    blob = ok(svc.request(message("get_state", sid)))["state"]
    ok(svc.request(message("step", sid, client=cid, step=0, wrench=np.ones((2, 6)))))
    assert ok(svc.request(message("set_state", sid, state=blob, step=0)))["step"] == 0
    assert ok(svc.request(message("get_state", sid)))["state"] == blob
    err(svc.request(message("set_state", sid, state=b"short")), "state_error")
    err(svc.request(message("set_state", sid, state="text")), "invalid_argument")


@pytest.mark.parametrize(
    "content, code",
    [
        ({}, "invalid_argument"),
        ({"text": "[toy]\npoints = 3\n"}, "scenario_error"),
        ({"text": "not toml ["}, "scenario_error"),
        ({"text": TOY_TWO_POINTS, "scenario": "x.toml"}, "invalid_argument"),
        ({"text": TOY_TWO_POINTS, "overrides": {"toy.mass": ["1"]}}, "invalid_argument"),
        ({"text": TOY_TWO_POINTS, "overrides": {"toy.mass": "-1"}}, "scenario_error"),
        ({"text": TOY_TWO_POINTS, "barrier_timeout": -1}, "invalid_argument"),
        ({"scenario": "/nonexistent/x.toml"}, "scenario_error"),
    ],
)
def test_create_session_errors(content, code):
    err(toy_service().request(message("create_session", **content)), code)


def test_session_limit():
    svc = toy_service(max_sessions=1)
    new_session(svc)
    err(svc.request(message("create_session", text=TOY_TWO_POINTS)), "too_many_sessions")


def test_unknown_type_and_session():
    svc = toy_service()
    err(svc.request(message("bogus")), "unknown_msg_type")
    err(svc.request(message("outputs", "s-nope")), "unknown_session")
    err(svc.request(message("outputs")), "unknown_session")


def test_simulation_error_marks_the_session_failed_until_restore():
    svc = toy_service()
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"])
    ok(svc.request(message("save", sid)))
    huge = np.full((2, 6), 1e308)
    err(svc.request(message("step", sid, client=cid, step=0, wrench=huge)), "simulation_error")
    err(
        svc.request(message("step", sid, client=cid, step=0, wrench=np.zeros((2, 6)))),
        "session_failed",
    )
    ok(svc.request(message("restore", sid)))
    ok(svc.request(message("step", sid, client=cid, step=0, wrench=np.zeros((2, 6)))))


def test_close_answers_waiting_clients():
    svc = toy_service()
    sid = new_session(svc)
    a = attach(svc, sid, ["a"], peer="A")
    attach(svc, sid, ["b"], peer="B")
    svc.handle(message("step", sid, client=a, step=0, wrench=np.zeros((1, 6))), "A")
    replies = dict(svc.handle(message("close", sid), "B"))
    err(replies["A"], "session_closed")
    ok(replies["B"])


def test_flex_kinematics_at_end_are_compared_after_the_step():
    svc = toy_service()
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"], ["a", "b"])
    kin0 = ok(svc.request(message("outputs", sid)))["kinematics"]
    ok(svc.request(message("save", sid)))
    start = ok(
        svc.request(
            message("step", sid, client=cid, step=0, wrench=np.ones((2, 6)), flex_kinematics=kin0)
        )
    )
    np.testing.assert_array_equal(start["gaps"], np.zeros((2, 4)))
    ok(svc.request(message("restore", sid)))
    end = ok(
        svc.request(
            message(
                "step",
                sid,
                client=cid,
                step=0,
                wrench=np.ones((2, 6)),
                flex_kinematics=start["kinematics"],
                flex_kinematics_at="end",
            )
        )
    )
    np.testing.assert_array_equal(end["gaps"], np.zeros((2, 4)))
    res = ok(svc.request(message("results", sid)))
    assert np.isnan(res["gaps"][0]).all() and (res["gaps"][1] == 0).all()
    err(
        svc.request(
            message(
                "step",
                sid,
                client=cid,
                step=1,
                wrench=np.ones((2, 6)),
                flex_kinematics=kin0,
                flex_kinematics_at="middle",
            )
        ),
        "invalid_argument",
    )


def test_wrench_polynomial_of_order_zero_equals_a_held_wrench():
    svc = toy_service()
    sid = new_session(svc)
    cid = attach(svc, sid, ["a", "b"])
    ok(svc.request(message("save", sid)))
    w = np.arange(12.0).reshape(2, 6)
    held = ok(svc.request(message("step", sid, client=cid, step=0, wrench=w)))
    ok(svc.request(message("restore", sid)))
    poly = ok(
        svc.request(message("step", sid, client=cid, step=0, wrench_polynomial=w.reshape(2, 1, 6)))
    )
    np.testing.assert_array_equal(poly["kinematics"], held["kinematics"])
    ramp = np.concatenate([w.reshape(2, 1, 6), np.ones((2, 1, 6))], axis=1)
    assert (
        ok(svc.request(message("step", sid, client=cid, step=1, wrench_polynomial=ramp)))["step"]
        == 2
    )
    err(
        svc.request(
            message("step", sid, client=cid, step=2, wrench_polynomial=np.zeros((2, 4, 6)))
        ),
        "invalid_array",
    )
    err(
        svc.request(message("step", sid, client=cid, step=2, wrench=w, wrench_polynomial=ramp)),
        "invalid_argument",
    )
