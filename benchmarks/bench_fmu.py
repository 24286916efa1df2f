"""Cost of one FMU doStep with set/get through FMPy, as a ratio to a bare pythonfmu slave (the
anchor) and next to the in-process RigidSide step of the same scenario, all measured in this run.

    python benchmarks/bench_fmu.py [SCENARIO] [--steps N] [--repeat R]

SCENARIO defaults to scenarios/double_pendulum.toml, the seed's model (its FMU has parameters
only: no interface points, so no inputs or outputs; scenarios/two_mass_oscillator.toml is one
with a wrench in and a motion out). Rows (µs per macro step, best of R
rounds of N steps, the rows taking turns within each round):

- ``bare FMI k``: a pythonfmu / pythonfmu3 slave with as many Real inputs, outputs and
  parameters as the scenario's FMU, whose do_step does nothing: the price of the FMI boundary
  alone, and the anchor of the ``/ bare`` column;
- ``rbcosim FMI k``: the exported scenario, embedded mode: setReal (all inputs, wrench
  derivatives and flexible-side report included), doStep, getReal (all outputs, so the
  accelerations, gaps and energy residuals are evaluated each step);
- ``native FMI k``: the self-contained native FMU (``export-fmu --native``: the C core and the
  model in the binary), the same setReal / doStep / getReal, against its own bare anchor
  ``bare FMI k (native's counts)`` with its numbers of inputs, outputs and parameters (the
  issue's target: ≤ 2× the bare FMU);
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
        for i in range({n_par}):
            setattr(self, f"p{{i}}", 0.0)
            self.register_variable(Real(f"p{{i}}", causality=Fmi2Causality.parameter,
                                        variability=Fmi2Variability.tunable))

    def do_step(self, current_time, step_size):
        return True
""".replace("import Fmi2Causality,", "import Fmi2Causality, Fmi2Initial, Fmi2Variability,")

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
        for i in range({n_par}):
            setattr(self, f"p{{i}}", 0.0)
            self.register_variable(Float64(f"p{{i}}", causality=Fmi3Causality.parameter,
                                           variability=Fmi3Variability.tunable))

    def do_step(self, current_time, step_size):
        return True
"""


def build_bare(version: int, n_in: int, n_out: int, n_par: int, folder: Path) -> Path:
    """A do-nothing slave with n_in Real inputs, n_out Real outputs, n_par Real parameters."""
    script = folder / f"bare{version}" / "bare_slave.py"
    script.parent.mkdir()
    template = _BARE_FMI2 if version == 2 else _BARE_FMI3
    script.write_text(template.format(n_in=n_in, n_out=n_out, n_par=n_par))
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


def open_fmu(path: Path, unzipdir: Path):
    """An initialized FMPy slave of `path`; returns (one macro step: setReal all inputs,
    doStep, getReal all outputs; and a function that frees the instance)."""
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
        instanceName=f"bench_{unzipdir.name}",
    )
    slave.instantiate()
    t = [float(md.defaultExperiment.startTime) if md.defaultExperiment else 0.0]
    H = float(md.defaultExperiment.stepSize) if md.defaultExperiment else 1e-3
    if is2:
        slave.setupExperiment(startTime=t[0])
        slave.enterInitializationMode()
    else:
        slave.enterInitializationMode(startTime=t[0])
    slave.exitInitializationMode()
    inputs = [v.valueReference for v in md.modelVariables if v.causality == "input"]
    outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    values = [float(v.start) for v in md.modelVariables if v.causality == "input"]
    set_, get = (slave.setReal, slave.getReal) if is2 else (slave.setFloat64, slave.getFloat64)

    def step():
        set_(inputs, values)
        slave.doStep(t[0], H)
        get(outputs)
        t[0] += H

    def close():
        slave.terminate()
        slave.freeInstance()

    return step, close


def in_process_steps(scenario: Path):
    """RigidSide.step alone, and the same step with the FMU's inputs and outputs."""
    from rbcosim.cosim.continuity import joint_gaps
    from rbcosim.cosim.rigid_side import RigidSide

    bare_side, side = RigidSide.from_scenario(scenario), RigidSide.from_scenario(scenario)
    H = side.macro_step
    polynomial = np.zeros((3, 6))
    flex = np.array([0.0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])

    def step_with_io():
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

    return lambda: bare_side.step(H), step_with_io


