"""Wall time of Andrews' squeezer: 3000 RK4 steps of 1e-5 s to t = 0.03 s, both routes.

    python benchmarks/bench_squeezer.py [--repeat R] [--only maximal|minimal]

scenarios/andrews_squeezer.toml (seven bodies, ten revolute joints, three closed loops; the
accuracy of this very run against the published reference is tests/test_andrews_squeezer.py's
business). Per route: the build (TOML loading and route construction, s) and the wall time of
the 3000 steps alone (s, no results rows; the median of R runs, the routes taking turns), with
µs per step. The target after the rigid core's rewrite is 0.3 s for the 3000 steps; there is no
MuJoCo anchor here. Benchmarks print figures; they are not tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rbcosim.minimal.route import MinimalSimulation
from rbcosim.scenario import load_scenario
from rbcosim.simulate import RigidSimulation

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "andrews_squeezer.toml"
ROUTES = {"maximal": RigidSimulation, "minimal": MinimalSimulation}
TARGET_S = 0.3  # s for the 3000 steps


def run(route: str) -> tuple[float, float, int]:
    """(build s, wall time of all steps s, number of steps) on a fresh model."""
    start = time.perf_counter()
    scenario = load_scenario(SCENARIO)
    sim = ROUTES[route](scenario.model, scenario.solver)
    build = time.perf_counter() - start
    dt = scenario.solver.dt
    steps = round(scenario.solver.t_end / dt)
    start = time.perf_counter()
    for _ in range(steps):
        sim.step(dt)
    return build, time.perf_counter() - start, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per route (median)")
    parser.add_argument("--only", choices=list(ROUTES), help="one route only")
    args = parser.parse_args(argv)
    routes = [args.only] if args.only else list(ROUTES)
    runs: dict[str, list[tuple[float, float, int]]] = {r: [] for r in routes}
    for _ in range(args.repeat):
        for route in routes:
            runs[route].append(run(route))
    print(f"{SCENARIO.name}: RK4, median of {args.repeat} run(s); target {TARGET_S} s "
          "for the 3000 steps")
    print(f"  {'route':10s} {'build s':>8s} {'steps':>6s} {'steps s':>8s} {'µs/step':>9s} "
          f"{'/ target':>9s}")
    for route, results in runs.items():
        build = statistics.median(r[0] for r in results)
        wall = statistics.median(r[1] for r in results)
        steps = results[0][2]
        print(f"  {route:10s} {build:8.3f} {steps:6d} {wall:8.2f} {wall / steps * 1e6:9.0f} "
              f"{wall / TARGET_S:9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
