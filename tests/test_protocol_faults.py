"""Barrier and faults over sockets: two clients in lockstep, a client process killed with SIGKILL
mid-run is reported to the other, other sessions go on, and a new client resumes bitwise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from server_process import child_env
from service_helpers import TOY_TWO_POINTS, running_server, spring_inputs, toy_service

from rbcosim.client import Client, ServiceError

pytestmark = pytest.mark.protocol

STEPS = 12
SAVE_AT = 4
KILL_AT = 6

# The flexible side of point "b" in its own process: steps 0..stop-1, prints the step it
# reached, then hangs (as a stuck or dead solver would) until the test kills it.
CHILD = textwrap.dedent(
    """
    import sys, time
    from rbcosim.client import Client
    from service_helpers import spring_inputs
    address, session, start, stop, force = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
    c = Client(address, timeout=30)
    kin = c.attach(["b"], ["b"], session=session, name="child", force=force)["kinematics"]
    print("attached", flush=True)
    for k in range(start, stop):
        r = c.step(*spring_inputs(kin, k))
        kin = r.kinematics
    print("reached", c.step_index, flush=True)
    if stop < {steps}:
        time.sleep(600)
    """
).format(steps=STEPS)


def spawn(
    address: str, session: str, start: int, stop: int, force: bool = False
) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            address,
            session,
            str(start),
            str(stop),
            "1" if force else "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert proc.stdout.readline().strip() == "attached"
    return proc


def drive_a(c: Client, kin: np.ndarray, start: int, stop: int) -> np.ndarray:
    for k in range(start, stop):
        kin = c.step(*spring_inputs(kin, k)).kinematics
    return kin


def uninterrupted(address: str) -> np.ndarray:
    """Both points driven from one client: the numbers a fault-free two-process run gives."""
    with Client(address) as c:
        c.create_session(text=TOY_TWO_POINTS)
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
        for k in range(STEPS):
            kin = c.step(*spring_inputs(kin, k)).kinematics
        res = c.results()["kinematics"]
        c.close()
        return res


def test_barrier_with_two_processes_matches_one_client():
    with running_server() as server:
        reference = uninterrupted(server.address)
        with Client(server.address, timeout=30) as a:
            a.create_session(text=TOY_TWO_POINTS)
            kin = a.attach(["a"], ["a"], name="parent")["kinematics"]
            child = spawn(server.address, a.session, 0, STEPS)
            drive_a(a, kin, 0, STEPS)
            assert child.stdout.readline().split() == ["reached", str(STEPS)]
            assert child.wait(30) == 0
            np.testing.assert_array_equal(a.results()["kinematics"], reference)


def test_killed_client_is_reported_and_a_new_one_resumes_bitwise():
    service = toy_service(barrier_timeout=1.0)
    with running_server(service) as server:
        reference = uninterrupted(server.address)
        with (
            Client(server.address, timeout=30) as a,
            Client(server.address, timeout=30) as bystander,
        ):
            a.create_session(text=TOY_TWO_POINTS)
            kin = a.attach(["a"], ["a"], name="parent")["kinematics"]
            child = spawn(server.address, a.session, 0, KILL_AT)
            kin = drive_a(a, kin, 0, SAVE_AT)
            a.save("checkpoint")
            saved_kin = kin
            kin = drive_a(a, kin, SAVE_AT, KILL_AT)
            assert child.stdout.readline().split() == ["reached", str(KILL_AT)]
            os.kill(child.pid, signal.SIGKILL)
            child.wait(30)

            pending = a.send(
                "step",
                {
                    "client": a.client_id,
                    "step": KILL_AT,
                    "wrench": spring_inputs(kin, KILL_AT)[0][:1].tolist(),
                    "flex_kinematics": spring_inputs(kin, KILL_AT)[1][:1].tolist(),
                },
            )
            # Another session runs to the end while session 1 waits for the dead client.
            bystander.create_session(text=TOY_TWO_POINTS)
            bkin = bystander.attach(["a", "b"], ["a", "b"])["kinematics"]
            for k in range(STEPS):
                bkin = bystander.step(*spring_inputs(bkin, k)).kinematics
            np.testing.assert_array_equal(bystander.results()["kinematics"], reference)

            with pytest.raises(ServiceError) as info:
                a.receive(pending)
            assert info.value.code == "timeout" and "child" in info.value.message
            assert a.heartbeat()["orphans"] == ["b"]

            a.restore("checkpoint")
            replacement = spawn(server.address, a.session, SAVE_AT, STEPS)
            drive_a(a, saved_kin, SAVE_AT, STEPS)
            assert replacement.stdout.readline().split() == ["reached", str(STEPS)]
            assert replacement.wait(30) == 0
            np.testing.assert_array_equal(a.results()["kinematics"], reference)
