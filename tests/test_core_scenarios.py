"""The shipped scenarios against references each test derives independently.

Runs are shortened where the full scenario would take too long for CI (each test says so);
the full ten-second double-pendulum run is marked slow.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp
from scipy.special import ellipk

from rbcosim.maximal.simulate import simulate
from rbcosim.scenario.loader import load_scenario
from rbcosim.spatial import quaternion as quat

pytestmark = pytest.mark.scenarios


def assert_close(actual, expected, atol, rtol, what=""):
    """|actual − expected| ≤ atol + rtol·|expected| elementwise (the scipy test idiom)."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    err = np.abs(actual - expected)
    bound = atol + rtol * np.abs(expected)
    worst = int(np.argmax(err - bound))
    assert np.all(err <= bound), (
        f"{what}: worst error {err.flat[worst]:.3g} > {bound.flat[worst]:.3g} "
        f"(actual {actual.flat[worst]!r}, expected {expected.flat[worst]!r})"
    )


def lagrange_rhs(coords, rates, kinetic, potential):
    """First-order ODE f(t, [q, q̇]) from L = T − V by the Euler–Lagrange equations (sympy).

    M(q) q̈ = ∂L/∂q − (∂²L/∂q̇∂q) q̇, with M = ∂²L/∂q̇²; solved numerically at each call.
    """
    lag = kinetic - potential
    n = len(coords)
    mass = sp.Matrix(n, n, lambda i, j: sp.diff(lag, rates[i], rates[j]))
    force = sp.Matrix(
        [
            sp.diff(lag, coords[i])
            - sum(sp.diff(lag, rates[i], coords[j]) * rates[j] for j in range(n))
            for i in range(n)
        ]
    )
    m_fn = sp.lambdify([*coords, *rates], mass, "numpy")
    f_fn = sp.lambdify([*coords, *rates], force, "numpy")

    def rhs(t, y):
        acc = np.linalg.solve(np.array(m_fn(*y), float), np.array(f_fn(*y), float).ravel())
        return np.concatenate([y[n:], acc])

    return rhs


def uniform_rod_energy(m, length, com_xz, angle, coords, rates):
    """Kinetic energy of a uniform rod moving in the X–Z plane: ½ m |v_c|² + ½ (m l²/12) φ̇²."""

    def dt(expr):
        return sum(sp.diff(expr, q) * qd for q, qd in zip(coords, rates))

    vx, vz = dt(com_xz[0]), dt(com_xz[1])
    return (
        sp.Rational(1, 2) * m * (vx**2 + vz**2)
        + sp.Rational(1, 2) * m * length**2 / 12 * dt(angle) ** 2
    )


# --- double pendulum ----------------------------------------------------------------------------


def double_pendulum_reference(m, l, g):
    """Two uniform rods hinged at the origin and at rod 1's tip; θ from the downward vertical."""
    th1, th2, w1, w2 = sp.symbols("theta1 theta2 omega1 omega2")
    coords, rates = (th1, th2), (w1, w2)
    tip1 = (l * sp.sin(th1), -l * sp.cos(th1))
    c1 = (tip1[0] / 2, tip1[1] / 2)
    c2 = (tip1[0] + l / 2 * sp.sin(th2), tip1[1] - l / 2 * sp.cos(th2))
    kinetic = uniform_rod_energy(m, l, c1, th1, coords, rates) + uniform_rod_energy(
        m, l, c2, th2, coords, rates
    )
    potential = m * g * (c1[1] + c2[1])
    return coords, rates, kinetic, potential


