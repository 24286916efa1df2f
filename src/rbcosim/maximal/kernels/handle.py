"""Entry points of the maximal-coordinate core in C (`rbcosim._core`, sources in
`librbcosim/rigid/`), called from Python with a handle.

A handle (`make_handle`) is one C struct of array views over a MaximalTables and its Workspace
(`rbcosim.core.make_handle`): inputs written into `tables.points` from Python are seen by the
next call, and the workspace's arrays hold the C side's results (multipliers in
`work.solve[1]`, ...). Each function here is one call into the core.
"""

from __future__ import annotations

from rbcosim import _core
from rbcosim.core import make_handle as _make_handle


def make_handle(tables, work):
    """The 'maximal' handle of (tables, work): a MaximalTables and its Workspace."""
    return _make_handle("maximal", tables, work)


def accelerations(handle, t, y, acc):
    """[v̇, ω̇^b] (n, 6) of state y at time t into acc; multipliers in work.solve[1]. Status."""
    return _core.accelerations(handle, t, y, acc)


def derivative(handle, t, y, out):
    """ẏ (13n,) of y at time t into out. Status."""
    return _core.derivative(handle, t, y, out)


def project(handle, t, y, tol, max_iter):
    """Positions then velocities of y (in place) onto the constraint manifold.
    Returns (status, final max |Φ|)."""
    return _core.project(handle, t, y, tol, max_iter)


def drift(handle, t, y):
    """(max |Φ|, max |Φ̇|) over every constraint row."""
    return _core.drift(handle, t, y)


def power(handle, t, y):
    """(status, power W of the non-conservative forces) of y at time t."""
    return _core.power(handle, t, y)


def derivative_and_power(handle, t, y, out):
    """For y = [state (13n), W]: ẏ of the state into out[:13n] and the power into out[13n]
    (W as a quadrature state of an adaptive integrator). Status."""
    return _core.derivative_and_power(handle, t, y, out)


def energy(handle, y):
    """(total, kinetic) energy of y, J."""
    return _core.energy(handle, y)


def points_now(handle, t, y, out, acc):
    """Interface points at state y and time t: out (k, 19) [outputs, total wrench] and their
    accelerations acc (k, 6), inertial. Status."""
    return _core.points_now(handle, t, y, out, acc)


def point_outputs_of(handle, y, outputs):
    """Interface-point outputs (k, 13) of state y."""
    _core.point_outputs_of(handle, y, outputs)


def advance_rk4(handle, y, times, h, do_project, stats, failed):
    """RK4 steps of h through `times`, y in place; stats = [max |‖q‖ − 1|, work W]. A failed
    step leaves y at the last good state and its candidate in `failed`.
    Returns (status, steps done)."""
    return _core.advance_rk4(handle, y, times, h, do_project, stats, failed)


def advance_sdirk2(handle, y, times, h, do_project, stats, failed, newton, tol, max_newton):
    """SDIRK2 steps of h through `times` as advance_rk4; newton = (matrix I − γh ∂f/∂y (s, s),
    valid flag (1,) int64), kept between calls while Newton converges."""
    matrix, valid = newton
    return _core.advance_sdirk2(handle, y, times, h, do_project, stats, failed, matrix, valid,
                                tol, max_newton)


def macro_step(handle, y, t, H, n, stepper, times, start, end, acc, energy, stats, failed):
    """One co-simulation macro step of the rigid side (librbcosim/rigid/macro.c): the points'
    state at t into start (k, 19) (their outputs become the feedback reference), n micro steps
    of H/n with `stepper` = (method 0 rk4 / 1 sdirk2, do_project, tol, max_newton, matrix,
    valid), the points' state at t + H into end (k, 19) and acc (k, 6), the interface work
    H/2 (W·V at t + W·V at t + H) per point into energy (k,), then the feedback switch and
    gains reset. y in place; times (n+1,) receives the micro-step times.
    Returns (status, phase 0 start / 1 steps / 2 end / 3 done, steps done)."""
    method, do_project, tol, max_newton, matrix, valid = stepper
    return _core.macro_step(handle, y, t, H, n, method, do_project, tol, max_newton, matrix,
                            valid, times, start, end, acc, energy, stats, failed)
