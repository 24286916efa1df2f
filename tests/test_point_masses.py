"""Point masses (`point_mass = true`) and lumped masses against conservation laws, the
small-oscillation period, a point-mass double pendulum's Lagrange equations integrated by
scipy, and inertias computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from rbcosim.errors import ScenarioError
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario_text

G = 9.81


def _bob(name: str, m: float, position, velocity=(0.0, 0.0, 0.0)) -> str:
    return (f"[bodies.{name}]\npoint_mass = true\nmass = {m}\n"
            f"position = {[float(x) for x in position]}\nvelocity = {[float(x) for x in velocity]}\n")


def _string(name: str, body1: str, body2: str, p1, p2) -> str:
    return (f'[joints.{name}]\ntype = "distance"\nbody1 = "{body1}"\nbody2 = "{body2}"\n'
            f"point1 = {[float(x) for x in p1]}\npoint2 = {[float(x) for x in p2]}\n")


def _scenario(body: str, solver: str) -> object:
    return load_scenario_text(f"[world]\ngravity = [0.0, 0.0, {-G}]\n{body}[solver]\n{solver}",
                              source="<particles>")


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_spherical_pendulum_conserves_energy_and_vertical_momentum(formulation):
    """A conical-ish swing of a 0.5 kg bob on a 0.8 m string: energy and L_z = m (x v_y − y v_x)
    are constants of the motion; the bob never turns."""
    l, m, th = 0.8, 0.5, 0.6
    p = (l * np.sin(th), 0.0, -l * np.cos(th))
    scenario = _scenario(_bob("bob", m, p, (0.0, 1.2, 0.0)) + _string("s", "ground", "bob",
                                                                      (0, 0, 0), p),
                         f'formulation = "{formulation}"\ndt = 1e-3\noutput_every = 20\n'
                         f"t_end = {1.0 if formulation == 'maximal' else 0.4}\n")
    res = run_scenario(scenario, progress=False)
    energy = 0.5 * m * (res["bob.vx"] ** 2 + res["bob.vy"] ** 2 + res["bob.vz"] ** 2) \
        + m * G * res["bob.z"]
    np.testing.assert_allclose(res["energy"], energy, rtol=1e-12)
    assert np.ptp(energy) < 1e-9 * abs(energy[0])
    lz = m * (res["bob.x"] * res["bob.vy"] - res["bob.y"] * res["bob.vx"])
    assert abs(lz[0] - m * p[0] * 1.2) < 1e-12
    assert np.ptp(lz) < 1e-9 * abs(lz[0])
    assert np.ptp(np.hypot(np.hypot(res["bob.x"], res["bob.y"]), res["bob.z"])) < 1e-9
    assert np.max(np.abs([res[f"bob.w{c}"] for c in "xyz"])) < 1e-12
    assert np.max(np.abs(res["bob.q0"] - 1.0)) < 1e-12
    if formulation == "minimal":  # 3 translations − 1 string
        assert res.diagnostics["degrees_of_freedom"] == 2


def test_check_counts_three_translations_per_point_mass(capsys, tmp_path):
    """Two bobs on two strings: 2·3 − 2 = 4 degrees of freedom, by rank and by Grübler."""
    from rbcosim.cli.main import main

    p1, p2 = (0.3, 0.0, -0.4), (0.3, 0.0, -0.9)
    body = (_bob("b1", 1.0, p1) + _bob("b2", 0.5, p2) + _string("s1", "ground", "b1", (0, 0, 0), p1)
            + _string("s2", "b1", "b2", p1, p2))
    path = tmp_path / "bobs.toml"
    path.write_text(f"[world]\ngravity = [0.0, 0.0, {-G}]\n{body}")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "degrees of freedom: 4 (from the rank), Grübler–Kutzbach count: 4" in out
    assert "body b2: point mass 0.5 kg" in out


def test_small_oscillations_have_the_period_of_the_simple_pendulum():
    """Amplitude 0.01 rad: T = 2π √(l/g) (the finite-amplitude correction θ0²/16 is 6e-6)."""
    l, th = 1.2, 0.01
    p = (l * np.sin(th), 0.0, -l * np.cos(th))
    scenario = _scenario(_bob("bob", 0.3, p) + _string("s", "ground", "bob", (0, 0, 0), p),
                         "dt = 1e-3\nt_end = 4.5\n")
    res = run_scenario(scenario, progress=False)
    t, x = res.t, res["bob.x"]
    k = np.nonzero((x[:-1] > 0) & (x[1:] <= 0))[0]  # downward zero crossings, interpolated
    crossings = t[k] + x[k] / (x[k] - x[k + 1]) * (t[k + 1] - t[k])
    assert crossings.size == 2
    np.testing.assert_allclose(np.diff(crossings)[0], 2 * np.pi * np.sqrt(l / G), rtol=2e-5)


def _lagrange(t, y, m1, m2, l1, l2):
    """Point-mass double pendulum, θ from the downward vertical (hand-derived Lagrangian)."""
    a, b, wa, wb = y
    d = a - b
    mass = np.array([[(m1 + m2) * l1, m2 * l2 * np.cos(d)], [l1 * np.cos(d), l2]])
    rhs = np.array([-m2 * l2 * wb**2 * np.sin(d) - (m1 + m2) * G * np.sin(a),
                    l1 * wa**2 * np.sin(d) - G * np.sin(b)])
    return [wa, wb, *np.linalg.solve(mass, rhs)]


def test_point_masses_on_strings_are_the_point_mass_double_pendulum():
    m1, m2, l1, l2, a, b = 1.0, 0.6, 0.5, 0.4, 1.0, -0.3
    p1 = np.array([l1 * np.sin(a), 0.0, -l1 * np.cos(a)])
    p2 = p1 + np.array([l2 * np.sin(b), 0.0, -l2 * np.cos(b)])
    body = (_bob("b1", m1, p1) + _bob("b2", m2, p2) + _string("s1", "ground", "b1", (0, 0, 0), p1)
            + _string("s2", "b1", "b2", p1, p2))
    res = run_scenario(_scenario(body, "dt = 1e-3\nt_end = 1.0\noutput_every = 100\n"),
                       progress=False)
    ref = solve_ivp(_lagrange, (0.0, 1.0), [a, b, 0.0, 0.0], args=(m1, m2, l1, l2),
                    method="DOP853", rtol=1e-12, atol=1e-12, t_eval=res.t)
    th1, th2 = ref.y[0], ref.y[1]
    x2 = l1 * np.sin(th1) + l2 * np.sin(th2)
    z2 = -l1 * np.cos(th1) - l2 * np.cos(th2)
    np.testing.assert_allclose(res["b1.x"], l1 * np.sin(th1), atol=1e-8)
    np.testing.assert_allclose(res["b2.x"], x2, atol=1e-8)
    np.testing.assert_allclose(res["b2.z"], z2, atol=1e-8)
    assert np.ptp(x2) > 0.3


def test_lumped_masses_give_the_hand_computed_body():
    """A 2 kg body (inertia diag(0.1, 0.2, 0.3) about its centre at c0 = (0, 0, 0.1)) with
    0.5 kg at (0.2, 0, 0) and 1 kg at (0, 0.3, 0.1): mass 3.5 kg, centre Σ m p / 3.5, inertia
    I0 + Σ_k m_k (|d|² 1 − d dᵀ) about it, component by component."""
    text = """
