"""The rigid core's kept factor (Workspace.factored): an evaluation right after rbc_project at
the same positions and time reuses the projection's factor of J M⁻¹ Jᵀ; the accelerations and
multipliers must be the same numbers, bit for bit, as with a fresh factorisation, and any other
factorisation must drop the kept one."""

from pathlib import Path

import numpy as np

from rbcosim.maximal.kernels import handle as kernel
from rbcosim.maximal.simulate import RigidSimulation
from rbcosim.scenario.loader import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _sim(name, overrides=None):
    scenario = load_scenario(SCENARIOS / name, overrides or {})
    return RigidSimulation(scenario.model, scenario.solver)


def _accelerations(sim, t, y):
    n = sim.model.n_bodies
    acc = np.zeros((n, 6))
    assert kernel.accelerations(sim.system.handle, t, y, acc) == 0
    return acc.copy(), sim.system.work.solve[1].copy(), sim.system.work.band.copy()


def _check(sim):
    h, work = sim.system.handle, sim.system.work
    sim.advance(1e-3 * np.arange(6), 1e-3)
    t = sim.state.t
    y = sim.state.vector.copy()
    y[: 3 * sim.model.n_bodies] += 1e-6  # off the manifold: the projection must move it
    status, _ = kernel.project(h, t, y, 1e-12, 8)
    assert status == 0
    assert work.factored[0] == 1.0 and work.factored[1] == t
    reused = _accelerations(sim, t, y)
    assert work.factored[0] == 1.0  # still kept: nothing was factorised
    other = y.copy()
    other[0] += 1e-3
    _accelerations(sim, t, other)  # a new factorisation drops the kept one
    assert work.factored[0] == 0.0
    fresh = _accelerations(sim, t, y)
    for a, b in zip(reused, fresh):
        assert np.all(np.isfinite(a)) and np.array_equal(a, b)


def test_reuse_double_pendulum():
    _check(_sim("double_pendulum.toml"))


def test_reuse_chain():
    _check(_sim("chain.toml", {"generators.chain.links": "7"}))


def test_reuse_slider_crank_driver():
    _check(_sim("slider_crank.toml"))