@pytest.mark.unit
def test_double_pendulum_kinetic_energy_has_the_corrected_coefficients():
    """T = ½ m l² [4/3 θ̇1² + θ̇1 θ̇2 cos(θ1 − θ2) + 1/3 θ̇2²] (not the seed's 5/3, 2/3)."""
    m, l, g = sp.symbols("m l g", positive=True)
    (th1, th2), (w1, w2), kinetic, potential = double_pendulum_reference(m, l, g)
    corrected = (
        sp.Rational(1, 2)
        * m
        * l**2
        * (sp.Rational(4, 3) * w1**2 + w1 * w2 * sp.cos(th1 - th2) + sp.Rational(1, 3) * w2**2)
    )
    seed = (
        sp.Rational(1, 2)
        * m
        * l**2
        * (
            sp.Rational(5, 3) * w1**2
            + sp.Rational(2, 3) * w1 * w2 * sp.cos(th1 - th2)
            + sp.Rational(1, 3) * w2**2
        )
    )
    assert sp.simplify(sp.expand_trig(kinetic - corrected)) == 0
    assert sp.simplify(sp.expand_trig(kinetic - seed)) != 0
    assert (
        sp.simplify(
            potential
            + m * g * l * (sp.Rational(3, 2) * sp.cos(th1) + sp.Rational(1, 2) * sp.cos(th2))
        )
        == 0
    )


def pendulum_angles(results):
    """θ1, θ2 (rad, from the downward vertical) from the rods' centres of mass and attitudes."""
    x1, z1 = results["rod1.x"], results["rod1.z"]
    x2, z2 = results["rod2.x"], results["rod2.z"]
    from_positions = (np.arctan2(x1, -z1), np.arctan2(x2 - 2 * x1, -(z2 - 2 * z1)))
    angles = []
    for body in ("rod1", "rod2"):
        q = np.column_stack([results[f"{body}.q{k}"] for k in range(4)])
        axis = quat.to_matrix(q)[:, :, 2]  # body z runs along the rod, from the tip to the pivot
        angles.append(np.arctan2(-axis[:, 0], axis[:, 2]))
    return from_positions, tuple(angles)


@pytest.fixture(scope="module")
def double_pendulum(scenarios_dir):
    """The seed scenario, shortened to 2 s for CI (the full 10 s run is the slow test below)."""
    scenario = load_scenario(scenarios_dir / "double_pendulum.toml")
    solver = replace(scenario.solver, t_end=2.0, output_every=10)
    return scenario, simulate(scenario.model, solver, progress=False)


def test_double_pendulum_matches_its_lagrange_equations(double_pendulum):
    scenario, results = double_pendulum
    rods = scenario.model.bodies
    m, l = rods[0].mass, 2 * float(np.linalg.norm(rods[0].position))
    g = -float(scenario.model.gravity[2])
    assert (m, l, g) == pytest.approx((1.0, 0.5, 9.81))
    rhs = lagrange_rhs(*double_pendulum_reference(m, l, g))
    t = results.t
    y0 = [np.radians(60.0), np.radians(30.0), 0.0, 0.0]
    ref = solve_ivp(rhs, (0.0, t[-1]), y0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t)
    assert ref.success
    from_positions, from_attitudes = pendulum_angles(results)
    for k in range(2):
        assert_close(from_positions[k], ref.y[k], 2e-7, 1e-6, f"theta{k + 1} from positions")
        assert_close(from_attitudes[k], ref.y[k], 2e-7, 1e-6, f"theta{k + 1} from attitudes")
    # the rods really swing: a comparison with a pendulum at rest would prove nothing
    assert np.ptp(ref.y[0]) > 1.0 and np.ptp(ref.y[1]) > 1.0


def test_double_pendulum_energy_and_drift_short(double_pendulum):
    _, results = double_pendulum
    d = results.diagnostics
    assert d["energy_conservative"] is True
    assert d["energy_max_relative_drift"] < 1e-7  # the seed only asks for 5e-3
    assert d["max_constraint_violation"] < 1e-9
    e = results["energy"]
    assert_close(e, np.full_like(e, e[0]), 0.0, 1e-7, "energy")
    # the energy column is ½ m v² + ½ ωᵀIω + m g z, recomputed here from the state columns
    rods = ("rod1", "rod2")
    kinetic = sum(
        0.5 * (results[f"{b}.vx"] ** 2 + results[f"{b}.vz"] ** 2)
        + 0.5 * (0.25 / 12) * (results[f"{b}.wx"] ** 2 + results[f"{b}.wy"] ** 2)
        for b in rods
    )
    potential = sum(9.81 * results[f"{b}.z"] for b in rods)
    assert_close(kinetic + potential, e, 1e-7, 1e-7, "energy column")


