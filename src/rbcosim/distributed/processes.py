"""The child processes of `rbcosim cosim`: light to import (no numpy, no solver), so that the
command line starts its server and a flexible solver before it loads anything else."""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from rbcosim.blas_threads import quiet_blas_threads
from rbcosim.errors import RbcosimError


class CosimError(RbcosimError):
    """The multi-process run failed: server unreachable, a process died, results disagree."""


def rbcosim_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rbcosim", *args]


def child_env() -> dict[str, str]:
    """The environment of the server and flexible solvers started here: this one, unbuffered
    output, and idle BLAS threads that sleep at once (`rbcosim.blas_threads`)."""
    return dict(quiet_blas_threads({**os.environ, "PYTHONUNBUFFERED": "1"}))


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


@dataclass
class CosimOptions:
    """How `run_distributed` runs; defaults start everything on this host over loopback."""

    connect: str | None = None
    """Address of a running server (any host); None starts `rbcosim serve` here."""
    bind: str | None = None
    """Where the started server binds (loopback tcp or ipc); None: its own ipc socket
    (`private_endpoint`)."""
    serve_external: bool = False
    """Start no flexible solvers: wait for external ones to attach and drive the session."""
    progress: bool = True
    barrier_timeout: float = 30.0
    """Seconds the server waits at a step barrier for a missing flexible solver."""
    timeout: float = 120.0
    """Seconds any process waits for one reply from the server."""
    connect_timeout: float = 10.0
    """Seconds to wait for the server's first reply (hello)."""
    checkpoint_every: int = 0
    """Server snapshots and flexible-solver checkpoints every N macro steps (0: none)."""
    checkpoint_dir: Path | None = None
    curve_server_key: str | None = None
    curve_secret: str | None = None
    log: object = None
    """Where status lines go (a callable taking a str); None: stderr."""
    pin: str | int = "auto"
    """Once they step, the CPU of the server and flexible solvers started here: a number,
    "auto" or "none" (rbcosim.distributed.placement)."""


def scenario_overrides(overrides: list[str] | None, t_end: float | None) -> list[str]:
    """The --set list every process gets, with --t-end as solver.t_end."""
    out = list(overrides or [])
    if t_end is not None:
        if not t_end > 0:
            raise CosimError(f"--t-end: expected a positive number, got {t_end}")
        out.append(f"solver.t_end={t_end!r}")
    return out


_names = itertools.count(1)  # the flexible solvers' file names in a run's folder


@dataclass
class FlexProcess:
    """An `rbcosim flex` process (`start_flex`); joints is () until `assign` names them."""

    joints: tuple[str, ...]
    proc: subprocess.Popen
    out: Path
    log: Path

    def assign(self, joints: list[str] | tuple[str, ...]) -> None:
        """Tell a process started without them (`start_flex` with joints None) its joints: one
        line on its stdin, before `hand`."""
        self.joints = tuple(joints)
        self._write(" ".join(joints) + "\n", close=False)

    def hand(self, address: str, session: str) -> None:
        """Tell a process started without them (`start_flex` with address None) the server
        and the session: one line on its stdin. A process that already died is left to
        `failure`."""
        self._write(f"{address} {session}\n", close=True)

    def _write(self, line: str, close: bool) -> None:
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            if close:
                self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def failure(self) -> str | None:
        code = self.proc.poll()
        if code is None or code == 0:
            return None
        log = tail(self.log)
        return (f"the flexible solver of joints {list(self.joints)} (pid {self.proc.pid}) "
                f"{describe_exit(code)}" + (f":\n{log}" if log else ""))


