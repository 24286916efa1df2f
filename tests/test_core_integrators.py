"""The implicit SDIRK2 integrator against RK4 on a stiff spring model."""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim.errors import SimulationError
from rbcosim.maximal.simulate import simulate
from rbcosim.scenario.loader import load_scenario_text
from rbcosim.settings import SolverSettings

pytestmark = pytest.mark.unit

# A heavy mass on a soft spring (ω ≈ 6.3 rad/s) carries a light mass on a stiff, damped spring
# (√(k/m) ≈ 3200 rad/s; eigenvalues ≈ −1e3 and −9e3 1/s). Both start moving together at 1 m/s
# with the springs relaxed, so the stiff mode is barely excited: the motion is smooth and a
# large step resolves it, but RK4's stability bound (|λ h| < 2.8) needs h < 3e-4 s.
STIFF = """
[world]
gravity = [0.0, 0.0, 0.0]

[bodies.heavy]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
velocity = [1.0, 0.0, 0.0]

[bodies.light]
mass = 1e-3
inertia = [1e-6, 1e-6, 1e-6]
position = [0.1, 0.0, 0.0]
velocity = [1.0, 0.0, 0.0]

[forces.soft]
type = "spring_damper"
body1 = "ground"
point1 = [-1.0, 0.0, 0.0]
body2 = "heavy"
stiffness = 40.0

[forces.stiff]
type = "spring_damper"
body1 = "heavy"
body2 = "light"
stiffness = 1e4
damping = 10.0
"""
T_END = 0.5
OUT = 5e-3  # output interval, s


def run(integrator: str, dt: float):
    model = load_scenario_text(STIFF, source="<stiff>").model
    settings = SolverSettings(
        integrator=integrator, dt=dt, t_end=T_END, output_every=round(OUT / dt)
    )
    return simulate(model, settings, progress=False)


@pytest.fixture(scope="module")
def reference():
    """RK4 at h = 2e-4 s, inside its stability bound."""
    return run("rk4", 2e-4)


def test_sdirk2_at_a_large_step_matches_rk4_at_a_small_one(reference):
    coarse = run("sdirk2", 5e-3)
    finer = run("sdirk2", 2.5e-3)
    assert np.ptp(reference["heavy.x"]) > 0.15  # a quarter swing of the soft spring
    for name in ("heavy.x", "light.x", "heavy.vx"):
        err = np.max(np.abs(coarse[name] - reference[name]))
        assert err < 1e-4 * (1 + np.max(np.abs(reference[name]))), (name, err)
    # second order: halving the step divides the error by about four
    e1 = np.max(np.abs(coarse["heavy.x"] - reference["heavy.x"]))
    e2 = np.max(np.abs(finer["heavy.x"] - reference["heavy.x"]))
    assert 3.0 < e1 / e2 < 5.0, (e1, e2)
    # L-stable: the light mass follows the heavy one, no stiff ringing
    gap = coarse["light.x"] - coarse["heavy.x"]
    assert np.max(np.abs(gap - 0.1)) < 1e-3


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_rk4_at_the_implicit_step_blows_up_with_a_clear_error():
    # stopped as diverged (issue 27) once the state is absurd, before it overflows
    with pytest.raises(SimulationError, match=r"diverged: .* at t = .* in body 'light'.*"
                                              r"fastest time scale"):
        run("rk4", 5e-3)
