"""Speed-up of `rbcosim sweep` on a local Dask cluster against the same cases run one after
the other in one process (8 cases of the two-mass oscillator, 10 s simulated each).

The one-after-the-other figure runs each case through the same `run_case` the workers call.
The sweep figure includes starting the cluster and each worker's first import. Not a test.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from rbcosim.sweep import grid_cases, sweep
from rbcosim.sweep.case_run import run_case
from rbcosim.sweep.cases import scenario_digest

SCENARIO = Path(__file__).parents[1] / "scenarios" / "two_mass_oscillator.toml"
BASE = {"solver.t_end": "10.0"}
GRID = ["forces.k1.stiffness=5,10,20,40", "bodies.mass1.mass=1,2"]


def main() -> None:
    workers = os.cpu_count() or 1
    cases = grid_cases(scenario_digest(SCENARIO.read_bytes()), GRID, BASE)
    with tempfile.TemporaryDirectory() as tmp:
        run_case(str(SCENARIO), cases[0].parameters, "warm", tmp, [])  # load the compiled core
        start = time.perf_counter()
        for case in cases:
            run_case(str(SCENARIO), case.parameters, case.key, tmp, [])
        serial = time.perf_counter() - start
        start = time.perf_counter()
        table = sweep(SCENARIO, grid=GRID, overrides=BASE, out=Path(tmp) / "sweep",
                      workers=workers, progress=False)
        parallel = time.perf_counter() - start
    assert set(table["status"]) == {"ok"}
    print(f"{len(cases)} cases, {workers} workers")
    print(f"one after the other: {serial:.2f} s")
    print(f"rbcosim sweep (incl. cluster start): {parallel:.2f} s")
    print(f"speed-up: {serial / parallel:.2f}x")


if __name__ == "__main__":
    main()
