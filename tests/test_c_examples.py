"""The C examples of flexible sides (interfaces/c/examples): the grounded structure alone
against rbcosim's Python FlexEndpoint, the two-mass oscillator's C flexible side against
`rbcosim serve` and `rbcosim cosim --serve-external` (rigid results = `rbcosim run`'s to
1e-12), and the two beams driven from one C process (link angle within the flexibility's
share of `rbcosim run`'s)."""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from server_process import child_env, rbcosim_serve

from rbcosim.cli.main import main
from rbcosim.client import Client
from rbcosim.results import Results

pytestmark = pytest.mark.protocol

REPO = Path(__file__).resolve().parents[1]
EXAMPLES_SRC = REPO / "interfaces" / "c" / "examples"
TWO_MASS = REPO / "scenarios" / "two_mass_oscillator_mtx.toml"
TWO_MASS_DATA = REPO / "scenarios" / "data" / "two_mass"
TWO_BEAMS = REPO / "scenarios" / "two_beams.toml"
T_END = "solver.t_end=1.0"  # 1000 macro steps of 1 ms
TOLERANCE = 1e-12  # rigid results vs `rbcosim run` (N, m, m/s, J)


def example(native_build: Path, name: str) -> Path:
    path = native_build / "c" / "examples" / name
    assert path.is_file(), f"{path} was not built"
    return path


