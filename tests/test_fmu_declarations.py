"""What every FMU kind declares in its modelDescription is what it does: outputs calculated
and listed as initial unknowns, their direct feedthrough (none for kinematics), the execution
tool and external dependencies, the fixed communication step, the default experiment, units
and frames. Each declaration is checked against the FMU's behaviour or the scenario."""

from __future__ import annotations

import math
import os
import subprocess
import zipfile

import fmpy
import pytest
from fmi_calls_host import build_host, statuses, unpack, values
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.fmu_export.runtime.host_env import host_environment
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

TWO_MASS = REPO / "scenarios" / "two_mass_oscillator.toml"
PENDULUM = REPO / "scenarios" / "double_pendulum.toml"


def _export(kind: str, out):
    """(path, needs an execution tool) of one FMU kind of the two-mass oscillator (the
    double pendulum for the self-contained native FMU, whose scenario has no server)."""
    if kind.startswith("native_local"):
        return export_native_fmu(PENDULUM, out, fmi_version=int(kind[-1]),
                                 self_contained=True), False
    if kind.startswith("native_server"):
        return export_native_fmu(TWO_MASS, out, fmi_version=int(kind[-1]), address=""), True
    options = {"embedded2": ExportOptions(fmi_version=2), "embedded3": ExportOptions(fmi_version=3),
               "remote2": ExportOptions(mode="remote"), "flex2": ExportOptions(flex="structure"),
               "flex3": ExportOptions(fmi_version=3, flex="structure")}[kind]
    return export_fmu(TWO_MASS, out, options), True


KINEMATICS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
KINDS = ["embedded2", "embedded3", "remote2", "flex2", "flex3", "native_local2",
         "native_local3", "native_server2", "native_server3"]


@pytest.mark.parametrize("kind", KINDS)
def test_declarations_of_every_kind(kind, tmp_path):
    path, needs_tool = _export(kind, tmp_path / f"{kind}.fmu")
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    scenario = load_scenario(PENDULUM if kind.startswith("native_local") else TWO_MASS)
    # 28.4: an execution tool (Python, a server) and the file that says which
    assert md.coSimulation.needsExecutionTool is needs_tool
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert ("documentation/externalDependencies.txt" in names) is needs_tool
        if needs_tool:
            text = archive.read("documentation/externalDependencies.txt").decode()
            assert ("rbcosim serve" in text) is ("server" in kind or "remote" in kind)
            assert ("libpython" in text) is not kind.startswith("native")
        # 28.8: no FMI headers in sources/; a buildDescription.xml where sources ship
        assert not [n for n in names if n.startswith("sources/fmi") and n.endswith(".h")]
        if any(n.startswith("sources/") for n in names):
            assert "sources/buildDescription.xml" in names
        # 28.8: the native binary finds libraries placed next to it (RUNPATH $ORIGIN)
        if kind.startswith("native"):
            binary = next(n for n in names if n.startswith("binaries/") and n.endswith(".so"))
            archive.extract(binary, tmp_path / "x")
            dynamic = subprocess.run(["readelf", "-d", str(tmp_path / "x" / binary)],
                                     capture_output=True, text=True, check=True).stdout
            assert "(RUNPATH)" in dynamic and "[$ORIGIN]" in dynamic, dynamic
    # 28.7 / 27.5: one fixed communication step, the scenario's, and its time span
    assert md.coSimulation.canHandleVariableCommunicationStepSize is False
    experiment = md.defaultExperiment
    assert float(experiment.stepSize) == scenario.cosim.macro_step
    assert float(experiment.startTime) == 0.0
    assert float(experiment.stopTime) == scenario.solver.t_end
    if md.fmiVersion.startswith("3"):
        assert float(md.coSimulation.fixedInternalStepSize) == scenario.cosim.macro_step
    # 28.3: outputs calculated, listed as initial unknowns, no start value
    outputs = [v for v in md.modelVariables if v.causality == "output"]
    assert outputs and all(v.initial == "calculated" and v.start is None for v in outputs)
    assert {u.variable.name for u in md.initialUnknowns} == {v.name for v in outputs}
    # 28.6: kinematics depend on no input, accelerations on the wrench values only
    deps = {u.variable.name: u.dependencies for u in md.outputs}
    if kind.startswith("flex"):  # published at the end of a doStep: no feedthrough
        assert all(d == [] for d in deps.values())
        return
    for name, dependencies in deps.items():
        owner, component = name.split(".", 1)
        if owner in ("interface", "mass1", "rod1", "rod2") and component in KINEMATICS:
            assert dependencies == [], name
        if name.startswith("interface.a") and name[-1] in "xyz":
            assert dependencies == [], name  # the last step's accelerations
        if name == "coupling.gap_pos" and not kind.startswith("flex"):
            assert {v.name for v in dependencies} == {
                f"coupling.flex.{c}" for c in ("x", "y", "z", "q0", "q1", "q2", "q3", "vx",
                                               "vy", "vz", "wx", "wy", "wz")}


