"""The accuracy probe of a run's summary (rbcosim.accuracy_probe) against true errors.

Andrews' squeezer has a published reference solution at t = 0.03 s (the Bari/CWI test set, see
tests/test_andrews_squeezer.py): the probe must flag the default dt = 1e-3 s, estimate an error of
the size of the true one, and be quiet at the scenario's dt = 1e-5 s; the shipped double pendulum
at its dt must be quiet as well.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_andrews_squeezer import REFERENCE

from rbcosim.accuracy_probe import ANGLE_TOLERANCE
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario


def _absolute_reference() -> np.ndarray:
    """The seven bodies' absolute angles about Z (rad) at t = 0.03 s from the test set's
    coordinates β, Θ, γ, Φ, δ, Ω, ε."""
    beta, theta, gamma, phi, delta, omega, eps = REFERENCE
    return np.array([beta, beta + theta, gamma, phi + delta, delta, omega + eps, eps])


def _run(scenarios_dir, name, overrides):
    return run_scenario(load_scenario(scenarios_dir / name, overrides), progress=False)


def test_andrews_at_the_default_dt_is_flagged_with_an_error_of_the_true_size(scenarios_dir):
    """dt = 1e-3 s: the true error of the body angles at 0.03 s (against the test set) is
    ~0.9 rad; the estimate must be within a factor 3 of it, and the warning set."""
    results = _run(scenarios_dir, "andrews_squeezer.toml",
                   {"solver.dt": "1e-3", "solver.output_every": "1"})
    accuracy = results.diagnostics["accuracy"]
    absolute = [np.unwrap(2 * np.arctan2(results[f"body{k}.q3"], results[f"body{k}.q0"]))[-1]
                for k in range(1, 8)]
    true_error = float(np.max(np.abs(np.array(absolute) - _absolute_reference())))
    assert true_error > 0.3
    assert true_error / 3 < accuracy["estimate"]["angle_rad"] < 3 * true_error
    assert "too coarse" in accuracy["warning"]


def test_andrews_at_1e_5_is_quiet(scenarios_dir):
    """The scenario's own dt = 1e-5 s, whose true error is ~1e-9 rad (test_andrews_squeezer)."""
    accuracy = _run(scenarios_dir, "andrews_squeezer.toml", {}).diagnostics["accuracy"]
    assert accuracy["warning"] is None
    assert accuracy["estimate"]["angle_rad"] < 1e-6


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_double_pendulum_at_its_dt_is_quiet(scenarios_dir, formulation):
    """rk4, dt = 1e-3 s over 10 s: an error far below the tolerance, and no warning."""
    accuracy = _run(scenarios_dir, "double_pendulum.toml",
                    {"solver.formulation": f'"{formulation}"'}).diagnostics["accuracy"]
    assert accuracy["warning"] is None
    assert accuracy["estimate"]["angle_rad"] < 1e-3 * ANGLE_TOLERANCE
