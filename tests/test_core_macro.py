"""The rigid side's macro step in one C call (librbcosim/rigid/macro.c) against the same step
assembled from the separate C entry points and numpy (the Python macro step it replaced)."""

import numpy as np
import pytest

from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.maximal.kernels import handle as kernel


def _side(integrator):
    return RigidSide.from_scenario("scenarios/rigid_flex_pendulum.toml",
                                   overrides={"solver.integrator": integrator})


def _composed_step(side, H, n, wrench, kx):
    """One macro step from the separate calls: reference, micro steps, end state, work."""
    system, state = side.sim.system, side.sim.state
    k = len(side.point_names)
    start, end, acc = np.empty((k, 19)), np.empty((k, 19)), np.empty((k, 6))
    kernel.point_outputs_of(system.handle, state.vector, side.inputs.reference)
    assert kernel.points_now(system.handle, state.t, state.vector, start, acc) == 0
    side.sim.advance(state.t + H * np.arange(n + 1) / n, H / n)
    assert kernel.points_now(system.handle, state.t, state.vector, end, acc) == 0
    work = 0.5 * H * (np.einsum("ij,ij->i", start[:, 13:], start[:, 7:13])
                      + np.einsum("ij,ij->i", end[:, 13:], end[:, 7:13]))
    return work, end, acc


@pytest.mark.parametrize("integrator", ["rk4", "sdirk2"])
def test_macro_step_is_the_composed_step(integrator):
    a, b = _side(integrator), _side(integrator)
    point = a.point_names[0]
    joint = a.joint_names[0]
    H, n = a.macro_step, a.scenario.cosim.micro_steps
    rng = np.random.default_rng(1)
    for _ in range(5):
        wrench = rng.standard_normal((2, 6))
        kx = 0.1 * rng.standard_normal((6, 6))
        for side in (a, b):
            side.set_wrench_polynomial(point, wrench)
            side.set_interface_jacobian(point, kx, np.zeros((6, 6)))
        before = a.energy_rigid[joint]
        a.step(H)
        work, end, _acc = _composed_step(b, H, n, wrench, kx)
        assert a.time == b.time
        np.testing.assert_allclose(a.sim.state.vector, b.sim.state.vector, rtol=0, atol=1e-15)
        np.testing.assert_allclose(a.end_wrenches, end[:, 13:], rtol=0, atol=1e-12)
        assert a.energy_rigid[joint] - before == pytest.approx(work[0], rel=1e-12, abs=1e-18)
        # the feedback inputs hold for one step only
        assert a.inputs.switches[0] == 0 and not a.inputs.gains.any()
        b.inputs.switches[0] = 0
        b.inputs.gains[:] = 0.0
    assert a.sim.diagnostics.steps == b.sim.diagnostics.steps == 5 * n


def test_macro_step_work_of_a_constant_force_is_force_times_displacement():
    """The trapezoidal interface work of a held force over a step against F . (x1 - x0)."""
    side = _side("rk4")
    point = side.point_names[0]
    force = np.array([3.0, -2.0, 1.0, 0.0, 0.0, 0.0])
    total, joint = 0.0, side.joint_names[0]
    x0 = side.point_outputs()[point][:3].copy()
    for _ in range(200):
        side.set_wrench(point, force)
        side.step(side.macro_step / 20)
    total = side.energy_rigid[joint]
    x1 = side.point_outputs()[point][:3]
    assert total == pytest.approx(force[:3] @ (x1 - x0), rel=1e-6)
