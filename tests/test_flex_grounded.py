"""Grounded Craig–Bampton body: the two-mass oscillator's flexible side under prescribed motion."""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from rbcosim.errors import SimulationError
from rbcosim.flex import FlexBody, FlexModel, InterfaceMotion, load_npz

pytestmark = pytest.mark.unit

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
M2, K2, KC, DC = 1.0, 1000.0, 100.0, 1.0
AMP, OMEGA = 0.01, 7.0
Q_ID = np.array([1.0, 0.0, 0.0, 0.0])


def _model():
    return FlexModel.from_matrices(load_npz(SCENARIOS / "two_mass_flex.npz"))


def _motion(t):
    """Boundary x_b(t) = A sin(Omega t) along X, exact derivatives."""
    return InterfaceMotion(
        np.array([AMP * math.sin(OMEGA * t), 0.0, 0.0]),
        Q_ID,
        np.array([AMP * OMEGA * math.cos(OMEGA * t), 0.0, 0.0]),
        np.zeros(3),
        np.array([-AMP * OMEGA**2 * math.sin(OMEGA * t), 0.0, 0.0]),
        np.zeros(3),
        time=t,
    )


def _reference(t_end):
    """m2 x2'' + dc (x2' - xb') + kc (x2 - xb) + k2 x2 = 0, solved independently (DOP853).

    Initial state: the body starts undeformed with eta = eta' = 0, i.e. m2 at its static
    position relative to the boundary: x2 = psi xb, x2' = psi xb', psi = kc / (kc + k2).
    """
    psi = KC / (KC + K2)

    def rhs(t, y):
        xb, vb = AMP * math.sin(OMEGA * t), AMP * OMEGA * math.cos(OMEGA * t)
        return [y[1], (KC * (xb - y[0]) + DC * (vb - y[1]) - K2 * y[0]) / M2]

    return solve_ivp(
        rhs,
        (0.0, t_end),
        [0.0, psi * AMP * OMEGA],
        method="DOP853",
        rtol=1e-12,
        atol=1e-15,
        dense_output=True,
    ).sol


@pytest.mark.parametrize(
    "macro_step, order, tol", [(1e-3, 2, 1e-8), (1e-2, 2, 2e-6), (1e-3, 0, 1e-4)]
)
def test_two_mass_force_matches_forced_response(macro_step, order, tol):
    t_end = 2.0
    ref = _reference(t_end)
    body = FlexBody(_model(), micro_steps=10)
    body.initialize(0.0, _motion(0.0))
    n = round(t_end / macro_step)
    worst = 0.0
    for i in range(n):
        t = i * macro_step
        past = [_motion(t - macro_step), _motion(t - 2 * macro_step)][:order]
        body.step(t, macro_step, _motion(t), past)
        t1 = (i + 1) * macro_step
        body.set_motion(_motion(t1))
        x2, v2 = ref(t1)
        xb, vb = AMP * math.sin(OMEGA * t1), AMP * OMEGA * math.cos(OMEGA * t1)
        force_ref = -(KC * (xb - x2) + DC * (vb - v2))
        f = body.wrench()
        worst = max(worst, abs(f[0] - force_ref))
        assert np.all(f[1:] == 0.0)
    # Force amplitude ~ kc A = 1 N; the tolerance is absolute, N.
    assert worst < tol
    assert body.output_nodes()["m2"][0] == pytest.approx(ref(t_end)[0], abs=tol / KC)


def test_interface_jacobian_is_the_instantaneous_spring_and_damper():
    body = FlexBody(_model())
    body.initialize(0.0, _motion(0.0))
    dfdx, dfdv = body.interface_jacobian()
    expect_x = np.zeros((6, 6))
    expect_x[0, 0] = -KC
    expect_v = np.zeros((6, 6))
    expect_v[0, 0] = -DC
    np.testing.assert_allclose(dfdx, expect_x, atol=1e-10)
    np.testing.assert_allclose(dfdv, expect_v, atol=1e-12)


def test_state_round_trip_is_bitwise():
    body = FlexBody(_model())
    body.initialize(0.0, _motion(0.0))
    h = 0.01
    for i in range(5):
        body.step(i * h, h, _motion(i * h))
    blob = body.get_state()
    body.step(5 * h, h, _motion(5 * h), [_motion(4 * h)])
    first = (body.get_state(), body.wrench().tobytes(), body.node_kinematics().tobytes())
    other = FlexBody(_model())
    other.set_state(blob)
    other.step(5 * h, h, _motion(5 * h), [_motion(4 * h)])
    assert (other.get_state(), other.wrench().tobytes(), other.node_kinematics().tobytes()) == first
    with pytest.raises(ValueError, match="blob"):
        other.set_state(blob[:-8])


def test_misuse_is_reported():
    body = FlexBody(_model())
    with pytest.raises(SimulationError, match="initialize"):
        body.wrench()
    body.initialize(0.0, _motion(0.0))
    with pytest.raises(SimulationError, match="does not match"):
        body.step(0.5, 0.01, _motion(0.5))
    bad = InterfaceMotion(np.zeros(2), Q_ID, np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="position"):
        body.step(0.0, 0.01, bad)
