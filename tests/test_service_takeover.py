"""`attach force=true` takes over only the names it lists (issue: one of a client's two joints
taken detached both, and the undriven one then stepped with `ok`)."""

from __future__ import annotations

import numpy as np
import pytest
from service_helpers import TOY_TWO_POINTS, message, toy_service

pytestmark = pytest.mark.protocol


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _step(svc, sid, client, n, step=0):
    return svc.request(message("step", sid, msg_id=f"{client}-{step}", client=client, step=step,
                               wrench=np.zeros((n, 6)), flex_kinematics=np.zeros((n, 13)) + 0.1))


def test_forced_attach_of_one_joint_leaves_the_other_owned():
    clock = Clock()
    svc = toy_service(clock=clock, barrier_timeout=5.0)
    sid = svc.request(message("create_session", text=TOY_TWO_POINTS))["content"]["session"]
    first = svc.request(message("attach", sid, points=["a", "b"], joints=["a", "b"]))
    c1 = first["content"]["client"]
    clock.now = 10.0  # c1 silent past the barrier timeout: it may be taken over
    second = svc.request(message("attach", sid, points=["a"], joints=["a"], force=True))
    assert second["status"] == "ok", second
    c2 = second["content"]["client"]
    beat = svc.request(message("heartbeat", sid))["content"]
    assert sorted(beat["clients"]) == sorted([c1, c2]) and beat["orphans"] == []
    s = svc.sessions[sid]
    assert s.joint_owner == {"a": c2, "b": c1} and s.point_owner == {"a": c2, "b": c1}
    # c2 alone cannot step: b is still c1's, so the barrier waits for c1 ...
    assert svc.handle(message("step", sid, msg_id="x", client=c2, step=0,
                              wrench=np.zeros((1, 6)), flex_kinematics=np.zeros((1, 13))),
                      "p2") == []
    # ... and a c1 that stays silent is timed out and b orphaned: never an undriven `ok`.
    clock.now = 20.0
    (peer, reply), = svc.poll_timeouts()
    assert peer == "p2" and reply["error"]["code"] == "timeout" and c1 in reply["error"]["message"]
    again = _step(svc, sid, c2, 1)
    assert again["error"]["code"] == "incomplete_session" and "'b'" in again["error"]["message"]


def test_a_client_that_keeps_a_joint_steps_with_its_remaining_rows():
    clock = Clock()
    svc = toy_service(clock=clock, barrier_timeout=5.0)
    sid = svc.request(message("create_session", text=TOY_TWO_POINTS))["content"]["session"]
    c1 = svc.request(message("attach", sid, points=["a", "b"], joints=["a", "b"]))["content"]["client"]
    clock.now = 10.0
    c2 = svc.request(message("attach", sid, points=["b"], joints=["b"],
                             force=True))["content"]["client"]
    wrong = _step(svc, sid, c1, 2)
    assert wrong["error"]["code"] == "invalid_array" and "[1, 6]" in wrong["error"]["message"]
    assert svc.handle(message("step", sid, msg_id="s1", client=c1, step=0,
                              wrench=np.zeros((1, 6)), flex_kinematics=np.zeros((1, 13))),
                      "p1") == []
    replies = svc.handle(message("step", sid, msg_id="s2", client=c2, step=0,
                                 wrench=np.zeros((1, 6)), flex_kinematics=np.zeros((1, 13))), "p2")
    assert sorted(p for p, _ in replies) == ["p1", "p2"]
    assert all(r["status"] == "ok" and r["content"]["step"] == 1 for _, r in replies)