def run_c(cmd, timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def reference(tmp_path: Path, scenario: Path, *sets: str) -> Results:
    """`rbcosim run` of the scenario with the overrides."""
    out = tmp_path / f"{scenario.stem}.run.csv"
    args = ["run", str(scenario), "--out", str(out), "--quiet"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return Results.read_csv(out)


def worst_difference(columns, rows: np.ndarray, ref: Results) -> float:
    """Largest |difference| over the server's (rigid) columns, row for row."""
    rows = np.asarray(rows)
    assert rows.shape[0] == ref.data.shape[0]
    worst = 0.0
    for i, name in enumerate(columns):
        assert name in ref.columns, name
        d = np.abs(rows[:, i] - ref.data[:, ref.columns.index(name)])
        worst = max(worst, float(np.nanmax(d)) if np.isfinite(d).any() else 0.0)
    return worst


def body_file(tmp_path: Path, scenario: Path, *sets: str) -> Path:
    """`rbcosim export-body SCENARIO --body structure` with the overrides: the body file the
    C side loads (rbcosim's own grounded structure, stepped by the library rbcosim_flex)."""
    out = tmp_path / f"{scenario.stem}.body"
    args = ["export-body", str(scenario), "--body", "structure", "-o", str(out)]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return out


def modal_coordinate(own: np.ndarray) -> np.ndarray:
    """The Craig-Bampton coordinate of the C side's rows (t, eta1, x_node): the C side steps
    rbcosim's own body, so it writes the modal coordinate itself."""
    return own[:, 1]


def own_rows(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


@contextlib.contextmanager
def cosim_serve_external(tmp_path: Path, scenario: Path, *sets: str):
    """`rbcosim cosim SCENARIO --serve-external`; yields (address, session, process, out)."""
    out = tmp_path / f"{scenario.stem}.cosim.csv"
    log = tmp_path / "cosim.err"
    args = [
        sys.executable,
        "-m",
        "rbcosim",
        "cosim",
        str(scenario),
        "--serve-external",
        "--out",
        str(out),
        "--no-plot",
        "--quiet",
    ]
    for s in sets:
        args += ["--set", s]
    with log.open("w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=child_env())
    try:
        deadline = time.monotonic() + 120
        while True:
            text = log.read_text()
            found = [ln for ln in text.splitlines() if ln.startswith("serving session ")]
            if found:
                break
            assert proc.poll() is None, text
            assert time.monotonic() < deadline, "no session announced: " + text
            time.sleep(0.2)
        words = found[0].split()
        yield words[4].rstrip(";"), words[2], proc, out
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(30)


# A variant of the two-mass structure whose boundary carries mass (0.5 kg, coupled to the
# interior by 0.05 kg), in coordinate format: the added-mass handover and the regrounding
# shift M_ii^-1 M_ib are then at work.
MASSIVE_BOUNDARY_M = """%%MatrixMarket matrix coordinate real symmetric
% boundary mass 0.5 kg, coupled to the interior
2 2 3
1 1 0.5
2 1 0.05
2 2 1.0
"""


@pytest.fixture
def massive_boundary(tmp_path) -> tuple[Path, Path]:
    """(scenario, data folder) of the two-mass oscillator with a massive boundary."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "m.mtx").write_text(MASSIVE_BOUNDARY_M)
    for name in ("k.mtx", "c.mtx"):
        (data / name).write_text((TWO_MASS_DATA / name).read_text())
    scenario = tmp_path / "massive_boundary.toml"
    scenario.write_text(TWO_MASS.read_text().replace("data/two_mass/", "data/"))
    return scenario, data


# --- the structure alone ------------------------------------------------------------------


def structure_reference():
    spec = importlib.util.spec_from_file_location(
        "structure_reference", EXAMPLES_SRC / "structure_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("scheme", "order", "component", "massive"),
    [
        ("jacobi", 1, "x", False),
        ("gauss_seidel_rigid_first", 2, "x", False),
        ("gauss_seidel_flex_first", 2, "rz", False),
        ("jacobi", 0, "rz", False),
        ("gauss_seidel_rigid_first", 2, "x", True),
        ("jacobi", 1, "rz", True),
    ],
)
def test_structure_alone_equals_the_python_endpoint(
    native_build, tmp_path, massive_boundary, scheme, order, component, massive
):
    """Fed the same rigid motions, the C structure gives the Python FlexEndpoint's wrench
    polynomials, node kinematics, energies, wrenches and interior states to 1e-12."""
    scenario = massive_boundary[0] if massive else TWO_MASS
    motions = tmp_path / "motions.txt"
    sets = [
        f'cosim.scheme="{scheme}"',
        f"cosim.extrapolation={order}",
        f'flex_bodies.structure.boundary_dofs=["{component}"]',
    ]
    py = structure_reference().record(scenario, motions, overrides=sets, steps=300)
    body = body_file(tmp_path, scenario, *sets)
    done = run_c([example(native_build, "structure_driver"), body, motions])
    c = np.loadtxt(done.stdout.splitlines(), ndmin=2)
    assert c.shape == py.shape
    assert np.array_equal(c[:, :2], py[:, :2])  # step index, number of polynomial terms
    # polynomial coefficients c_j compared as c_j H^j (values over the step, N)
    h = 1e-3
    scale = np.repeat(h ** np.arange(3), 6)
    assert np.abs((c[:, 2:20] - py[:, 2:20]) * scale).max() <= TOLERANCE
    assert np.abs(c[:, 20:] - py[:, 20:]).max() <= TOLERANCE


# --- the two-mass oscillator against a server -----------------------------------------------


@pytest.mark.parametrize("scheme", ["jacobi", "gauss_seidel_rigid_first"])
def test_two_mass_against_rbcosim_serve_equals_run(native_build, tmp_path, scheme):
    sets = (T_END, f'cosim.scheme="{scheme}"')
    x2 = tmp_path / "x2.csv"
    with rbcosim_serve() as address:
        cmd = [example(native_build, "two_mass_flex"), address, "--scenario", TWO_MASS, "--out", x2]
        cmd += ["--body", body_file(tmp_path, TWO_MASS, *sets)]
        for s in sets:
            cmd += ["--set", s]
        done = run_c(cmd)
        session = done.stdout.split()[1]
        with Client(address, timeout=30) as client:
            client.session = session
            results = client.results()
    ref = reference(tmp_path, TWO_MASS, *sets)
    assert list(results["row_steps"])[-1] == 1000
    assert worst_difference(results["columns"], results["rows"], ref) <= TOLERANCE
    own = own_rows(x2)
    assert np.abs(own[:, 0] - ref.data[:, 0]).max() <= 1e-12
    eta = ref.data[:, ref.columns.index("structure.eta1")]
    assert np.abs(modal_coordinate(own) - eta).max() <= TOLERANCE


def test_two_mass_hands_a_massive_boundary_over_and_equals_run(
    native_build, tmp_path, massive_boundary
):
    scenario, _ = massive_boundary
    sets = (T_END, 'cosim.scheme="jacobi"')
    with rbcosim_serve(root=scenario.parent) as address:
        cmd = [
            example(native_build, "two_mass_flex"),
            address,
            "--scenario",
            scenario,
            "--body",
            body_file(tmp_path, scenario, *sets),
        ]
        for s in sets:
            cmd += ["--set", s]
        done = run_c(cmd)
        # M_a = M_bb - M_bi M_ii^-1 M_ib = 0.5 - 0.05^2 / 1 kg
        assert "added mass handed over (inertial axes), M_a[x][x] = 0.4975 kg" in done.stderr
        with Client(address, timeout=30) as client:
            client.session = done.stdout.split()[1]
            results = client.results()
    ref = reference(tmp_path, scenario, *sets)
    assert worst_difference(results["columns"], results["rows"], ref) <= TOLERANCE


@pytest.mark.parametrize("scheme", ["jacobi", "gauss_seidel_flex_first"])
def test_two_mass_against_cosim_serve_external_equals_run(native_build, tmp_path, scheme):
    sets = (T_END, f'cosim.scheme="{scheme}"')
    with cosim_serve_external(tmp_path, TWO_MASS, *sets) as (address, session, proc, out):
        body = body_file(tmp_path, TWO_MASS, *sets)
        cmd = [example(native_build, "two_mass_flex"), address, "--session", session]
        run_c([*cmd, "--body", body])
        assert proc.wait(60) == 0
    got = Results.read_csv(out)
    ref = reference(tmp_path, TWO_MASS, *sets)
    assert worst_difference(got.columns, got.data, ref) <= TOLERANCE


def test_two_mass_refuses_an_unsupported_scheme(native_build, tmp_path):
    with rbcosim_serve() as address:
        done = subprocess.run(
            [
                str(example(native_build, "two_mass_flex")),
                address,
                "--scenario",
                str(TWO_MASS),
                "--set",
                T_END,
                "--set",
                'cosim.scheme="interface_jacobian"',
                "--body",
                str(body_file(tmp_path, TWO_MASS)),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert "interface_jacobian" in done.stderr and "runs only" in done.stderr


# --- two beams from one C process ---------------------------------------------------------

BEAMS_T_END = "solver.t_end=0.05"  # 200 macro steps of 0.25 ms
RIGID_BEAMS = ("flex_bodies.beam_tip.modes=0", "flex_bodies.beam_side.modes=0")


def link_angle(columns, rows) -> np.ndarray:
    """The link's rotation about the hinge axis Y (rad) from its quaternion columns."""
    columns, rows = list(columns), np.asarray(rows)
    q0, q2 = rows[:, columns.index("link.q0")], rows[:, columns.index("link.q2")]
    return 2.0 * np.arctan2(q2, q0)


def two_beams_on_serve(native_build: Path, *sets: str) -> dict:
    with rbcosim_serve() as address:
        cmd = [example(native_build, "two_beams_flex"), address, "--scenario", TWO_BEAMS]
        for s in sets:
            cmd += ["--set", s]
        session = run_c(cmd).stdout.split()[1]
        with Client(address, timeout=30) as client:
            client.session = session
            return client.results()


@pytest.mark.parametrize(
    ("sets", "tolerance"),
    [
        ((BEAMS_T_END,), 5e-4),  # flexible beams in `rbcosim run`: their bending
        ((BEAMS_T_END, *RIGID_BEAMS), 1e-12),  # rigid beams on both sides: the same numbers
    ],
)
def test_two_beams_link_angle_agrees_with_run(native_build, tmp_path, sets, tolerance):
    results = two_beams_on_serve(native_build, *sets)
    ref = reference(tmp_path, TWO_BEAMS, *sets)
    assert list(results["row_steps"])[-1] == 200
    got = link_angle(results["columns"], results["rows"])
    want = link_angle(ref.columns, ref.data)
    assert got.shape == want.shape
    assert np.abs(want - want[0]).max() > 0.01  # the link swings
    assert np.abs(got - want).max() <= tolerance
