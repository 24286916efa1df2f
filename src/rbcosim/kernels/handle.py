"""Entry points of the compiled maximal-coordinate core, called from Python with a handle.

Calling compiled code with a namedtuple of ~80 arrays costs ~15 µs of argument unboxing; a
numba typed List holding that namedtuple is unboxed in ~1 µs and shares the same buffers, so
inputs written into `tables.points` from Python are seen by the next call. Every function
here takes `handle` (from `make_handle`) and works on `handle[0]`.
"""

from __future__ import annotations

from numba.typed import List

from rbcosim.kernels import equations as eq
from rbcosim.kernels import jit_alloc
from rbcosim.kernels.frames import fill_frames
from rbcosim.kernels.interface import point_outputs
from rbcosim.kernels.power import power as state_power
from rbcosim.kernels.power import stage_power
from rbcosim.kernels.stepping import rk4_steps, sdirk2_steps


@jit_alloc
def make_handle(tables, work):
    """A typed List holding (tables, work): a MaximalTables and its Workspace."""
    handle = List()
    handle.append((tables, work))
    return handle


@jit_alloc
def accelerations(handle, t, y, acc):
    """[v̇, ω̇^b] (n, 6) of state y at time t into acc; multipliers in work.mu. Status."""
    sys, w = handle[0]
    status = eq.accelerations(sys, w, t, y)
    for i in range(acc.shape[0]):
        for c in range(6):
            acc[i, c] = w.body[eq.ACC, i, c]
    return status


@jit_alloc
def derivative(handle, t, y, out):
    """ẏ (13n,) of y at time t into out. Status."""
    sys, w = handle[0]
    return eq.derivative(sys, w, t, y, out)


@jit_alloc
def project(handle, t, y, tol, max_iter):
    """Positions then velocities of y (in place) onto the constraint manifold.
    Returns (status, final max |Φ|)."""
    sys, w = handle[0]
    return eq.project(sys, w, t, y, tol, max_iter)


@jit_alloc
def drift(handle, t, y):
    """(max |Φ|, max |Φ̇|) over every constraint row."""
    sys, w = handle[0]
    return eq.drift(sys, w, t, y)


@jit_alloc
def power(handle, t, y):
    """(status, power W of the non-conservative forces) of y at time t."""
    sys, w = handle[0]
    return state_power(sys, w, t, y)


@jit_alloc
def derivative_and_power(handle, t, y, out):
    """For y = [state (13n), W]: ẏ of the state into out[:13n] and the power into out[13n]
    (W as a quadrature state of an adaptive integrator). Status."""
    sys, w = handle[0]
    n = y.size - 1
    status = eq.derivative(sys, w, t, y[:n], out[:n])
    out[n] = stage_power(sys, w, t)
    return status


@jit_alloc
def energy(handle, y):
    """(total, kinetic) energy of y, J."""
    sys, w = handle[0]
    return eq.energy(sys, w, y)


@jit_alloc
def points_now(handle, t, y, out, acc):
    """Interface points at state y and time t: out (k, 19) [outputs, total wrench] (see
    equations.point_state) and their accelerations acc (k, 6), inertial. Status."""
    sys, w = handle[0]
    status = eq.point_state(sys, w, t, y, out)
    for k in range(acc.shape[0]):
        for c in range(6):
            acc[k, c] = w.point_acc[k, c]
    return status


@jit_alloc
def point_outputs_of(handle, y, outputs):
    """Interface-point outputs (k, 13) of state y."""
    sys, w = handle[0]
    fill_frames(y, w.frames)
    point_outputs(sys.points, w.frames, outputs)


@jit_alloc
def advance_rk4(handle, y, times, h, do_project, stats, failed):
    """RK4 steps of h through `times`; see kernels.stepping.rk4_steps."""
    sys, w = handle[0]
    return rk4_steps(sys, w, y, times, h, do_project, stats, failed)


@jit_alloc
def advance_sdirk2(handle, y, times, h, do_project, stats, failed, newton, tol, max_newton):
    """SDIRK2 steps of h through `times`; see kernels.stepping.sdirk2_steps."""
    sys, w = handle[0]
    return sdirk2_steps(sys, w, y, times, h, do_project, stats, failed, newton, tol,
                        max_newton)


@jit_alloc
def macro_start(handle, t, y, start):
    """Start of a co-simulation macro step of the rigid side: the interface points' outputs
    become the reference of interface-Jacobian feedback (so its term vanishes now), then
    start (k, 19) receives the points' state (equations.point_state). Status."""
    sys, w = handle[0]
    fill_frames(y, w.frames)
    point_outputs(sys.points, w.frames, sys.points.reference)
    return eq.point_state(sys, w, t, y, start)
