"""Cost of one FMU doStep with set/get through FMPy, next to a bare pythonfmu slave and to the
in-process RigidSide step of the same scenario, all measured in this run.

    python benchmarks/bench_fmu.py [SCENARIO] [--steps N] [--repeat R]

Rows (µs per macro step, best of R runs of N steps):

- ``bare FMI k``: a pythonfmu / pythonfmu3 slave with as many Real inputs and outputs as the
  scenario's FMU, whose do_step does nothing: the price of the FMI boundary alone;
- ``rbcosim FMI k``: the exported scenario, embedded mode: setReal (all inputs, wrench
  derivatives and flexible-side report included), doStep, getReal (all outputs, so the
  accelerations, gaps and energy residuals are evaluated each step);
- ``in-process step``: RigidSide.step alone;
- ``in-process step + I/O``: set_flex_report, gaps, set_wrench_polynomial, step,
  point_outputs, point_accelerations, joint gaps: the same work the FMU
  does per doStep and get, without FMI.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

_BARE_FMI2 = """
from pythonfmu import Fmi2Causality, Fmi2Slave, Real


class BareSlave(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for i in range({n_in}):
            setattr(self, f"u{{i}}", 0.0)
            self.register_variable(Real(f"u{{i}}", causality=Fmi2Causality.input))
        for i in range({n_out}):
            setattr(self, f"y{{i}}", 0.0)
            self.register_variable(Real(f"y{{i}}", causality=Fmi2Causality.output,
                                        initial=Fmi2Initial.exact))

    def do_step(self, current_time, step_size):
        return True
""".replace("import Fmi2Causality,", "import Fmi2Causality, Fmi2Initial,")

_BARE_FMI3 = """
from pythonfmu3 import Fmi3Causality, Fmi3Initial, Fmi3Slave, Fmi3Variability, Float64


class BareSlave(Fmi3Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.time = 0.0
        self.register_variable(Float64("time", causality=Fmi3Causality.independent,
                                       variability=Fmi3Variability.continuous))
        for i in range({n_in}):
            setattr(self, f"u{{i}}", 0.0)
            self.register_variable(Float64(f"u{{i}}", causality=Fmi3Causality.input,
                                           variability=Fmi3Variability.continuous))
        for i in range({n_out}):
            setattr(self, f"y{{i}}", 0.0)
            self.register_variable(Float64(f"y{{i}}", causality=Fmi3Causality.output,
                                           variability=Fmi3Variability.continuous,
                                           initial=Fmi3Initial.exact))

    def do_step(self, current_time, step_size):
        return True
"""


def build_bare(version: int, n_in: int, n_out: int, folder: Path) -> Path:
    """A do-nothing slave with n_in Real inputs and n_out Real outputs."""
    script = folder / f"bare{version}" / "bare_slave.py"
    script.parent.mkdir()
    template = _BARE_FMI2 if version == 2 else _BARE_FMI3
    script.write_text(template.format(n_in=n_in, n_out=n_out))
    saved = list(sys.path)
    try:
        if version == 2:
            from pythonfmu import FmuBuilder
        else:
            from pythonfmu3 import FmuBuilder
        return Path(FmuBuilder.build_FMU(script, dest=script.parent, needsExecutionTool=False))
    finally:
        sys.path[:] = saved
        sys.modules.pop("bare_slave", None)


def time_fmu(path: Path, unzipdir: Path, steps: int, repeat: int) -> float:
    """Best µs per (setReal all inputs, doStep, getReal all outputs) through FMPy."""
    import fmpy
    from fmpy.fmi2 import FMU2Slave
    from fmpy.fmi3 import FMU3Slave

    md = fmpy.read_model_description(str(path))
    fmpy.extract(str(path), str(unzipdir))
    is2 = md.fmiVersion == "2.0"
    slave = (FMU2Slave if is2 else FMU3Slave)(
        guid=md.guid,
        unzipDirectory=str(unzipdir),
        modelIdentifier=md.coSimulation.modelIdentifier,
        instanceName="bench",
    )
    slave.instantiate()
    t = float(md.defaultExperiment.startTime) if md.defaultExperiment else 0.0
    H = float(md.defaultExperiment.stepSize) if md.defaultExperiment else 1e-3
    if is2:
        slave.setupExperiment(startTime=t)
        slave.enterInitializationMode()
    else:
        slave.enterInitializationMode(startTime=t)
    slave.exitInitializationMode()
    inputs = [v.valueReference for v in md.modelVariables if v.causality == "input"]
    outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    values = [float(v.start) for v in md.modelVariables if v.causality == "input"]
    set_, get = (slave.setReal, slave.getReal) if is2 else (slave.setFloat64, slave.getFloat64)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(steps):
            set_(inputs, values)
            slave.doStep(t, H)
            get(outputs)
            t += H
        best = min(best, (time.perf_counter() - start) / steps)
    slave.terminate()
    slave.freeInstance()
    return best * 1e6


def time_in_process(scenario: Path, steps: int, repeat: int) -> tuple[float, float]:
    """Best µs per RigidSide.step, and per step with the FMU's inputs and outputs."""
    from rbcosim.cosim.continuity import joint_gaps
    from rbcosim.cosim.rigid_side import RigidSide

    side = RigidSide.from_scenario(scenario)
    H = side.macro_step
    polynomial = np.zeros((3, 6))
    flex = np.array([0.0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    bare = full = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(steps):
            side.step(H)
        bare = min(bare, (time.perf_counter() - start) / steps)
        start = time.perf_counter()
        for _ in range(steps):
            for j in side.joint_names:
                side.set_flex_report(j, flex, 0.0)
            side.gaps()
            for p in side.point_names:
                side.set_wrench_polynomial(p, polynomial)
            side.step(H)
            outputs = side.point_outputs()
            side.point_accelerations()
            for j in side.joint_names:
                joint_gaps(outputs[side.joint_point(j)], flex)
        full = min(full, (time.perf_counter() - start) / steps)
    return bare * 1e6, full * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario", nargs="?", default=str(REPO / "scenarios" / "two_mass_oscillator.toml")
    )
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    import fmpy

    from rbcosim.fmu_export import ExportOptions, export_fmu

    scenario = Path(args.scenario)
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench_fmu_") as tmp:
        tmp = Path(tmp)
        for version in (2, 3):
            path = export_fmu(
                scenario, tmp / f"scenario{version}.fmu", ExportOptions(fmi_version=version)
            )
            md = fmpy.read_model_description(str(path))
            n_in = sum(v.causality == "input" for v in md.modelVariables)
            n_out = sum(v.causality == "output" for v in md.modelVariables)
            bare = build_bare(version, n_in, n_out, tmp)
            rows.append(
                (
                    f"bare FMI {version} ({n_in} in, {n_out} out)",
                    time_fmu(bare, tmp / f"ub{version}", args.steps, args.repeat),
                )
            )
            rows.append(
                (
                    f"rbcosim FMI {version}",
                    time_fmu(path, tmp / f"us{version}", args.steps, args.repeat),
                )
            )
    step, step_io = time_in_process(scenario, args.steps, args.repeat)
    rows += [("in-process step", step), ("in-process step + I/O", step_io)]

    print(
        f"scenario {scenario.name}: µs per macro step, best of {args.repeat} x {args.steps} steps"
    )
    print(f"{'':34s} {'µs':>10s} {'/ in-process step':>18s} {'- in-process step + I/O':>24s}")
    for name, us in rows:
        print(f"{name:34s} {us:10.1f} {us / step:18.4f} {us - step_io:21.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
