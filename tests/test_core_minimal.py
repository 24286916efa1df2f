"""The C core's minimal-coordinate kernels (librbcosim/minimal) against independent references:
a mass matrix assembled from the body velocity columns (kinetic energy), generalized gravity and
body forces by virtual power, a dense solve of M v̇ = τ − C, plain-Python RK4 / SDIRK2 steps
with numpy's solve, the energy balance E(t) − E(0) = W, the analytic motion of a free body,
and the many-step call against one call per step."""

from __future__ import annotations

import numpy as np
import pytest
from test_minimal_algorithms import random_state, random_tree
from test_minimal_kernels import with_forces

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.minimal.route import MinimalSimulation, simulate_minimal
from rbcosim.minimal.steps import SDIRK2 as _SDIRK2
from rbcosim.minimal.steps import rk4 as _rk4
from rbcosim.minimal.system import TreeSystem
from rbcosim.model import Body, Model, frozen_array
from rbcosim.settings import SolverSettings
from rbcosim.spatial import quaternion as quat

pytestmark = pytest.mark.unit


def _columns(system: TreeSystem, q: np.ndarray):
    """Per rate k: (ω_b, v_c,b) of every body for v = e_k (the body velocities are linear in
    v), from the kinematics alone; and the kinematics at v = 0."""
    nv, n = system.nv, system.model.n_bodies
    w, vc = np.zeros((nv, n + 1, 3)), np.zeros((nv, n + 1, 3))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = 1.0
        kin = system.dyn.kinematics(q, e)
        w[k] = kin.V[:, :3]
        vc[k] = kin.V[:, 3:] + np.cross(kin.V[:, :3], kin.r)
    return w, vc, system.dyn.kinematics(q, np.zeros(nv))


def _mass_matrix(system: TreeSystem, q: np.ndarray) -> np.ndarray:
    """M = Σ_b m J_vᵀ J_v + J_ωᵀ (R I Rᵀ) J_ω: the kinetic energy ½ vᵀ M v of the bodies."""
    w, vc, kin = _columns(system, q)
    M = np.zeros((system.nv, system.nv))
    for b, body in enumerate(system.model.bodies, start=1):
        inertia = kin.R[b] @ np.asarray(body.inertia) @ kin.R[b].T
        M += body.mass * vc[:, b] @ vc[:, b].T + w[:, b] @ inertia @ w[:, b].T
    return M


@pytest.mark.parametrize("seed", range(3))
def test_crba_mass_matrix_equals_the_kinetic_energy_form(seed):
    system = TreeSystem(random_tree(seed, 9))
    y = random_state(system, 10 + seed)
    q = y[: system.nq]
    M = system.dyn.mass_matrix(system.kinematics(y))
    reference = _mass_matrix(system, q)
    assert np.max(np.abs(M - reference)) <= 1e-12 * np.max(np.abs(reference))


@pytest.mark.parametrize("seed", range(3))
def test_rnea_bias_at_rest_is_minus_the_generalized_gravity_and_body_forces(seed):
    """At v = 0, C = −Σ_b (m g · v_c,b + f_b · V_b) per rate (virtual power of gravity and of
    the spatial body forces f_b at O)."""
    model = random_tree(seed, 8)
    system = TreeSystem(model)
    q = random_state(system, 20 + seed)[: system.nq]
    f_ext = np.random.default_rng(seed).normal(size=(model.n_bodies + 1, 6))
    f_ext[0] = 0.0
    w, vc, kin = _columns(system, q)
    g = np.asarray(model.gravity)
    reference = np.zeros(system.nv)
    for b, body in enumerate(model.bodies, start=1):
        V = np.concatenate([w[:, b], vc[:, b] - np.cross(w[:, b], kin.r[b])], axis=1)
        reference -= body.mass * vc[:, b] @ g + V @ f_ext[b]
    C = system.dyn.bias(kin, f_ext)
    assert np.max(np.abs(C - reference)) <= 1e-12 * np.max(np.abs(reference))


@pytest.mark.parametrize("seed", range(3))
def test_aba_solves_the_dense_equations_of_motion(seed):
    """v̇ of the articulated-body algorithm = np.linalg.solve(M, τ − C), M from the kinetic
    energy form, with joint forces and body forces."""
    model = random_tree(seed, 10)
    system = TreeSystem(model)
    y = random_state(system, 40 + seed)
    rng = np.random.default_rng(seed)
    tau, f_ext = rng.normal(size=system.nv), rng.normal(size=(model.n_bodies + 1, 6))
    kin = system.kinematics(y)
    vdot = system.dyn.aba(kin, tau, f_ext)
    reference = np.linalg.solve(_mass_matrix(system, y[: system.nq]),
                                tau - system.dyn.bias(kin, f_ext))
    assert np.max(np.abs(vdot - reference)) <= 1e-10 * np.max(np.abs(reference))


