"""The compiled joint-coordinate kernels on random trees, each against an independent source:
the maximal route's equations (with loads, springs and torsion springs), finite differences
of the kinematics, the maximal route's kinetic energy, conservation of energy, and plain
Python implementations of the same integration steps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_minimal_algorithms import random_state, random_tree

from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.minimal.route import MinimalSimulation
from rbcosim.minimal.steps import SDIRK2 as _SDIRK2
from rbcosim.minimal.steps import rk4 as _rk4
from rbcosim.minimal.system import TreeSystem
from rbcosim.model import BodyLoad, Marker, SpringDamper, TorsionalSpringDamper, frozen_array
from rbcosim.settings import SolverSettings

pytestmark = pytest.mark.unit


def with_forces(model, seed: int, *, damping: bool = True, loads: bool = True):
    """`model` plus spring–dampers between random bodies, a torsion spring on every revolute
    joint and (optionally) time-dependent body loads."""
    rng = np.random.default_rng(seed)
    n = model.n_bodies
    springs = []
    for k in range(4):
        b1, b2 = (int(x) for x in rng.choice(n + 1, size=2, replace=False))
        m1 = Marker(b1, frozen_array(rng.normal(size=3) * 0.2), frozen_array(np.eye(3)))
        m2 = Marker(b2, frozen_array(rng.normal(size=3) * 0.2), frozen_array(np.eye(3)))
        springs.append(SpringDamper(f"s{k}", m1, m2, float(rng.uniform(5, 50)),
                                    float(rng.uniform(0.1, 2)) if damping else 0.0,
                                    float(rng.uniform(0.1, 0.5))))
    torsion = [TorsionalSpringDamper(f"t{k}", k, float(rng.uniform(1, 10)),
                                     float(rng.uniform(0.1, 1)) if damping else 0.0,
                                     float(rng.normal()))
               for k, j in enumerate(model.joints) if j.kind == "revolute"]
    body_loads = []
    if loads:
        for k, b in enumerate(rng.choice(np.arange(1, n + 1), size=3, replace=False)):
            times = frozen_array([0.0, 0.5, 1.0])
            values = frozen_array(rng.normal(size=(3, 6)))
            body_loads.append(BodyLoad(f"l{k}", int(b), frozen_array(rng.normal(size=3) * 0.2),
                                       times, values))
    return replace(model, springs=tuple(springs), torsion_springs=tuple(torsion),
                   loads=tuple(body_loads))


@pytest.mark.parametrize("seed", range(4))
def test_applied_forces_in_the_compiled_derivative_match_the_maximal_route(seed):
    """Loads, spring–dampers and torsion springs evaluated inside the compiled derivative give
    the body accelerations of the maximal route's multiplier solution."""
    model = with_forces(random_tree(seed, 8), seed)
    assert model.torsion_springs, "the random tree should have a revolute joint"
    system = TreeSystem(model)
    y = random_state(system, 50 + seed)
    t = 0.37
    state = system.body_state(t, system.kinematics(y))
    vdot_max, wdot_max, _ = MaximalSystem(model).accelerations(state)
    vdot_min, wdot_min = system.body_accelerations(t, y)
    scale = max(np.abs(vdot_max).max(), np.abs(wdot_max).max())
    assert np.max(np.abs(vdot_min - vdot_max)) <= 1e-9 * scale
    assert np.max(np.abs(wdot_min - wdot_max)) <= 1e-9 * scale
    # the CRBA route applies the same forces
    crba = TreeSystem(model, solver="crba")
    a, c = system.derivative(t, y), crba.derivative(t, y)
    assert np.max(np.abs(a - c)) <= 1e-10 * np.max(np.abs(c))


@pytest.mark.parametrize("seed", range(4))
def test_kinematics_match_finite_differences_along_the_motion(seed):
    """Centre-of-mass velocities are the time derivative of the positions, and the spatial
    accelerations (with the velocity-product terms c) that of the spatial velocities, along
    y(t ± ε) = y ± ε ẏ."""
    system = TreeSystem(random_tree(seed, 9))
    y = random_state(system, 70 + seed)
    ydot = system.derivative(0.0, y)
    kin = system.kinematics(y)
    eps = 1e-6
    plus, minus = system.kinematics(y + eps * ydot), system.kinematics(y - eps * ydot)
    w = kin.V[:, :3]
    vc = kin.V[:, 3:] + np.cross(w, kin.r)
    fd_r = (plus.r - minus.r) / (2 * eps)
    assert np.max(np.abs(fd_r - vc)) <= 1e-7 * max(1.0, np.abs(vc).max())
    acc = system.dyn.body_accelerations(kin, ydot[system.nq :])
    fd_v = (plus.V - minus.V) / (2 * eps)
    assert np.max(np.abs(fd_v - acc)) <= 1e-7 * max(1.0, np.abs(acc).max())


@pytest.mark.parametrize("seed", range(3))
def test_mass_matrix_gives_the_maximal_kinetic_energy(seed):
    """½ vᵀ M(q) v equals the kinetic energy of the body state, computed by the maximal route
    from body masses, inertias and velocities."""
    system = TreeSystem(random_tree(seed, 10))
    y = random_state(system, 90 + seed)
    kin = system.kinematics(y)
    v = y[system.nq :]
    M = system.dyn.mass_matrix(kin)
    kinetic = system.kinetic_energy(system.body_state(0.0, kin))
    assert 0.5 * v @ M @ v == pytest.approx(kinetic, rel=1e-12)


def test_compiled_rk4_conserves_energy_with_springs():
    """A random tree with undamped springs and torsion springs under gravity: RK4 at
    dt = 1e-3 keeps the maximal route's total energy (kinetic, gravity, springs)."""
    model = with_forces(random_tree(5, 6), 5, damping=False, loads=False)
    sim = MinimalSimulation(model, SolverSettings(integrator="rk4", dt=1e-3, t_end=1.0))
    sim.y[sim.system.nq :] = np.random.default_rng(5).normal(size=sim.system.nv)
    energy = []
    for k in range(1000):
        if k % 100 == 0:
            energy.append(sim.system.energy(sim.system.body_state(sim.t,
                                                                  sim.system.kinematics(sim.y))))
        sim.step(1e-3)
    drift = np.max(np.abs(np.array(energy) - energy[0]))
    kinetic = sim.system.kinetic_energy(sim.system.body_state(0.0, sim.system.kinematics(sim.y)))
    assert drift <= 1e-8 * max(abs(energy[0]), kinetic)


@pytest.mark.parametrize("integrator", ["rk4", "sdirk2"])
def test_compiled_steps_equal_python_steps_on_the_same_derivative(integrator):
    """One compiled call per step gives the steps that the Python RK4 / SDIRK2 (those of the
    closed-loop route) take on TreeSystem.derivative, quaternions renormalised alike."""
    model = with_forces(random_tree(2, 7), 2)
    system = TreeSystem(model)
    compiled = system.step_function(integrator)
    python = _rk4 if integrator == "rk4" else _SDIRK2().step
    y_c = random_state(system, 7)
    y_p = y_c.copy()
    t, h = 0.1, 2e-3
    for _ in range(4):
        err_c = compiled(t, y_c, h)
        y_p = python(system.derivative, t, y_p, h)
        err_p = system.normalize(y_p)
        t += h
        assert err_c == pytest.approx(err_p, abs=1e-12)
        assert np.max(np.abs(y_c - y_p)) <= 1e-11 * np.max(np.abs(y_p))
