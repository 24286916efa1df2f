"""`rbcosim export-fmu --native`: the C FMU (fmu/native), built from source here, in a C host
without Python and under FMPy, against `rbcosim run` and the Python remote-mode FMU."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import fmpy
import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu
from native_build import REPO, native_unavailable
from server_process import child_env, rbcosim_serve
from test_fmu_support import OpenFmu, bits, open_fmu

from rbcosim.cli.main import main
from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.cosim.master import CosimMaster, build_endpoints, run_cosimulation
from rbcosim.flex.runtime.layout import PREF
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.packaging import native_fmu as native
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.joint_coordinates import coordinate_columns
from rbcosim.results import Results, body_columns
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

SCENARIO = REPO / "scenarios" / "two_mass_oscillator.toml"
HOST = REPO / "fmu" / "native" / "host"
#: Every step in the results, 0.2 s.
SHORT = {"solver.output_every": "1", "solver.t_end": "0.2"}
STEPS = 200


def _compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        native_unavailable("no C compiler (cc, gcc) is installed")
    return cc


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("native")


@pytest.fixture(scope="module")
def fmu_path(work) -> Path:
    _compiler()
    return export_native_fmu(SCENARIO, work / "two_mass_native.fmu")


@pytest.fixture(scope="module")
def fmu3_path(work) -> Path:
    _compiler()
    return export_native_fmu(SCENARIO, work / "two_mass_native3.fmu", fmi_version=3)


def _unzip(path: Path, folder: Path) -> Path:
    with zipfile.ZipFile(path) as z:
        z.extractall(folder)
    return folder


@pytest.fixture(scope="module")
def unzipped(fmu_path, work) -> Path:
    return _unzip(fmu_path, work / "unzipped")


@pytest.fixture(scope="module")
def server():
    """`rbcosim serve` whose root holds the extracted FMUs (the sessions' base_dir): FMPy's
    and pytest's temporary folders."""
    with rbcosim_serve(root=Path(tempfile.gettempdir())) as address:
        yield address


def _vr(unzipped: Path) -> dict[str, int]:
    md = fmpy.read_model_description(str(unzipped / "modelDescription.xml"))
    return {v.name: v.valueReference for v in md.modelVariables}


def _guid(unzipped: Path) -> str:
    return fmpy.read_model_description(str(unzipped / "modelDescription.xml")).guid


def _no_libpython(path: Path) -> None:
    linked = subprocess.run(["ldd", str(path)], check=True, capture_output=True,
                            text=True).stdout
    assert "libzmq" in linked or path.suffix != ".so"
    assert "python" not in linked.lower(), linked


def _two_mass_host(work: Path, fmu: Path, version: int, extrapolation: int, address: str,
                   order: str = "read-first") -> tuple[np.ndarray, object]:
    """Run fmu/native/host/two_mass_host.c (built here) on ``fmu`` (``address`` "-": a
    self-contained FMU) with the scenario's structure; its rows and run_cosimulation's."""
    tag = f"{fmu.stem}{version}{extrapolation}{order}"
    unzipped = _unzip(fmu, work / f"host_unzipped_{tag}")
    platform = "linux64" if version == 2 else "x86_64-linux"
    binary = unzipped / "binaries" / platform / "two_mass_oscillator.so"
    resources = (unzipped / "resources").as_uri() if version == 2 else f"{unzipped}/resources/"
    host = work / "two_mass_host"
    if not host.exists():
        subprocess.run([_compiler(), "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I",
                        str(REPO / "fmu" / "native" / "include"), str(HOST / "two_mass_host.c"),
                        str(HOST / "host_fmi.c"), "-o", str(host), "-ldl"],
                       check=True)
    _no_libpython(host)
    if address != "-":  # the self-contained binary: libc and libm only (test_fmu_native_local)
        _no_libpython(binary)

    scenario = load_scenario(SCENARIO, {**SHORT, "cosim.extrapolation": str(extrapolation)})
    assert scenario.cosim.scheme == "jacobi"
    H = scenario.cosim.macro_step
    body = CosimMaster(scenario).endpoints["coupling"].body  # initialized: eta at t0
    P, W, FB, S = body._propagator(H), body._w, body._fb, body._interior_shift
    vr = {"server.address": 0, **_vr(unzipped)}  # 0: none (self-contained, address "-")
    lines = [f"address {address}", f"steps {STEPS}", f"H {H!r}",
             f"extrapolation {extrapolation}", f"order {order}",
             f"k {body.modal_coordinates.size}"]
    lines += [f"vr {name} {vr[name]}" for name in (
        "interface.x", "interface.vx", "interface.ax", "interface.fx", "interface.dfx",
        "coupling.flex.x",
        "coupling.flex.vx", "coupling.flex.q0", "coupling.gap_pos", "server.address")]
    for key, values in (("P", P), ("W", W), ("FB", FB), ("S", S), ("pref", body._state[PREF]),
                        ("eta", body.modal_coordinates), ("etad", body.modal_velocities)):
        lines.append(key + " " + " ".join(repr(float(x)) for x in np.ravel(values)))
    setup = work / f"setup_{tag}.txt"
    setup.write_text("\n".join(lines) + "\n")
    out = work / f"host_{tag}.csv"
    done = subprocess.run([str(host), str(version), str(binary), resources,
                           _guid(unzipped), str(setup), str(out)],
                          check=False, capture_output=True, text=True, timeout=120,
                          env=child_env())
    assert done.returncode == 0, done.stderr
    got = np.loadtxt(out, delimiter=",")
    assert got.shape == (STEPS + 1, 5)
    return got, run_cosimulation(scenario, progress=False)


@pytest.mark.parametrize(("version", "extrapolation"), [(2, 1), (3, 1), (2, 0)],
                         ids=["fmi2", "fmi3", "fmi2-hold"])
def test_c_host_without_python_matches_rbcosim_run(version, extrapolation, request, server,
                                                   work):
    """The C host couples its own flexible structure (the reference body's exact propagator,
    matrices from the model) to the FMU, Jacobi with the scenario's linear extrapolation (or
    held inputs); every row equals run_cosimulation's to 1e-9."""
    fmu = request.getfixturevalue("fmu_path" if version == 2 else "fmu3_path")
    got, ref = _two_mass_host(work, fmu, version, extrapolation, server)
    np.testing.assert_allclose(got[:, 0], ref.t, rtol=0, atol=1e-12)
    for col, name in ((1, "interface.x"), (2, "interface.vx"), (4, "structure.eta1")):
        scale = np.abs(ref[name]).max()
        assert np.abs(got[:, col] - ref[name]).max() <= 1e-9 * scale, name
    # The gaps are current: the point's kinematics at t_n against the report just set for t_n.
    gap = ref["coupling.gap_pos"]
    assert np.abs(got[:, 3] - gap).max() <= 1e-9 * np.abs(gap).max()
    assert np.abs(got[:, 1]).max() > 0.05  # the mass really moved (x1(0) = 0.1 m)


@pytest.mark.parametrize("backend", ["server", "self-contained"])
def test_c_host_in_either_transfer_order_gives_the_same_bits(backend, fmu_path, server, work):
    """Outputs never depend on inputs set since the last doStep: the C host setting each
    step's wrench before reading the motion (OMSimulator's order) gives the bits of reading
    it first, both equal to run_cosimulation to 1e-12 (the initial wrench is set in
    initialization mode and takes effect at exitInitializationMode)."""
    if backend == "server":
        fmu, address = fmu_path, server
    else:
        fmu = export_native_fmu(SCENARIO, work / "two_mass_local.fmu", self_contained=True)
        address = "-"
    rows = {order: _two_mass_host(work, fmu, 2, 1, address, order)
            for order in ("read-first", "set-first")}
    got, ref = rows["read-first"]
    assert bits(got) == bits(rows["set-first"][0])
    for col, name in ((1, "interface.x"), (2, "interface.vx"), (4, "structure.eta1")):
        assert np.abs(got[:, col] - ref[name]).max() <= 1e-12, name
    assert np.abs(got[:, 1]).max() > 0.05


def test_server_fmu_body_outputs_equal_rbcosim_run(server, work):
    """The server-client FMU's body outputs (its own points at the bodies' centres of mass,
    angular velocity turned into the body frame) and joint coordinates (computed from them,
    fmu_joints.c) equal `rbcosim run --joint-coordinates`'s columns to 1e-12: the double
    pendulum, whose only outputs they are."""
    scenario = REPO / "scenarios" / "double_pendulum.toml"
    path = export_native_fmu(scenario, work / "dp_server.fmu", address=server)
    model = load_scenario(scenario).model
    columns = body_columns(model) + coordinate_columns(model)
    md = fmpy.read_model_description(str(path))
    outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    assert sorted(outputs) == sorted(columns)  # 26 + 4, no variable of the FMU's own points
    got = fmpy.simulate_fmu(str(path), stop_time=0.5, output_interval=0.01, output=columns)
    out = work / "dp_run.csv"
    assert main(["run", str(scenario), "--t-end", "0.5", "--joint-coordinates", "--out",
                 str(out), "--quiet"]) == 0
    ref = Results.read_csv(out)
    assert bits(got["time"]) == bits(ref.t)
    worst = max(np.abs(got[c] - ref[c]).max() for c in columns)
    assert worst <= 1e-12, worst
    assert np.ptp(got["rod2.x"]) > 0.1 and np.ptp(got["elbow.angle"]) > 0.1  # it swings


def test_validates_and_rebuilds_from_its_own_sources(fmu_path, unzipped, work):
    assert validate_fmu(str(fmu_path)) == []
    root = ElementTree.parse(unzipped / "modelDescription.xml").getroot()
    listed = sorted(f.get("name") for f in root.iterfind("CoSimulation/SourceFiles/File"))
    sources = unzipped / "sources"
    assert listed == sorted(p.name for p in sources.glob("*.c"))
    # No FMI headers in sources/ (FMI 3: the importer brings its own); a host rebuilds the
    # binary from what the FMU ships and its own FMI 2 headers (libzmq, msgpack-c installed).
    assert not list(sources.glob("fmi2*.h")) and not (sources / "LICENSE_FMI.txt").exists()
    headers = Path(__file__).resolve().parents[1] / "fmu" / "native" / "include"
    rebuilt = work / "rebuilt.so"
    subprocess.run([_compiler(), "-std=c99", "-shared", "-fPIC", "-I", str(sources), "-I",
                    str(headers), "-o",
                    str(rebuilt), *map(str, sources.glob("*.c")), "-lmsgpackc", "-lzmq", "-lm",
                    "-Wl,-z,defs"], check=True)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(rebuilt)], check=True,
                             capture_output=True, text=True).stdout
    assert " fmi2DoStep" in symbols and " fmi2Instantiate" in symbols


