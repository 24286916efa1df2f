"""Rolling disk and knife edge on a ground plane (non-holonomic rows) against classical
analytic motions, and their rows against finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rbcosim.maximal.checks import check_model
from rbcosim.maximal.constraints import Constraints, JacobianAssembler
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.maximal.simulate import simulate
from rbcosim.scenario.loader import load_scenario_text
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

G = 9.81
RADIUS, MASS = 0.1, 1.0
I_DIAMETER, I_AXIS = MASS * RADIUS**2 / 4, MASS * RADIUS**2 / 2  # thin disk, kg·m²


def disk_scenario(R: np.ndarray, position, velocity, omega, t_end: float) -> str:
    """A thin disk (body z = disk axis) at rotation R, inertial velocity and ω (inertial)."""
    q = quat.from_matrix(R)
    return f"""
[bodies.disk]
mass = {MASS}
inertia = [{I_DIAMETER}, {I_DIAMETER}, {I_AXIS}]
position = {list(map(float, position))}
orientation = {{ quaternion = {q.tolist()} }}
velocity = {list(map(float, velocity))}
angular_velocity = {(R.T @ omega).tolist()}
[joints.contact]
type = "rolling_disk"
body2 = "disk"
radius = {RADIUS}
axis = {R[:, 2].tolist()}
[solver]
formulation = "maximal"
integrator = "rk4"
dt = 1e-3
t_end = {t_end}
output_every = 50
"""


def contact_velocity(res, k: int) -> np.ndarray:
    """Velocity of the disk's material point at the contact, row k of the results."""
    q = np.array([res[f"disk.q{i}"][k] for i in range(4)])
    R = quat.to_matrix(q)
    axis = R[:, 2]
    n = np.array([0.0, 0.0, 1.0])
    rim = n - (n @ axis) * axis
    rho = -RADIUS * rim / np.linalg.norm(rim)
    v = np.array([res[f"disk.v{c}"][k] for c in "xyz"])
    w = R @ np.array([res[f"disk.w{c}"][k] for c in "xyz"])
    return v + np.cross(w, rho)


@pytest.mark.unit
def test_contact_rows_match_finite_differences():
    """The contact height's Jacobian is dΦ/dq; for every row, γ = −d(J ν)/dt at constant
    ν = [v, ω^b] (the identity holds for velocity rows without Φ too)."""
    rng = np.random.default_rng(3)
    R = quat.to_matrix(quat.normalize(rng.normal(size=4)))
    text = disk_scenario(R, [0.2, -0.1, 0.3], rng.normal(size=3), rng.normal(size=3), 1.0)
    text += """[joints.blade]
type = "knife_edge"
body2 = "disk"
at = [0.25, -0.05, 0.3]
blade = [0.6, 0.8, 0.0]
"""
    model = load_scenario_text(text).model
    c = Constraints(model)
    state = State.initial(model)

    def rows(s):
        values = c.evaluate(Kinematics.of(s))
        J = JacobianAssembler(values.a, values.b, 1, sparse=False).assemble(values)
        return values, J

    def advanced(tau):
        s = state.copy()
        s.r = s.r + tau * s.v
        s.q = quat.rotate_by_vector(s.q, tau * s.w)
        return s

    values, J = rows(state)
    eps = 1e-5
    for k in range(6):
        plus, minus = state.copy(), state.copy()
        if k < 3:
            plus.r[0, k] += eps
            minus.r[0, k] -= eps
        else:
            plus.q[0] = quat.rotate_by_vector(plus.q[0], eps * np.eye(3)[k - 3])
            minus.q[0] = quat.rotate_by_vector(minus.q[0], -eps * np.eye(3)[k - 3])
        fd = (rows(plus)[0].phi[0] - rows(minus)[0].phi[0]) / (2 * eps)
        assert J[0, k] == pytest.approx(fd, abs=1e-8)
    rate = [rows(advanced(tau))[1] @ state.velocities for tau in (eps, -eps)]
    np.testing.assert_allclose(values.gamma, -(rate[0] - rate[1]) / (2 * eps), atol=1e-7)
    assert c.nonholonomic.tolist() == [False, True, True, True]
    np.testing.assert_array_equal(values.phi[1:], 0.0)


