"""`rbcosim serve` as a child process for the native-client tests, and the environment such a
child needs to import this checkout's rbcosim."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child_env() -> dict[str, str]:
    """os.environ with this checkout's src (and tests/, whose toy_side.py is a --rigid-factory)
    first on PYTHONPATH, unbuffered output."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO / "tests"),
                                       e.get("PYTHONPATH", "")])
    e["PYTHONUNBUFFERED"] = "1"
    return e


@contextlib.contextmanager
def rbcosim_serve(root: Path = REPO, bind: str = "tcp://127.0.0.1:0",
                  factory: str | None = None) -> Iterator[str]:
    """`rbcosim serve` reading under ``root`` (``factory``: a --rigid-factory, None for the
    real rigid side); yields the address it bound."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rbcosim.cli.serve_cmd", "--bind", bind, "--root", str(root),
         *(["--rigid-factory", factory] if factory else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving on "), line + proc.stderr.read()
        # then wait until sessions can be created at once (the fork server has loaded the core)
        ready = proc.stdout.readline()
        assert ready.strip() == "sessions ready", ready + proc.stderr.read()
        yield line.split()[2]
    finally:
        proc.terminate()
        proc.wait(10)
