"""Where the main job's wall time goes: rigid side, flexible side, messaging.

    python benchmarks/bench_cosim.py [SCENARIO] [--t-end T] [--quick]

SCENARIO defaults to scenarios/rigid_flex_pendulum.toml (the main job), run to its own t_end
or to T (s; --quick: 0.25 s). Two runs, one after the other:

- in process, rbcosim.runner.run_scenario (after an untimed run of four macro steps, so that
  first-call costs such as imports and caches are not counted): every method of RigidSide is timed into "rigid side"
  and every method of FlexEndpoint and FlexBody into "flexible side" (perf_counter
  accumulators wrapped around the classes' methods from here; a call made while another timed
  call is running counts for the outer one only). The rest of the run's wall time is the
  master's own work: schemes, extrapolation, results rows.
- distributed, `rbcosim cosim SCENARIO --no-plot --quiet` in a subprocess (server and one
  flexible-solver process per flexible body over loopback), to the end time and, for the
  start-up, to four macro steps: the processes' start-up (imports, session set-up, results
  file) is the short run's wall time; messaging is what remains of the long run's once the
  start-up and the in-process rigid and flexible compute are taken off.

Seconds and shares of each run's wall time. With --quick the start-up dominates and its
run-to-run spread on a shared machine can exceed the messaging (even make it negative); use the
full run for the split. Benchmarks print figures; they are not tests.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rbcosim.cosim.flex_endpoint import FlexEndpoint
from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.flex.body import FlexBody
from rbcosim.runner import run_scenario
from rbcosim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[1]


class Accumulators:
    """Seconds per category, counting only the outermost timed call."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.depth = 0

    def wrap(self, cls: type, category: str) -> None:
        """Time every function defined on `cls` (methods, __init__; not properties) into
        `category`. The class stays wrapped for the rest of the process."""
        self.seconds.setdefault(category, 0.0)
        for name, member in list(vars(cls).items()):
            if inspect.isfunction(member) and (name == "__init__" or not name.startswith("__")):
                setattr(cls, name, self._timed(member, category))

    def _timed(self, fn, category: str):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            self.depth += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[category] += time.perf_counter() - start
                self.depth -= 1

        return timed


def in_process(scenario_path: Path, overrides: dict) -> tuple[float, dict[str, float]]:
    """Wall time of run_scenario (s) and the seconds spent in each side, after an untimed
    warm-up run of a few macro steps (imports and caches, which the distributed run's
    processes pay as start-up)."""
    acc = Accumulators()
    acc.wrap(RigidSide, "rigid side")
    acc.wrap(FlexEndpoint, "flexible side")
    acc.wrap(FlexBody, "flexible side")
    H = load_scenario(scenario_path, overrides).cosim.macro_step
    run_scenario(load_scenario(scenario_path, {**overrides, "solver.t_end": repr(4 * H)}),
                 progress=False)
    acc.seconds = dict.fromkeys(acc.seconds, 0.0)
    start = time.perf_counter()
    scenario = load_scenario(scenario_path, overrides)
    run_scenario(scenario, progress=False)
    return time.perf_counter() - start, acc.seconds


def distributed(scenario_path: Path, t_end: str | None) -> float:
    """Wall time (s) of `rbcosim cosim` in a subprocess, start-up included."""
    with tempfile.TemporaryDirectory(prefix="bench_cosim_") as tmp:
        command = [sys.executable, "-m", "rbcosim", "cosim", str(scenario_path), "--no-plot",
                   "--quiet", "--out", str(Path(tmp) / "results.csv")]
        if t_end is not None:
            command += ["--t-end", t_end]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?",
                        default=str(REPO / "scenarios" / "rigid_flex_pendulum.toml"))
    parser.add_argument("--t-end", help="end time, s (default: the scenario's)")
    parser.add_argument("--quick", action="store_true", help="--t-end 0.25")
    args = parser.parse_args(argv)
    t_end = args.t_end or ("0.25" if args.quick else None)
    path = Path(args.scenario)
    overrides = {"solver.t_end": t_end} if t_end else {}
    scenario = load_scenario(path, overrides)
    steps = round(scenario.solver.t_end / scenario.cosim.macro_step)

    wall, parts = in_process(path, overrides)
    compute = sum(parts.values())
    print(f"{path.name}: t_end = {scenario.solver.t_end} s, {steps} macro steps of "
          f"{scenario.cosim.macro_step} s, scheme {scenario.cosim.scheme}")
    print(f"in process (run_scenario)          {wall:8.2f} s   100.0 %")
    for name, seconds in [*parts.items(), ("master, results", wall - compute)]:
        print(f"  {name:32s} {seconds:8.2f} s   {100 * seconds / wall:5.1f} %")
    print(f"  per macro step: rigid {parts['rigid side'] / steps * 1e6:.0f} µs, "
          f"flexible {parts['flexible side'] / steps * 1e6:.0f} µs")

    startup = distributed(path, repr(4 * scenario.cosim.macro_step))
    total = distributed(path, t_end)
    messaging = total - startup - compute
    print(f"distributed (rbcosim cosim)        {total:8.2f} s   100.0 %")
    for name, seconds in [*parts.items(), ("start-up (4-step run)", startup),
                          ("messaging", messaging)]:
        print(f"  {name:32s} {seconds:8.2f} s   {100 * seconds / total:5.1f} %")
    print(f"  messaging per macro step: {messaging / steps * 1e6:.0f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
