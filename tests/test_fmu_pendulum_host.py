"""The rigid–flexible pendulum's native FMU (FMI 2 and 3) in a C host without Python that integrates
the floating beam itself (fmu/native/host/pendulum_host.c, floating_beam.c), built from source
here, against `rbcosim run`'s in-process co-simulation (run_cosimulation)."""

from __future__ import annotations

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

from rbcosim.cosim.master import build_endpoints, run_cosimulation
from rbcosim.flex.body import FlexBody
from rbcosim.fmu_export.native import export_native_fmu
from rbcosim.scenario import load_scenario

pytestmark = pytest.mark.fmu

PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"
HOST = REPO / "fmu" / "native" / "host"
#: The scenario's whole 2 s, every step in the results: 8000 macro steps of 0.25 ms.
T_END, STEPS = 2.0, 8000
OUTPUTS = ["tip.x", "tip.z", "tip.vx", "tip.vz", "tip.wy"]


def _numbers(key: str, values) -> str:
    return key + " " + " ".join(repr(float(x)) for x in np.ravel(values))


def setup_text(body: FlexBody, H: float, steps: int, extrapolation: int, address: str,
               vr: dict[str, int]) -> str:
    """The host's SETUP_FILE for `body` (a floating FlexBody with one output node): the
    model's floating inertia and ODE matrix, row-major, and the FMU's value references."""
    model, fl = body.model, body.model.floating
    nb = model.n_boundary
    assert model.attachment == "floating" and len(model.output_names) == 1
    lines = [f"address {address}", f"steps {steps}", f"H {H!r}", f"e {extrapolation}",
             f"micro_steps {body.micro_steps}", f"k {model.n_modes}",
             f"nodes {fl.nodes.shape[0]}"]
    for key, values in (("gravity", body.gravity), ("axis", model.axis_rotation),
                        ("ode", fl.ode_matrix), ("node_positions", fl.nodes),
                        ("modes", fl.modes), ("mass", fl.mass), ("total_mass", fl.total_mass),
                        ("first_moment", fl.first_moment), ("modal_first", fl.modal_first_moment),
                        ("spin", fl.spin_inertia), ("out_position", model.output_positions[0]),
                        ("out_rows", model.output_rows[0][:, nb:])):
        lines.append(_numbers(key, values))
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
    """The host from source, warnings as errors; no libpython."""
    host = folder / "pendulum_host"
    subprocess.run([_compiler(), "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I",
                    str(REPO / "fmu" / "native" / "include"),
                    *(str(HOST / f) for f in ("pendulum_host.c", "floating_beam.c", "host_fmi.c")),
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


@pytest.mark.parametrize("version", [2, 3], ids=["fmi2", "fmi3"])
def test_c_host_with_its_own_floating_beam_matches_rbcosim_run(version, host, scenario,
                                                               reference, tmp_path):
    """Gauss–Seidel flex-first, quadratic interpolation, the beam's added mass handed over:
    the link's tip motion, the gap, the beam's modal coordinates and its tip node over the
    scenario's 2 s equal run_cosimulation's to 1e-9 relative."""
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
        setup.write_text(setup_text(body, cosim.macro_step, STEPS, cosim.extrapolation, address,
                                    vr))
        done = subprocess.run([str(host), str(version), str(binary), resources, md.guid,
                               str(setup), str(out)], check=False, capture_output=True,
                              text=True, timeout=300, env=child_env())
    assert done.returncode == 0, done.stderr
    got = np.loadtxt(out, delimiter=",")

    ref = reference
    k = body.modal_coordinates.size
    names = [*OUTPUTS, "clamp.gap_pos", *(f"beam.eta{i + 1}" for i in range(k)),
             "beam.tip.x", "beam.tip.y", "beam.tip.z"]
    assert got.shape == (STEPS + 1, 1 + len(names))
    np.testing.assert_allclose(got[:, 0], ref.t, rtol=0, atol=1e-12)
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
    assert np.ptp(ref["tip.x"]) > 0.4 and np.abs(ref["beam.eta1"]).max() > 1e-4


def test_bad_setup_file_is_refused_naming_the_file_and_key(host, tmp_path):
    for text, message in (("k 4\nnodes 2\nmodes 1 2 3\n", "modes needs 48 numbers"),
                          ("ode 1 2\n", "ode before k and nodes"),
                          ("k 4\nnodes 2\nshape 3\n", "unknown key shape"),
                          ("vr outputs 9 1\n", "vr outputs COUNT (1..8)"),
                          ("k 4\nnodes 2\n", "H, ode, node_positions")):
        setup = tmp_path / "setup.txt"
        setup.write_text(text)
        done = subprocess.run([str(host), "2", "x.so", "file:///r", "guid", str(setup),
                               str(tmp_path / "out.csv")], capture_output=True, text=True,
                              check=False)
        assert done.returncode == 1
        assert done.stderr.startswith(f"{setup}: {message}"), done.stderr
