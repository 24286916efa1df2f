"""Wall time of Andrews' squeezer: 3000 RK4 steps of 1e-5 s to t = 0.03 s, both routes.

    python benchmarks/bench_squeezer.py [--repeat R] [--only maximal|minimal]

scenarios/andrews_squeezer.toml (seven bodies, ten revolute joints, three closed loops; the
accuracy of these runs against the published reference is tests/test_andrews_squeezer.py's
business). Per route, the median of R runs (the routes taking turns): the build (TOML loading
and route construction, s), the whole run as `rbcosim run` does it (rbcosim.runner.run_scenario:
build, 3000 steps and 301 results rows, s) — the figure the target of 0.3 s after the rigid
core's rewrite is about — and 3000 calls of the route's step() alone (s, and µs per step).
No MuJoCo anchor here. A route that raises is reported with its error. Benchmarks print
figures; they are not tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rbcosim.maximal.simulate import RigidSimulation
from rbcosim.minimal.route import MinimalSimulation
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "andrews_squeezer.toml"
ROUTES = {"maximal": RigidSimulation, "minimal": MinimalSimulation}
TARGET_S = 0.3  # s for the whole run


def measure(route: str) -> tuple[float, float, float]:
    """(build s, whole run s, 3000 step() calls s) on fresh models."""
    overrides = {"solver.formulation": f'"{route}"'}
    start = time.perf_counter()
    scenario = load_scenario(SCENARIO, overrides)
    sim = ROUTES[route](scenario.model, scenario.solver)
    build = time.perf_counter() - start
    dt = scenario.solver.dt
    start = time.perf_counter()
    for _ in range(round(scenario.solver.t_end / dt)):
        sim.step(dt)
    steps = time.perf_counter() - start
    start = time.perf_counter()
    run_scenario(load_scenario(SCENARIO, overrides), progress=False)
    return build, time.perf_counter() - start, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per route (median)")
    parser.add_argument("--only", choices=list(ROUTES), help="one route only")
    args = parser.parse_args(argv)
    routes = [args.only] if args.only else list(ROUTES)
    runs: dict[str, list] = {r: [] for r in routes}
    failed: dict[str, str] = {}
    for _ in range(args.repeat):
        for route in (r for r in routes if r not in failed):
            try:
                runs[route].append(measure(route))
            except Exception as exc:  # a broken route: report it, time the other
                failed[route] = f"failed: {type(exc).__name__}: {exc}"
    print(f"{SCENARIO.name}: 3000 RK4 steps of 1e-5 s, median of {args.repeat} run(s); "
          f"target {TARGET_S} s for the whole run")
    print(f"  {'route':10s} {'build s':>8s} {'run s':>8s} {'/ target':>9s} {'steps s':>8s} "
          f"{'µs/step':>8s}")
    for route in routes:
        if route in failed:
            print(f"  {route:10s} {failed[route]}")
            continue
        build, run, steps = (statistics.median(r[i] for r in runs[route]) for i in range(3))
        print(f"  {route:10s} {build:8.3f} {run:8.2f} {run / TARGET_S:9.1f} {steps:8.2f} "
              f"{steps / 3000 * 1e6:8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
