"""The main job's wall time, `rbcosim cosim` next to `rbcosim run`, split into start-up and stepping.

    python benchmarks/bench_cosim.py [SCENARIO] [--rounds 3]

SCENARIO defaults to scenarios/rigid_flex_pendulum.toml (the main job: 8000 macro steps). Each
round runs, one after the other, so that load from other processes hits all alike:

- `rbcosim run SCENARIO` and `rbcosim cosim SCENARIO` as processes (wall time, imports,
  results file and all; no plot), and `rbcosim cosim` of the first 4 macro steps: its wall
  time is the multi-process run's start-up and shut-down (processes started, session created,
  flexible solver attached, results merged); the full run's wall time less it is the stepping;
- `rbcosim cosim --pin none`: the same with the processes where the OS puts them (the default,
  --pin auto, moves them onto one CPU once they step: rbcosim.distributed.placement);
- a raw pyzmq + msgpack echo (benchmarks/bench_service.py) round trip of one interface point,
  the floor of one macro step's exchange on this machine at this moment, with the two
  processes where the OS puts them and both on one CPU.

Then the start-up's parts, measured apart: `rbcosim serve` until it prints its address (which
it does once its session workers' fork server has loaded the core), the first create_session
and a second one, and an `rbcosim flex` process until its attach shows in the session's
heartbeat.

Also the CPU time the machine was busy while each command ran (all its processes, and any
other load), which load moves less than the wall time. Medians over the rounds; the load
average is printed (the machine may be shared). Benchmarks print figures; they are not tests.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_service import ECHO, RawLoop, start

import rbcosim
from rbcosim.client import Client
from rbcosim.distributed.placement import allowed_cpus, pin_processes
from rbcosim.scenario.loader import load_scenario


def busy_cpu() -> float:
    """Seconds of CPU the machine has spent busy so far, over all its CPUs (/proc/stat: all
    but idle and iowait). A command's processes are not all reaped by their parents (the
    session workers' fork server ends by signal), so their own accounting misses some; the
    machine's busy time does not, and includes other load (the load average is printed)."""
    with open("/proc/stat", encoding="ascii") as f:
        ticks = [int(v) for v in f.readline().split()[1:8]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def wall(*args: str, cpu: list | None = None) -> float:
    """Wall time (s) of `python -m rbcosim ARGS` in a subprocess; with `cpu`, appends the
    machine's busy CPU time (s, `busy_cpu`) while it ran: server, session worker and flexible
    solvers included, which load from other jobs changes far less than the wall time."""
    begin, begin_cpu = time.perf_counter(), busy_cpu()
    subprocess.run([sys.executable, "-m", "rbcosim", *args], check=True,
                   stdout=subprocess.DEVNULL)
    if cpu is not None:
        cpu.append(busy_cpu() - begin_cpu)
    return time.perf_counter() - begin


def startup_parts(scenario: Path, joint: str) -> dict[str, float]:
    """Seconds: serve ready, first and second create_session, flex process attached."""
    begin = time.perf_counter()
    serve = subprocess.Popen(
        [sys.executable, "-m", "rbcosim", "serve", "--bind", "tcp://127.0.0.1:0", "--root",
         str(scenario.parent)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = serve.stdout.readline().split("serving on ", 1)[1].strip()
    out = {"serve ready": time.perf_counter() - begin}
    flex = None
    try:
        with Client(address) as c:
            for name in ("first create_session", "create_session"):
                begin = time.perf_counter()
                info = c.create_session(scenario.name, wait_for_joints=True)
                out[name] = time.perf_counter() - begin
            begin = time.perf_counter()
            flex = subprocess.Popen(
                [sys.executable, "-m", "rbcosim", "flex", "--connect", address, "--session",
                 info["session"], "--joint", joint, "--scenario", str(scenario)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while not c.heartbeat().get("clients"):
                time.sleep(0.002)
            out["flex attached"] = time.perf_counter() - begin
    finally:
        for p in (flex, serve):
            if p is not None:
                p.terminate()
                p.wait()
    return out


def pinned_echo(loop: RawLoop, echo: subprocess.Popen, n: int) -> float:
    """µs per echo round trip with this process and the echo server on one CPU."""
    cpus = allowed_cpus()
    pin_processes([os.getpid(), echo.pid], cpus[-1])
    try:
        return loop.run(n)
    finally:
        pin_processes([os.getpid(), echo.pid], cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?",
                        default=str(REPO / "scenarios" / "rigid_flex_pendulum.toml"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    # The timed processes load compiled modules, as from an installed package (pip compiles
    # at install): an edited source tree would otherwise be compiled again by every process
    # of every run where PYTHONDONTWRITEBYTECODE is set (tens of ms of each start-up).
    compileall.compile_dir(Path(rbcosim.__file__).parent, quiet=1)
    path = Path(args.scenario).resolve()
    scenario = load_scenario(path)
    H = scenario.cosim.macro_step
    steps = round(scenario.solver.t_end / H)
    echo, echo_address = start(ECHO, "tcp://127.0.0.1:0", "1")
    loop = RawLoop(echo_address, 1)
    loop.run(200)
    rows: dict[str, list[float]] = {
        k: [] for k in ("run", "cosim", "cosim --pin none", "start-up", "echo", "echo pinned")}
    cpu: dict[str, list[float]] = {k: [] for k in ("run", "cosim", "start-up")}
    parts: dict[str, list[float]] = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench_cosim_") as tmp:
        out = str(Path(tmp) / "r.csv")
        try:
            for _ in range(args.rounds):
                rows["run"].append(wall("run", str(path), "--quiet", "--out", out,
                                        cpu=cpu["run"]))
                rows["cosim"].append(wall("cosim", str(path), "--no-plot", "--quiet", "--out",
                                          out, cpu=cpu["cosim"]))
                rows["cosim --pin none"].append(wall("cosim", str(path), "--no-plot",
                                                     "--quiet", "--out", out, "--pin", "none"))
                rows["start-up"].append(wall("cosim", str(path), "--no-plot", "--quiet",
                                             "--out", out, "--t-end", repr(4 * H),
                                             cpu=cpu["start-up"]))
                rows["echo"].append(loop.run(min(steps, 2000)))  # µs per round trip
                rows["echo pinned"].append(pinned_echo(loop, echo, min(steps, 2000)))
                for k, v in startup_parts(path, scenario.couplings[0].name).items():
                    parts.setdefault(k, []).append(v)
                load.append(os.getloadavg()[0])
        finally:
            echo.terminate()
            echo.wait()
    med = {k: statistics.median(v) for k, v in rows.items()}
    ratios = [c / r for c, r in zip(rows["cosim"], rows["run"])]
    stepping = [(c - s) / (steps - 4) * 1e6 for c, s in zip(rows["cosim"], rows["start-up"])]
    print(f"{path.name}: {steps} macro steps of {H} s, scheme {scenario.cosim.scheme}; "
          f"medians of {args.rounds} rounds; load average {min(load):.1f} to {max(load):.1f} "
          f"on {os.cpu_count()} CPUs")
    print(f"rbcosim run (process wall)       {med['run']:7.2f} s")
    print(f"rbcosim cosim (process wall)     {med['cosim']:7.2f} s   "
          f"{statistics.median(ratios):.2f}x run")
    print(f"  start-up and shut-down         {med['start-up']:7.2f} s   (cosim of 4 steps)")
    print(f"  stepping                       {med['cosim'] - med['start-up']:7.2f} s   "
          f"{statistics.median(stepping):.0f} µs per macro step")
    print(f"rbcosim cosim --pin none         {med['cosim --pin none']:7.2f} s   "
          f"{statistics.median(c / r for c, r in zip(rows['cosim --pin none'], rows['run'])):.2f}"
          "x run")
    print(f"raw pyzmq+msgpack echo           {med['echo']:7.0f} µs per round trip   stepping "
          f"{statistics.median(s / e for s, e in zip(stepping, rows['echo'])):.2f}x echo")
    print(f"  the same on one CPU            {med['echo pinned']:7.0f} µs per round trip   "
          f"{steps} of them: {med['echo pinned'] * steps * 1e-6:.2f} s")
    for k, v in parts.items():
        print(f"  {k:30s} {statistics.median(v) * 1e3:7.0f} ms")
    c = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"busy CPU time while running: run {c['run']:.2f} s, cosim {c['cosim']:.2f} s "
          f"({c['cosim'] / c['run']:.2f}x), cosim of 4 steps {c['start-up']:.2f} s; stepping "
          f"{(c['cosim'] - c['start-up']) / (steps - 4) * 1e6:.0f} µs of CPU per macro step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
