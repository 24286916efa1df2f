"""`rbcosim serve` says its address once a session can be created at once: its session
workers' fork server has loaded the core by then, so that the first create_session costs what
the later ones do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import rbcosim._core

from rbcosim.distributed.placement import descendants


def test_serve_says_its_address_once_its_fork_server_has_loaded_the_core(tmp_path):
    serve = subprocess.Popen(
        [sys.executable, "-m", "rbcosim", "serve", "--bind", f"ipc://{tmp_path}/s.sock",
         "--root", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert serve.stdout.readline().startswith("serving on ")
        fork_servers = [p for p in descendants([serve.pid])
                        if b"multiprocessing.forkserver" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(fork_servers) == 1
        assert rbcosim._core.__file__ in Path(f"/proc/{fork_servers[0]}/maps").read_text()
        assert serve.stdout.readline().strip() == "sessions ready"
    finally:
        serve.terminate()
        serve.wait(10)
        serve.stdout.close()
