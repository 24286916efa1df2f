"""The flexible solver's CPU per macro step: its process's CPU time (all its threads, ZeroMQ's
I/O thread included) over `run_flex_solver`, from attach to the last report.

    python benchmarks/bench_flex_cpu.py SCENARIO [--rounds 3] [--set KEY=VALUE ...]

Each round starts `rbcosim cosim SCENARIO --serve-external` (its server and session) and drives
the first flexible body's joints from this process (time.process_time around run_flex_solver),
the scenario's other flexible bodies as `rbcosim flex` processes. Prints the medians over the
rounds of the CPU and the wall time per macro step. A benchmark prints figures; not a test.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rbcosim.client import Client
from rbcosim.distributed.flex_solver import (
    body_joints,
    endpoints_for,
    macro_steps,
    run_flex_solver,
)
from rbcosim.scenario.loader import load_scenario

_COMMAND = re.compile(r"rbcosim flex --connect (\S+) --session (\S+) --body (\S+)")


def one_round(path: Path, sets: list[str], out: Path) -> tuple[float, float]:
    """(CPU s, wall s) of the first body's flexible solver over one whole run."""
    scenario = load_scenario(path, sets)
    overrides = [a for s in sets for a in ("--set", s)]
    cosim = subprocess.Popen(
        [sys.executable, "-m", "rbcosim", "cosim", str(path), "--serve-external", "--no-plot",
         "--out", str(out), *overrides], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    commands = []
    for line in cosim.stdout:
        found = _COMMAND.search(line)
        if found:
            commands.append(found.groups())
        if len(commands) == len(body_joints(scenario)):
            break
    others = [subprocess.Popen(
        [sys.executable, "-m", "rbcosim", "flex", "--connect", a, "--session", s, "--body", b,
         "--scenario", str(path), *overrides], stdout=subprocess.DEVNULL)
        for a, s, b in commands[1:]]
    address, session, body = commands[0]
    joints = body_joints(scenario)[body]
    endpoints = endpoints_for(scenario, joints)
    with Client(address, timeout=120.0) as client:
        client.hello("bench_flex_cpu")
        cpu, wall = time.process_time(), time.perf_counter()
        run_flex_solver(scenario, joints, client, session, endpoints=endpoints)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    for p in others:
        p.wait()
    cosim.stdout.read()
    cosim.wait()
    return cpu, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    path = Path(args.scenario).resolve()
    steps = macro_steps(load_scenario(path, args.sets))
    with tempfile.TemporaryDirectory(prefix="bench_flex_cpu_") as tmp:
        runs = [one_round(path, args.sets, Path(tmp) / "r.csv") for _ in range(args.rounds)]
    cpu = statistics.median(c for c, _ in runs) / steps * 1e6
    wall = statistics.median(w for _, w in runs) / steps * 1e6
    print(f"{path.stem}: flexible solver {cpu:.0f} µs of CPU and {wall:.0f} µs of wall time per "
          f"macro step ({steps} steps, medians of {args.rounds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
