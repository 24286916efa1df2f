"""How `rbcosim cosim` and `rbcosim serve` start and stop their processes without waiting on
clocks: the fork server starts before the service loads, the command lines parse without the
solvers, the server's loop and the run's watcher wake when what they wait for happens, and a
server handed to `run_distributed` is left for its caller to reap."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from service_helpers import processes_naming, toy_service

from rbcosim.distributed.driver import CosimOptions, run_distributed
from rbcosim.distributed.processes import (
    ExitWatch,
    FlexProcess,
    ServerProcess,
    reap,
    stop_processes,
)
from rbcosim.service.server import Server

PENDULUM = Path(__file__).resolve().parents[1] / "scenarios" / "rigid_flex_pendulum.toml"
HOUR = 3600.0  # a wait that only an event can end within the test's own timeout


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_serve_and_cosim_parse_their_options_without_numpy():
    assert _python(
        "import sys\n"
        "from rbcosim.cli.main import build_parser\n"
        "build_parser('serve'); build_parser('cosim')\n"
        "import rbcosim.service.fork_server\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'zmq')))"
    ) == "[]"


def test_serve_starts_the_fork_server_before_it_loads_the_service(tmp_path):
    # the first start of a fork server says whether the service (its core) was loaded then
    out = _python(
        "import os, sys\n"
        "import multiprocessing.forkserver as fs\n"
        "def first(*a):\n"
        "    print('rbcosim.service.core' in sys.modules, flush=True)\n"
        "    os._exit(0)\n"
        "fs.ensure_running = first\n"
        "from rbcosim.cli.main import main\n"
        f"main(['serve', '--bind', 'tcp://127.0.0.1:0', '--root', {str(tmp_path)!r}])\n"
    )
    assert out == "False"


def test_stop_wakes_the_servers_loop_at_once():
    server = Server(toy_service(), "tcp://127.0.0.1:0")
    try:
        loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": HOUR})
        loop.start()
        server.stop()
        loop.join(60)
        assert not loop.is_alive()
    finally:
        server.close()
    server.stop()  # after close: nothing to wake, no error


def test_exit_watch_returns_when_a_child_ends():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    with ExitWatch([proc]) as exits:
        done = threading.Thread(target=exits.wait, args=(HOUR,))
        done.start()
        done.join(60)
        assert not done.is_alive()
    assert proc.wait() == 0


def test_stopping_processes_wakes_when_they_end_instead_of_polling(tmp_path, monkeypatch):
    """Popen.wait(timeout) sleeps at doubling intervals (and so notices an end up to twice as
    late): the processes of a run are awaited on their pidfds instead."""
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
             for _ in range(2)]

    def polled(seconds):
        raise AssertionError(f"polled: slept {seconds} s")

    monkeypatch.setattr(subprocess.time, "sleep", polled)
    stop_processes([FlexProcess((), p, tmp_path / "out", tmp_path / "log") for p in procs])
    assert [p.returncode for p in procs] == [-15, -15]  # ended by the SIGTERM, reaped


def test_a_process_that_outlives_the_wait_is_killed_and_reaped():
    code = ("import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print(flush=True); time.sleep(3600)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    proc.stdout.readline()  # SIGTERM ignored from now on
    proc.terminate()
    reap(proc, 0.2)
    assert proc.returncode == -9
    proc.stdout.close()


def test_a_server_handed_to_the_run_ends_by_itself_and_its_caller_reaps_it():
    server = ServerProcess("tcp://127.0.0.1:0", 30.0, PENDULUM.parent)
    try:
        run = run_distributed(PENDULUM, ["solver.t_end=0.001"],
                              CosimOptions(progress=False, log=lambda _: None), server)
        assert run.results.data.shape[0] >= 1
        assert server.proc.wait(60) == 0  # asked to end by the run (SIGTERM, handled)
        assert server.log_path.exists()  # the caller's to remove
    finally:
        server.stop()
    assert not server.log_path.parent.exists()


def test_the_program_freezes_its_objects_before_it_exits_and_a_caller_keeps_them():
    code = (
        "import gc, sys\n"
        "from rbcosim.cli.main import main\n"
        f"args = ['check', {str(PENDULUM)!r}]\n"
        "main(args); print('frozen', gc.get_freeze_count() > 0)\n"
        "sys.argv = ['rbcosim', *args]; main(); print('frozen', gc.get_freeze_count() > 0)\n"
    )
    frozen = [line for line in _python(code).splitlines() if line.startswith("frozen ")]
    assert frozen == ["frozen False", "frozen True"]


def test_cosim_starts_its_server_and_a_flexible_solver_before_it_loads_numpy(tmp_path):
    out = _python(
        "import subprocess, sys\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, cmd, *a, **k):\n"
        "    if 'rbcosim' in cmd:\n"
        "        print(cmd[cmd.index('rbcosim') + 1], 'numpy' in sys.modules, flush=True)\n"
        "    real(self, cmd, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "from rbcosim.cli.main import main\n"
        f"main(['cosim', {str(PENDULUM)!r}, '--t-end', '0.001', '--no-plot', '-q',\n"
        f"      '-o', {str(tmp_path / 'r.csv')!r}])\n"
    )
    assert [line for line in out.splitlines() if line.split()[0] in ("serve", "flex")] == [
        "serve False", "flex False"]


def test_a_refused_scenario_stops_the_flexible_solver_started_ahead(tmp_path):
    root = tmp_path / "scenarios"
    root.mkdir()
    scenario = root / "pendulum.toml"
    scenario.write_text(PENDULUM.read_text())
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "rbcosim", "cosim", str(scenario), "--set", "cosim.macro_step=0",
         "--no-plot", "-q", "-o", str(tmp_path / "r.csv")],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "TMPDIR": str(temp)})
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1].startswith("rbcosim cosim: error: ")
    assert processes_naming(str(root)) == []
    assert list(temp.iterdir()) == []


def test_flex_reads_its_joints_from_stdin_only_alone_and_says_when_none_come(tmp_path):
    base = [sys.executable, "-m", "rbcosim", "flex", "--connect", "-", "--session", "-",
            "--scenario", str(PENDULUM)]

    def flex(joints: list[str], stdin: str) -> subprocess.CompletedProcess:
        return subprocess.run([*base, *joints], input=stdin, check=False, capture_output=True,
                              text=True, timeout=120)

    none = flex(["--joint", "-"], "")
    assert (none.returncode, none.stderr.strip()) == (
        1, "rbcosim flex: error: --joint -: expected the joint names on stdin, got none")
    mixed = flex(["--joint", "-", "--joint", "clamp"], "clamp\n")
    assert (mixed.returncode, mixed.stderr.strip()) == (
        1, "rbcosim flex: error: --joint - (joints read from stdin) goes alone, with --connect -")
    unknown = flex(["--joint", "-"], "nosuch\n")
    assert unknown.returncode == 1 and "nosuch" in unknown.stderr
