"""The fastest time scale of the maximal-coordinate equations, linearized at the initial state
(`rbcosim check`, and the divergence explanations of `rbcosim.maximal.divergence`)."""

from __future__ import annotations

import numpy as np

from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.model import Model
from rbcosim.state import State

#: Most moving bodies for which `check` linearizes the model (a dense 13n × 13n Jacobian).
LINEARIZE_MAX_BODIES = 50


def fastest_rate(model: Model, baumgarte: tuple[float, float]) -> float:
    """1/s: the largest |eigenvalue| of the maximal route's equations linearized at the
    projected initial state (Jacobian of ẏ = f(t, y) by central differences, step 1e-7 of
    each coordinate's scale). Its inverse is the model's fastest time scale; the Baumgarte
    terms add eigenvalues of size alpha, beta."""
    system = MaximalSystem(model, baumgarte=baumgarte)
    state = State.initial(model)
    system.project(state)
    y = state.to_vector()
    jac = np.empty((y.size, y.size))
    for k in range(y.size):
        step = 1e-7 * max(1.0, abs(y[k]))
        up, down = y.copy(), y.copy()
        up[k] += step
        down[k] -= step
        jac[:, k] = (system.derivative(0.0, up) - system.derivative(0.0, down)) / (2 * step)
    return float(np.max(np.abs(np.linalg.eigvals(jac))))
