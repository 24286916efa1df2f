"""The small-deformation guard of floating flexible bodies (rbcosim.flex.runtime.deformation_range)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from rbcosim.cosim.master import run_cosimulation
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.flex.runtime.deformation_range import (
    ROTATION_LIMIT,
    DeformationRange,
    DeformationWarning,
)
from rbcosim.scenario.loader import load_scenario

SPINUP = Path(__file__).resolve().parent.parent / "scenarios" / "kane_spinup.toml"
L = 10.0


def test_rotation_and_deflection_of_the_first_mode_are_the_cantilever_s():
    """Scaled to a tip deflection w, the first mode's largest section rotation is the exact
    clamped-free mode's tip slope, φ'(L)/φ(L) · w = 1.3765 w/L (βL = 1.87510)."""
    model = FlexModel.from_beam(L, 6.8952e10, 2766.67, 7.2968e-5, 8.2189e-9, n_elements=10,
                                n_modes=4, attachment="floating")
    guard = DeformationRange(model)
    assert guard.length == pytest.approx(L)
    nodes = model.floating.nodes.shape[0]
    tip_per_eta = np.linalg.norm(model.floating.modes.reshape(nodes, 6, -1)[-1, :3, 0])
    beta = 1.8751040687
    sigma = (math.cosh(beta) + math.cos(beta)) / (math.sinh(beta) + math.sin(beta))
    slope = beta * (math.sinh(beta) + math.sin(beta) - sigma * (math.cosh(beta) - math.cos(beta)))
    slope /= math.cosh(beta) - math.cos(beta) - sigma * (math.sinh(beta) - math.sin(beta))
    for w in (0.1, 1.0):
        eta = np.zeros(model.n_modes)
        eta[0] = w / tip_per_eta
        rotation, deflection = guard.measure(eta)
        assert deflection == pytest.approx(w / L, rel=1e-12)
        assert rotation == pytest.approx(slope * w / L, rel=1e-3)


def _warnings(omega_s: float) -> list[str]:
    scenario = load_scenario(SPINUP, {"parameters.omega_s": repr(omega_s), "solver.t_end": "8.0"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_cosimulation(scenario, progress=False)
    return [str(w.message) for w in caught if issubclass(w.category, DeformationWarning)]


def test_spin_up_warns_once_where_the_linear_field_stops_holding():
    """ωs = 4 rad/s stays below the limit (tip slope 0.21 rad at the −1.58 m peak); ωs = 10
    passes it (peak −2.83 m, 28 % of L, where the linear field's uz is 2.1 % off the nonlinear chain)."""
    assert _warnings(4.0) == []
    (message,) = _warnings(10.0)
    assert "flexible body beam" in message and f"{ROTATION_LIMIT} rad" in message
