"""How `rbcosim cosim` and `rbcosim serve` start and stop their processes without waiting on
clocks: the fork server starts before the service loads, the command lines parse without the
solvers, the server's loop and the run's watcher wake when what they wait for happens, and a
server handed to `run_distributed` is left for its caller to reap."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from service_helpers import toy_service

from rbcosim.distributed.driver import CosimOptions, run_distributed
from rbcosim.distributed.processes import ExitWatch, ServerProcess
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
