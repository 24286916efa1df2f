"""The child processes of `rbcosim cosim`: light to import (no numpy, no solver), so that the
command line starts its server before it loads anything else."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

from rbcosim.errors import RbcosimError


class CosimError(RbcosimError):
    """The multi-process run failed: server unreachable, a process died, results disagree."""


def rbcosim_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rbcosim", *args]


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


class ExitWatch:
    """Sleep until one of some child processes ends or a time passes (Linux pidfds), so that
    a watcher polling at intervals notices a process's end at once."""

    def __init__(self, procs: list[subprocess.Popen]):
        self._sel = selectors.DefaultSelector()
        for proc in procs:  # not yet reaped (poll() reaps): the pid is still theirs
            self._sel.register(os.pidfd_open(proc.pid), selectors.EVENT_READ)

    def wait(self, timeout: float) -> None:
        """Return when a watched process has ended (each ends a wait once) or after timeout s."""
        for key, _ in self._sel.select(timeout):
            self._sel.unregister(key.fd)
            os.close(key.fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        for key in list(self._sel.get_map().values()):
            os.close(key.fd)
        self._sel.close()


class ServerProcess:
    """`rbcosim serve` in a child process, started at construction; `wait_address` reads the
    address from its first stdout line. Its log goes to a folder of its own (removed by `stop`).

    root: the only folder it may read (the scenario's own folder, which holds what it names).
    Refuses (CosimError, nothing started) a bind address that is not loopback."""

    def __init__(self, bind: str, barrier_timeout: float, root: Path):
        from rbcosim.endpoints import is_loopback

        if not is_loopback(bind):
            raise CosimError(
                f"--bind {bind}: the server `rbcosim cosim` starts binds to loopback only; to "
                "serve other hosts run `rbcosim serve --allow-remote ...` yourself and pass "
                "--connect ADDR"
            )
        self._folder = Path(tempfile.mkdtemp(prefix="rbcosim-serve-"))
        self.log_path = self._folder / "server.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            rbcosim_command("serve", "--bind", bind, "--barrier-timeout", repr(barrier_timeout),
                            "--root", str(root)),
            stdout=subprocess.PIPE, stderr=self._log, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.address: str | None = None
        self._stopping = False
        self._terminated = False

    def wait_address(self, wait: float = 60.0) -> str:
        """The address it serves on, once it says (s to wait: it first imports the service)."""
        if self.address is not None:
            return self.address
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + wait
        try:
            while time.monotonic() < deadline:
                if sel.select(timeout=0.2):
                    line = self.proc.stdout.readline()
                    if line.startswith("serving on "):
                        self.address = line.split("serving on ", 1)[1].strip()
                        return self.address
                    if not line:
                        break
                if self.proc.poll() is not None:
                    break
        finally:
            sel.close()
        code = self.proc.poll()
        why = describe_exit(code) if code is not None else f"did not start within {wait:g} s"
        log = tail(self.log_path)
        self.stop()
        raise CosimError(f"the rbcosim server {why}: {log or 'no output'}")

    def terminate(self) -> None:
        """Ask it to end (SIGTERM) without waiting for it; `stop` waits and cleans up. A server
        still starting is first awaited until it says its address: from then on it handles
        SIGTERM by closing its workers and their folder, which a SIGTERM during its start-up
        would skip."""
        if self.proc.poll() is None and self.address is None and not self._stopping:
            self._stopping = True  # wait_address calls stop when the server fails
            with contextlib.suppress(CosimError):
                self.wait_address(wait=30.0)
        if self.proc.poll() is None and not self._terminated:
            self._terminated = True
            self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """`terminate`, wait for it (SIGKILL after 5 s) and remove the log folder."""
        self.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)
