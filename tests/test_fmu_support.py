"""Support for the test_fmu_* modules (no tests here): FMPy helpers and scenario choice."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: A scenario of the test's own with an interface point and a rigid–flexible joint, so that
#: every kind of FMU variable is exercised whatever scenarios the repository holds.
TIP_PENDULUM = """
title = "FMU tests: a hinged arm with an interface point at its tip"

[bodies.arm]
mass = 2.0
inertia = [0.05, 0.05, 0.001]
position = [0.25, 0.0, 0.0]

[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "arm"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[interface_points.tip]
body = "arm"
position = [0.5, 0.0, 0.0]

[flex_bodies.beam]

[couplings.tip_joint]
point = "tip"
flex_body = "beam"

[cosim]
macro_step = 0.01
micro_steps = 5
"""


@dataclass
class OpenFmu:
    """An FMU instantiated under FMPy's low-level API, with its log captured."""

    slave: object
    description: object
    fmi_version: int
    log: list[tuple[int, str]] = field(default_factory=list)
    _callbacks: object = None

    def vr(self, *names: str) -> list[int]:
        by_name = {v.name: v.valueReference for v in self.description.modelVariables}
        return [by_name[n] for n in names]

    def set(self, names, values):
        set_ = self.slave.setReal if self.fmi_version == 2 else self.slave.setFloat64
        set_(self.vr(*names), list(values))

    def get(self, names):
        get = self.slave.getReal if self.fmi_version == 2 else self.slave.getFloat64
        return get(self.vr(*names))

    def do_step(self, t, h):
        return self.slave.doStep(currentCommunicationPoint=t, communicationStepSize=h)

    def get_state(self):
        return self.slave.getFMUstate() if self.fmi_version == 2 else self.slave.getFMUState()

    def set_state(self, state):
        if self.fmi_version == 2:
            self.slave.setFMUstate(state)
        else:
            self.slave.setFMUState(state)

    def serialize(self, state) -> bytes:
        if self.fmi_version == 2:
            return bytes(self.slave.serializeFMUstate(state))
        return bytes(self.slave.serializeFMUState(state))

    def deserialize(self, blob: bytes):
        if self.fmi_version == 2:
            return self.slave.deSerializeFMUstate(blob)
        return self.slave.deserializeFMUState(blob)

    def messages(self) -> str:
        return "\n".join(m for _, m in self.log)

    def close(self):
        self.slave.terminate()
        self.slave.freeInstance()


def open_fmu(
    path, unzipdir, *, start_values: dict[str, float] | None = None, initialize: bool = True
) -> OpenFmu:
    """Instantiate the FMU at ``path`` (extracted to ``unzipdir``) as a co-simulation slave."""
    import fmpy
    from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    from fmpy.fmi3 import FMU3Slave

    md = fmpy.read_model_description(str(path))
    if not (Path(unzipdir) / "modelDescription.xml").is_file():  # never over a loaded binary
        fmpy.extract(str(path), str(unzipdir))
    common = {
        "guid": md.guid,
        "unzipDirectory": str(unzipdir),
        "modelIdentifier": md.coSimulation.modelIdentifier,
        "instanceName": "rb",
    }
    if md.fmiVersion == "2.0":
        fmu = OpenFmu(FMU2Slave(**common), md, 2)

        def logger(env, name, status, category, message):
            fmu.log.append((status, message.decode("utf-8", "replace")))

        callbacks = fmi2CallbackFunctions()
        callbacks.logger = fmi2CallbackLoggerTYPE(logger)
        callbacks.allocateMemory = fmpy.fmi2.defaultCallbacks.allocateMemory
        callbacks.freeMemory = fmpy.fmi2.defaultCallbacks.freeMemory
        fmu._callbacks = callbacks
        fmu.slave.instantiate(callbacks=callbacks, loggingOn=True)
    else:
        fmu = OpenFmu(FMU3Slave(**common), md, 3)

        def log_message(env, status, category, message):
            fmu.log.append((status, message.decode("utf-8", "replace")))

        fmu.slave.instantiate(loggingOn=True, logMessage=log_message)
    if initialize:
        t0 = float(md.defaultExperiment.startTime)
        if fmu.fmi_version == 2:
            fmu.slave.setupExperiment(startTime=t0)
            fmu.slave.enterInitializationMode()
        else:
            fmu.slave.enterInitializationMode(startTime=t0)
        if start_values:
            fmu.set(list(start_values), list(start_values.values()))
        fmu.slave.exitInitializationMode()
    return fmu


def bits(values) -> bytes:
    """Exact bit pattern of a sequence of floats, for to-the-bit comparisons."""
    return np.asarray(values, dtype=float).tobytes()


REPO = Path(__file__).resolve().parents[1]
#: The scenarios the issue names; each is exported as FMI 2 and FMI 3.
SCENARIO_NAMES = ("double_pendulum", "two_mass_oscillator", "rigid_flex_pendulum")


def scenario_paths(tmp_dir: Path) -> dict[str, Path]:
    """The repository's scenarios the issue names (those present), then TIP_PENDULUM."""
    found = {n: REPO / "scenarios" / f"{n}.toml" for n in SCENARIO_NAMES}
    paths = {n: p for n, p in found.items() if p.is_file()}
    paths["tip_pendulum"] = tmp_dir / "tip_pendulum.toml"
    paths["tip_pendulum"].write_text(TIP_PENDULUM)
    return paths


def scenario_with_points(tmp_dir: Path) -> Path:
    """The first of scenario_paths() with interface points, so that inputs and outputs take
    part."""
    paths = scenario_paths(tmp_dir)
    return next(p for p in paths.values() if rigid_side_class().from_scenario(p).point_names)


def rigid_side_class():
    from rbcosim.cosim.rigid_side import RigidSide

    return RigidSide