def best_of(runners: dict, steps: int, repeat: int) -> dict[str, float]:
    """Best µs per step of each runner over `repeat` rounds of `steps` steps; the runners take
    turns within each round, so that load from other processes hits them alike."""
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(repeat):
        for name, step in runners.items():
            start = time.perf_counter()
            for _ in range(steps):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / steps * 1e6)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario", nargs="?", default=str(REPO / "scenarios" / "double_pendulum.toml")
    )
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    import fmpy

    from rbcosim.fmu_export import ExportOptions, export_fmu
    from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu

    scenario = Path(args.scenario)
    runners, closers, labels, anchors = {}, [], {}, {}
    with tempfile.TemporaryDirectory(prefix="bench_fmu_") as tmp:
        tmp = Path(tmp)
        for version in (2, 3):
            path = export_fmu(
                scenario, tmp / f"scenario{version}.fmu", ExportOptions(fmi_version=version)
            )
            md = fmpy.read_model_description(str(path))
            count = {c: sum(v.causality == c for v in md.modelVariables)
                     for c in ("input", "output", "parameter")}
            bare = build_bare(version, count["input"], count["output"], count["parameter"], tmp)
            labels[f"bare{version}"] = (f"bare FMI {version} ({count['input']} in, "
                                        f"{count['output']} out, {count['parameter']} par)")
            labels[f"rbcosim{version}"] = f"rbcosim FMI {version}"
            native = export_native_fmu(scenario, tmp / f"native{version}.fmu",
                                       fmi_version=version, self_contained=True)
            md = fmpy.read_model_description(str(native))
            ncount = {c: sum(v.causality == c for v in md.modelVariables)
                      for c in ("input", "output", "parameter")}
            (tmp / "n").mkdir(exist_ok=True)
            bare_native = build_bare(version, ncount["input"], ncount["output"],
                                     ncount["parameter"], tmp / "n")
            labels[f"barenative{version}"] = (f"bare FMI {version} ({ncount['input']} in, "
                                              f"{ncount['output']} out, {ncount['parameter']} "
                                              "par)")
            labels[f"native{version}"] = f"native FMI {version} (self-contained)"
            anchors[f"rbcosim{version}"] = f"bare{version}"
            anchors[f"native{version}"] = f"barenative{version}"
            for key, fmu in ((f"bare{version}", bare), (f"rbcosim{version}", path),
                             (f"barenative{version}", bare_native), (f"native{version}", native)):
                runners[key], close = open_fmu(fmu, tmp / key)
                closers.append(close)
        runners["step"], runners["step_io"] = in_process_steps(scenario)
        labels.update(step="in-process step", step_io="in-process step + I/O")
        us = best_of(runners, args.steps, args.repeat)
        for close in closers:
            close()
    step, step_io = us["step"], us["step_io"]

    print(
        f"scenario {scenario.name}: µs per macro step, best of {args.repeat} x {args.steps} steps"
    )
    print(f"{'':34s} {'µs':>10s} {'/ bare':>8s} {'/ in-process step':>18s} "
          f"{'- in-process step + I/O':>24s}")
    for key, value in us.items():
        anchor = us[anchors[key]] if key in anchors else float("nan")
        ratio = f"{value / anchor:8.2f}" if anchor == anchor else f"{'':8s}"
        print(f"{labels[key]:34s} {value:10.1f} {ratio} {value / step:18.4f} "
              f"{value - step_io:21.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
