"""The rigid maximal core in C (`librbcosim/rigid`, through `rbcosim._core`) against
independent references: finite differences of the potential energy and of the constraint
values, the expression jets against finite differences, the banded multiplier solve against a
dense solve, energy balance E − E0 = W along RK4 and SDIRK2 steps, and the two integrators
against each other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.expression_program import evaluate
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.integrators import RK4, SDIRK2
from rbcosim.maximal.kernels.rows import GAMMA, PHI, PHI_T, evaluate_rows
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.scenario.expressions import compile_expression, parse
from rbcosim.scenario.loader import load_scenario_text
from rbcosim.state import State

pytestmark = pytest.mark.unit

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"

#: The double pendulum with a spring–damper, a torsion spring–damper on the elbow, a tabulated
#: load and a driver-free loop-free tree: every applied-force kind of ForceTable.
EXTRA = """
[forces.spring]
type = "spring_damper"
body1 = "ground"
point1 = [0.3, 0.1, 0.2]
body2 = "rod2"
point2 = [0.1, 0.0, 0.02]
stiffness = {k}
damping = {c}
free_length = 0.2

[forces.torsion]
type = "torsional_spring_damper"
joint = "elbow"
stiffness = {k}
damping = {c}
rest_angle = 0.3

[forces.push]
type = "load"
body = "rod1"
point = [0.05, 0.01, 0.0]
table = [[0.0, 1.0, 0.0, 0.5, 0.0, 0.1, 0.0], [0.4, -1.0, 0.3, 0.0, 0.2, 0.0, 0.0],
         [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
"""


def model_with_forces(stiffness=7.0, damping=0.0, load=True):
    text = (SCENARIOS / "double_pendulum.toml").read_text()
    extra = EXTRA.format(k=stiffness, c=damping)
    if not load:
        extra = extra[:extra.index("[forces.push]")]
    return load_scenario_text(text.replace("[solver]", extra + "\n[solver]"),
                              source="<forces>").model


def random_state(model, rng):
    state = State.initial(model)
    state.vector[:] += 0.05 * rng.normal(size=state.vector.size)
    n = model.n_bodies
    q = state.vector[3 * n:7 * n].reshape(n, 4)
    q /= np.linalg.norm(q, axis=1)[:, None]
    return state


def test_forces_are_minus_the_gradient_of_the_potential():
    """Spring and gravity forces at the centres of mass: −∂V/∂r by central differences of the
    C potential energy; torques: −∂V/∂θ for small rotations about inertial axes (at joints
    that hold, where the torsion spring's angle about marker 1's z is a potential)."""
    model = model_with_forces(load=False)
    system = MaximalSystem(model)
    forces = make_handle("forces", system.tables.forces)
    state = State.initial(model)
    n = model.n_bodies
    kin = Kinematics.of(state)
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    _core.applied_forces(forces, 0.0, kin.r, kin.R, kin.v, kin.w_inertial, force, torque)

    def potential(vector):
        k = Kinematics.of(State.from_vector(0.0, vector))
        return _core.potential_energy(forces, k.r, k.R, k.v, k.w_inertial)

    h = 1e-6
    for i in range(n):
        for c in range(3):
            plus, minus = state.vector.copy(), state.vector.copy()
            plus[3 * i + c] += h
            minus[3 * i + c] -= h
            grad = (potential(plus) - potential(minus)) / (2 * h)
            assert abs(force[i, c] + grad) < 1e-6 * max(1.0, abs(grad))
            # rotation about the inertial axis c: q ← exp(δ e_c / 2) ⊗ q
            e = np.zeros(3)
            e[c] = 1.0
            grads = []
            for sign in (1.0, -1.0):
                y = state.vector.copy()
                q = y[3 * n + 4 * i: 3 * n + 4 * i + 4]
                d = np.concatenate([[np.cos(h / 2)], sign * np.sin(h / 2) * e])
                y[3 * n + 4 * i: 3 * n + 4 * i + 4] = [
                    d[0] * q[0] - d[1:] @ q[1:],
                    *(d[0] * q[1:] + q[0] * d[1:] + np.cross(d[1:], q[1:]))]
                grads.append(potential(y))
            grad = (grads[0] - grads[1]) / (2 * h)
            assert abs(torque[i, c] + grad) < 1e-6 * max(1.0, abs(grad))


def test_damper_and_load_power_is_force_times_velocity():
    """force_power against Σ F·v + τ·ω of the C applied forces with the potential forces
    (a model without dampers) taken away: loads only, and −c ℓ̇² −c θ̇² from the difference
    of the forces with and without damping."""
    rng = np.random.default_rng(5)
    damped = MaximalSystem(model_with_forces(damping=0.7))
    plain = MaximalSystem(model_with_forces(damping=0.0))
    state = random_state(damped.model, rng)
    kin = Kinematics.of(state)
    t = 0.25
    fd, td = damped.applied(t, kin)
    fp, tp = plain.applied(t, kin)
    v, w = kin.v[1:], kin.w_inertial[1:]
    dissipation = np.sum((fd - fp) * v) + np.sum((td - tp) * w)
    assert dissipation < 0
    # the loads' power: forces of the load-free model taken away from the plain one
    unloaded = MaximalSystem(model_with_forces(damping=0.0, load=False))
    fu, tu = unloaded.applied(t, kin)
    load_power = np.sum((fp - fu) * v) + np.sum((tp - tu) * w)
    handle = make_handle("forces", damped.tables.forces)
    p = _core.force_power(handle, t, kin.r, kin.R, kin.v, kin.w_inertial)
    assert abs(p - (load_power + dissipation)) < 1e-12 * max(1.0, abs(p))


def test_expression_jets_match_finite_differences():
    program = np.asarray(compile_expression(parse(
        "where(t < 0.5, sin(3*t)*exp(t/3) + t**2.5, atan2(t, 2) - sqrt(1 + t**2)/log(2 + t))"),
        {}, "t"), dtype=float)
    for t in (0.2, 0.37, 0.8, 1.3):
        f, f1, f2, bad = evaluate(program, t)
        assert bad == -1
        h = 1e-4
        fp, fm = evaluate(program, t + h)[0], evaluate(program, t - h)[0]
        assert abs(f1 - (fp - fm) / (2 * h)) < 1e-7 * max(1.0, abs(f1))
        assert abs(f2 - (fp - 2 * f + fm) / h**2) < 1e-5 * max(1.0, abs(f2))


@pytest.mark.parametrize("name", ["four_bar", "andrews_squeezer", "kane_spinup"])
def test_rows_rates_and_jacobians_match_finite_differences(name):
    """Φ̇ = J ν + Φ_t: Φ at the state advanced along its own velocities by ±h (quaternions
    by ½ q ⊗ ω^b), central differences; γ against the second difference of Φ."""
    model = load_scenario_text((SCENARIOS / f"{name}.toml").read_text(), source=name).model
    system = MaximalSystem(model)
    rng = np.random.default_rng(11)
    state = random_state(model, rng)
    state.t = 0.7
    table = system.constraints.table
    m = system.constraints.n_rows

    def rows_at(s):
        values, jac = np.zeros((4, m)), np.zeros((2, m, 6))
        evaluate_rows(table, s.t, Kinematics.of(s), values, jac, np.zeros((2, 2, 6)))
        return values, jac

    values, jac = rows_at(state)
    deriv = system.derivative(state.t, state.vector)
    n = model.n_bodies
    nu = np.concatenate([state.vector[7 * n:].reshape(2, n, 3)[0],
                         state.vector[7 * n:].reshape(2, n, 3)[1]], axis=1)
    nu = np.vstack([np.zeros(6), nu])
    a, b = table.row_bodies[:, 0], table.row_bodies[:, 1]
    rate = np.einsum("rk,rk->r", jac[0], nu[a]) + np.einsum("rk,rk->r", jac[1], nu[b])
    rate += values[PHI_T]
    h = 1e-5
    # move positions and quaternions along ẏ with the velocities held: Φ(t ± h)
    velocity_part = np.zeros_like(deriv)
    velocity_part[:7 * n] = deriv[:7 * n]
    phis = []
    for sign in (1.0, -1.0):
        s = State.from_vector(state.t + sign * h, state.vector + sign * h * velocity_part)
        phis.append(rows_at(s)[0][PHI])
    holonomic = ~system.constraints.nonholonomic
    fd = (phis[0] - phis[1]) / (2 * h)
    assert np.max(np.abs((rate - fd)[holonomic])) < 1e-6 * max(1.0, np.max(np.abs(fd)))
    assert np.all(np.isfinite(values[GAMMA]))


def test_banded_solve_matches_a_dense_solve():
    """The multipliers of the C banded LDLᵀ against numpy's dense solve of J M⁻¹ Jᵀ λ = rhs
    assembled here from the rows' Jacobian blocks and the mass blocks."""
    model = load_scenario_text((SCENARIOS / "andrews_squeezer.toml").read_text(),
                               source="andrews").model
    system = MaximalSystem(model)
    state = State.initial(model)
    system.accelerations(state)
    work, pattern = system.work, system.tables.pattern
    n = model.n_bodies
    m = pattern.rows.shape[0]
    J = np.zeros((m, 6 * n))
    for i in range(m):
        for side in range(2):
            body = pattern.rows[i, 1 + side]
            if body > 0:
                J[i, 6 * (body - 1):6 * body] += work.kept[side, i]
    Minv = np.zeros((6 * n, 6 * n))
    for b in range(1, n + 1):
        Minv[6 * (b - 1):6 * b, 6 * (b - 1):6 * b] = system.tables.minv[b]
    S = J @ Minv @ J.T
    rhs = np.random.default_rng(2).normal(size=m) * np.sqrt(np.diag(S))
    out = np.empty(m)
    from rbcosim.maximal.kernels import multipliers
    multipliers.solve(pattern, work.band, work.solve[2], rhs, out)
    ref = np.linalg.solve(S, rhs)
    assert np.max(np.abs(out - ref)) < 1e-8 * np.max(np.abs(ref))


@pytest.mark.parametrize("method", [RK4, SDIRK2])
def test_energy_balance_and_integrators_agree(method):
    """E(t) − E(0) = W (work of loads and dampers, integrated with the method's stages) along
    damped, loaded motion; SDIRK2 (order 2) and RK4 agree to their step's accuracy."""
    model = model_with_forces(damping=0.3)
    system = MaximalSystem(model)
    state = State.initial(model)
    e0 = system.energy(state)
    integrator = method(system)
    h = 1e-3 if method is RK4 else 2e-4
    times = np.arange(0, 501) * h if method is RK4 else np.arange(0, 2501) * h
    integrator.advance(state, times, h)
    balance = system.energy(state) - e0 - integrator.work
    assert abs(balance) < (1e-9 if method is RK4 else 1e-5)
    reference = State.initial(model)
    RK4(MaximalSystem(model)).advance(reference, np.arange(0, 1001) * 5e-4, 5e-4)
    tol = 1e-9 if method is RK4 else 1e-4
    assert np.max(np.abs(state.vector - reference.vector)) < tol
