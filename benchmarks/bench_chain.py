"""µs per RK4 step for N-link pendulum chains, maximal and minimal formulations, same run.

    python benchmarks/bench_chain.py [--links 10 100 1000] [--seconds 2]

Each case runs whole RK4 steps (dt = 1e-3, from the generator's initial state, after one
warm-up step) for about `--seconds` s or at least 3 steps, and reports the median step time.
The growth ratio 1000/100 is ~10 for an O(n) method and ~100 for O(n²).
"""

from __future__ import annotations

import argparse
import statistics
import time

from rbcosim.minimal.route import MinimalSimulation
from rbcosim.scenario import load_scenario_text
from rbcosim.simulate import RigidSimulation

DT = 1e-3


def chain_text(links: int) -> str:
    return f"""
[generators.chain]
links = {links}
[solver]
integrator = "rk4"
dt = {DT}
t_end = 1.0
"""


def time_steps(sim, seconds: float) -> float:
    """Median wall time of one step (s)."""
    sim.step(DT)
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < seconds and len(times) < 1000):
        t0 = time.perf_counter()
        sim.step(DT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--seconds", type=float, default=2.0, help="time budget per case")
    args = parser.parse_args(argv)
    table: dict[str, dict[int, float]] = {"maximal": {}, "minimal": {}}
    print(f"{'N':>6} {'maximal µs/step':>16} {'minimal µs/step':>16}")
    for n in args.links:
        scenario = load_scenario_text(chain_text(n))
        table["maximal"][n] = time_steps(RigidSimulation(scenario.model, scenario.solver),
                                         args.seconds)
        table["minimal"][n] = time_steps(MinimalSimulation(scenario.model, scenario.solver),
                                         args.seconds)
        print(f"{n:>6} {table['maximal'][n] * 1e6:>16.1f} {table['minimal'][n] * 1e6:>16.1f}",
              flush=True)
    if 100 in args.links and 1000 in args.links:
        for name, row in table.items():
            print(f"growth 1000/100, {name}: {row[1000] / row[100]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
