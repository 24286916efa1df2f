"""export-ssp packages in every master available here give `rbcosim run`'s results: libcosim,
fmpy.ssp and a hand-written FMPy master in both transfer orders, on the two-mass oscillator and
the main job (the rigid–flexible pendulum, whose beam hands its added mass to the rigid FMU).
Each master runs in a child process (tests/ssp_master.py, tests/ssp_fmpy_master.py)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from rbcosim.fmu_export.packaging.ssp import SSD, export_ssp
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

REPO = Path(__file__).resolve().parents[1]
#: scenario -> (macro steps run, compared results columns as component:variable)
CASES = {
    "two_mass_oscillator": (100, {"mass1.x": "rigid:mass1.x", "mass1.vx": "rigid:mass1.vx",
                                  "structure.eta1": "structure:structure.eta1"}),
    "rigid_flex_pendulum": (60, {"tip.x": "rigid:tip.x", "tip.z": "rigid:tip.z",
                                 "tip.wy": "rigid:tip.wy", "beam.eta1": "beam:beam.eta1"}),
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """(scenario, FMI version) -> its package, exported on first use."""
    made = {}

    def get(name, fmi):
        if (name, fmi) not in made:
            folder = tmp_path_factory.mktemp(f"{name}_fmi{fmi}")
            made[name, fmi] = export_ssp(REPO / "scenarios" / f"{name}.toml",
                                         folder / f"{name}.ssp", fmi)
        return made[name, fmi]

    return get


def _reference(name, steps):
    """`rbcosim run` of the scenario with the Jacobi scheme the FMU pair runs, every step."""
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    t_end = repr(steps * scenario.cosim.macro_step)
    return run_scenario(load_scenario(REPO / "scenarios" / f"{name}.toml", {
        "solver.t_end": t_end, "solver.output_every": "1", "cosim.scheme": '"jacobi"'}),
        progress=False)


def _run_and_compare(command, out, name, steps):
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False,
                         cwd=out.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    got, reference = np.load(out), _reference(name, steps)
    np.testing.assert_allclose(got["t"], reference.t[1:], rtol=0, atol=1e-12)
    worst = {}
    for column, variable in CASES[name][1].items():
        scale = max(1.0, np.abs(reference[column]).max())
        worst[column] = np.abs(got[variable] - reference[column][1:]).max() / scale
    assert max(worst.values()) <= 1e-12, worst
    return worst


@pytest.mark.parametrize("name", CASES)
def test_libcosim_runs_the_package_as_rbcosim_runs(packages, name):
    steps, columns = CASES[name]
    package = packages(name, 2)
    h = load_scenario(REPO / "scenarios" / f"{name}.toml").cosim.macro_step
    out = package.parent / "libcosim.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_master.py"), str(package),
                      repr(h), str(steps), str(out), *columns.values()], out, name, steps)


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("order", ["read-first", "set-first"])
@pytest.mark.parametrize("name", CASES)
def test_a_hand_written_master_gets_the_run_in_either_transfer_order(packages, name, order, fmi):
    """Setting the inputs before reading the outputs (OMSimulator's order) and reading all
    before setting any give the same results: no output depends on the inputs set since the
    last doStep."""
    steps, columns = CASES[name]
    package = packages(name, fmi)
    out = package.parent / f"{order}.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_fmpy_master.py"), order,
                      str(package), str(steps), str(out), *columns.values()], out, name, steps)


@pytest.mark.parametrize("name", CASES)
def test_fmpy_ssp_runs_the_package_from_its_start_values(packages, name):
    """fmpy.ssp's set-step-get per FMU, its connections applied after every FMU has stepped,
    with each connector starting at the .ssd's start value (fmpy.ssp 0.3.32 itself starts
    them at 0.0: the beam would get a zero quaternion)."""
    steps, columns = CASES[name]
    package = packages(name, 2)
    out = package.parent / "fmpy_ssp.npz"
    _run_and_compare([sys.executable, str(REPO / "tests" / "ssp_fmpy_master.py"), "fmpy-ssp",
                      str(package), str(steps), str(out), *columns.values()], out, name, steps)


def _ssd(package):
    with zipfile.ZipFile(package) as z:
        return ElementTree.fromstring(z.read("SystemStructure.ssd"))


def test_the_ssd_has_the_experiment_the_step_and_a_start_value_for_every_connection(packages):
    """A valid SSP 1.0 document with DefaultExperiment [0, t_end], OMSimulator's fixed-step annotation with the macro step,
    and a start value for every connected input; the beam starts from a unit quaternion and
    the rigid FMU's added mass is the beam's rigid-body mass about its clamped end (uniform
    beam of mass m = ρAL: m along both axes it does not bend in, m L / 2 and m L² / 3 for
    the rotation about the hinge axis's normal in the plane it does not bend in)."""
    from fmpy.ssp.ssd import read_ssd

    scenario = load_scenario(REPO / "scenarios" / "rigid_flex_pendulum.toml")
    package = packages("rigid_flex_pendulum", 2)
    read_ssd(str(package), validate=True)  # against the SSP 1.0 schema FMPy ships
    root = _ssd(package)
    ns = {"ssd": SSD, "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
          "oms": "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"}
    experiment = root.find("ssd:DefaultExperiment", ns)
    assert (float(experiment.get("startTime")), float(experiment.get("stopTime"))) == (
        0.0, scenario.solver.t_end)
    master = root.find("ssd:System/ssd:Annotations//oms:FixedStepMaster", ns)
    assert float(master.get("stepSize")) == scenario.cosim.macro_step
    starts = {}
    for component in root.iterfind(".//ssd:Component", ns):
        for p in component.iterfind(".//ssv:Parameter", ns):
            starts[component.get("name"), p.get("name")] = p[0].get("value")
    ends = [(c.get("endElement"), c.get("endConnector"))
            for c in root.iterfind(".//ssd:Connection", ns)]
    assert ends and all(end in starts for end in ends)
    q = [float(starts["beam", f"tip.q{i}"]) for i in range(4)]
    assert abs(np.linalg.norm(q) - 1.0) < 1e-15
    mass = np.array([[float(starts["rigid", f"tip.added_mass[{i},{k}]"]) for k in range(1, 7)]
                     for i in range(1, 7)])
    m, length = 7850.0 * 0.01 * 0.01 * 1.0, 1.0
    np.testing.assert_allclose([mass[0, 0], mass[1, 1], mass[1, 5], mass[5, 5]],
                               [m, m, m * length / 2, m * length**2 / 3], rtol=1e-9)
    np.testing.assert_allclose(mass, mass.T, atol=1e-15)


@pytest.mark.parametrize("name", CASES)
def test_the_ssd_binds_only_reals_and_the_frame_is_the_rigid_fmus_own_start(packages, name):
    """OMSimulator imports Real, Integer and Boolean connectors and parameter bindings, no
    String ("[NewConnector] Failed to import connector "tip.added_mass_frame" with type
    "String"", then "[importStartValuesHelper] Failed to import ssv:Parameter:Unknown
    ParameterBinding-type"): the .ssd has Real ones only, and the added mass's frame (a String
    parameter) reaches the rigid FMU as its own start value, the frame its flexible body hands
    the added mass over in (a floating body: 'point', a grounded one: 'inertial'; the main
    job's beam floats)."""
    package = packages(name, 2)
    root = _ssd(package)
    ns = {"ssd": SSD, "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues"}
    kinds = {child.tag.rsplit("}", 1)[1] for c in root.iterfind(".//ssd:Connector", ns)
             for child in c}
    values = {p[0].tag.rsplit("}", 1)[1] for p in root.iterfind(".//ssv:Parameter", ns)}
    assert kinds == values == {"Real"}
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    with zipfile.ZipFile(package) as z:
        z.extract("resources/rigid.fmu", package.parent)
    import fmpy

    starts = {v.name: v.start for v in fmpy.read_model_description(
        str(package.parent / "resources" / "rigid.fmu")).modelVariables}
    for coupling in scenario.couplings:
        mass = [float(starts[f"{coupling.point}.added_mass[{i},{i}]"]) for i in range(1, 7)]
        if not any(mass):  # no added mass handed over (the two-mass structure): no frame
            continue
        floating = scenario.flex_bodies[coupling.flex_body]["attachment"] == "floating"
        assert starts[f"{coupling.point}.added_mass_frame"] == (
            "point" if floating else "inertial"), name


def test_the_beam_fmu_exports_and_outputs_the_added_mass_its_parameters_give(tmp_path):
    """`export-fmu --flex beam` of the main job (refused before: the beam hands over an added
    mass); after initialization the FMU outputs the beam's rigid-body mass about its clamped
    end, ρAL and ρAL³/3, and twice that with the density doubled in initialization mode (with
    a warning: the rigid FMU's added mass, exported with the first, must follow)."""
    from test_fmu_support import open_fmu

    out = tmp_path / "beam.fmu"
    run = subprocess.run([sys.executable, "-m", "rbcosim", "export-fmu",
                          str(REPO / "scenarios" / "rigid_flex_pendulum.toml"), "--flex", "beam",
                          "-o", str(out)], capture_output=True, text=True, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr
    names = [f"tip.added_mass[{i},{i}]" for i in (1, 6)]
    for factor in (1.0, 2.0):
        fmu = open_fmu(out, tmp_path / f"u{factor}", initialize=False)
        fmu.slave.setupExperiment(startTime=0.0)
        fmu.slave.enterInitializationMode()
        fmu.set(["flex_bodies.beam.density"], [7850.0 * factor])
        fmu.slave.exitInitializationMode()
        m = factor * 7850.0 * 0.01 * 0.01 * 1.0
        np.testing.assert_allclose(fmu.get(names), [m, m / 3], rtol=1e-9)
        warned = [text for _, text in fmu.log if "differs from the exported one" in text]
        assert len(warned) == (factor != 1.0), fmu.log  # the rigid FMU must be told
        fmu.close()


def test_wrench_inputs_change_no_output_before_the_next_do_step(tmp_path):
    """The rigid FMU (two-mass oscillator): a wrench set in step mode leaves the accelerations
    as they were (those under the initialization-mode wrench) and takes effect at the next
    doStep, where an FMU that got the same wrench before the first read ends identical; a
    non-finite wrench set in initialization mode is refused at the first doStep, naming it."""
    from fmpy.fmi1 import FMICallException
    from test_fmu_support import bits, open_fmu

    from rbcosim.fmu_export import ExportOptions, export_fmu

    path = export_fmu(REPO / "scenarios" / "two_mass_oscillator.toml", tmp_path / "rigid.fmu",
                      ExportOptions(name="rigid"))
    motion = [f"interface.{c}" for c in ("x", "vx", "ax", "ay", "az")]
    fmus = []
    for k, initial in enumerate((-10.0, -10.0, float("nan"))):
        fmu = open_fmu(path, tmp_path / f"u{k}", initialize=False)
        fmu.slave.setupExperiment(startTime=0.0)
        fmu.slave.enterInitializationMode()
        fmu.set(["interface.fx"], [initial])
        fmu.slave.exitInitializationMode()
        fmus.append(fmu)
    late, early, bad = fmus
    early.set(["interface.fx"], [5.0])  # set before reading the motion
    first = late.get(motion)
    # mass 1 kg, spring 10 N/m at x = 0.1 m (-1 N) and the -10 N wrench: a = -11 m/s2
    assert first[2] == pytest.approx(-11.0, rel=1e-12)
    assert bits(early.get(motion)) == bits(first)
    late.set(["interface.fx"], [5.0])  # set after reading
    assert bits(late.get(motion)) == bits(first)
    for fmu in (late, early):
        fmu.do_step(0.0, 1e-3)
    assert bits(late.get(motion)) == bits(early.get(motion))
    x, ax = late.get(["interface.x", "interface.ax"])
    assert ax == pytest.approx(5.0 - 10.0 * x, abs=1e-12)  # the new wrench acts from there
    with pytest.raises(FMICallException):
        bad.do_step(0.0, 1e-3)
    assert any("interface.fx" in message for _, message in bad.log)
    for fmu in fmus:
        fmu.close()


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", CASES)
def test_outputs_read_in_initialization_mode_are_those_initialization_ends_with(
        packages, name, fmi, tmp_path):
    """A master that solves the initialization loop between the FMUs (PyFMI's Master:
    scipy.optimize.root on the connections in Initialization Mode; OMSimulator's KINSOL) reads
    the connected outputs before exitInitializationMode. Each FMU of the package, left at its
    start values, gives there the values it has after exitInitializationMode (its own
    computation), to round-off; before, the rigid FMU's accelerations there were those under
    no wrench (two-mass: interface.ax = -1 m/s2 instead of -11), which PyFMI's Master handed to
    the flexible FMU, ending 1.6e-5 m (two-mass) and 4.6e-4 (pendulum) from `rbcosim run`."""
    from test_fmu_support import open_fmu

    package = packages(name, fmi)
    root = _ssd(package)
    ns = {"ssd": SSD}
    sources = {(c.get("startElement"), c.get("startConnector"))
               for c in root.iterfind(".//ssd:Connection", ns)}
    with zipfile.ZipFile(package) as z:
        z.extractall(tmp_path)
    for component in {element for element, _ in sources}:
        names = sorted(n for e, n in sources if e == component)
        fmu = open_fmu(tmp_path / "resources" / f"{component}.fmu", tmp_path / component,
                       initialize=False)
        if fmi == 2:
            fmu.slave.setupExperiment(startTime=0.0)
            fmu.slave.enterInitializationMode()
        else:
            fmu.slave.enterInitializationMode(startTime=0.0)
        during = np.array(fmu.get(names))
        fmu.slave.exitInitializationMode()
        after = np.array(fmu.get(names))
        fmu.close()
        scale = np.maximum(1.0, np.abs(after))
        worst = np.argmax(np.abs(during - after) / scale)
        assert np.abs(during - after).max() <= 1e-12 * scale.max(), (
            component, names[worst], during[worst], after[worst])