def test_fmpy_run_equals_the_python_remote_fmu(fmu_path, server, work):
    remote = export_fmu(SCENARIO, work / "remote.fmu", ExportOptions(mode="remote"))
    native_md = fmpy.read_model_description(str(fmu_path))
    remote_md = fmpy.read_model_description(str(remote))
    native = {v.name: (v.valueReference, v.causality) for v in native_md.modelVariables}
    python = {v.name: (v.valueReference, v.causality) for v in remote_md.modelVariables}
    # The same names and value references (the bodies' states and the joints' coordinates,
    # from the FMU's own points at the bodies' centres of mass, included), plus after them the
    # exchange variables the session carries: accelerations, wrench derivatives (1st, 2nd)
    # and the added mass.
    assert {n: native[n] for n in python} == python
    assert {"mass1.x", "mass1.wz", "slider.disp", "slider.speed"} <= set(python)
    wrench = ("fx", "fy", "fz", "mx", "my", "mz")
    extra = [f"interface.{c}" for c in ("ax", "ay", "az", "alx", "aly", "alz")]
    extra += [f"interface.{d}{w}" for w in wrench for d in ("d", "d2")]
    extra += [f"interface.added_mass[{i},{j}]" for i in range(1, 7) for j in range(1, 7)]
    assert sorted(set(native) - set(python)) == sorted([*extra, "interface.added_mass_frame"])
    assert min(native[n][0] for n in extra) == len(python) + 1
    outputs = [n for n, (_, causality) in python.items() if causality == "output"]
    runs = [fmpy.simulate_fmu(str(path), stop_time=0.02, output=outputs,
                              start_values={"server.address": server, "bodies.mass1.mass": 1.5})
            for path in (fmu_path, remote)]
    for name in outputs:
        assert runs[0][name].tobytes() == runs[1][name].tobytes(), name
    assert runs[0]["interface.x"][-1] != runs[0]["interface.x"][0]


