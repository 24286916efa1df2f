"""Andrews' squeezer (scenarios/andrews_squeezer.toml) against the published reference solution.

The reference is the Bari/CWI test set for IVP solvers, problem "andrews" (Hairer & Wanner,
Solving ODEs II, VII.7): the seven angles at t = 0.03 s, computed with PSIDE at rtol = atol =
1e-14 and published to 16 digits. The angles are reconstructed here from the body quaternions of
the results file (each body turns about Z, so its absolute angle is 2·atan2(q3, q0), unwrapped
over the run); the centres of mass are checked against the test set's position formulas.
"""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.scenarios

#: β, Θ, γ, Φ, δ, Ω, ε (rad): the test set's consistent initial values and its solution at 0.03 s.
INITIAL = np.array([-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
                    0.222668390165885884674473185609, 0.487364979543842550225598953530,
                    -0.222668390165885884674473185609, 1.23054744454982119249735015568])
REFERENCE = np.array([0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1,
                      -0.5347301163226948, 0.5244099658805304, 0.5347301163226948,
                      0.1048080741042263e1])

# Tolerance on each angle, rad. Measured with rk4 on this scenario (maximal route), the largest
# |error| of the seven at t = 0.03 s is 2.7e-6 at dt = 1e-4, 3.5e-9 at 4e-5, then 1.1e-9, 1.2e-9
# and 1.4e-9 at 2e-5, 1e-5 and 5e-6: RK4's h⁴ truncation error (~3e-10 at 1e-5, scaled from
# 1e-4) has fallen below a floor of ~1e-9 rad that a smaller step does not lower (round-off over
# thousands of steps of a crank that turns 2.5 times, 1e-10 relative to β and Θ, and the
# reference's own last digits). The minimal route with coordinate partitioning reaches 1.7e-9.
# 1e-8 rad leaves a factor ~6 for other platforms and reordered floating-point sums, and stays
# far below what a wrong datum produces (a 0.1 % change of the crank's mass moves β by 2e-4 rad).
TOLERANCE = 1e-8


def published_centres(angles: np.ndarray) -> np.ndarray:
    """(7, 2) centres of mass S1..S7, m, from the test set's formulas at angles β..ε."""
    beta, theta, gamma, phi, delta, omega, eps = angles
    xa, ya, xb, yb = -0.06934, -0.00227, -0.03635, 0.03273
    da, e, ea, rr, ra = 0.0115, 0.02, 0.01421, 0.007, 0.00092
    sa, sb, ta, tb = 0.01874, 0.01043, 0.02308, 0.00916
    u, ua, ub, zf, zt, fa = 0.04, 0.01228, 0.00449, 0.02, 0.04, 0.01421

    def e_(a):
        return np.array([np.cos(a), np.sin(a)])

    def n_(a):
        return np.array([np.sin(a), -np.cos(a)])

    a, b = np.array([xa, ya]), np.array([xb, yb])
    return np.array([ra * e_(beta),
                     rr * e_(beta) - da * e_(beta + theta),
                     b + sa * n_(gamma) + sb * e_(gamma),
                     a + zt * e_(delta) + (e - ea) * n_(phi + delta),
                     a + ta * e_(delta) - tb * n_(delta),
                     a + u * n_(eps) + (zf - fa) * e_(omega + eps),
                     a + ua * n_(eps) - ub * e_(eps)])


def squeezer_angles(results) -> np.ndarray:
    """(7, rows) β, Θ, γ, Φ, δ, Ω, ε over the run, from the bodies' absolute angles about Z."""
    absolute = [np.unwrap(2 * np.arctan2(results[f"body{k}.q3"], results[f"body{k}.q0"]))
                for k in range(1, 8)]
    b1, b2, b3, b4, b5, b6, b7 = absolute
    return np.array([b1, b2 - b1, b3, b4 - b5, b5, b6 - b7, b7])


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_angles_at_0_03_s_match_the_test_set(scenarios_dir, formulation):
    """rk4, dt = 1e-5 s, 3000 steps to t = 0.03 s (the scenario's own settings); rows every
    1e-4 s, so that the crank (up to ~1.1e3 rad/s) turns < 0.2 rad between rows for unwrap."""
    scenario = load_scenario(scenarios_dir / "andrews_squeezer.toml",
                             {"solver.formulation": f'"{formulation}"'})
    results = run_scenario(scenario, progress=False)
    assert results.t[-1] == pytest.approx(0.03, abs=1e-12)
    for k in range(1, 8):  # the motion stays in the X–Y plane: rotations about Z only
        assert np.max(np.abs(results[f"body{k}.q1"])) < 1e-9
        assert np.max(np.abs(results[f"body{k}.q2"])) < 1e-9
        assert np.max(np.abs(results[f"body{k}.z"])) < 1e-9
    angles = squeezer_angles(results)
    np.testing.assert_allclose(angles[:, 0], INITIAL, rtol=0, atol=1e-12)
    np.testing.assert_allclose(angles[:, -1], REFERENCE, rtol=0, atol=TOLERANCE)
    # centres of mass: exact at t = 0; at the end, the angle tolerance times the lever arms
    # (every centre lies within 0.1 m of the origin)
    for row, expected, atol in ((0, INITIAL, 1e-12), (-1, REFERENCE, 0.1 * TOLERANCE)):
        centres = np.array([[results[f"body{k}.x"][row], results[f"body{k}.y"][row]]
                            for k in range(1, 8)])
        np.testing.assert_allclose(centres, published_centres(expected), rtol=0, atol=atol,
                                   err_msg=f"centres of mass, results row {row}")
