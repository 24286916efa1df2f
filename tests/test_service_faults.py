"""Faults around the session workers lose no session (`rbcosim serve` in a child process):
the fork server killed, file descriptors running out, a client that never reads, the server
itself killed. Each test kills only processes it started, polls /proc in bounded loops, and
asserts outcomes, never durations."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import msgpack
import numpy as np
import pytest
import zmq
from server_process import child_env
from service_helpers import TOY_TWO_POINTS, spring_inputs

from rbcosim.client import Client, ServiceError

pytestmark = pytest.mark.protocol

TOY = "toy_side:ToySide.from_scenario"


def serve_command(*options: str, nofile: int | None = None) -> list[str]:
    """`rbcosim serve OPTIONS` as a command, with RLIMIT_NOFILE (soft and hard) `nofile`."""
    limit = "" if nofile is None else \
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile})); "
    code = (f"import resource, runpy, sys; {limit}sys.argv[0] = 'rbcosim'; "
            "runpy.run_module('rbcosim.cli.serve_cmd', run_name='__main__')")
    return [sys.executable, "-c", code, "--bind", "tcp://127.0.0.1:0", *options]


@contextlib.contextmanager
def serve(tmp_path, *options: str, nofile: int | None = None) -> Iterator[tuple]:
    """`rbcosim serve` on the toy rigid side; yields (process, address) once sessions can be
    created. nofile: its RLIMIT_NOFILE (soft and hard)."""
    proc = subprocess.Popen(
        serve_command("--root", str(tmp_path), "--rigid-factory", TOY, *options, nofile=nofile),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=child_env())
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving on "), line
        assert proc.stdout.readline().strip() == "sessions ready"
        yield proc, line.split()[2]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def ppid_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in "ZX" else int(fields[1])


def descendants(pid: int) -> set[int]:
    """Running processes below `pid` (children, grandchildren, …)."""
    parent = {int(p): ppid_of(int(p)) for p in os.listdir("/proc") if p.isdigit()}
    out, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


def cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


def alive(pid: int) -> bool:
    return ppid_of(pid) is not None


def wait_for(condition, within: float = 20.0) -> bool:
    for _ in range(int(within / 0.05)):
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def drive(c: Client, steps: int, kin=None) -> np.ndarray:
    if kin is None:
        c.create_session(text=TOY_TWO_POINTS)
        kin = c.attach(["a", "b"], ["a", "b"])["kinematics"]
    for _ in range(steps):
        kin = c.step(*spring_inputs(kin, c.step_index)).kinematics
    return kin


def reference(steps: int) -> np.ndarray:
    from service_helpers import running_server

    with running_server() as server, Client(server.address, timeout=30) as c:
        return drive(c, steps)


def test_sessions_outlive_a_killed_fork_server(tmp_path):
    with serve(tmp_path) as (proc, address):
        clients = [Client(address, timeout=30, direct=d) for d in (True, False, True)]
        kins = [drive(c, 3) for c in clients]
        workers = descendants(proc.pid)
        (fork_server,) = [p for p in workers if ppid_of(p) == proc.pid and "forkserver" in cmdline(p)]
        os.kill(fork_server, signal.SIGKILL)
        assert wait_for(lambda: not alive(fork_server))
        kins = [drive(c, 4, kin) for c, kin in zip(clients, kins)]  # every session goes on
        for k in kins:
            np.testing.assert_array_equal(k, kins[0])
        np.testing.assert_array_equal(kins[0], reference(7))
        with Client(address, timeout=30) as new:  # and new sessions start
            np.testing.assert_array_equal(drive(new, 7), kins[0])
        assert [c.heartbeat()["step"] for c in clients] == [7, 7, 7]
        for c in clients:
            c.close()
            c.close_socket()
        assert proc.poll() is None


def test_running_out_of_file_descriptors_fails_one_create_session_alone(tmp_path):
    ctx = zmq.Context()
    idle = []
    with serve(tmp_path, nofile=256) as (proc, address):
        try:
            for _ in range(120):  # idle connections hold server fds
                s = ctx.socket(zmq.DEALER)
                s.setsockopt(zmq.LINGER, 0)
                s.connect(address)
                s.send_multipart([b"", msgpack.packb({"version": "1.3", "msg_id": 0,
                                                      "msg_type": "hello", "content": {}})])
                idle.append(s)
            for s in idle:
                assert s.poll(10000), "an idle connection got no hello reply"
                s.recv_multipart()
            sessions, refused = [], None
            for _ in range(100):
                c = Client(address, timeout=30, direct=False)
                try:
                    drive(c, 1)
                except ServiceError as exc:
                    refused = exc
                    c.close_socket()
                    break
                sessions.append(c)
            assert refused is not None and sessions, "no create_session was refused"
            assert refused.code == "resource_exhausted", refused
            assert "file descriptors" in refused.message and "256" in refused.message
            for c in sessions:  # every session made before is alive and steps on
                drive(c, 1, np.zeros((2, 13)))
                assert c.heartbeat()["step"] == 2
            for c in sessions[:4]:
                c.close()
            with Client(address, timeout=30, direct=False) as again:
                drive(again, 2)
            assert proc.poll() is None
        finally:
            for s in idle:
                s.close()
            for c in sessions:
                c.close_socket()
            ctx.term()


def test_no_worker_outlives_the_server(tmp_path):
    with serve(tmp_path) as (proc, address):
        busy = Client(address, timeout=30)
        busy.create_session(text=TOY_TWO_POINTS + "step_seconds = 600.0\n")
        kin = busy.attach(["a", "b"], ["a", "b"])["kinematics"]
        wrench, flex = spring_inputs(kin, 0)
        busy.send("step", {"client": busy.client_id, "step": 0, "wrench": wrench.tolist(),
                           "flex_kinematics": flex.tolist()})
        idle = [Client(address, timeout=30) for _ in range(3)]
        for c in idle:
            drive(c, 2)
        below = descendants(proc.pid)
        assert len(below) >= 5  # the fork server and four workers
        proc.kill()
        proc.wait(30)
        assert wait_for(lambda: not any(alive(p) for p in below)), \
            [cmdline(p) for p in below if alive(p)]
        for c in [busy, *idle]:
            c.close_socket()


def rss(pid: int) -> int:
    """Resident memory of a process, bytes (/proc/PID/status VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_client_that_never_reads_holds_at_most_its_send_bytes_in_the_server(tmp_path):
    bound = 4 * 1024 * 1024
    with serve(tmp_path, "--send-bytes", str(bound)) as (proc, address), \
            Client(address, timeout=60) as owner, \
            Client(address, timeout=60, direct=False) as observer:
        drive(owner, 2000)
        head = {"version": "1.3", "msg_type": "results", "session": owner.session}
        ctx = zmq.Context()
        lazy = ctx.socket(zmq.DEALER)
        lazy.setsockopt(zmq.RCVHWM, 1)
        lazy.setsockopt(zmq.RCVBUF, 4096)
        lazy.setsockopt(zmq.LINGER, 0)
        lazy.connect(address)
        lazy.send_multipart([b"", msgpack.packb({**head, "msg_id": -1, "content": {}})])
        assert lazy.poll(30000)
        size = sum(len(f) for f in lazy.recv_multipart())
        assert size > 200_000  # each reply is about half a megabyte
        start = rss(proc.pid)
        sent = 300  # about 150 MB of replies if the server queued them all
        for n in range(sent):
            lazy.send_multipart([b"", msgpack.packb({**head, "msg_id": n, "content": {}})])
        # the observer's heartbeat is handled after every one of the lazy client's requests
        assert observer.request("heartbeat", session=owner.session)["step"] == 2000
        grown = rss(proc.pid) - start
        drive(observer, 3)  # the server serves others meanwhile
        lazy.close()
        ctx.term()
    assert grown < bound + 16 * 1024 * 1024, (grown, sent * size)
