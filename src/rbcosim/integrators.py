"""Fixed-step integrators over the state vector y = [r, q, v, ω^b].

Contract of a FixedStepIntegrator:
  1. `step(state, h)` advances `state` in place by h seconds and returns it;
  2. quaternions are renormalised after every step (the largest |‖q‖ − 1| before that is kept
     in `quaternion_error`);
  3. with `project=True`, positions then velocities are projected onto the constraint manifold;
  4. a non-finite result raises SimulationError naming the time and the body;
  5. the integrator keeps no history, so saving a State saves everything needed to re-step.
Adaptive reference runs use scipy's solve_ivp (see `rbcosim.simulate`).
"""

from __future__ import annotations

import numpy as np

from rbcosim import quaternion as quat
from rbcosim.dynamics import MaximalSystem
from rbcosim.errors import SimulationError
from rbcosim.state import State


class FixedStepIntegrator:
    """Base class: bookkeeping in `step`, the method itself in `_step_impl`."""

    name = "base"

    def __init__(self, system: MaximalSystem, *, project: bool = True):
        self.system = system
        self.project = project
        self.n_evaluations = 0
        self.quaternion_error = 0.0

    def f(self, t: float, y: np.ndarray) -> np.ndarray:
        self.n_evaluations += 1
        return self.system.derivative(t, y)

    def step(self, state: State, h: float) -> State:
        if not h > 0:
            raise ValueError(f"step size h must be positive, got {h}")
        y = self._step_impl(state.t, state.to_vector(), h)
        new = State.from_vector(state.t + h, y)
        norms = np.linalg.norm(new.q, axis=1)
        self.quaternion_error = max(self.quaternion_error, float(np.max(np.abs(norms - 1.0))))
        new.q = quat.normalize(new.q)
        self.system.check_finite(new)
        if self.project:
            self.system.project(new)
            self.system.check_finite(new)
        state.t, state.r, state.q, state.v, state.w = new.t, new.r, new.q, new.v, new.w
        return state

    def _step_impl(self, t: float, y: np.ndarray, h: float) -> np.ndarray:
        raise NotImplementedError


class RK4(FixedStepIntegrator):
    """Classic fourth-order Runge–Kutta (the seed's integrator)."""

    name = "rk4"

    def _step_impl(self, t, y, h):
        k1 = self.f(t, y)
        k2 = self.f(t + h / 2, y + h / 2 * k1)
        k3 = self.f(t + h / 2, y + h / 2 * k2)
        k4 = self.f(t + h, y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class SDIRK2(FixedStepIntegrator):
    """Two-stage, L-stable, second-order singly diagonally implicit Runge–Kutta (Alexander).

    One-step (no history, so save/restore stays exact), stiffly accurate, damps the
    unresolved high frequencies of stiff springs and couplings. Newton's method with a
    finite-difference Jacobian, reused while it converges.
    """

    name = "sdirk2"
    gamma = 1.0 - 1.0 / np.sqrt(2.0)

    def __init__(self, system, *, project=True, tol=1e-10, max_newton=12):
        super().__init__(system, project=project)
        self.tol = tol
        self.max_newton = max_newton
        self._jac = None

    def _jacobian(self, t, y):
        f0 = self.f(t, y)
        jac = np.empty((y.size, y.size))
        for k in range(y.size):
            dy = 1e-7 * max(1.0, abs(y[k]))
            yp = y.copy()
            yp[k] += dy
            jac[:, k] = (self.f(t, yp) - f0) / dy
        return jac

    def _stage(self, t, base, h, guess):
        """Solve z = base + γ h f(t, z) for z; returns f(t, z)."""
        gh = self.gamma * h
        z = guess.copy()
        for attempt in range(2):
            if self._jac is None or attempt == 1:
                self._jac = np.eye(z.size) - gh * self._jacobian(t, z)
            for _ in range(self.max_newton):
                fz = self.f(t, z)
                residual = z - base - gh * fz
                dz = np.linalg.solve(self._jac, -residual)
                z = z + dz
                if np.linalg.norm(dz) <= self.tol * (1.0 + np.linalg.norm(z)):
                    return self.f(t, z)
        raise SimulationError(f"sdirk2: Newton iteration did not converge at t = {t:.6g} s")

    def _step_impl(self, t, y, h):
        g = self.gamma
        k1 = self._stage(t + g * h, y, h, y)
        k2 = self._stage(t + h, y + (1 - g) * h * k1, h, y + h * k1)
        return y + h * ((1 - g) * k1 + g * k2)


FIXED_STEP = {cls.name: cls for cls in (RK4, SDIRK2)}
#: scipy.integrate.solve_ivp methods for adaptive reference runs.
ADAPTIVE = ("RK45", "DOP853", "Radau", "BDF", "LSODA")
INTEGRATOR_NAMES = tuple(FIXED_STEP) + ADAPTIVE
