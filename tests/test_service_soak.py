"""A bounded soak of `rbcosim serve` (well under a minute): 40 abandoned sessions (scaled down
from 200 to fit a 2-core CI machine), 300 idle connections under a file descriptor limit of
1024, and a client that never reads its replies, while a victim co-simulation run through the
same server gives `rbcosim run`'s numbers bit for bit; after the idle time (8 s) every abandoned
session is closed and the server's processes, file descriptors and memory are back to where
they started."""

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

from rbcosim.client import Client
from rbcosim.results import Results

pytestmark = [pytest.mark.protocol, pytest.mark.slow]

PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"
SETS = ("solver.t_end=0.025", "solver.output_every=10")


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
        for _ in range(300):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(address)
            idle.append(s)
        for _ in range(40):  # abandoned: created, then the client goes away
            with Client(address, timeout=60, direct=False) as c:
                c.create_session(scenario=str(PENDULUM), overrides=dict(
                    s.split("=", 1) for s in SETS))
        loaded = footprint(proc.pid)
        assert loaded[0] > start[0] + 20 and loaded[1] >= start[1] + 300, (start, loaded)
        lazy = ctx.socket(zmq.DEALER)
        idle.append(lazy)
        lazy.setsockopt(zmq.RCVHWM, 1)
        lazy.setsockopt(zmq.RCVBUF, 4096)
        lazy.setsockopt(zmq.LINGER, 0)
        lazy.connect(address)
        for n in range(3000):
            lazy.send_multipart([b"", msgpack.packb({"version": "1.3", "msg_id": n,
                                                     "msg_type": "hello", "content": {}})])
        out = tmp_path / "victim.csv"
        args = [sys.executable, "-m", "rbcosim.cli.main", "cosim", str(PENDULUM), "--connect",
                address, "--out", str(out), "--quiet", "--no-plot"]
        for s in SETS:
            args += ["--set", s]
        victim = subprocess.run(args, capture_output=True, text=True, env=child_env(),
                                timeout=120, check=False)
        assert victim.returncode == 0, victim.stderr
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
