"""What keeps session workers and the server's file descriptors in check: a worker's identity
(pid and start time, so that a worker outlives the fork server that started it without being
taken for dead), the pipe whose closing ends every worker with the server, the file
descriptor headroom checked before a worker is started, and the status a busy worker shows.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import resource
import select
import signal
import struct

from rbcosim.service.errors import ProtocolError

FD_RESERVE = 32  # file descriptors a create_session leaves free (a worker's start uses ~5)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # state is field 3, starttime field 22


class ProcessIdentity:
    """A process by pid and start time (clock ticks after boot), immune to pid reuse."""

    def __init__(self, pid: int) -> None:
        fields = _stat_fields(pid)
        self.pid = pid
        self.start = fields[19] if fields else None

    def alive(self) -> bool:
        """Running (not a zombie, not another process under a reused pid)."""
        fields = _stat_fields(self.pid)
        return fields is not None and fields[0] not in "ZXx" and fields[19] == self.start

    def kill(self) -> None:
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)


def check_fd_headroom(reserve: int = FD_RESERVE) -> None:
    """Refuse (``resource_exhausted``) before a worker is started when the server process has
    fewer than `reserve` file descriptors left under its limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return
    used = len(os.listdir("/proc/self/fd"))
    if used + reserve > soft:
        raise ProtocolError(
            "resource_exhausted",
            f"the server has {used} of its {soft} file descriptors open (its limit, ulimit -n) "
            f"and keeps {reserve} free: no session can be started now; close sessions or idle "
            "connections, or start the server with a higher limit")


def arm_server_death(read_fd: int) -> None:
    """In a worker: end this process (SIGIO, whose default action terminates) as soon as the
    server process is gone, even in the middle of a step. `read_fd` is the read end of a pipe
    whose only write end the server holds; its closing raises SIGIO on an O_ASYNC reader.
    The pipe is reopened so that this process owns its own open file description."""
    fd = os.open(f"/proc/self/fd/{read_fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGIO, signal.SIG_DFL)
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    if select.select([fd], [], [], 0)[0]:  # nobody writes: readable means EOF, already gone
        os._exit(0)


_STATUS = struct.Struct("<ddd")  # busy since (monotonic s, 0: idle), step index, time (s)
_BUSY = struct.Struct("<d")  # the first of them


class WorkerStatus:
    """A worker's status in a small shared file: whether it is busy with a request and since
    when (CLOCK_MONOTONIC, shared by all processes), and its session's step and time."""

    def __init__(self, path: str) -> None:
        self.path = path

    def create(self) -> None:
        """In the worker: make the file and map it (no descriptor stays open)."""
        with open(self.path, "w+b") as f:
            f.write(bytes(_STATUS.size))
            f.flush()
            self._map = mmap.mmap(f.fileno(), _STATUS.size)

    def set(self, busy_since: float, step: float, time: float) -> None:
        _STATUS.pack_into(self._map, 0, busy_since, step, time)

    def busy(self, since: float) -> None:
        """Busy since `since` (monotonic s); step and time stay as the last `set` wrote them
        (the worker's session changes them only while busy)."""
        _BUSY.pack_into(self._map, 0, since)

    def doubles(self):
        """The mapped file as a float64 array [busy since, step, time] (the C step path
        writes it)."""
        import numpy as np  # (only the worker's C path needs it)

        return np.frombuffer(self._map, dtype=np.float64)

    def read(self) -> tuple[float, float, float] | None:
        """In the socket loop: (busy since, step, time), or None if the worker wrote none."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(_STATUS.size)
        except OSError:
            return None
        return _STATUS.unpack(data) if len(data) == _STATUS.size else None

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass
