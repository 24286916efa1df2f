"""The rigid–flexible pendulum's native FMU (FMI 2 and 3) in a C host without Python that integrates
the floating beam itself (fmu/native/host/pendulum_host.c on the library's flexible body, librbcosim/flex), built from source
here, against `rbcosim run`'s in-process co-simulation (run_cosimulation)."""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from native_build import REPO
from server_process import child_env, rbcosim_serve
from test_fmu_native import KIN, MOTION, WRENCH, _compiler, _no_libpython

from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.cosim.master import build_endpoints, run_cosimulation
from rbcosim.flex.io.body_file import body_file_bytes
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.scenario.loader import load_scenario
from rbcosim.spatial.quaternion import rotation_matrix

pytestmark = pytest.mark.fmu

PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"
HOST = REPO / "fmu" / "native" / "host"
#: The scenario's whole 2 s, every step in the results: 8000 macro steps of 0.25 ms.
T_END, STEPS = 2.0, 8000
OUTPUTS = ["tip.x", "tip.z", "tip.vx", "tip.vz", "tip.wy"]


def _numbers(key: str, values) -> str:
    return key + " " + " ".join(repr(float(x)) for x in np.ravel(values))


def setup_text(body: FlexBody, H: float, steps: int, extrapolation: int, address: str,
               vr: dict[str, int], body_file: Path) -> str:
    """The host's SETUP_FILE for `body` (a floating FlexBody with one output node): its body
    file (written here, rbcosim.flex.io.body_file) and the FMU's value references."""
    model = body.model
    assert model.attachment == "floating" and len(model.output_names) == 1
    body_file.write_bytes(body_file_bytes(body, H))
    lines = [f"address {address}", f"steps {steps}", f"H {H!r}", f"e {extrapolation}",
             f"body {body_file}"]
    point, joint = "tip", "clamp"
    roles = {
        "motion": [f"{point}.{c}" for c in MOTION],
        "wrench": [f"{point}.{d}{w}" for d in ("", "d", "d2") for w in WRENCH],
        "flex": [f"{joint}.flex.{c}" for c in KIN],
        "added_mass": [f"{point}.added_mass[{i},{j}]" for i in range(1, 7) for j in range(1, 7)],
        "added_mass_frame": [f"{point}.added_mass_frame"],
        "gap": [f"{joint}.gap_pos"], "address": ["server.address"],
    }
    lines += [f"vr {role} " + " ".join(str(vr[n]) for n in names) for role, names in roles.items()]
    lines.append(f"vr outputs {len(OUTPUTS)} " + " ".join(str(vr[n]) for n in OUTPUTS))
    return "\n".join(lines) + "\n"


def _build_host(folder: Path) -> Path:
    """The host from source with the library's flexible body (librbcosim/flex and its model
    file reader, the core's flags), warnings as errors; no libpython."""
    host = folder / "pendulum_host"
    core = REPO / "src" / "rbcosim" / "librbcosim"
    subprocess.run([_compiler(), "-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra",
                    "-Werror", "-D_POSIX_C_SOURCE=200809L", "-I",
                    str(REPO / "fmu" / "native" / "include"), "-I", str(core),
                    *(str(HOST / f) for f in ("pendulum_host.c", "host_fmi.c")),
                    str(core / "model_file.c"), *map(str, sorted((core / "flex").glob("*.c"))),
                    "-o", str(host), "-ldl", "-lm"], check=True)
    _no_libpython(host)
    return host


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    return _build_host(tmp_path_factory.mktemp("pendulum_host"))


@pytest.fixture(scope="module")
def scenario():
    s = load_scenario(PENDULUM, {"solver.t_end": str(T_END), "solver.output_every": "1"})
    assert s.cosim.scheme == "gauss_seidel_flex_first" and s.cosim.added_mass
    return s


@pytest.fixture(scope="module")
def reference(scenario):
    return run_cosimulation(scenario, progress=False)


@pytest.mark.parametrize(("version", "steps"), [(2, STEPS), (3, STEPS // 4)],
                         ids=["fmi2", "fmi3"])
def test_c_host_with_its_own_floating_beam_matches_rbcosim_run(version, steps, host, scenario,
                                                               reference, tmp_path):
    """Gauss–Seidel flex-first, quadratic interpolation, the beam's added mass handed over:
    the link's tip motion, the gap, the beam's modal coordinates and its tip node over the
    scenario's 2 s (FMI 3: the first 0.5 s) equal run_cosimulation's to 1e-9 relative."""
    fmu = export_native_fmu(PENDULUM, tmp_path / "pendulum.fmu", fmi_version=version)
    unzipped = tmp_path / "unzipped"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzipped)
    platform = "linux64" if version == 2 else "x86_64-linux"
    binary = unzipped / "binaries" / platform / "rigid_flex_pendulum.so"
    _no_libpython(binary)
    resources = (unzipped / "resources").as_uri() if version == 2 else f"{unzipped}/resources/"
    md = fmpy.read_model_description(str(unzipped / "modelDescription.xml"))
    vr = {v.name: v.valueReference for v in md.modelVariables}

    cosim = scenario.cosim
    body = build_endpoints(scenario, cosim.macro_step)["clamp"].body
    out = tmp_path / "host.csv"
    with rbcosim_serve(root=Path(tempfile.gettempdir())) as address:
        setup = tmp_path / "setup.txt"
        setup.write_text(setup_text(body, cosim.macro_step, steps, cosim.extrapolation, address,
                                    vr, tmp_path / "beam.body"))
        done = subprocess.run([str(host), str(version), str(binary), resources, md.guid,
                               str(setup), str(out)], check=False, capture_output=True,
                              text=True, timeout=300, env=child_env())
    assert done.returncode == 0, done.stderr
    got = np.loadtxt(out, delimiter=",")

    ref = {name: reference[name][: steps + 1] for name in reference.columns}
    k = body.modal_coordinates.size
    names = [*OUTPUTS, "clamp.gap_pos", *(f"beam.eta{i + 1}" for i in range(k)),
             "beam.tip.x", "beam.tip.y", "beam.tip.z"]
    assert got.shape == (steps + 1, 1 + len(names))
    np.testing.assert_allclose(got[:, 0], reference.t[: steps + 1], rtol=0, atol=1e-12)
    for col, name in enumerate(names, start=1):
        err = np.abs(got[:, col] - ref[name]).max()
        if name == "clamp.gap_pos":
            # A difference of two positions of ~0.5 m (the gap is below 1e-9 m): compared
            # relative to those positions; its round-off is ~1e-16 m.
            scale = np.abs([ref["tip.x"], ref["tip.z"]]).max()
        else:
            scale = np.abs(ref[name]).max()
        assert err <= 1e-9 * scale, f"{name}: {err:.3g} against {scale:.3g}"
    assert np.abs(got[:, names.index("beam.tip.y") + 1]).max() == 0.0  # planar: in the X–Z plane
    # It really swung and bent: the link turned through ±30° and the beam's modes are excited.
    assert np.ptp(reference["tip.x"]) > 0.4 and np.abs(ref["beam.eta1"]).max() > 1e-4


def test_bad_setup_file_is_refused_naming_the_file_and_key(host, tmp_path):
    for text, message in (("e 5\n", "e (0, 1 or 2)"),
                          ("steps -1\n", "steps"),
                          ("shape 3\n", "unknown key shape"),
                          ("vr outputs 9 1\n", "vr outputs COUNT (1..8)"),
                          ("H 1e-3\n", "H, body and vr outputs")):
        setup = tmp_path / "setup.txt"
        setup.write_text(text)
        done = subprocess.run([str(host), "2", "x.so", "file:///r", "guid", str(setup),
                               str(tmp_path / "out.csv")], capture_output=True, text=True,
                              check=False)
        assert done.returncode == 1
        assert done.stderr.startswith(f"{setup}: {message}"), done.stderr


_P = ctypes.POINTER(ctypes.c_double)


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P)


def _motion(t: float) -> np.ndarray:
    """A tumbling, accelerating point (19,): smooth functions of t, any consistency not needed
    (the body takes each motion as given)."""
    axis = np.array([np.sin(3 * t), 0.6, np.cos(2 * t)])
    angle = 0.4 + 2.0 * t
    q = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis / np.linalg.norm(axis)])
    return np.concatenate([[0.1 * t, -0.2 * t * t, 0.05 * np.sin(t)], q,
                           [0.1, -0.4 * t, 0.05 * np.cos(t)], [1.5 + t, -0.7, 2.0 * np.sin(4 * t)],
                           [0.3 * np.cos(9 * t), -0.4, 1.0], [5 * np.sin(7 * t), 2.0, -3 * t]])


def test_c_floating_beam_equals_flexbody_on_a_tumbling_3d_beam(tmp_path):
    """The library's body file API (librbcosim/flex/body_file.h, what the host links) called
    directly (ctypes) against FlexBody on what the pendulum does not reach: a 3D beam with
    unequal bending stiffnesses, torsion, damping, geometric stiffening, an inclined axis, 3 RK4
    micro steps and a tumbling interface with order-2 accelerations, 150 steps: frame, modal
    state, wrench and tip node to 1e-12 relative."""
    lib = tmp_path / "libflexbody.so"
    core = REPO / "src" / "rbcosim" / "librbcosim"
    subprocess.run([_compiler(), "-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra",
                    "-Werror", "-shared", "-fPIC", "-I", str(core), str(core / "model_file.c"),
                    *map(str, sorted((core / "flex").glob("*.c"))), "-o", str(lib), "-lm"],
                   check=True)
    c = ctypes.CDLL(str(lib))
    model = FlexModel.from_beam(0.8, 7e10, 2700.0, 2e-4, 1.2e-9, second_moment_z=3e-9,
                                n_elements=4, n_modes=6, planar=False, modal_damping_ratio=0.02,
                                output_nodes={"tip": "end"}, axis_in_point_frame=(0.3, 0.4, 0.8),
                                geometric_stiffening=True)
    body = FlexBody(model, gravity=(0.3, -0.2, -9.81), micro_steps=3)
    k = model.n_modes
    H = 2e-3
    path = tmp_path / "beam.body"
    path.write_bytes(body_file_bytes(body, H))
    cb = ctypes.create_string_buffer(4096)  # rbc_fx_body_file, opaque here
    xs = ctypes.create_string_buffer(4096)  # rbc_fx_exchange_store
    reason = ctypes.create_string_buffer(600)
    assert c.rbc_fx_body_file_load(cb, str(path).encode(), reason, 600) == 0, reason.value
    c.rbc_fx_exchange_init(xs)
    c.rbc_fx_body_state.restype = _P
    c.rbc_fx_body_wrench_at_state.restype = _P
    state = np.ctypeslib.as_array(c.rbc_fx_body_state(cb), shape=(28 + 2 * k,))
    wrench = np.ctypeslib.as_array(c.rbc_fx_body_wrench_at_state(cb), shape=(6,))
    m0 = _motion(0.0)
    body.initialize(0.0, motion_of(m0, 0.0))
    scratch, handed = np.zeros(28 + 2 * k), np.zeros(36)
    assert c.rbc_fx_endpoint_start(cb, xs, ctypes.c_double(0.0), _ptr(m0), 1, _ptr(scratch),
                                   _ptr(handed)) == 1
    got, want = np.zeros(36), body.added_mass()
    c.rbc_fx_body_added_mass(cb, _ptr(scratch), _ptr(got))
    assert np.abs(got - want.ravel()).max() <= 1e-12 * np.abs(want).max()
    rot = np.kron(np.eye(2), rotation_matrix(m0[3:7]))  # diag(R, R), independently
    assert np.allclose(handed.reshape(6, 6), rot.T @ want @ rot, rtol=0, atol=1e-12)
    past: list = []
    coef, rows = np.zeros(24), ctypes.c_int64(0)
    for n in range(150):
        t = n * H
        m = _motion(t)
        body.step(t, H, motion_of(m, t), extrapolation=[motion_of(p, tp) for p, tp in past])
        prow = np.ascontiguousarray([p for p, _ in past]).reshape(-1)
        taus = np.array([tp - t for _, tp in past])
        assert c.rbc_fx_endpoint_step(cb, xs, _ptr(m), ctypes.c_int64(len(past)), _ptr(taus),
                                      _ptr(prow), ctypes.c_double(t), ctypes.c_double(H),
                                      ctypes.c_int64(2), _ptr(coef), ctypes.byref(rows)) == 1
        past = [(m, t), *past[:1]]
        node = np.zeros(3)
        c.rbc_fx_body_output_nodes(cb, _ptr(node))
        frame = np.concatenate([body.node_kinematics(), body.frame_accelerations()])
        for name, a, b in (("frame", state[1:20], frame),
                           ("eta", state[28:28 + k], body.modal_coordinates),
                           ("eta'", state[28 + k:], body.modal_velocities),
                           ("wrench", wrench, body.wrench()),
                           ("tip", node, body.output_nodes()["tip"])):
            assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), (n, name)
    assert np.abs(body.modal_coordinates).max() > 1e-6  # it deformed
    c.rbc_fx_body_file_free(cb)