@pytest.mark.slow
def test_double_pendulum_full_seed_run_keeps_energy(scenarios_dir):
    """The seed's run exactly: RK4, dt = 1e-3 s, 10 s; energy within ±0.5 % (in fact ~1e-9)."""
    scenario = load_scenario(scenarios_dir / "double_pendulum.toml")
    assert (scenario.solver.integrator, scenario.solver.dt, scenario.solver.t_end) == (
        "rk4",
        1e-3,
        10.0,
    )
    results = simulate(scenario.model, scenario.solver, progress=False)
    drift = results.diagnostics["energy_max_relative_drift"]
    assert drift < 5e-3
    assert drift < 1e-7, f"energy drift {drift:.3g}: far above the ~1e-9 this step gives"
    assert results.diagnostics["max_constraint_violation"] < 1e-9


def test_adaptive_dop853_agrees_with_rk4(scenarios_dir):
    """scipy DOP853 (Baumgarte only, no projection) vs RK4 at dt = 1e-3, 0.5 s of the seed run."""
    scenario = load_scenario(scenarios_dir / "double_pendulum.toml")
    base = replace(scenario.solver, t_end=0.5, output_every=10)
    rk4 = simulate(scenario.model, base, progress=False)
    dop = simulate(scenario.model, replace(base, integrator="DOP853"), progress=False)
    assert dop.columns == rk4.columns
    assert_close(dop.t, rk4.t, 1e-12, 0.0, "output times")
    for name in ("rod1.x", "rod1.z", "rod2.x", "rod2.z", "rod2.wy", "rod2.vx"):
        assert_close(dop[name], rk4[name], 1e-7, 1e-7, name)
    assert dop.diagnostics["function_evaluations"] > 0


# --- free body: the tennis-racket flip --------------------------------------------------------


def flip_half_period(inertia, w0):
    """Time between sign changes of ω2 for I1 < I2 < I3 (Landau & Lifshitz §37).

    With 2E = Σ I ω² and L² = Σ I² ω²: if L² > 2E I2, ω2 ∝ sn(τ, k), τ = t·sqrt((I3 − I2)
    (L² − 2E I1)/(I1 I2 I3)), k² = (I2 − I1)(2E I3 − L²)/((I3 − I2)(L² − 2E I1)); else the same
    with I1 and I3 exchanged. sn changes sign every 2K(k).
    """
    i1, i2, i3 = inertia
    two_e = float(np.sum(inertia * w0**2))
    l2 = float(np.sum((inertia * w0) ** 2))
    if l2 < two_e * i2:
        i1, i3 = i3, i1
    rate = np.sqrt((i3 - i2) * (l2 - two_e * i1) / (i1 * i2 * i3))
    k2 = (i2 - i1) * (two_e * i3 - l2) / ((i3 - i2) * (l2 - two_e * i1))
    return 2 * ellipk(k2) / rate


def zero_crossings(t, y):
    """Times where y changes sign (linear interpolation)."""
    k = np.nonzero(np.sign(y[:-1]) * np.sign(y[1:]) < 0)[0]
    return t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])


@pytest.fixture(scope="module")
def free_body(scenarios_dir):
    """The full 20 s run, at dt = 4e-3 s instead of 1e-3 s to keep CI short."""
    scenario = load_scenario(scenarios_dir / "free_body.toml")
    solver = replace(scenario.solver, dt=4e-3, output_every=1)
    return scenario, simulate(scenario.model, solver, progress=False)


def body_arrays(results, name):
    cols = results.body(name)
    r = np.column_stack([cols["x"], cols["y"], cols["z"]])
    q = np.column_stack([cols[f"q{k}"] for k in range(4)])
    v = np.column_stack([cols["vx"], cols["vy"], cols["vz"]])
    w = np.column_stack([cols["wx"], cols["wy"], cols["wz"]])
    return r, q, v, w


