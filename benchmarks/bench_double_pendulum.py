"""µs per RK4 step of the seed's double pendulum: rbcosim (maximal and minimal) against a
hand-written plain-Python RK4 of its two-angle Lagrange equations, measured in the same run.

    python benchmarks/bench_double_pendulum.py [--steps 2000]

The reference equations (uniform rods l, m; angles from the downward vertical):
  T = ½ m l² [4/3 θ̇1² + θ̇1 θ̇2 cos(θ1 − θ2) + 1/3 θ̇2²],  V = −m g l [3/2 cos θ1 + 1/2 cos θ2].
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from rbcosim.minimal.route import MinimalSimulation
from rbcosim.scenario import load_scenario
from rbcosim.simulate import RigidSimulation

L, M, G, DT = 0.5, 1.0, 9.81, 1e-3
SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "double_pendulum.toml"


def rates(t1, t2, w1, w2):
    """(θ̇1, θ̇2, θ̈1, θ̈2) of the two-angle equations, plain floats."""
    c, s = math.cos(t1 - t2), math.sin(t1 - t2)
    m11, m12, m22 = 4.0 / 3.0, 0.5 * c, 1.0 / 3.0
    f1 = -0.5 * s * w2 * w2 - 1.5 * G / L * math.sin(t1)
    f2 = 0.5 * s * w1 * w1 - 0.5 * G / L * math.sin(t2)
    det = m11 * m22 - m12 * m12
    return w1, w2, (m22 * f1 - m12 * f2) / det, (m11 * f2 - m12 * f1) / det


def rk4_step(y, h):
    k1 = rates(*y)
    k2 = rates(*(a + 0.5 * h * b for a, b in zip(y, k1)))
    k3 = rates(*(a + 0.5 * h * b for a, b in zip(y, k2)))
    k4 = rates(*(a + h * b for a, b in zip(y, k3)))
    return tuple(a + h / 6 * (b + 2 * c + 2 * d + e) for a, b, c, d, e in zip(y, k1, k2, k3, k4))


def per_step(fn, steps: int) -> float:
    """Best-of-3 mean wall time of one step, µs."""
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        best = min(best, (time.perf_counter() - start) / steps)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    state = [(math.radians(60), math.radians(30), 0.0, 0.0)]

    def plain():
        state[0] = rk4_step(state[0], DT)

    scenario = load_scenario(SCENARIO)
    maximal = RigidSimulation(scenario.model, scenario.solver)
    minimal = MinimalSimulation(scenario.model, scenario.solver)
    ref = per_step(plain, args.steps)
    rows = [("plain Python, two angles", ref),
            ("rbcosim maximal (multipliers + projection)", per_step(lambda: maximal.step(DT), args.steps // 4)),
            ("rbcosim minimal (joint coordinates, ABA)", per_step(lambda: minimal.step(DT), args.steps // 4))]
    print(f"double pendulum, RK4 dt = {DT} s, µs per step (best of 3)")
    for name, us in rows:
        print(f"  {name:45s} {us:10.1f} µs   ×{us / ref:7.1f} of plain Python")


if __name__ == "__main__":
    main()
