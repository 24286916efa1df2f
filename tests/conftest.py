"""Shared fixtures: where the shipped scenarios live."""

from __future__ import annotations

from pathlib import Path

import pytest
from native_build import native_build  # noqa: F401  (the C/Fortran build, tests/native_build.py)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def scenarios_dir() -> Path:
    """The repository's `scenarios/` folder."""
    return REPO / "scenarios"


def pytest_sessionstart(session) -> None:
    """Compile the kernels once, in the main process, before xdist starts its workers: else
    every worker and every CLI subprocess of the first minute compiles them in parallel."""
    if not hasattr(session.config, "workerinput"):
        from rbcosim.warmup import warm_up

        warm_up(report=lambda _: None)
