"""A bounded soak of `rbcosim serve` (well under a minute) at a file descriptor limit of 1024:
a victim co-simulation is started, then 400 idle connections, 200 sessions created and
abandoned (each holds 3 of the server's descriptors, so those beyond the limit's reserve are
refused alone with `resource_exhausted`, as documented) and a client that never reads its
replies; the victim gives `rbcosim run`'s numbers bit for bit; after the idle time (8 s) every
abandoned session is closed and the server's processes, file descriptors and memory are back
to where they started."""

from __future__ import annotations

import os
import subprocess
import sys

import msgpack
import pytest
import zmq
from server_process import REPO, child_env
from test_distributed_cosim import assert_bitwise, in_process
from test_service_faults import descendants, rss, serve_command, wait_for

from rbcosim.client import Client, ServiceError
from rbcosim.results import Results

pytestmark = [pytest.mark.protocol, pytest.mark.slow]

PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"
SETS = ("solver.t_end=5.0", "solver.output_every=1000")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def footprint(pid: int) -> tuple[int, int, int]:
    """(processes below the server, its open fds, its resident bytes)."""
    return len(descendants(pid)), fds(pid), rss(pid)


def test_soak_abandoned_sessions_idle_connections_and_a_lazy_client(tmp_path):
    reference = in_process(tmp_path, PENDULUM, *SETS)
    proc = subprocess.Popen(
        serve_command("--root", str(REPO), "--session-idle", "8", nofile=1024),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=child_env())
    ctx = zmq.Context()
    idle: list[zmq.Socket] = []
    try:
        address = proc.stdout.readline().split()[2]
        assert proc.stdout.readline().strip() == "sessions ready"
        start = footprint(proc.pid)
        out = tmp_path / "victim.csv"
        args = [sys.executable, "-m", "rbcosim.cli.main", "cosim", str(PENDULUM), "--connect",
                address, "--out", str(out), "--quiet", "--no-plot"]
        for s in SETS:
            args += ["--set", s]
        victim = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=child_env())
        # its session's worker runs before the flood starts
        assert wait_for(lambda: len(descendants(proc.pid)) > start[0], within=60)
        for _ in range(400):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(address)
            idle.append(s)
        created, refused = 0, []
        for _ in range(200):  # abandoned: created, then the client goes away
            with Client(address, timeout=60, direct=False) as c:
                try:
                    c.create_session(scenario=str(PENDULUM), overrides=dict(
                        s.split("=", 1) for s in SETS))
                    created += 1
                except ServiceError as exc:
                    refused.append(exc.code)
        loaded = footprint(proc.pid)
        print(f"soak: {created} sessions created, {len(refused)} refused, victim running: "
              f"{victim.poll() is None}, server fds {start[1]} -> {loaded[1]}")
        assert created + len(refused) == 200 and set(refused) <= {"resource_exhausted"}
        assert created >= 150 and loaded[1] >= start[1] + 400, (created, start, loaded)
        lazy = ctx.socket(zmq.DEALER)
        idle.append(lazy)
        lazy.setsockopt(zmq.RCVHWM, 1)
        lazy.setsockopt(zmq.RCVBUF, 4096)
        lazy.setsockopt(zmq.LINGER, 0)
        lazy.connect(address)
        for n in range(3000):
            lazy.send_multipart([b"", msgpack.packb({"version": "1.3", "msg_id": n,
                                                     "msg_type": "hello", "content": {}})])
        _, victim_errors = victim.communicate(timeout=300)
        assert victim.returncode == 0, victim_errors
        assert_bitwise(reference, Results.read_csv(out))
        for s in idle:
            s.close()
        # after the idle time every abandoned session has closed and its process ended
        assert wait_for(lambda: footprint(proc.pid)[:2] <= start[:2], within=40), \
            (start, footprint(proc.pid))
        end = footprint(proc.pid)
        assert end[:2] == start[:2] and end[2] < start[2] + 32 * 1024 * 1024, (start, end)
        assert proc.poll() is None
    finally:
        ctx.destroy(linger=0)
        proc.kill()
        proc.wait(30)
