"""The flexible side's per-macro-step exchange (FlexEndpoint) and its motion input.

The endpoint keeps its histories as arrays and its rigid input once per body state; checked
here against the quantities recomputed from their definitions (a Vandermonde solve through
the exchanged values, the wrench plus the handed-over added mass times the accelerations).
"""

import math

import numpy as np
import pytest

from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.cosim.master import build_endpoints
from rbcosim.flex import InterfaceMotion
from rbcosim.scenario.loader import load_scenario
from rbcosim.serialization.codec import pack_state, unpack_state
from rbcosim.spatial.quaternion import rotation_matrix

pytestmark = pytest.mark.unit


def _swing(t):
    """The pendulum's tip point swinging about +y (position, quaternion, rates, accelerations)."""
    phi, dphi, ddphi = 0.5 * math.sin(3 * t), 1.5 * math.cos(3 * t), -4.5 * math.sin(3 * t)
    v = np.zeros(19)
    v[3:7] = [math.cos(phi / 2), 0.0, math.sin(phi / 2), 0.0]
    v[11], v[17] = dphi, ddphi
    v[0], v[7], v[13] = 0.1 * math.sin(t), 0.1 * math.cos(t), -0.1 * math.sin(t)
    return v


@pytest.fixture
def endpoint(scenarios_dir):
    scenario = load_scenario(scenarios_dir / "rigid_flex_pendulum.toml",
                             ["cosim.extrapolation=2", 'cosim.scheme="jacobi"'])
    ep = next(iter(build_endpoints(scenario, scenario.cosim.macro_step).values()))
    ep.initialize(0.0, motion_of(_swing(0.0), 0.0))
    return ep


def _run(ep, steps):
    for i in range(steps):
        t = i * ep.H
        m = motion_of(_swing(t), t)
        ep.report()
        ep.inputs_for_rigid(t, m)
        ep.finish(t, m)


def test_rigid_input_is_the_wrench_plus_the_handed_added_mass_term(endpoint):
    ep = endpoint
    assert ep.implicit_mass
    _run(ep, 5)
    body = ep.body
    rot = np.kron(np.eye(2), rotation_matrix(body.node_kinematics()[3:7]))
    mass = rot @ ep._handed_mass @ rot.T  # handed over in point-frame axes
    expect = body.wrench() + mass @ body.frame_accelerations()
    np.testing.assert_allclose(ep.rigid_input(), expect, rtol=1e-13, atol=1e-13)
    # After a restore the same value, recomputed (the state's revision changed).
    blob = ep.get_state()
    ep.set_state(blob)
    np.testing.assert_allclose(ep.rigid_input(), expect, rtol=1e-13, atol=1e-13)


def test_polynomials_pass_through_the_exchanged_values(endpoint):
    ep = endpoint
    _run(ep, 6)
    t = 6 * ep.H
    history = [(float(tn), w) for tn, w in zip(ep._times[:ep._count], ep._wrenches[:ep._count])]
    # Extrapolation (order 2): through the three newest exchanged values.
    taus = np.array([tn - t for tn, _ in history[:3]])
    values = np.array([w for _, w in history[:3]])
    expect = np.linalg.solve(np.vander(taus, increasing=True), values)
    np.testing.assert_allclose(ep.polynomial(t), expect, rtol=1e-9, atol=1e-12)
    # Interpolation: through an end value at H and the two newest.
    end = values[0] + 0.1
    taus = np.array([ep.H, *taus[:2]])
    expect = np.linalg.solve(np.vander(taus, increasing=True), np.vstack([end, values[:2]]))
    np.testing.assert_allclose(ep.polynomial(t, end), expect, rtol=1e-9, atol=1e-12)
    # Iteration: cubic through mid-step, end and the two newest.
    mid = values[0] - 0.05
    taus = np.array([0.5 * ep.H, ep.H, *taus[1:]])
    expect = np.linalg.solve(np.vander(taus, increasing=True),
                             np.vstack([mid, end, values[:2]]))
    np.testing.assert_allclose(ep.iteration_polynomial(t, mid, end), expect, rtol=1e-8,
                               atol=1e-10)


