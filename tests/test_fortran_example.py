"""The Fortran binding (interfaces/fortran) and its two-mass example: the structure alone
against the Python FlexEndpoint fed the same rigid motions, and the Fortran flexible side
against `rbcosim serve` and `rbcosim cosim --serve-external`, whose rigid results must equal
`rbcosim run`'s (same scenario and overrides) to 1e-12.

The expected numbers come from the Python reference (FlexEndpoint, `rbcosim run`), never from
the Fortran code."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from native_build import native_unavailable
from server_process import child_env, rbcosim_serve

from rbcosim.cli.main import main
from rbcosim.client import Client
from rbcosim.results import Results
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.protocol

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "two_mass_oscillator_mtx.toml"
EXAMPLES = REPO / "interfaces" / "fortran" / "examples"
TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def fortran(native_build: Path) -> Path:
    """The build folder of interfaces/fortran (skips or fails without a Fortran compiler)."""
    folder = native_build / "fortran"
    if not (folder / "two_mass_flex_f").is_file():
        native_unavailable("no Fortran compiler: interfaces/fortran was not built")
    return folder


def overrides(scheme: str, t_end: float = 1.0) -> list[str]:
    return [f"solver.t_end={t_end}", f'cosim.scheme="{scheme}"']


def run_reference(tmp_path: Path, sets: list[str]) -> Results:
    """`rbcosim run` of the scenario with the same overrides (in process)."""
    out = tmp_path / "run.csv"
    args = ["run", str(SCENARIO), "--out", str(out), "--quiet"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return Results.read_csv(out)


def max_difference(columns: list[str], rows: np.ndarray, reference: Results) -> float:
    """Largest |difference| over the rigid columns (every column the server records)."""
    assert rows.shape[0] == reference.data.shape[0]
    missing = [c for c in columns if c not in reference.columns]
    assert not missing, f"columns `rbcosim run` lacks: {missing}"
    index = [reference.columns.index(c) for c in columns]
    return float(np.max(np.abs(rows - reference.data[:, index])))


def body_file(tmp_path: Path, sets: list[str]) -> Path:
    """`rbcosim export-body SCENARIO --body structure` with the overrides: the body file the
    Fortran side loads (rbcosim's own grounded structure, stepped by the library rbcosim_flex)."""
    out = tmp_path / "structure.body"
    args = ["export-body", str(SCENARIO), "--body", "structure", "-o", str(out)]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return out


def run_fortran(fortran: Path, address: str, body: Path, *args: str, timeout: float = 300):
    return subprocess.run(
        [str(fortran / "two_mass_flex_f"), address, "--body", str(body), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# --- the structure alone -----------------------------------------------------------------


def recorder():
    spec = importlib.util.spec_from_file_location("record_motions", EXAMPLES / "record_motions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "scheme", ["jacobi", "gauss_seidel_rigid_first", "gauss_seidel_flex_first"]
)
def test_structure_alone_equals_the_python_endpoint(fortran, tmp_path, scheme):
    """record_motions.py records the motions of an in-process run and the Python
    FlexEndpoint's reports and wrench polynomials for them; the Fortran replay of the same
    motions gives the same rows (relative to each column's size)."""
    motions, reference, ours = tmp_path / "motions.txt", tmp_path / "ref.txt", tmp_path / "f.txt"
    sets = [*overrides(scheme, 0.3), "cosim.extrapolation=2"]
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "record_motions.py"),
            str(SCENARIO),
            str(motions),
            str(reference),
            *[a for s in sets for a in ("--set", s)],
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = body_file(tmp_path, sets)
    done = subprocess.run(
        [str(fortran / "structure_replay_f"), str(body), str(motions), str(ours)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ref = [np.array(line.split(), dtype=float) for line in reference.read_text().splitlines()]
    got = [np.array(line.split(), dtype=float) for line in ours.read_text().splitlines()]
    assert len(ref) == len(got) == 302
    steps_ref, steps_got = np.array(ref[:-1]), np.array(got[:-1])
    assert np.array_equal(steps_ref[:, 14], steps_got[:, 14])  # polynomial terms per step
    # node kinematics (m, m/s) and energy (J), relative to each column's size
    scale = np.maximum(1.0, np.abs(steps_ref[:, :14]).max(axis=0))
    assert np.max(np.abs(steps_got[:, :14] - steps_ref[:, :14]) / scale) <= TOLERANCE
    # the wrench polynomials, as the wrenches (N) they give over the step (their higher
    # coefficients divide by H^j and carry that much more rounding)
    H = 1e-3
    powers = np.array([[1.0, tau, tau * tau] for tau in (0.0, 0.5 * H, H)])  # (3 taus, 3 terms)

    def wrenches(rows):
        return np.einsum("tj,sjc->stc", powers, rows[:, 15:].reshape(-1, 3, 6))

    w_ref, w_got = wrenches(steps_ref), wrenches(steps_got)
    assert np.max(np.abs(w_got - w_ref)) <= TOLERANCE * np.abs(w_ref).max()
    assert np.max(np.abs(got[-1] - ref[-1]) / np.maximum(1.0, np.abs(ref[-1]))) <= TOLERANCE
    assert np.abs(steps_ref[:, 15:]).max() > 1.0  # the structure did push back


# --- against a server --------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["jacobi", "gauss_seidel_rigid_first"])
def test_fortran_flex_side_against_rbcosim_serve(fortran, tmp_path, scheme):
    sets = overrides(scheme)
    with rbcosim_serve() as address:
        done = run_fortran(
            fortran,
            address,
            body_file(tmp_path, sets),
            "--scenario",
            str(SCENARIO),
            *[a for s in sets for a in ("--set", s)],
        )
        assert done.returncode == 0, done.stdout + done.stderr
        session = re.search(r"^session (\S+)$", done.stdout, re.MULTILINE).group(1)
        assert re.search(r"^done: 1000 steps", done.stdout, re.MULTILINE), done.stdout
        client = Client(address, timeout=60)
        try:
            client.hello()
            client.session = session
            res = client.results()
            client.close()
        finally:
            client.close_socket()
    rows = np.asarray(res["rows"], dtype=np.float64)
    assert list(res["row_steps"])[-1] == 1000
    diff = max_difference(list(res["columns"]), rows, run_reference(tmp_path, sets))
    print(f"serve, {scheme}: max |rigid difference| vs rbcosim run {diff:.3g}")
    assert diff <= TOLERANCE, f"max |rigid difference| vs rbcosim run: {diff:.3g}"


@pytest.mark.parametrize("scheme", ["jacobi", "gauss_seidel_flex_first"])
def test_fortran_flex_side_joins_cosim_serve_external(fortran, tmp_path, scheme):
    sets = overrides(scheme)
    out = tmp_path / "cosim.csv"
    cosim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rbcosim.cli.main",
            "cosim",
            str(SCENARIO),
            "--serve-external",
            "--out",
            str(out),
            "--no-plot",
            "--quiet",
            *[a for s in sets for a in ("--set", s)],
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        line = cosim.stderr.readline()
        found = re.match(r"serving session (\S+) on (\S+);", line)
        assert found, line + cosim.stderr.read()
        session, address = found.group(1), found.group(2)
        done = run_fortran(fortran, address, body_file(tmp_path, sets), "--session", session)
        assert done.returncode == 0, done.stdout + done.stderr
        stdout, stderr = cosim.communicate(timeout=120)
        assert cosim.returncode == 0, stdout + stderr
    finally:
        if cosim.poll() is None:
            cosim.kill()
            cosim.wait()
    results = Results.read_csv(out)
    diff = max_difference(results.columns, results.data, run_reference(tmp_path, sets))
    print(f"cosim --serve-external, {scheme}: max |rigid difference| vs rbcosim run {diff:.3g}")
    assert diff <= TOLERANCE, f"max |rigid difference| vs rbcosim run: {diff:.3g}"
    assert load_scenario(SCENARIO, sets).cosim.scheme == scheme
