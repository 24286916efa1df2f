"""`rbcosim cosim --pin`: the processes of a run onto one CPU, checked against what the kernel
reports for each thread (/proc/PID/task/TID/status), and the option's errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rbcosim.distributed.placement import (
    PlacementError,
    allowed_cpus,
    chosen_cpu,
    descendants,
    parse_pin,
    pin_processes,
)

needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(allowed_cpus()) < 2,
    reason="needs Linux CPU affinity and two CPUs")

# A parent with a second thread and a child process (which also has a thread), all sleeping.
TREE = """
import subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
child = subprocess.Popen([sys.executable, "-c",
    "import threading, time; threading.Thread(target=time.sleep, args=(60,), daemon=True)"
    ".start(); print('up', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""


def _allowed(pid: int, tid: str) -> str:
    with open(f"/proc/{pid}/task/{tid}/status", encoding="ascii") as f:
        return next(line.split(":", 1)[1].strip() for line in f
                    if line.startswith("Cpus_allowed_list"))


@needs_affinity
def test_every_thread_of_the_tree_lands_on_the_cpu():
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(proc.stdout.readline())
        tree = descendants([proc.pid])
        assert tree[0] == proc.pid and grandchild in tree
        cpu = allowed_cpus()[-1]
        before = {(pid, tid): _allowed(pid, tid) for pid in tree
                  for tid in os.listdir(f"/proc/{pid}/task")}
        assert any(v != str(cpu) for v in before.values())  # not pinned to start with
        moved = pin_processes(tree, cpu)
        assert moved == len(before) >= 4  # two processes with two threads each at least
        for pid, tid in before:
            assert _allowed(pid, tid) == str(cpu)
    finally:
        for pid in reversed(descendants([proc.pid])):
            os.kill(pid, 9)
        proc.wait()


def test_processes_that_ended_are_skipped():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert pin_processes([proc.pid], allowed_cpus()[0]) == 0


def test_pin_values():
    assert parse_pin("auto") == "auto" and parse_pin(" None ") == "none"
    assert chosen_cpu("none") is None
    cpu = allowed_cpus()[0]
    if hasattr(os, "sched_setaffinity"):
        assert parse_pin(str(cpu)) == cpu and chosen_cpu(cpu) == cpu
    auto = chosen_cpu("auto")
    assert auto is None if len(allowed_cpus()) < 2 else auto == allowed_cpus()[-1]


@pytest.mark.parametrize("text, message", [
    ("fast", "expected auto, none or a CPU number, got 'fast'"),
    ("-1", "expected auto, none or a CPU number, got '-1'"),
])
def test_bad_pin_values_say_what_is_accepted(text, message):
    with pytest.raises(PlacementError) as err:
        parse_pin(text)
    assert str(err.value) == message


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_a_cpu_outside_the_allowed_set_is_refused_with_the_set():
    outside = max(allowed_cpus()) + 1
    with pytest.raises(PlacementError) as err:
        parse_pin(str(outside))
    assert str(err.value) == (f"CPU {outside} is not one this process may run on: "
                              f"{allowed_cpus()}")


class _Proc:
    def __init__(self, proc):
        self.proc = proc


@needs_affinity
@pytest.mark.parametrize("pin, server, placed", [
    ("auto", True, True), ("none", True, False), ("auto", False, False), (0, False, True)])
def test_a_run_places_its_server_and_flexible_solvers(pin, server, placed):
    """driver._place: auto moves a run's own server (with its children) and flexible solvers;
    not with a server it did not start (--connect), nor with none; a number always."""
    from rbcosim.distributed.driver import _place
    from rbcosim.distributed.processes import CosimOptions

    procs = [subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    try:
        for p in procs:
            p.stdout.readline()
        cpu = pin if isinstance(pin, int) else allowed_cpus()[-1]
        before = {pid: _allowed(pid, str(pid)) for p in procs for pid in descendants([p.pid])}
        _place(CosimOptions(pin=pin), _Proc(procs[0]) if server else None, [_Proc(procs[1])])
        moved = procs if server else procs[1:]
        for p in procs:
            for pid in descendants([p.pid]):
                for tid in os.listdir(f"/proc/{pid}/task"):
                    want = str(cpu) if placed and p in moved else before[pid]
                    assert _allowed(pid, tid) == want
    finally:
        for p in procs:
            for pid in reversed(descendants([p.pid])):
                os.kill(pid, 9)
            p.wait()


def test_the_command_refuses_a_bad_pin_before_it_starts_anything(capsys, tmp_path):
    from rbcosim.cli.main import main

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "rigid_flex_pendulum.toml"
    code = main(["cosim", str(scenario), "--pin", "fast",
                 "-o", str(tmp_path / "r.csv")])
    assert code == 2
    assert ("argument --pin: expected auto, none or a CPU number, got 'fast'"
            in capsys.readouterr().err)
    assert not any(tmp_path.iterdir())
