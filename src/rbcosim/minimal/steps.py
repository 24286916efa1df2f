"""Fixed steps in Python on any right-hand side f(t, y): RK4 and SDIRK2, for the minimal
route's closed loops and drivers (`rbcosim.minimal.loops`) and its interface points
(`rbcosim.minimal.points`), whose derivatives are Python functions."""

from __future__ import annotations

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.minimal.stepper import SDIRK_GAMMA


def rk4(f, t: float, y: np.ndarray, h: float) -> np.ndarray:
    """One classic RK4 step of h s of ẏ = f(t, y); returns the new y."""
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class SDIRK2:
    """Alexander's two-stage L-stable SDIRK2 as `rbcosim.maximal.integrators.SDIRK2` (Newton with a
    forward-difference Jacobian, its matrix reused while Newton converges), on a Python f."""

    gamma = SDIRK_GAMMA

    def __init__(self, tol: float = 1e-10, max_newton: int = 12):
        self.tol, self.max_newton = tol, max_newton
        self._matrix = None

    @staticmethod
    def _jacobian(f, t, y):
        f0 = f(t, y)
        jac = np.empty((y.size, y.size))
        for k in range(y.size):
            dy = 1e-7 * max(1.0, abs(y[k]))
            yp = y.copy()
            yp[k] += dy
            jac[:, k] = (f(t, yp) - f0) / dy
        return jac

    def _stage(self, f, t, base, h, guess):
        """Solve z = base + γ h f(t, z) for z; returns f(t, z)."""
        gh = self.gamma * h
        z = guess.copy()
        for attempt in range(2):
            if self._matrix is None or attempt == 1:
                self._matrix = np.eye(z.size) - gh * self._jacobian(f, t, z)
            for _ in range(self.max_newton):
                dz = np.linalg.solve(self._matrix, -(z - base - gh * f(t, z)))
                z = z + dz
                if np.linalg.norm(dz) <= self.tol * (1.0 + np.linalg.norm(z)):
                    return f(t, z)
        raise SimulationError(f"sdirk2: Newton iteration did not converge at t = {t:.6g} s")

    def step(self, f, t, y, h):
        g = self.gamma
        k1 = self._stage(f, t + g * h, y, h, y)
        k2 = self._stage(f, t + h, y + (1 - g) * h * k1, h, y + h * k1)
        return y + h * ((1 - g) * k1 + g * k2)