def test_free_body_conserves_inertial_angular_momentum_and_energy(free_body):
    scenario, results = free_body
    body = scenario.model.bodies[0]
    _, q, _, w = body_arrays(results, body.name)
    h_inertial = np.einsum("kij,jl,kl->ki", quat.to_matrix(q), body.inertia, w)
    assert_close(
        h_inertial,
        np.broadcast_to(h_inertial[0], h_inertial.shape),
        1e-9,
        1e-8,
        "inertial angular momentum",
    )
    energy = 0.5 * np.einsum("ki,ij,kj->k", w, body.inertia, w)
    assert_close(energy, np.full_like(energy, energy[0]), 0.0, 1e-9, "kinetic energy")
    # the body really turns over: ω_y reverses while the inertial angular momentum stays put
    assert w[:, 1].min() < -1.9 and w[:, 1].max() > 1.9


def test_free_body_flips_on_time(free_body):
    scenario, results = free_body
    body = scenario.model.bodies[0]
    inertia = np.diag(body.inertia)
    w0 = np.asarray(body.angular_velocity)
    half = flip_half_period(inertia, w0)
    flips = zero_crossings(results.t, results[f"{body.name}.wy"])
    assert len(flips) == 2, f"expected two flips in 20 s, got {flips}"
    assert_close(np.diff(flips), [half], 0.0, 1e-5, "time between flips")

    def euler(t, w):
        return (
            (np.roll(inertia, -1) - np.roll(inertia, 1)) * np.roll(w, -1) * np.roll(w, 1) / inertia
        )

    # Euler's equations in the body frame, integrated by scipy: where the flips happen
    ref = solve_ivp(
        euler, (0, results.t[-1]), w0, method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True
    )
    t_fine = np.linspace(0, results.t[-1], 200001)
    ref_flips = zero_crossings(t_fine, ref.sol(t_fine)[1])
    assert_close(flips, ref_flips, 1e-4, 0.0, "flip times")


# --- heavy top ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def heavy_top(scenarios_dir):
    """The first 1 s of the 5 s scenario (about five nutations, a third of a precession turn)."""
    scenario = load_scenario(scenarios_dir / "heavy_top.toml")
    solver = replace(scenario.solver, t_end=1.0, output_every=5)
    return scenario, simulate(scenario.model, solver, progress=False)


def test_heavy_top_conserved_quantities(heavy_top):
    scenario, results = heavy_top
    body = scenario.model.bodies[0]
    m, g = body.mass, scenario.model.gravity
    r, q, v, w = body_arrays(results, body.name)
    R = quat.to_matrix(q)
    energy = (
        0.5 * m * np.sum(v**2, 1) + 0.5 * np.einsum("ki,ij,kj->k", w, body.inertia, w) - m * r @ g
    )
    assert_close(energy, np.full_like(energy, energy[0]), 1e-8, 1e-8, "energy")
    # angular momentum about the pivot (the origin): R I ω^b + m r × v; its Z part is conserved
    h = np.einsum("kij,jl,kl->ki", R, body.inertia, w) + m * np.cross(r, v)
    # RK4's truncation error at dt = 1e-3 s leaves ~1.4e-8 relative (it falls 16-fold at dt/2)
    assert_close(h[:, 2], np.full(len(h), h[0, 2]), 0.0, 5e-8, "vertical angular momentum")
    assert_close(w[:, 2], np.full(len(w), w[0, 2]), 1e-8, 1e-8, "spin about the symmetry axis")
    # the tip stays on the pivot and the top really moves: it precesses about Z and nutates
    tip = r - np.einsum("kij,j->ki", R, [0.0, 0.0, 0.1])
    assert np.max(np.abs(tip)) < 1e-9
    azimuth = np.unwrap(np.arctan2(r[:, 1], r[:, 0]))
    assert abs(azimuth[-1] - azimuth[0]) > 0.5
    assert np.ptp(np.degrees(np.arccos(R[:, 2, 2]))) > 0.5


# --- slider-crank -------------------------------------------------------------------------------