[bodies.plate]
mass = 2.0
inertia = [0.1, 0.2, 0.3]
center_of_mass = [0.0, 0.0, 0.1]
position = [1.0, 2.0, 3.0]
orientation = { axis = [0.0, 0.0, 1.0], angle_deg = 90.0 }
point_masses.a = { mass = 0.5, position = [0.2, 0.0, 0.0] }
point_masses.b = { mass = 1.0, position = [0.0, 0.3, 0.1] }
"""
    body = load_scenario_text(text, source="<lumped>").model.bodies[0]
    pts = [(2.0, (0.0, 0.0, 0.1)), (0.5, (0.2, 0.0, 0.0)), (1.0, (0.0, 0.3, 0.1))]
    total = 3.5
    cx = (0.5 * 0.2) / total
    cy = (1.0 * 0.3) / total
    cz = (2.0 * 0.1 + 1.0 * 0.1) / total
    ixx = 0.1 + sum(m * ((y - cy) ** 2 + (z - cz) ** 2) for m, (x, y, z) in pts)
    iyy = 0.2 + sum(m * ((x - cx) ** 2 + (z - cz) ** 2) for m, (x, y, z) in pts)
    izz = 0.3 + sum(m * ((x - cx) ** 2 + (y - cy) ** 2) for m, (x, y, z) in pts)
    ixy = -sum(m * (x - cx) * (y - cy) for m, (x, y, z) in pts)
    ixz = -sum(m * (x - cx) * (z - cz) for m, (x, y, z) in pts)
    iyz = -sum(m * (y - cy) * (z - cz) for m, (x, y, z) in pts)
    assert body.mass == pytest.approx(total, rel=1e-15)
    hand = [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]
    np.testing.assert_allclose(body.inertia, hand, rtol=1e-14, atol=1e-16)
    # the centre of mass in the inertial frame: the body frame turned 90° about Z
    np.testing.assert_allclose(body.position, [1.0 - cy, 2.0 + cx, 3.0 + cz], atol=1e-15)


BOB = _bob("bob", 1.0, (0.0, 0.0, -1.0))
AT_BOB = 'at = [0.0, 0.0, -1.0]\n'


@pytest.mark.parametrize("text, message", [
    (BOB + "inertia = [1.0, 1.0, 1.0]\n", "bodies.bob.inertia: a point mass"),
    (BOB + 'orientation = { axis = [0.0, 0.0, 1.0], angle = 1.0 }\n',
     "bodies.bob.orientation: a point mass"),
    (BOB + '[joints.j]\ntype = "revolute"\nbody1 = "ground"\nbody2 = "bob"\n' + AT_BOB,
     "joints.j.type: point mass 'bob' takes spherical and distance joints only"),
    (BOB + '[joints.j]\ntype = "spherical"\nbody1 = "ground"\nbody2 = "bob"\n'
     'at = [0.0, 0.0, -0.5]\n', "joints.j.at: 0.5 m from point mass 'bob'"),
    (BOB + _string("j", "ground", "bob", (0, 0, 0), (0, 0.1, -1.0)),
     "joints.j.point2: 0.1 m from point mass 'bob'"),
    (BOB + '[bodies.bob.markers.m]\nposition = [0.1, 0.0, 0.0]\n',
     "bodies.bob.markers.m.position: point mass 'bob' has no extent"),
    (BOB + '[forces.f]\ntype = "load"\nbody = "bob"\ntorque = [0.0, 0.0, 1.0]\n',
     "forces.f.torque: point mass 'bob' takes no torque"),
    (BOB + '[forces.f]\ntype = "load"\nbody = "bob"\npoint = [0.0, 0.2, 0.0]\n',
     "forces.f.point: point mass 'bob' has no extent"),
    (BOB + '[forces.k]\ntype = "spring_damper"\nbody1 = "ground"\nbody2 = "bob"\n'
     'point2 = [0.3, 0.0, 0.0]\nstiffness = 1.0\n', "forces.k.point2: 0.3 m from point mass"),
    (BOB + '[interface_points.p]\nbody = "bob"\n',
     "interface_points.p.body: 'bob' is a point mass"),
])
def test_what_would_give_a_point_mass_extent_is_refused_by_key(text, message):
    with pytest.raises(ScenarioError, match=r"<particles>: " + message.replace("(", r"\(")):
        _scenario(text, "dt = 1e-3\n")


def test_spherical_joint_at_the_centre_is_accepted():
    scenario = _scenario(BOB + '[joints.j]\ntype = "spherical"\nbody1 = "ground"\n'
                         'body2 = "bob"\n' + AT_BOB, "dt = 1e-3\nt_end = 0.01\n")
    res = run_scenario(scenario, progress=False)
    np.testing.assert_allclose(res["bob.z"], -1.0, atol=1e-12)


def test_a_planar_point_mass_has_two_translations():
    """Planar mode (normal Y): a bob on a string moves in the X–Z plane, 2 − 1 = 1 degree of
    freedom by rank and by Grübler (the plane rows hold two of its rotations, one is frozen)."""
    from rbcosim.maximal.checks import check_model

    p = (0.3, 0.0, -0.4)
    text = ("[world]\nplanar = { normal = [0.0, 1.0, 0.0] }\n" + _bob("bob", 1.0, p)
            + _string("s", "ground", "bob", (0, 0, 0), p))
    report = check_model(load_scenario_text(text, source="<planar bob>").model)
    assert (report.dof, report.gruebler_dof) == (1, 1)