def test_rolling_disk_steady_precession_matches_analytic_motion():
    """Steady rolling of a thin disk (radius a, I1 = m a²/4 about a diameter, I3 = m a²/2 about
    its axis) in a circle, after Greenwood, Principles of Dynamics §8 (rolling disk).

    In the frame turning with the precession Ω k (k up, h horizontal towards the circle's
    centre, t = k × h) the axis e3 = cos α h + sin α k is fixed (α its elevation); the centre
    G sits a u above the contact, u = −sin α h + cos α k. With ω = Ω k + s e3 and
    ω3 = ω·e3 = Ω sin α + s, rolling gives v_G = ω × a u = −a ω3 t, so G turns on a circle of
    radius ρ = a ω3/Ω; the contact force is F = m Ω² ρ h + m g k. The angular momentum about G,
    H = I1 Ω cos α u + I3 ω3 e3, is constant in that frame: Ω k × H = (C − G) × F gives

        Ω cos α [(I3 + m a²) ω3 − I1 Ω sin α] + m g a sin α = 0.

    (ω3 = 0 gives the spinning coin Ω² = m g a/(I1 cos α).) For a chosen α < 0 (leaning into
    the turn) and ρ, Ω follows; the run must keep α, Ω, ρ, the height a cos α and the energy,
    with the contact point at rest."""
    alpha, rho = math.radians(-15.0), 0.5
    sa, ca = math.sin(alpha), math.cos(alpha)
    # ω3 = ρ Ω / a in the relation: Ω² cos α [(I3 + m a²) ρ / a − I1 sin α] = −m g a sin α
    omega_p = math.sqrt(-MASS * G * RADIUS * sa
                        / (ca * ((I_AXIS + MASS * RADIUS**2) * rho / RADIUS - I_DIAMETER * sa)))
    w3 = rho * omega_p / RADIUS
    h, k = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
    t_dir = np.cross(k, h)
    e3, u = ca * h + sa * k, -sa * h + ca * k
    R = np.column_stack([t_dir, u, e3])
    omega = omega_p * k + (w3 - omega_p * sa) * e3
    centre0 = RADIUS * u
    scenario = load_scenario_text(disk_scenario(R, centre0, -RADIUS * w3 * t_dir, omega, 1.0))
    res = simulate(scenario.model, scenario.solver, progress=False)
    o = centre0 + rho * h  # the precession axis passes through o
    for j, t in enumerate(res.t):
        c, s = math.cos(omega_p * t), math.sin(omega_p * t)
        h_t = np.array([c, s, 0.0])
        centre = np.array([res[f"disk.{x}"][j] for x in "xyz"])
        np.testing.assert_allclose(centre, o - rho * h_t, atol=1e-7)
        axis = quat.to_matrix(np.array([res[f"disk.q{i}"][j] for i in range(4)]))[:, 2]
        np.testing.assert_allclose(axis, ca * h_t + sa * k, atol=1e-7)
        np.testing.assert_allclose(contact_velocity(res, j), 0.0, atol=1e-9)
    energy = res["energy"]
    assert np.ptp(energy) < 1e-9 * abs(energy[0])


def test_upright_disk_rolls_straight_at_constant_speed():
    """An upright disk rolling along x at V (ω = V/a about its axis) keeps V, stays upright and
    at height a: no force does work and the contact point stays at rest."""
    V = 1.5
    R = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])  # body z (axis) = inertial y
    text = disk_scenario(R, [0.0, 0.0, RADIUS], [V, 0.0, 0.0], np.array([0, V / RADIUS, 0]), 1.0)
    scenario = load_scenario_text(text)
    res = simulate(scenario.model, scenario.solver, progress=False)
    np.testing.assert_allclose(res["disk.x"], V * res.t, atol=1e-10)
    np.testing.assert_allclose(res["disk.vx"], V, atol=1e-10)
    np.testing.assert_allclose(res["disk.z"], RADIUS, atol=1e-12)
    report = check_model(scenario.model)
    assert (report.dof, report.nonholonomic, report.velocity_dof) == (5, 2, 3)


def test_knife_edge_on_an_inclined_plane_matches_the_classical_solution():
    """A skate (Chaplygin's knife edge at its centre of mass) on a plane inclined by β, started
    at rest with the blade along the fall line and turning at ω. No torque acts about the
    normal, so θ = ω t; along the blade m u̇ = m g sin β cos θ, u = (g sin β/ω) sin ω t, hence
    x = g sin β/(4ω²) (1 − cos 2ωt) down the slope and y = g sin β/(2ω) (t − sin 2ωt/(2ω))
    (Neimark & Fufaev, Dynamics of Nonholonomic Systems, ch. 1)."""
    beta, w = math.radians(30.0), 2.0
    text = f"""
[world]
gravity = [{G * math.sin(beta)}, 0.0, {-G * math.cos(beta)}]
[bodies.skate]
mass = 1.0
inertia = [0.01, 0.02, 0.03]
angular_velocity = [0.0, 0.0, {w}]
[joints.on_plane]
type = "planar"
body1 = "ground"
body2 = "skate"
at = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
[joints.blade]
type = "knife_edge"
body2 = "skate"
blade = [1.0, 0.0, 0.0]
[solver]
formulation = "maximal"
integrator = "rk4"
dt = 1e-3
t_end = 3.0
output_every = 100
"""
    scenario = load_scenario_text(text)
    res = simulate(scenario.model, scenario.solver, progress=False)
    t, gs = res.t, G * math.sin(beta)
    np.testing.assert_allclose(res["skate.x"], gs / (4 * w**2) * (1 - np.cos(2 * w * t)),
                               atol=1e-8)
    np.testing.assert_allclose(res["skate.y"],
                               gs / (2 * w) * (t - np.sin(2 * w * t) / (2 * w)), atol=1e-8)
    np.testing.assert_allclose(res["skate.wz"], w, atol=1e-10)
    report = check_model(scenario.model)
    assert (report.dof, report.nonholonomic, report.velocity_dof) == (3, 1, 2)