def _started(fmu_path, unzipdir, values: dict) -> OpenFmu:
    fmu = open_fmu(fmu_path, unzipdir, initialize=False)
    fmu.slave.setupExperiment(startTime=0.0)
    fmu.slave.enterInitializationMode()
    for name, value in values.items():
        if isinstance(value, str):
            fmu.slave.setString(fmu.vr(name), [value])
        else:
            fmu.set([name], [value])
    return fmu


def test_fmu_state_restores_the_session_to_the_bit(fmu_path, server, work):
    fmu = _started(fmu_path, work / "u_state", {"server.address": server})
    fmu.slave.exitInitializationMode()
    H, names = 1e-3, ["interface.x", "interface.vx", "coupling.gap_pos"]
    t = 0.0
    for n in range(5):
        fmu.set(["interface.fx"], [0.1 * n])
        fmu.do_step(t, H)
        t += H
    blob = fmu.serialize(fmu.get_state())
    runs = []
    for _ in range(2):
        for n in range(5):
            fmu.set(["interface.fx"], [-0.2 * n])
            fmu.do_step(t + n * H, H)
        runs.append(fmu.get(names))
        fmu.set_state(fmu.deserialize(blob))
    assert bits(runs[0]) == bits(runs[1])
    assert runs[0][0] != fmu.get(["interface.x"])[0]  # the restored state is 5 steps back
    # Another FMU's or a damaged state is refused whole, naming why; the instance goes on.
    spoiled = bytearray(blob)
    spoiled[40] ^= 1
    with pytest.raises(FMICallException) as info:
        fmu.set_state(fmu.deserialize(bytes(spoiled)))
    assert info.value.status == 3 and "checksum mismatch" in fmu.messages()
    fmu.set_state(fmu.deserialize(blob))
    fmu.do_step(5 * H, H)
    fmu.close()


def test_errors_name_the_cause(fmu_path, server, work):
    # Unreachable server: exitInitializationMode fails with the client's code.
    fmu = _started(fmu_path, work / "u_err1", {"server.address": "tcp://127.0.0.1:9",
                                               "server.timeout": 0.3})
    with pytest.raises(FMICallException) as info:
        fmu.slave.exitInitializationMode()
    assert info.value.status == 3
    assert "answered timeout" in fmu.messages() and "tcp://127.0.0.1:9" in fmu.messages()
    fmu.slave.freeInstance()
    # A parameter the scenario refuses: the server's message names the key.
    fmu = _started(fmu_path, work / "u_err2", {"server.address": server,
                                               "bodies.mass1.mass": -1.0})
    with pytest.raises(FMICallException):
        fmu.slave.exitInitializationMode()
    assert "scenario_error" in fmu.messages() and "bodies.mass1.mass" in fmu.messages()
    fmu.slave.freeInstance()
    # An added-mass frame that is neither 'point' nor 'inertial', named.
    fmu = _started(fmu_path, work / "u_err4", {"server.address": server,
                                               "interface.added_mass[1,1]": 0.5,
                                               "interface.added_mass_frame": "body"})
    with pytest.raises(FMICallException):
        fmu.slave.exitInitializationMode()
    assert "interface.added_mass_frame: expected 'point' or 'inertial', got 'body'" in \
        fmu.messages()
    fmu.slave.freeInstance()
    # A step size that is not a whole multiple of the macro step: Discard, nothing sent.
    fmu = _started(fmu_path, work / "u_err3", {"server.address": server})
    fmu.slave.exitInitializationMode()
    with pytest.raises(FMICallException) as info:
        fmu.do_step(0.0, 1.5e-3)
    assert info.value.status == 2 and "not a whole multiple" in fmu.messages()
    fmu.close()


def test_starts_its_own_server_without_an_address(fmu_path, server, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    for key, value in child_env().items():
        monkeypatch.setenv(key, value)
    outputs = ["interface.x", "interface.vx"]
    own = fmpy.simulate_fmu(str(fmu_path), stop_time=0.005, output=outputs)
    shared = fmpy.simulate_fmu(str(fmu_path), stop_time=0.005, output=outputs,
                               start_values={"server.address": server})
    for name in outputs:
        assert own[name].tobytes() == shared[name].tobytes()


def test_cli_native_flag(tmp_path, capsys):
    out = tmp_path / "cli.fmu"
    assert main(["export-fmu", str(SCENARIO), "-o", str(out), "--native", "--name", "twomass",
                 "--address", "tcp://127.0.0.1:7000"]) == 0
    assert "native client of tcp://127.0.0.1:7000" in capsys.readouterr().out
    md = fmpy.read_model_description(str(out))
    assert md.coSimulation.modelIdentifier == "twomass"
    address = next(v for v in md.modelVariables if v.name == "server.address")
    assert address.start == "tcp://127.0.0.1:7000"
    with zipfile.ZipFile(out) as z:
        assert "binaries/linux64/twomass.so" in z.namelist()
    out3 = tmp_path / "cli3.fmu"
    assert main(["export-fmu", str(SCENARIO), "-o", str(out3), "--native", "--fmi", "3",
                 "--address", ""]) == 0
    assert "FMI 3.0 co-simulation, native client of a local server" in capsys.readouterr().out
    assert fmpy.read_model_description(str(out3)).fmiVersion == "3.0"
    for extra, named in ((["--flex", "structure"], "--flex"),
                         (["--mode", "embedded"], "--mode embedded")):
        assert main(["export-fmu", str(SCENARIO), "-o", str(out), "--native", *extra]) == 2
        assert f"{named} is not available" in capsys.readouterr().err


def test_fmi3_native_validates_and_equals_fmi2(fmu_path, fmu3_path, server):
    fmu3 = fmu3_path
    assert validate_fmu(str(fmu3)) == []
    with zipfile.ZipFile(fmu3) as z:
        names = z.namelist()
        build = ElementTree.fromstring(z.read("sources/buildDescription.xml"))
    assert "binaries/x86_64-linux/two_mass_oscillator.so" in names
    listed = {f.get("name") for f in build.iterfind("BuildConfiguration/SourceFileSet/SourceFile")}
    assert listed == {n.split("/")[1] for n in names if n.startswith("sources/") and n.endswith(".c")}
    assert "fmi3_native.c" in listed and "fmi2_native.c" not in listed
    md2, md3 = (fmpy.read_model_description(str(p)) for p in (fmu_path, fmu3))
    assert {v.name: v.valueReference for v in md2.modelVariables} == {
        v.name: v.valueReference for v in md3.modelVariables if v.name != "time"}
    outputs = [v.name for v in md2.modelVariables if v.causality == "output"]
    runs = [fmpy.simulate_fmu(str(p), stop_time=0.02, output=outputs,
                              start_values={"server.address": server, "interface.fx": 0.5})
            for p in (fmu_path, fmu3)]
    for name in outputs:
        assert runs[0][name].tobytes() == runs[1][name].tobytes(), name


def test_lost_server_is_discard_naming_the_timeout(fmu_path, work):
    with rbcosim_serve(root=Path(tempfile.gettempdir())) as address:
        fmu = _started(fmu_path, work / "u_lost", {"server.address": address,
                                                   "server.timeout": 0.5})
        fmu.slave.exitInitializationMode()
        fmu.do_step(0.0, 1e-3)
    with pytest.raises(FMICallException) as info:  # the server has stopped
        fmu.do_step(1e-3, 1e-3)
    assert info.value.status == 2
    assert "fmi2DoStep failed at t = 0.001 s: the server answered timeout" in fmu.messages()
    fmu.slave.terminate()
    fmu.slave.freeInstance()


def test_calls_out_of_order_are_refused_and_change_nothing(fmu_path, server, work):
    fmu = open_fmu(fmu_path, work / "u_order", initialize=False)
    with pytest.raises(FMICallException) as info:  # doStep before initialization
        fmu.do_step(0.0, 1e-3)
    assert info.value.status == 2 and "fmi2DoStep refused: not allowed in instantiated" in \
        fmu.messages()
    fmu.slave.reset()
    fmu.slave.setupExperiment(startTime=0.0)
    fmu.slave.enterInitializationMode()
    fmu.slave.setString(fmu.vr("server.address"), [server])
    fmu.slave.exitInitializationMode()
    before = fmu.get(["interface.x", "bodies.mass1.mass"])
    for call in (lambda: fmu.set(["bodies.mass1.mass"], [2.0]),   # a parameter after init
                 lambda: fmu.set(["interface.x"], [1.0]),          # an output
                 lambda: fmu.slave.getReal([10_000]),              # an unknown reference
                 lambda: fmu.slave.enterInitializationMode()):     # twice
        with pytest.raises(FMICallException) as info:
            call()
        assert info.value.status == 3
    assert fmu.get(["interface.x", "bodies.mass1.mass"]) == before
    assert "bodies.mass1.mass (value reference" in fmu.messages()
    assert "value reference 10000 is not a Real variable" in fmu.messages()
    fmu.slave.reset()  # back to instantiated: a new session at the next initialization
    fmu.slave.setupExperiment(startTime=0.0)
    fmu.slave.enterInitializationMode()
    fmu.slave.setString(fmu.vr("server.address"), [server])
    fmu.slave.exitInitializationMode()
    fmu.do_step(0.0, 2e-3)  # a whole multiple: two macro steps, the same bits
    other = _started(fmu_path, work / "u_order2", {"server.address": server})
    other.slave.exitInitializationMode()
    other.do_step(0.0, 1e-3)
    other.do_step(1e-3, 1e-3)
    names = ["interface.x", "interface.vx", "interface.ax"]
    assert bits(fmu.get(names)) == bits(other.get(names))
    assert fmu.get(["interface.x"])[0] < before[0]
    fmu.close()
    other.close()


PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"
KIN = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
MOTION = KIN + ("ax", "ay", "az", "alx", "aly", "alz")
WRENCH = ("fx", "fy", "fz", "mx", "my", "mz")


def test_pendulum_with_added_mass_and_polynomials_matches_rbcosim_run(server, work):
    """rbcosim's own flexible beam (FlexEndpoint) through FMPy and the native FMU, the scenario's
    Gauss–Seidel flex-first scheme (quadratic interpolation) and the beam's added mass handed
    over, as CosimMaster does in process: equals run_cosimulation."""
    path = export_native_fmu(PENDULUM, work / "pendulum_native.fmu")
    scenario = load_scenario(PENDULUM, {"solver.t_end": "0.025", "solver.output_every": "1"})
    H = scenario.cosim.macro_step
    endpoints = build_endpoints(scenario, H)
    fmu = _started(path, work / "u_pendulum", {"server.address": server})

    def motions(t):
        return {j: motion_of(np.array(fmu.get([f"{ep.coupling.point}.{c}" for c in MOTION])), t)
                for j, ep in endpoints.items()}

    def set_wrench(polynomials):
        for j, ep in endpoints.items():
            c = np.zeros((3, 6))
            c[: len(polynomials[j])] = polynomials[j]
            names = [f"{ep.coupling.point}.{d}{w}" for d in ("", "d", "d2") for w in WRENCH]
            fmu.set(names, [*c[0], *c[1], *(2.0 * c[2])])

    def report():
        for j, ep in endpoints.items():
            fmu.set([f"{j}.flex.{c}" for c in KIN], list(ep.report()[j][0]))

    t = 0.0
    handed = 0
    for j, m in motions(t).items():  # initialization mode: the scenario's initial motion
        handover = endpoints[j].initialize(t, m)[j]
        if handover is not None:
            p = endpoints[j].coupling.point
            fmu.set([f"{p}.added_mass[{i},{k}]" for i in range(1, 7) for k in range(1, 7)],
                    list(np.ravel(handover[0])))
            fmu.slave.setString(fmu.vr(f"{p}.added_mass_frame"), [handover[1]])
            handed += 1
    assert handed == 1  # the beam is heavier than the link's tip: massive boundary
    set_wrench({j: ep.polynomial(t) for j, ep in endpoints.items()})  # acts from exit
    fmu.slave.exitInitializationMode()
    report()
    rows = [[*fmu.get(["tip.x", "tip.z", "clamp.gap_pos"]), *endpoints["clamp"].row()]]
    for _ in range(100):
        m = motions(t)  # before the step's wrench
        set_wrench({j: ep.inputs_for_rigid(t, m[j])[0] for j, ep in endpoints.items()})
        fmu.do_step(t, H)
        for j, ep in endpoints.items():
            ep.finish(t, m[j])
        t += H
        report()
        rows.append([*fmu.get(["tip.x", "tip.z", "clamp.gap_pos"]), *endpoints["clamp"].row()])
    fmu.close()
    got = np.array(rows)

    ref = run_cosimulation(scenario, progress=False)
    for col, name in enumerate(["tip.x", "tip.z", None, "beam.eta1", "beam.eta2"]):
        if name is None:  # current gaps: the step's kinematics against the report set after it
            gap = ref["clamp.gap_pos"]
            assert np.abs(got[:, col] - gap).max() <= 1e-9 * np.abs(gap).max()
            continue
        scale = np.abs(ref[name]).max()
        assert scale > 0 and np.abs(got[:, col] - ref[name]).max() <= 1e-9 * scale, name


def test_export_without_the_c_sources_names_the_missing_file(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "NATIVE_SOURCES", tmp_path / "nowhere")
    with pytest.raises(native.NativeBuildError, match="nowhere/fmu_core.c is missing"):
        export_native_fmu(SCENARIO, tmp_path / "x.fmu")