def start_flex(address: str | None, session: str | None,
               joints: list[str] | tuple[str, ...] | None, scenario_path: Path,
               overrides: list[str], workdir: Path, options: CosimOptions,
               resume: bool = False) -> FlexProcess:
    """One `rbcosim flex` process driving `joints` as one client; its output and log go to
    `workdir`. With address and session None it starts at once, loads its modules and the
    scenario, and waits on its stdin: for its joints first when joints is None
    (`FlexProcess.assign`), then for the server and the session (`FlexProcess.hand`), so that
    it starts while the server does, and before this process has loaded the scenario."""
    name = f"flex{next(_names)}"
    out = workdir / f"{name}.flex"
    log = workdir / f"{name}.log"
    later = address is None
    if joints is None and not later:
        raise ValueError("start_flex: joints None (read from stdin) needs address None")
    cmd = rbcosim_command("flex", "--connect", "-" if later else address,
                           "--session", "-" if later else session)
    for joint in ["-"] if joints is None else joints:
        cmd += ["--joint", joint]
    cmd += ["--scenario", str(scenario_path), "--out", str(out), "--timeout", repr(options.timeout)]
    for item in overrides:
        cmd += ["--set", item]
    if options.checkpoint_every:
        cmd += ["--checkpoint-every", str(options.checkpoint_every),
                "--checkpoint-dir", str(options.checkpoint_dir or workdir / "checkpoints")]
    if resume:
        cmd.append("--resume")
    if options.curve_server_key:
        cmd += ["--curve-server-key", options.curve_server_key]
    if options.curve_secret:
        cmd += ["--curve-secret", options.curve_secret]
    with open(log, "w") as log_file:
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                stdin=subprocess.PIPE if later else subprocess.DEVNULL,
                                text=True, env=child_env())
    return FlexProcess(tuple(joints or ()), proc, out, log)


def stop_processes(flex: list[FlexProcess]) -> None:
    for f in flex:
        if f.proc.poll() is None:
            f.proc.terminate()
    for f in flex:
        reap(f.proc, 5.0)


def reap(proc: subprocess.Popen, wait: float) -> None:
    """Wait up to `wait` s for `proc` to end (SIGKILL then), and reap it. Woken when it ends
    (a pidfd), where `Popen.wait(timeout)` polls at doubling intervals and would notice an end
    after 10 ms only at 15 ms, one after 20 ms at 31 ms."""
    if proc.poll() is None:  # not reaped: its pid stays its own
        with ExitWatch([proc]) as watch:
            watch.wait(wait)
        if proc.poll() is None:
            proc.kill()
    proc.wait()


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


def private_endpoint(folder: Path) -> str:
    """A server address for one run: an ipc socket in the run's own folder (made by mkdtemp,
    mode 0700: no other user reaches it, and no port to find; cheaper than tcp loopback per
    message), or tcp loopback with an OS-chosen port where ipc is unavailable (Windows) or
    the folder's path is too long for a socket."""
    from rbcosim.endpoints import IPC_PATH_MAX

    path = folder / "server.sock"
    if os.name == "nt" or len(os.fsencode(path)) > IPC_PATH_MAX:
        return "tcp://127.0.0.1:0"
    return f"ipc://{path}"


class ServerProcess:
    """`rbcosim serve` in a child process, started at construction; `wait_address` reads the
    address from its first stdout line. Its log goes to a folder of its own (removed by `stop`).

    root: the only folder it may read (the scenario's own folder, which holds what it names).
    Refuses (CosimError, nothing started) a bind address that is not loopback."""

    def __init__(self, bind: str | None, barrier_timeout: float, root: Path):
        from rbcosim.endpoints import is_loopback

        if bind is not None and not is_loopback(bind):
            raise CosimError(
                f"--bind {bind}: the server `rbcosim cosim` starts binds to loopback only; to "
                "serve other hosts run `rbcosim serve --allow-remote ...` yourself and pass "
                "--connect ADDR"
            )
        self._folder = Path(tempfile.mkdtemp(prefix="rbcosim-serve-"))
        bind = bind if bind is not None else private_endpoint(self._folder)
        self.log_path = self._folder / "server.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            rbcosim_command("serve", "--bind", bind, "--barrier-timeout", repr(barrier_timeout),
                            "--root", str(root)),
            stdout=subprocess.PIPE, stderr=self._log, text=True,
            env=child_env(),
        )
        self.address: str | None = None
        self._stopping = False
        self._terminated = False

    def wait_address(self, wait: float = 60.0) -> str:
        """The address it serves on, once it says (s to wait: it first imports the service and
        its fork server loads the core)."""
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
        reap(self.proc, 5.0)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)
