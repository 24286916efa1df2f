"""What a new user waits for: building the C core, then the main job's first run.

    python benchmarks/bench_first_run.py [--scenario FILE] [--skip-build]

1. Build: the C core (`rbcosim._core`) compiled from scratch into a temporary folder with the
   same compiler and flags as `pip install` (`setup.py build_ext`), wall seconds. The rest of a
   fresh `pip install -e .` is downloading wheels, which depends on the network, not on rbcosim.
2. First run: `rbcosim run SCENARIO` (default the main job, scenarios/rigid_flex_pendulum.toml)
   as a whole new process, wall seconds, then a second identical run. With the core compiled at
   install there is no cache and the two should agree within the machine's noise.
3. Per macro step: the in-process run's macro steps per second (rbcosim.runner.run_scenario,
   its own timing in the summary), rigid and flexible sides together.

Figures, not a test: the issue's targets are build <= 90 s, first run <= 1 s, <= 20 us per
macro step (8000 steps <= 0.15 s).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_seconds() -> float:
    """Wall seconds of compiling the C core from scratch (out of tree)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-temp",
                        f"{tmp}/obj", "--build-lib", f"{tmp}/lib", "--force"],
                       cwd=REPO, check=True, capture_output=True)
        return time.perf_counter() - start


def run_seconds(scenario: Path) -> float:
    """Wall seconds of `rbcosim run SCENARIO` as a new process (results in a temporary folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rbcosim", "run", str(scenario), "--out",
                        f"{tmp}/out.csv", "-q"], check=True, capture_output=True)
        return time.perf_counter() - start


def macro_step_seconds(scenario: Path) -> tuple[int, float]:
    """(macro steps, seconds of stepping) of an in-process run."""
    from rbcosim.runner import run_scenario
    from rbcosim.scenario.loader import load_scenario

    loaded = load_scenario(scenario)
    start = time.perf_counter()
    run_scenario(loaded, progress=False)
    seconds = time.perf_counter() - start
    step = loaded.cosim.macro_step if loaded.couplings else loaded.solver.dt
    return round(loaded.solver.t_end / step), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path,
                        default=REPO / "scenarios" / "rigid_flex_pendulum.toml")
    parser.add_argument("--skip-build", action="store_true", help="do not time the C build")
    args = parser.parse_args()
    if not args.skip_build:
        print(f"C core build (from scratch):  {build_seconds():6.1f} s   (target <= 90 s)")
    first, second = run_seconds(args.scenario), run_seconds(args.scenario)
    print(f"rbcosim run, first process:   {first:6.2f} s   (target <= 1 s)")
    print(f"rbcosim run, second process:  {second:6.2f} s   (first / second = "
          f"{first / second:.2f})")
    steps, seconds = macro_step_seconds(args.scenario)
    if steps:
        print(f"in process: {steps} macro steps in {seconds:.3f} s = "
              f"{1e6 * seconds / steps:.1f} us per macro step (target <= 20 us)")


if __name__ == "__main__":
    main()
