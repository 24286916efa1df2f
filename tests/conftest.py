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
