"""The processes of `rbcosim serve` and `rbcosim cosim` run with idle OpenBLAS threads that
sleep at once (rbcosim.blas_threads), unless the user set the variable; the thread count, and so
a large product's bits, are those of the default."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rbcosim.blas_threads import VARIABLE
from rbcosim.distributed.placement import descendants
from rbcosim.distributed.processes import (
    CosimOptions,
    ServerProcess,
    start_flex,
    stop_processes,
)

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _environ(pid: int) -> dict[str, str]:
    """The environment process `pid` was started with."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _started(pid: int) -> int:
    """`pid` once it runs rbcosim: between fork and exec /proc shows the parent's (or, in a
    vfork, no) environment."""
    deadline = time.monotonic() + 30.0
    while " -m rbcosim " not in _cmdline(pid):
        assert time.monotonic() < deadline, f"process {pid} did not start rbcosim"
        time.sleep(0.01)
    return pid


@pytest.mark.parametrize("user", [None, "12"])
def test_serve_starts_its_fork_server_with_sleeping_blas_threads(tmp_path, user):
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    if user is not None:
        env[VARIABLE] = user
    serve = subprocess.Popen(
        [sys.executable, "-m", "rbcosim", "serve", "--bind", f"ipc://{tmp_path}/s.sock",
         "--root", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=env)
    try:
        assert serve.stdout.readline().startswith("serving on ")
        fork_servers = [p for p in descendants([serve.pid])
                        if "multiprocessing.forkserver" in _cmdline(p)]
        assert len(fork_servers) == 1
        assert _environ(fork_servers[0]).get(VARIABLE) == (user or "4")
    finally:
        serve.terminate()
        serve.wait(10)
        serve.stdout.close()


@pytest.mark.parametrize("user", [None, "12"])
def test_cosim_starts_server_and_flexible_solver_with_sleeping_blas_threads(
        tmp_path, monkeypatch, user):
    if user is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, user)
    server = ServerProcess(None, 30.0, SCENARIOS)
    flex = []
    try:
        flex.append(start_flex(None, None, None, SCENARIOS / "rigid_flex_pendulum.toml", [],
                               tmp_path, CosimOptions()))
        for pid in (server.proc.pid, flex[0].proc.pid):
            assert _environ(_started(pid)).get(VARIABLE) == (user or "4")
    finally:
        stop_processes(flex)
        server.stop()


BITS = """
import numpy
a = numpy.random.default_rng(0).standard_normal((600, 600))
print((a @ a).sum().hex())
"""


def test_sleeping_blas_threads_leave_a_threaded_products_bits():
    """A product split among the threads (its bits differ with one thread) gives the same
    bits with idle threads sleeping at once as with the default."""
    def bits(**extra):
        env = {k: v for k, v in os.environ.items()
               if k not in (VARIABLE, "OPENBLAS_NUM_THREADS")}
        return subprocess.run([sys.executable, "-c", BITS], env={**env, **extra},
                              capture_output=True, text=True, check=True).stdout

    default = bits()
    if bits(OPENBLAS_NUM_THREADS="1") == default:
        pytest.skip("this machine's OpenBLAS does not split the product among threads")
    assert bits(**{VARIABLE: "4"}) == default
