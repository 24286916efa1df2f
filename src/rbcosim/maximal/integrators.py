"""Fixed-step integrators over the state vector y = [r, q, v, ω^b], compiled loops.

Contract of a FixedStepIntegrator:
  1. `step(state, h)` advances `state` in place by h seconds; `advance(state, times, h)` takes
     len(times) − 1 steps of h in one compiled call, the state's time set to each entry;
  2. quaternions are renormalised after every step (the largest |‖q‖ − 1| before that is kept
     in `quaternion_error`); `work` integrates the non-conservative power over the steps;
  3. with `project=True`, positions then velocities are projected onto the constraint manifold;
  4. a non-finite result raises SimulationError naming the time and the body, and leaves the
     state at the last good step;
  5. RK4 keeps no history; SDIRK2 reuses its Newton matrix while Newton converges.
Adaptive reference runs use scipy's solve_ivp (see `rbcosim.maximal.simulate`).
"""

from __future__ import annotations

import numpy as np

from rbcosim.errors import DivergedError
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.kernels import equations as eq
from rbcosim.maximal.kernels import handle as kernel
from rbcosim.state import State

#: placeholders for the Newton matrix and flag of a method that has none
_NO_MATRIX, _NO_FLAG = np.zeros(1), np.zeros(1, dtype=np.int64)


class FixedStepIntegrator:
    """Base class: the bookkeeping; `_run` calls the C loop (librbcosim/rigid/stepping.c)."""

    name = "base"

    def __init__(self, system: MaximalSystem, *, project: bool = True):
        self.system = system
        self.project = project
        self._stats = np.zeros(2)
        self._times = np.zeros(2)
        self._failed = np.empty(0)

    @property
    def quaternion_error(self) -> float:
        """Largest |‖q‖ − 1| before renormalisation so far."""
        return float(self._stats[0])

    @quaternion_error.setter
    def quaternion_error(self, value: float) -> None:
        self._stats[0] = value

    @property
    def work(self) -> float:
        """Work W (J) of the non-conservative forces since the start, integrated with the
        method's own stages (`rbc_stage_power`, librbcosim/rigid/equations.c)."""
        return float(self._stats[1])

    @work.setter
    def work(self, value: float) -> None:
        self._stats[1] = value

    def step(self, state: State, h: float) -> State:
        """One step of h s (as `advance` over [t, t + h]), with this integrator's own buffers
        for the two times and a failed candidate."""
        if not h > 0:
            raise ValueError(f"step size h must be positive, got {h}")
        y = state.vector
        t1 = state.t + h
        times, failed = self._times, self._failed
        if failed.size != y.size:
            failed = self._failed = np.empty_like(y)
        times[0] = state.t
        times[1] = t1
        status, done = self._run(y, times, float(h), failed)
        if status == 0 and done == 1:
            state.t = t1
            return state
        self.finish_advance(state, times.copy(), status, done, failed.copy())
        return state

    def advance(self, state: State, times: np.ndarray, h: float) -> State:
        """Steps of h s from times[0] = state.t through every entry of `times` (s)."""
        if not h > 0:
            raise ValueError(f"step size h must be positive, got {h}")
        times = np.asarray(times, dtype=float)
        failed = np.empty_like(state.vector)
        status, done = self._run(state.vector, times, float(h), failed)
        self.finish_advance(state, times, status, done, failed)
        return state

    def _run(self, y, times, h, failed):
        raise NotImplementedError

    def stepper(self) -> tuple:
        """(method, do_project, tol, max_newton, Newton matrix, valid flag): this integrator
        for a whole macro step in C (kernels.handle.macro_step)."""
        raise NotImplementedError

    def finish_advance(self, state: State, times: np.ndarray, status: int, done: int,
                       failed: np.ndarray) -> None:
        """After a C loop over `times` that stopped with `status` after `done` steps: the
        state's time, and the error a failed step raises (as `advance`)."""
        state.t = float(times[done])
        if status == eq.NOT_FINITE:
            self.system.check_finite(State.from_vector(float(times[done + 1]), failed))
            raise DivergedError(f"diverged: non-finite state at t = {times[done + 1]:.6g} s")
        if status:
            self.system.check_status(status, float(times[done + 1]))


class RK4(FixedStepIntegrator):
    """Classic fourth-order Runge–Kutta (the seed's integrator)."""

    name = "rk4"

    def _run(self, y, times, h, failed):
        return kernel.advance_rk4(self.system.handle, y, times, h, self.project, self._stats,
                                  failed)

    def stepper(self) -> tuple:
        return (0, self.project, 0.0, 0, _NO_MATRIX, _NO_FLAG)


class SDIRK2(FixedStepIntegrator):
    """Two-stage, L-stable, second-order singly diagonally implicit Runge–Kutta (Alexander).

    One-step, stiffly accurate, damps the unresolved high frequencies of stiff springs and
    couplings. Newton's method with a finite-difference Jacobian, reused while it converges.
    """

    name = "sdirk2"

    def __init__(self, system, *, project=True, tol=1e-10, max_newton=12):
        super().__init__(system, project=project)
        self.tol = tol
        self.max_newton = max_newton
        size = 13 * system.model.n_bodies
        self._newton = (np.zeros((size, size)), np.zeros(1, dtype=np.int64))

    def _run(self, y, times, h, failed):
        return kernel.advance_sdirk2(self.system.handle, y, times, h, self.project,
                                     self._stats, failed, self._newton, self.tol,
                                     self.max_newton)

    def stepper(self) -> tuple:
        return (1, self.project, self.tol, self.max_newton, *self._newton)

FIXED_STEP = {cls.name: cls for cls in (RK4, SDIRK2)}
#: scipy.integrate.solve_ivp methods for adaptive reference runs.
ADAPTIVE = ("RK45", "DOP853", "Radau", "BDF", "LSODA")
INTEGRATOR_NAMES = tuple(FIXED_STEP) + ADAPTIVE