def slider_crank_reference(scenario):
    """One coordinate, the crank angle θ (from +X towards +Z); the loop closes exactly.

    Pin P = r (cos θ, sin θ), rod angle β = asin(r sin θ / l), slider x_s = r cos θ + l cos β,
    in (x, z). Uniform rods (I = m l²/12 about the centre); the slider only translates.
    Returns (rhs, x_s(θ) as a function, θ0, θ̇0).
    """
    raw, model = scenario.raw, scenario.model
    pin = np.array(raw["joints"]["crank_pin"]["at"])
    wrist = np.array(raw["joints"]["wrist"]["at"])
    r, l = float(np.linalg.norm(pin)), float(np.linalg.norm(wrist - pin))
    crank, rod, slider = (model.bodies[model.body_index(n) - 1] for n in ("crank", "rod", "slider"))
    g = -float(model.gravity[2])
    th, w = sp.symbols("theta omega")
    p = (r * sp.cos(th), r * sp.sin(th))
    beta = sp.asin(r * sp.sin(th) / l)
    xs = r * sp.cos(th) + l * sp.cos(beta)
    kinetic = (
        uniform_rod_energy(crank.mass, r, (p[0] / 2, p[1] / 2), th, (th,), (w,))
        + uniform_rod_energy(rod.mass, l, ((p[0] + xs) / 2, p[1] / 2), beta, (th,), (w,))
        + sp.Rational(1, 2) * slider.mass * (sp.diff(xs, th) * w) ** 2
    )
    potential = g * (crank.mass * p[1] / 2 + rod.mass * p[1] / 2)
    theta0 = float(np.arctan2(pin[2], pin[0]))
    rate0 = -float(crank.angular_velocity[1])
    return (
        lagrange_rhs((th,), (w,), kinetic, potential),
        sp.lambdify(th, xs, "numpy"),
        theta0,
        rate0,
    )


def test_slider_crank_matches_one_coordinate_solution(scenarios_dir):
    """The first 1 s of the 2 s scenario (the crank turns over: several dead centres)."""
    scenario = load_scenario(scenarios_dir / "slider_crank.toml")
    results = simulate(
        scenario.model, replace(scenario.solver, t_end=1.0, output_every=5), progress=False
    )
    rhs, slider_x, theta0, rate0 = slider_crank_reference(scenario)
    t = results.t
    ref = solve_ivp(
        rhs, (0, t[-1]), [theta0, rate0], method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t
    )
    assert ref.success
    assert_close(results["slider.x"], slider_x(ref.y[0]), 1e-7, 1e-6, "slider position")
    crank_angle = np.arctan2(results["crank.z"], results["crank.x"])
    assert_close(np.unwrap(crank_angle), ref.y[0], 1e-6, 1e-6, "crank angle")
    assert np.max(np.abs(results["slider.z"])) < 1e-9 and np.max(np.abs(results["rod.y"])) < 1e-9
    assert np.ptp(ref.y[0]) > 2 * np.pi  # it turns over at least once
    assert results.diagnostics["energy_max_relative_drift"] < 1e-6


# --- chain --------------------------------------------------------------------------------------


def test_chain_generator_builds_n_links_and_conserves_energy(scenarios_dir):
    """50 ms of the 10-link chain; links = 3 through an override."""
    scenario = load_scenario(scenarios_dir / "chain.toml")
    assert scenario.model.n_bodies == 10 and len(scenario.model.joints) == 10
    small = load_scenario(scenarios_dir / "chain.toml", ["generators.chain.links=3"])
    assert small.model.body_names == ("link1", "link2", "link3")
    results = simulate(scenario.model, replace(scenario.solver, t_end=0.05), progress=False)
    assert results.diagnostics["energy_max_relative_drift"] < 1e-9
    assert results.diagnostics["max_constraint_violation"] < 1e-9
    # the chain hangs from the origin: link 1's upper end stays there
    x, z = results["link1.x"], results["link1.z"]
    q = np.column_stack([results[f"link1.q{k}"] for k in range(4)])
    top = np.column_stack([x, results["link1.y"], z]) + 0.05 * quat.to_matrix(q)[:, :, 2]
    assert np.max(np.abs(top)) < 1e-9
