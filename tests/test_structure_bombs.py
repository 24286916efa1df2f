"""Structure files that declare more than they hold: a 60-byte .mtx declaring an 8000x8000 (or
40,000, 100,000) matrix and a .npz whose .npy headers declare 40,000x40,000 arrays (no data) are
refused from their headers, before any array is allocated, with one line naming the file, the
declared size and the limit. The commands run under an address-space limit of 1.5 GB, so a real
allocation would end in MemoryError (a traceback) instead of the message."""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.convert import read_matrix
from rbcosim.flex.io.declared_size import MAX_DECLARED_BYTES, declared_arrays
from rbcosim.flex.io.matrices_io import load_mtx, load_npz

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
ADDRESS_SPACE = 1_500_000_000  # bytes: Python, numpy and scipy fit; an 8000² matrix pair does not


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _rbcosim(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # One BLAS thread: a many-core machine's per-thread buffers stay inside the address space.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "rbcosim", *args], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=_limited)


def _empty_mtx(path: Path, n: int) -> None:
    """A valid symmetric coordinate file of an n x n matrix with no entries (all zero)."""
    path.write_text(f"%%MatrixMarket matrix coordinate real symmetric\n{n} {n} 0\n")


def _header_only_npz(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """A .npz whose members are .npy headers declaring `shapes` (float64) without their data."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, shape in shapes.items():
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, {"descr": "<f8", "fortran_order": False, "shape": shape})
            archive.writestr(f"{name}.npy", header.getvalue())
    archive_bytes = path.stat().st_size
    assert archive_bytes < 2000, archive_bytes


def _scenario(tmp_path: Path, structure: str) -> Path:
    """The two-mass oscillator (Matrix Market variant) with its structure replaced."""
    text = (SCENARIOS / "two_mass_oscillator_mtx.toml").read_text()
    lines = [structure if line.startswith("files = ") else line for line in text.splitlines()]
    path = tmp_path / "bomb.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_mtx_declaring_8000_squared_is_refused_by_check_under_a_lowered_memory_limit(tmp_path):
    for key in ("m", "k"):
        _empty_mtx(tmp_path / f"{key}.mtx", 8000)
    assert (tmp_path / "m.mtx").stat().st_size < 70
    scenario = _scenario(tmp_path, 'files = { M = "m.mtx", K = "k.mtx" }')
    done = _rbcosim("check", scenario.name, "--limit", "memory_bytes=1000000000", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    problems = [line for line in done.stdout.splitlines() if line.startswith("PROBLEM")]
    assert len(problems) == 1, done.stdout
    # 6 N² float64 for the reduction plus the two dense matrices the files declare, 8 B each,
    # and the small rigid part: at least 8 (6 + 2) 8000² bytes.
    assert "the run needs memory_bytes = " in problems[0]
    needed = int(problems[0].split("memory_bytes = ")[1].split()[0])
    assert needed >= 8 * 8 * 8000**2
    assert ("flex_bodies.structure file m.mtx declares 8000x8000; flex_bodies.structure file "
            "k.mtx declares 8000x8000), over the limit 1000000000; raise it with --limit "
            f"memory_bytes={needed}") in problems[0]
    assert "flexible bodies: not built (over the run limits, see below)" in done.stdout


@pytest.mark.parametrize("n", [40_000, 100_000])
def test_an_mtx_declaring_a_huge_matrix_is_refused_by_check_and_run(tmp_path, n):
    for key in ("m", "k"):
        _empty_mtx(tmp_path / f"{key}.mtx", n)
    scenario = _scenario(tmp_path, 'files = { M = "m.mtx", K = "k.mtx" }')
    declared = (f"(flex_bodies.structure file m.mtx declares {n}x{n}; flex_bodies.structure "
                f"file k.mtx declares {n}x{n}), over the limit 10000")
    done = _rbcosim("check", scenario.name, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"PROBLEM: bomb.toml: the run needs modal_coordinates = {n} {declared}" in done.stdout
    done = _rbcosim("run", scenario.name, "--quiet", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [(
        f"rbcosim run: error: bomb.toml: the run needs modal_coordinates = {n} {declared}; raise "
        f"it with --limit modal_coordinates={n} if the machine has room (see `rbcosim check` "
        "for the estimate)")]


def test_an_npz_declaring_huge_arrays_is_refused_from_its_headers(tmp_path):
    n = 40_000
    _header_only_npz(tmp_path / "big.npz", {"M": (n, n), "K": (n, n), "n_boundary": ()})
    scenario = _scenario(tmp_path, 'file = "big.npz"')
    done = _rbcosim("check", scenario.name, "--limit", "modal_coordinates=100000", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("PROBLEM"))
    assert (f"(flex_bodies.structure file big.npz declares M {n}x{n}, K {n}x{n}), over the limit "
            "8589934592; raise it with --limit memory_bytes=") in line


def test_the_loaders_refuse_a_file_declaring_more_than_the_reader_bound(tmp_path):
    """Without a run limit in front (the Python API, convert-structure), the readers themselves
    refuse a file whose arrays would need more than MAX_DECLARED_BYTES (16 GiB)."""
    n = 50_000  # one 50,000² float64 matrix: 20 GB
    _header_only_npz(tmp_path / "big.npz", {"M": (n, n), "K": (2, 2), "n_boundary": ()})
    assert [(a.name, a.shape, a.nbytes) for a in declared_arrays(tmp_path / "big.npz")] == [
        ("M", (n, n), 8 * n * n), ("K", (2, 2), 32), ("n_boundary", (), 8)]
    bound = f"over the {MAX_DECLARED_BYTES} bytes (16 GiB) a structure file may hold"
    with pytest.raises(ScenarioError) as err:
        load_npz(tmp_path / "big.npz")
    assert str(err.value) == (f"big.npz: declares M {n}x{n}, K 2x2: "
                              f"{8 * n * n + 40} bytes once loaded, {bound}")
    with pytest.raises(ScenarioError) as err:
        read_matrix(tmp_path / "big.npz", "M")
    assert str(err.value).startswith("big.npz: M: declares M 50000x50000") and bound in str(err.value)
    _empty_mtx(tmp_path / "k.mtx", 100_000)
    _empty_mtx(tmp_path / "m.mtx", 2)
    with pytest.raises(ScenarioError) as err:
        load_mtx({"M": tmp_path / "m.mtx", "K": tmp_path / "k.mtx"}, 1)
    assert str(err.value) == f"k.mtx: K: declares 100000x100000: 80000000000 bytes once loaded, {bound}"
    # A file is sized by its content, whatever its name says.
    (tmp_path / "k.mtx").rename(tmp_path / "k.dat")
    with pytest.raises(ScenarioError) as err:
        load_mtx({"M": tmp_path / "m.mtx", "K": tmp_path / "k.dat"}, 1)
    assert str(err.value) == f"k.dat: K: declares 100000x100000: 80000000000 bytes once loaded, {bound}"


def test_convert_structure_refuses_a_declared_bomb_in_one_line(tmp_path):
    _empty_mtx(tmp_path / "m.mtx", 100_000)
    _empty_mtx(tmp_path / "k.mtx", 100_000)
    (tmp_path / "nodes.csv").write_text("0,0,0\n")
    done = _rbcosim("convert-structure", "--mass", "m.mtx", "--stiffness", "k.mtx", "--nodes",
                    "nodes.csv", "--out", "out.npz", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [(
        "rbcosim convert-structure: error: m.mtx: M: declares 100000x100000: 80000000000 bytes "
        f"once loaded, over the {MAX_DECLARED_BYTES} bytes (16 GiB) a structure file may hold")]


def test_running_out_of_memory_within_the_limits_is_a_one_line_error(tmp_path):
    """8000x8000 fits the default limits (about 4 GiB estimated), not a 1.5 GB address space:
    the MemoryError of the build is one line, not a numpy traceback."""
    for key in ("m", "k"):
        _empty_mtx(tmp_path / f"{key}.mtx", 8000)
    scenario = _scenario(tmp_path, 'files = { M = "m.mtx", K = "k.mtx" }')
    done = _rbcosim("check", scenario.name, cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rbcosim check: error: out of memory ("), lines
    assert lines[0].endswith("`rbcosim check` estimates what a scenario needs and "
                             "`--limit memory_bytes=N` bounds it")


def test_the_server_refuses_a_session_whose_structure_files_declare_too_much(tmp_path):
    from service_helpers import message

    from rbcosim.service import Service

    for key in ("m", "k"):
        _empty_mtx(tmp_path / f"{key}.mtx", 40_000)
    scenario = _scenario(tmp_path, 'files = { M = "m.mtx", K = "k.mtx" }')
    service = Service(root=tmp_path)
    reply = service.request(message("create_session", scenario=scenario.name))
    assert reply["status"] == "error" and reply["error"]["code"] == "limit_exceeded", reply
    assert ("the run needs modal_coordinates = 40000 (flex_bodies.structure file m.mtx declares "
            "40000x40000; flex_bodies.structure file k.mtx declares 40000x40000), over the limit "
            "10000") in reply["error"]["message"]
    assert service.sessions == {}
