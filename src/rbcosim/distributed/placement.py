"""Where `rbcosim cosim` runs its processes while they step: on one CPU.

A macro step's exchange is a chain of wake-ups: the flexible solver sends, the server's session
worker wakes, steps and replies, the solver wakes (and ZeroMQ's I/O thread in each process
between them). A wake-up on another CPU costs far more than a switch on the same CPU where an
idle CPU must first be woken, as on virtual machines: a pyzmq round trip between two processes
took 120 µs on two CPUs and 22 µs with both on one (2-CPU test machine, `bench_cosim.py` prints
the effect on the main job). The two sides mostly take turns, so little parallel work is lost.

Linux only (``os.sched_setaffinity``); the processes keep their start-up on every CPU (their
imports run in parallel) and are moved once they step.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from rbcosim.errors import RbcosimError

AUTO, NONE = "auto", "none"


class PlacementError(RbcosimError):
    """A CPU that cannot be used (not in this process's allowed set, or no affinity API)."""


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (all of the machine's when the OS cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def parse_pin(text: str) -> str | int:
    """A `--pin` value: "auto", "none" or a CPU number (checked against the allowed set)."""
    value = text.strip().lower()
    if value in (AUTO, NONE):
        return value
    if not value.isdigit():
        raise PlacementError(f"expected auto, none or a CPU number, got {text!r}")
    cpu = int(value)
    if not hasattr(os, "sched_setaffinity"):
        raise PlacementError("this platform cannot place processes on a CPU; use none")
    if cpu not in allowed_cpus():
        raise PlacementError(f"CPU {cpu} is not one this process may run on: {allowed_cpus()}")
    return cpu


def chosen_cpu(pin: str | int) -> int | None:
    """The CPU for `pin`: auto → the last allowed CPU (None with one CPU or no affinity API,
    where there is nothing to gain), none → None, a number → itself."""
    if pin == NONE:
        return None
    if pin == AUTO:
        cpus = allowed_cpus()
        return cpus[-1] if len(cpus) > 1 and hasattr(os, "sched_setaffinity") else None
    return int(pin)


def descendants(roots: Iterable[int]) -> list[int]:
    """The processes `roots` and every process below them (from /proc: pid → parent, read
    once), parents first."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(name))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo += sorted(children.get(pid, ()))
    return out


def pin_processes(pids: Iterable[int], cpu: int | Iterable[int]) -> int:
    """Every thread of every process in `pids` onto `cpu` (or a set of CPUs; threads and
    processes made later inherit it); returns how many threads were moved. Processes or
    threads that ended meanwhile are skipped."""
    mask = {cpu} if isinstance(cpu, int) else set(cpu)
    moved = 0
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            try:
                os.sched_setaffinity(int(tid), mask)
            except (ProcessLookupError, FileNotFoundError):
                continue
            moved += 1
    return moved