def test_endpoint_state_round_trip_is_bitwise_and_bad_histories_are_refused(endpoint):
    ep = endpoint
    _run(ep, 7)
    blob = ep.get_state()
    t = 7 * ep.H
    m = motion_of(_swing(t), t)
    first = ep.inputs_for_rigid(t, m)[0].tobytes()
    ep.finish(t, m)
    after = ep.get_state()
    ep.set_state(blob)
    assert ep.get_state() == blob
    assert ep.inputs_for_rigid(t, m)[0].tobytes() == first
    ep.finish(t, m)
    assert ep.get_state() == after
    d = unpack_state(blob)
    d["w"] = np.zeros((3, 5))
    with pytest.raises(ValueError, match="wrenches"):
        ep.set_state(pack_state(d))


def test_motion_from_the_flat_layout_is_validated_once_and_read_only():
    values = _swing(0.3)
    m = InterfaceMotion.from_array(values, 0.3)
    assert m.time == 0.3 and m.as_array().tobytes() == values.tobytes()
    values[0] = 99.0  # a copy: the caller's buffer may change
    assert m.position[0] != 99.0
    with pytest.raises(ValueError):
        m.as_array()[0] = 1.0
    bad = _swing(0.3)
    bad[15] = math.nan
    with pytest.raises(ValueError, match="acceleration"):
        InterfaceMotion.from_array(bad)
    with pytest.raises(ValueError, match="19 values"):
        InterfaceMotion.from_array(np.zeros(20))


def _endpoint(scenarios_dir, scheme, *more):
    scenario = load_scenario(scenarios_dir / "rigid_flex_pendulum.toml",
                             ["cosim.extrapolation=2", f'cosim.scheme="{scheme}"', *more])
    ep = next(iter(build_endpoints(scenario, scenario.cosim.macro_step).values()))
    ep.initialize(0.0, motion_of(_swing(0.0), 0.0))
    return ep


@pytest.mark.parametrize("scheme", ["gauss_seidel_flex_first", "gauss_seidel_rigid_first",
                                    "jacobi"])
def test_one_call_step_equals_advance_then_commit(scenarios_dir, scheme):
    """The endpoint's macro step in one call of the C core (body step, commit, motion history
    and the quiet range checks: _core.flex_step) gives the bits of its step-by-step
    formulation: advance(), the interpolating polynomial through the new rigid input, then
    commit()."""
    one, two = _endpoint(scenarios_dir, scheme), _endpoint(scenarios_dir, scheme)
    for i in range(12):
        t = i * one.H
        m, end = motion_of(_swing(t), t), motion_of(_swing(t + one.H), t + one.H)
        coef = one.inputs_for_rigid(t, m)[0]
        one.finish(t, m, end)
        future = end if two.needs_end_motion else None
        if two.scheme.flex_first:
            two.advance(t, m, future)
            expect = two.polynomial(t, two.rigid_input())
        else:
            expect = two.polynomial(t)
            two.advance(t, m, future)
        two.commit(m)
        assert coef.tobytes() == expect.tobytes()
        assert one.get_state() == two.get_state()
        assert one.rigid_input().tobytes() == two.rigid_input().tobytes()


def test_one_call_step_refuses_with_the_step_messages(scenarios_dir):
    ep = _endpoint(scenarios_dir, "gauss_seidel_flex_first")
    m = motion_of(_swing(0.0), 0.0)
    ep.inputs_for_rigid(0.0, m)
    with pytest.raises(Exception, match="does not match the flexible body's time"):
        ep.inputs_for_rigid(0.0, m)  # the body is at H now
    t = ep.H
    ep._motions = [[motion_of(_swing(t), t)]]  # a past motion at the step's own time
    with pytest.raises(ValueError, match="past motions at coincident times"):
        ep.inputs_for_rigid(t, motion_of(_swing(t), t))
    assert ep.body.time == t  # refused: nothing stepped


def test_timed_rows_keep_the_values_and_a_missing_time():
    values = _swing(0.4)
    for time in (0.4, None):
        row = InterfaceMotion.from_array(values, time).write_timed(np.zeros(20))
        assert row[:19].tobytes() == values.tobytes()
        back = InterfaceMotion.from_timed(row)
        assert back.time == time and back.as_array().tobytes() == values.tobytes()
    assert math.isnan(row[19])


def test_endpoint_motion_history_keeps_the_two_newest(endpoint):
    ep = endpoint
    assert ep._motions == []
    _run(ep, 3)
    times = [[m.time for m in ms] for ms in ep._motions]
    assert times == [[2 * ep.H], [ep.H]]
    assert ep._motions[0][0].as_array().tobytes() == _swing(2 * ep.H).tobytes()
