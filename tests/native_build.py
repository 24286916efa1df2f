"""The native client libraries, built once per test run: ``cmake -S interfaces -B <tmp>``.

Tests take the fixture ``native_build`` (registered in conftest.py) and get the build folder:
``native_build / "conformance" / "conformance_replay"``, the libraries at its top, the C
examples under ``c/examples`` and the Fortran module under ``fortran`` where those exist.

Without cmake, a C compiler, pkg-config, libzmq or msgpack-c the tests are skipped, unless the
environment sets ``RBCOSIM_REQUIRE_NATIVE=1`` (CI does): then they fail. Under pytest-xdist the
workers share one build (a file lock; the first worker builds).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INTERFACES = REPO / "interfaces"


def native_unavailable(reason: str) -> None:
    """Skip, or fail when RBCOSIM_REQUIRE_NATIVE=1."""
    if os.environ.get("RBCOSIM_REQUIRE_NATIVE") == "1":
        pytest.fail(f"native build required (RBCOSIM_REQUIRE_NATIVE=1) but {reason}")
    pytest.skip(reason)


def missing_prerequisite() -> str | None:
    """A sentence naming what the native build lacks, or None."""
    for tool in ("cmake", "pkg-config"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang")):
        return "no C compiler (cc, gcc, clang) is installed"
    for packages in (("libzmq",), ("msgpack-c", "msgpack")):
        if not any(
            subprocess.run(["pkg-config", "--exists", p], check=False).returncode == 0
            for p in packages
        ):
            return f"pkg-config finds no {' or '.join(packages)} (libzmq3-dev, libmsgpack-dev)"
    return None


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed ({done.returncode}):\n{log.read_text()[-6000:]}")


def build(folder: Path) -> Path:
    """Configure and build interfaces/ into folder (once; later calls reuse it)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").exists():
            log = folder / "build.log"
            log.write_text("")
            _run(
                [
                    "cmake",
                    "-S",
                    str(INTERFACES),
                    "-B",
                    str(folder),
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                ],
                log,
            )
            _run(["cmake", "--build", str(folder), "-j2"], log)
            (folder / ".built").write_text("ok\n")
    return folder


@pytest.fixture(scope="session")
def native_build(tmp_path_factory) -> Path:
    """The CMake build folder of interfaces/ (skips or fails when it cannot be built)."""
    reason = missing_prerequisite()
    if reason is not None:
        native_unavailable(reason)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return build(shared / "native-build")