@pytest.mark.parametrize("integrator", ["rk4", "sdirk2"])
def test_many_steps_in_one_call_equal_one_call_per_step_and_python_steps(integrator):
    """n steps in one call of the core = n calls of one step (bitwise, the work W too), and
    the plain-Python RK4 / SDIRK2 (numpy's dense solve) on the same derivative."""
    model = with_forces(random_tree(3, 6), 3)
    many, single = TreeSystem(model), TreeSystem(model)
    y0 = random_state(many, 8)
    h, n = 2e-3, 6
    y_many = y0.copy()
    err, done = many.steps_function(integrator)(y_many, 0.0, h, 0, n)
    step = single.step_function(integrator)
    y_single = y0.copy()
    errs = [step(k * h, y_single, h) for k in range(n)]
    assert done == n and err == max(errs)
    assert np.array_equal(y_many, y_single)
    assert many.work_done == single.work_done != 0.0
    python = _rk4 if integrator == "rk4" else _SDIRK2().step
    y_p = y0.copy()
    for k in range(n):
        y_p = python(single.derivative, k * h, y_p, h)
        single.normalize(y_p)
    assert np.max(np.abs(y_many - y_p)) <= 1e-11 * np.max(np.abs(y_p))


@pytest.mark.parametrize("integrator, tol", [("rk4", 1e-10), ("sdirk2", 1e-5)])
def test_work_of_loads_and_dampers_balances_the_energy(integrator, tol):
    """E(t) − E(0) = W: the work the steps integrate with their own stages accounts for the
    change of the maximal route's total energy (kinetic, gravity, springs)."""
    model = with_forces(random_tree(4, 5), 4)
    sim = MinimalSimulation(model, SolverSettings(integrator=integrator, dt=1e-3, t_end=0.5))
    system = sim.system

    def energy():
        return system.energy(system.body_state(sim.t, system.kinematics(sim.y)))

    e0 = energy()
    sim.run(0, 500, 1e-3)
    change, work = energy() - e0, system.work_done
    assert abs(work) > 1e-3
    assert abs(change - work) <= tol * max(abs(work), abs(e0))


def test_free_body_moves_as_the_analytic_solution():
    """A free body under gravity: the centre of mass follows r0 + v0 t + ½ g t² (RK4 is exact
    on it) and the inertial angular momentum R I Rᵀ ω stays constant."""
    inertia = np.diag([0.3, 0.5, 0.7])
    q0 = quat.normalize(np.array([0.9, 0.2, -0.3, 0.1]))
    r0, v0, w0 = np.array([0.1, -0.2, 0.3]), np.array([1.0, 0.5, 2.0]), np.array([3.0, -1.0, 2.0])
    g = np.array([0.0, 0.0, -9.81])
    model = Model((Body("b", 2.0, frozen_array(inertia), frozen_array(r0), frozen_array(q0),
                        frozen_array(v0), frozen_array(w0)),), (), gravity=frozen_array(g))
    sim = MinimalSimulation(model, SolverSettings(integrator="rk4", dt=1e-3, t_end=1.0))

    def state():
        return sim.system.body_state(sim.t, sim.system.kinematics(sim.y))

    s = state()
    R0 = quat.to_matrix(s.q[0])
    L0 = R0 @ inertia @ s.w[0]
    sim.run(0, 1000, 1e-3)
    s = state()
    t = sim.t
    assert t == 1.0
    assert np.max(np.abs(s.r[0] - (r0 + v0 * t + 0.5 * g * t * t))) <= 1e-12
    R = quat.to_matrix(s.q[0])
    L = R @ inertia @ s.w[0]
    assert np.max(np.abs(L - L0)) <= 1e-9 * np.max(np.abs(L0))


def test_route_rows_equal_one_call_per_step():
    """simulate_minimal's batches between output rows (output_every = 7, not a divisor of the
    step count) give the rows of one call per step."""
    model = with_forces(random_tree(6, 5), 6)
    solver = SolverSettings(integrator="rk4", dt=1e-3, t_end=0.1, output_every=7)
    results = simulate_minimal(model, solver, progress=False)
    sim = MinimalSimulation(model, solver)
    rows = [sim.observe()]
    for k in range(1, 101):
        sim.step(1e-3)
        sim.t = k * 1e-3
        if k % 7 == 0 or k == 100:
            rows.append(sim.observe())
    assert np.array_equal(results.data, np.array(rows))
    assert results.diagnostics["steps"] == 100


def test_kernels_refuse_mismatched_arrays():
    system = TreeSystem(random_tree(1, 4))
    other = TreeSystem(random_tree(2, 6))
    y = random_state(system, 1)
    with pytest.raises(ValueError, match="y"):
        _core.minimal_evaluate(system.handle, 0.0, y[:-1], np.empty(y.size - 1))
    with pytest.raises(ValueError, match="another tree"):
        _core.minimal_aba(system.dyn.handle, make_handle("minimal_kin", other.kinematics(
            random_state(other, 2))), np.zeros(system.nv), np.zeros((5, 6)), np.zeros(6),
            np.empty(system.nv))
    with pytest.raises(TypeError, match="minimal_system"):
        _core.minimal_rk4(system.dyn.handle, y, 0.0, 1e-3, 0, 1)
    with pytest.raises(ValueError, match="members"):
        make_handle("minimal_kin", system.work.kin[:5])