def test_no_feedthrough_where_none_is_declared(tmp_path):
    """After a doStep a new wrench changes no output declared without dependencies (the
    kinematics and the accelerations), and the next doStep applies it: the slider's
    acceleration then differs from a run without it by dF / m less the spring's answer to the
    displacement it caused, dF / m (1 - k h² / 2m) (to O(h⁴))."""
    path = export_fmu(TWO_MASS, tmp_path / "t.fmu", ExportOptions())
    md = fmpy.read_model_description(str(path))
    independent = [u.variable.name for u in md.outputs if u.dependencies == []]
    assert "interface.ax" in independent
    ends = []
    for force in (0.0, 2.5):
        fmu = open_fmu(path, tmp_path / f"u{force}")
        try:
            h = float(md.defaultExperiment.stepSize)
            fmu.do_step(0.0, h)
            before = fmu.get(independent)
            fmu.set(["interface.fx"], [force])
            assert bits(fmu.get(independent)) == bits(before)
            fmu.do_step(h, h)
            ends.append(fmu.get(["interface.ax", "interface.fx"]))
        finally:
            fmu.close()
    raw = load_scenario(TWO_MASS).raw
    mass, k = raw["bodies"]["mass1"]["mass"], raw["forces"]["k1"]["stiffness"]
    expected = 2.5 / mass * (1.0 - k * h * h / (2.0 * mass))
    assert ends[1][0] - ends[0][0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("version", [2, 3])
def test_flexible_body_outputs_have_no_feedthrough(version, tmp_path):
    """The structure FMU declares no output dependent on an input (28.6): after a doStep,
    new motion inputs change no output; the next doStep takes them (the modal coordinate
    then differs from a step without them)."""
    path = export_fmu(TWO_MASS, tmp_path / "s.fmu",
                      ExportOptions(fmi_version=version, flex="structure"))
    md = fmpy.read_model_description(str(path))
    outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    inputs = [v.name for v in md.modelVariables if v.causality == "input"]
    assert all(u.dependencies == [] for u in md.outputs)
    h = float(md.defaultExperiment.stepSize)
    ends = []
    for moved in (False, True):
        fmu = open_fmu(path, tmp_path / f"u{moved}")
        try:
            fmu.do_step(0.0, h)
            before = fmu.get(outputs)
            if moved:
                fmu.set(inputs, [x + 0.01 for x in fmu.get(inputs)])
            assert bits(fmu.get(outputs)) == bits(before)
            fmu.do_step(h, h)
            ends.append(fmu.get(["structure.eta1"]))
        finally:
            fmu.close()
    assert ends[0] != ends[1]


def test_start_value_of_a_parameter_in_instantiated_gives_the_first_outputs(tmp_path):
    """fmusim's --start-value: a parameter set in Instantiated (C host) is the model's, and
    the first outputs are that model's (RigidSide built with the same override)."""
    host = build_host(tmp_path)
    fmu = export_fmu(TWO_MASS, tmp_path / "t.fmu", ExportOptions())
    head, refs, _ = unpack(fmu, tmp_path / "t")
    key = "bodies.mass1.position[1]"
    done = subprocess.run(
        [str(host), *head, "instantiate", f"set:{refs[key]}:0.2", "setup:0", "enter:0",
         "exit", f"get:{refs['interface.x']}", f"set:{refs['interface.x']}:0.3", "free"],
        env={**os.environ, **host_environment()}, capture_output=True, text=True,
        timeout=300, check=True)
    assert statuses(done.stdout) == ["0", "0", "0", "0", "0", "0", "3", "-"]  # output: Error
    side = RigidSide.from_scenario(TWO_MASS, overrides={"bodies.mass1.position": "[0.2, 0.0, 0.0]"})
    expected = side.point_outputs()["interface"][0]
    assert values(done.stdout)[refs["interface.x"]] == expected != 0.1


@pytest.mark.parametrize("version", [2, 3])
def test_host_time_accumulation_steps_the_fmus_own_macro_step(version, tmp_path):
    """A host that accumulates its time (t += H) passes step sizes off H by round-off; the
    FMU steps its own H: bitwise the outputs of exact steps (27.5)."""
    path = export_fmu(TWO_MASS, tmp_path / "t.fmu", ExportOptions(fmi_version=version))
    names = ["mass1.x", "mass1.vx", "interface.ax"]
    runs = []
    for jitter in (0.0, 3e-13):
        fmu = open_fmu(path, tmp_path / f"u{jitter}")
        try:
            h = float(fmu.description.defaultExperiment.stepSize)
            t = 0.0
            for k in range(40):
                size = h * (1.0 + jitter * (-1) ** k)
                fmu.do_step(t, size)
                t += size
            runs.append(fmu.get(names))
        finally:
            fmu.close()
    assert bits(runs[1]) == bits(runs[0])


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("size", [1e300, 1e6, math.inf])
def test_huge_steps_are_refused_with_error(version, size, tmp_path):
    """31.3: more than MAX_MACRO_STEPS macro steps in one doStep is refused (Error)."""
    path = export_fmu(TWO_MASS, tmp_path / "t.fmu", ExportOptions(fmi_version=version))
    fmu = open_fmu(path, tmp_path / "u")
    try:
        with pytest.raises(FMICallException) as info:
            fmu.do_step(0.0, size)
        assert info.value.status == 3
        assert "DoStep refused" in fmu.messages()
    finally:
        fmu.close()


def test_body_outputs_name_the_frame_of_their_values(tmp_path):
    """27.4: the body's angular velocity is the body frame's (results file), its position and
    velocity the centre of mass's, inertial; degrees have the unit deg (28.8)."""
    path = export_fmu(PENDULUM, tmp_path / "p.fmu", ExportOptions())
    variables = {v.name: v for v in fmpy.read_model_description(str(path)).modelVariables}
    assert variables["rod1.wx"].description == "body rod1: angular velocity x, body frame"
    assert "centre-of-mass position" in variables["rod1.x"].description
    assert variables["bodies.rod1.orientation.angle_deg"].unit == "deg"
    md = fmpy.read_model_description(str(path))
    deg = next(u for u in md.unitDefinitions if u.name == "deg")
    assert deg.baseUnit.rad == 1 and deg.baseUnit.factor == pytest.approx(math.pi / 180, 1e-15)
