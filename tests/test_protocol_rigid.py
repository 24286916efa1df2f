"""The service over the core's real RigidSide on the rigid–flexible pendulum scenario."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from service_helpers import message, running_server

from rbcosim.client import Client
from rbcosim.service import Service

pytestmark = pytest.mark.protocol

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "rigid_flex_pendulum.toml"
STEPS = 15


@pytest.fixture(scope="module")
def rigid_side_class():
    module = pytest.importorskip("rbcosim.cosim.rigid_side")
    if not SCENARIO.is_file():
        pytest.skip(f"{SCENARIO.name} not present")
    return module.RigidSide


def inputs(kin: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    wrench = np.array([[0.3 * np.sin(0.2 * k), 0.0, -1.0 - 0.1 * kin[0, 0], 0.0, 0.05, 0.0]])
    flex = kin.copy()
    flex[0, 2] += 1e-5 * k
    return wrench, flex


def direct_run(cls, steps: int) -> list[bytes]:
    """The same inputs applied to a RigidSide in process, without the service."""
    rigid = cls.from_scenario(SCENARIO)
    kin = np.array([rigid.point_outputs()["tip"]])
    out = []
    for k in range(steps):
        wrench, flex = inputs(kin, k)
        rigid.set_wrench("tip", wrench[0])
        rigid.set_flex_kinematics("clamp", flex[0])
        gaps = rigid.gaps()["clamp"]
        rigid.step(rigid.macro_step)
        kin = np.array([rigid.point_outputs()["tip"]])
        out.append(kin.tobytes() + gaps.tobytes())
    return out


def test_service_steps_bitwise_like_the_rigid_side_in_process(rigid_side_class):
    svc = Service()
    created = svc.request(message("create_session", scenario=str(SCENARIO)))["content"]
    assert created["points"] == ["tip"] and created["joints"] == ["clamp"]
    assert created["joint_points"] == {"clamp": "tip"}
    sid = created["session"]
    attached = svc.request(message("attach", sid, points=["tip"], joints=["clamp"]))["content"]
    kin, cid = attached["kinematics"], attached["client"]
    got = []
    for k in range(STEPS):
        if k == 5:
            assert svc.request(message("save", sid, name="five"))["status"] == "ok"
        wrench, flex = inputs(kin, k)
        reply = svc.request(
            message("step", sid, client=cid, step=k, wrench=wrench, flex_kinematics=flex)
        )
        assert reply["status"] == "ok", reply.get("error")
        kin = reply["content"]["kinematics"]
        got.append(kin.tobytes() + reply["content"]["gaps"][0].tobytes())
    assert got == direct_run(rigid_side_class, STEPS)
    restored = svc.request(message("restore", sid, name="five"))["content"]
    assert restored["step"] == 5
    kin = np.frombuffer(got[4][:104]).reshape(1, 13)
    again = []
    for k in range(5, STEPS):
        wrench, flex = inputs(kin, k)
        c = svc.request(
            message("step", sid, client=cid, step=k, wrench=wrench, flex_kinematics=flex)
        )["content"]
        kin = c["kinematics"]
        again.append(kin.tobytes() + c["gaps"][0].tobytes())
    assert again == got[5:]


def test_real_scenario_over_a_socket_with_polynomial_and_jacobian(rigid_side_class, tmp_path):
    with (
        running_server(Service(root=SCENARIO.parent.parent)) as server,
        Client(server.address) as c,
    ):
        c.create_session(
            "scenarios/rigid_flex_pendulum.toml", overrides={"cosim.macro_step": "0.002"}
        )
        kin = c.attach(["tip"], ["clamp"])["kinematics"]
        assert c.outputs()["joints"] == ["clamp"]
        coefficients = np.zeros((1, 2, 6))
        coefficients[0, 0, 2] = -1.0
        coefficients[0, 1, 2] = 5.0
        reply = c.request(
            "step",
            {
                "client": c.client_id,
                "step": 0,
                "wrench_polynomial": {
                    "dtype": "<f8",
                    "shape": [1, 2, 6],
                    "data": coefficients.tobytes(),
                },
                "flex_kinematics": {"dtype": "<f8", "shape": [1, 13], "data": kin.tobytes()},
                "flex_kinematics_at": "start",
                "interface_jacobian": {
                    "dtype": "<f8",
                    "shape": [1, 2, 6, 6],
                    "data": np.zeros((1, 2, 6, 6)).tobytes(),
                },
            },
        )
        assert reply["time"] == pytest.approx(0.002)
        assert np.all(reply["gaps"] == 0.0)
        c.step_index = reply["step"]
        r = c.step(np.zeros(6), reply["kinematics"])
        assert r.step == 2
        c.close()
