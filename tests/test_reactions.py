"""Joint reactions (`rbcosim.reactions`) against independent derivations: a hinged rod's
closed form, the double pendulum's Lagrange equations, a loaded four-bar's hand statics,
Andrews' squeezer's published multipliers, and the maximal vs minimal routes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.reactions import MaximalReactions, state_of_row
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

G = 9.81
M, L, IC = 2.0, 0.8, 0.1  # hinged rod: mass kg, hinge–centre distance m, I about the centre


def _run(path, **solver):
    scenario = load_scenario(path, {})
    return scenario, run_scenario(replace(scenario, solver=replace(
        scenario.solver, reactions=True, **solver)), progress=False)


def _wrench(results, joint, i=slice(None)):
    return np.array([results[f"{joint}.{f}"][i] for f in ("fx", "fy", "fz", "mx", "my", "mz")])


def _rod(tmp_path, theta0, rate0, driver=""):
    """A rod hinged at the origin about Y, centre at L (sin θ, 0, −cos θ), θ from the downward
    vertical (body orientation −θ about Y)."""
    s, c = float(np.sin(theta0)), float(np.cos(theta0))
    text = f"""
[world]
gravity = [0.0, 0.0, {-G}]
[bodies.rod]
mass = {M}
inertia = [{IC}, {IC}, 0.01]
position = [{L * s!r}, 0.0, {-L * c!r}]
orientation = {{ axis = [0.0, 1.0, 0.0], angle = {-theta0!r} }}
velocity = [{L * c * rate0!r}, 0.0, {L * s * rate0!r}]
angular_velocity = [0.0, {-rate0!r}, 0.0]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
{driver}
[solver]
dt = 1e-3
t_end = 0.2
output_every = 50
"""
    path = tmp_path / "rod.toml"
    path.write_text(text)
    return path


def _rod_angles(results):
    theta = np.arctan2(results["rod.x"], -results["rod.z"])
    return theta, -results["rod.wy"]


@pytest.mark.parametrize("theta0, rate0", [(0.0, 0.0), (0.7, 2.5)])
@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_hinged_rod_reaction_is_the_closed_form(tmp_path, theta0, rate0, formulation):
    """F = m a_c − m g with a_c = L θ̈ e_t − L θ̇² e_r and (I_c + m L²) θ̈ = −m g L sin θ; the
    hinge carries no moment. At rest hanging: F = m g upward."""
    _, res = _run(_rod(tmp_path, theta0, rate0), formulation=formulation)
    theta, rate = _rod_angles(res)
    acc = -M * G * L * np.sin(theta) / (IC + M * L**2)
    e_r = np.array([np.sin(theta), 0 * theta, -np.cos(theta)])
    e_t = np.array([np.cos(theta), 0 * theta, np.sin(theta)])
    force = M * (L * acc * e_t - L * rate**2 * e_r) + np.array([[0.0], [0.0], [M * G]])
    w = _wrench(res, "hinge")
    np.testing.assert_allclose(w[:3], force, atol=1e-9 * M * G)
    np.testing.assert_allclose(w[3:], 0.0, atol=1e-9)
    if theta0 == 0.0:
        np.testing.assert_allclose(w[2], M * G, rtol=1e-12)


def test_driver_torque_and_power_of_a_turning_rod(tmp_path):
    """Driven at θ = ω t (θ̈ = 0): the hinge coordinate about +Y is −θ, so the driver's
    torque about +Y on the rod is −m g L sin θ, and its power that times the rate −ω."""
    omega = 3.0
    drive = f'[joints.drive]\ntype = "driver"\njoint = "hinge"\n' \
            f'motion = {{ polynomial = [0.0, {-omega}] }}'
    _, res = _run(_rod(tmp_path, 0.0, omega, drive))
    theta, _ = _rod_angles(res)
    theta = np.unwrap(theta)
    np.testing.assert_allclose(theta, omega * res.t, atol=1e-9)
    torque_joint = -M * G * L * np.sin(theta)  # about +Y (the joint coordinate −θ)
    np.testing.assert_allclose(res["drive.force"], torque_joint, atol=1e-8)
    np.testing.assert_allclose(res["drive.power"], torque_joint * -omega, atol=1e-8)


def _double_pendulum_reference(res):
    """Shoulder and elbow forces (3, rows) on rod1 and rod2 from the Lagrange equations of two
    uniform rods (l = 0.5 m, m = 1 kg, I_c = m l²/12), then Newton per rod."""
    l, m, ic = 0.5, 1.0, 1.0 / 48
    th1 = np.unwrap(2 * np.arctan2(-res["rod1.q2"], res["rod1.q0"]))
    th2 = np.unwrap(2 * np.arctan2(-res["rod2.q2"], res["rod2.q0"]))
    th = np.array([th1, th2])
    w = np.array([-res["rod1.wy"], -res["rod2.wy"]])
    out1, out2 = [], []
    for k in range(th.shape[1]):
        (a, b), (wa, wb) = th[:, k], w[:, k]
        # centres in (x, z): c1 = l/2 e(a), c2 = l e(a) + l/2 e(b), e(θ) = (sin θ, −cos θ)
        J1 = np.array([[l / 2 * np.cos(a), 0], [l / 2 * np.sin(a), 0]])
        J2 = np.array([[l * np.cos(a), l / 2 * np.cos(b)], [l * np.sin(a), l / 2 * np.sin(b)]])
        d1 = np.array([-l / 2 * np.sin(a) * wa**2, l / 2 * np.cos(a) * wa**2])
        d2 = np.array([-l * np.sin(a) * wa**2 - l / 2 * np.sin(b) * wb**2,
                       l * np.cos(a) * wa**2 + l / 2 * np.cos(b) * wb**2])
        grav = np.array([0.0, -m * G])
        mass = m * (J1.T @ J1 + J2.T @ J2) + ic * np.eye(2)
        qdd = np.linalg.solve(mass, J1.T @ grav + J2.T @ grav - m * (J1.T @ d1 + J2.T @ d2))
        a1, a2 = J1 @ qdd + d1, J2 @ qdd + d2
        elbow = m * a2 - grav
        shoulder = m * a1 - grav + elbow
        out1.append([shoulder[0], 0.0, shoulder[1]])
        out2.append([elbow[0], 0.0, elbow[1]])
    return np.array(out1).T, np.array(out2).T


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_double_pendulum_reactions_follow_from_lagrange(scenarios_dir, formulation):
    _, res = _run(scenarios_dir / "double_pendulum.toml", t_end=1.0, formulation=formulation)
    shoulder, elbow = _double_pendulum_reference(res)
    scale = 2 * G
    np.testing.assert_allclose(_wrench(res, "shoulder")[:3], shoulder, atol=1e-8 * scale)
    np.testing.assert_allclose(_wrench(res, "elbow")[:3], elbow, atol=1e-8 * scale)
    np.testing.assert_allclose(_wrench(res, "elbow")[3:], 0.0, atol=1e-9)


def test_routes_agree_at_the_same_state(scenarios_dir):
    """Both routes from the same written state: multipliers vs tree inverse dynamics."""
    from rbcosim.minimal.route import make_system
    from rbcosim.reactions import with_reactions

    scenario, res = _run(scenarios_dir / "double_pendulum.toml", t_end=0.5,
                         formulation="minimal")
    plain = res.columns.index("shoulder.fx")
    maximal = with_reactions(scenario.model, type(res)(res.columns[:plain],
                                                       res.data[:, :plain]))
    np.testing.assert_allclose(maximal.data[:, plain:], res.data[:, plain:], atol=1e-9)
    assert make_system(scenario.model).has_loops is False


def _four_bar(tmp_path, px, py, a=0.3, d=0.5):
    """A rectangle A(0,0)–B(0,a)–C(d,a)–D(d,0) in the X–Y plane, no gravity, the crank held by
    a driver, load (px, py) N at the coupler's middle."""
    bodies = {"crank": ((0, a / 2), (0, a)), "coupler": ((d / 2, a), (d, a)),
              "rocker": ((d, a / 2), (d, a))}
    text = "[world]\ngravity = [0.0, 0.0, 0.0]\n"
    for name, (c, _) in bodies.items():
        text += (f"[bodies.{name}]\nmass = 1.0\ninertia = [0.01, 0.01, 0.01]\n"
                 f"position = [{c[0]}, {c[1]}, 0.0]\n")
    joints = [("A", "ground", "crank", (0, 0)), ("B", "crank", "coupler", (0, a)),
              ("C", "coupler", "rocker", (d, a)), ("D", "ground", "rocker", (d, 0))]
    for name, b1, b2, p in joints:
        text += (f'[joints.{name}]\ntype = "revolute"\nbody1 = "{b1}"\nbody2 = "{b2}"\n'
                 f"at = [{p[0]}, {p[1]}, 0.0]\naxis = [0.0, 0.0, 1.0]\n")
    text += ('[joints.hold]\ntype = "driver"\njoint = "A"\nmotion = { polynomial = [0.0] }\n'
             f'[forces.load]\ntype = "load"\nbody = "coupler"\nforce = [{px}, {py}, 0.0]\n'
             "[solver]\ndt = 1e-3\nt_end = 0.01\noutput_every = 10\n")
    path = tmp_path / "four_bar.toml"
    path.write_text(text)
    return path, a, d


def test_loaded_four_bar_matches_hand_statics(tmp_path):
    """Rocker CD is a two-force member (vertical); coupler moments about B: C_y = −p_y/2;
    crank: driver torque a·p_x about +Z; the ground takes −(p_x, p_y/2) at A."""
    px, py = 7.0, -4.0
    path, a, _ = _four_bar(tmp_path, px, py)
    _, res = _run(path)
    assert np.max(np.abs(res["coupler.vx"])) < 1e-12  # held still
    expected = {"A": (-px, -py / 2), "B": (-px, -py / 2), "C": (0.0, py / 2),
                "D": (0.0, -py / 2)}  # force on body2 of each joint
    for joint, (fx, fy) in expected.items():
        w = _wrench(res, joint, -1)
        np.testing.assert_allclose(w[:2], (fx, fy), atol=1e-9, err_msg=joint)
        np.testing.assert_allclose(w[5], 0.0, atol=1e-9, err_msg=joint)
    # A's own wrench excludes the driver: the driver carries the torque
    np.testing.assert_allclose(res["hold.force"][-1], a * px, rtol=1e-9)
    np.testing.assert_allclose(res["hold.power"][-1], 0.0, atol=1e-12)


#: Andrews' squeezer: the test set's multipliers λ1..λ6 (N) at t = 0 (consistent initial
#: values) and t = 0.03 s (PSIDE, rtol = atol = 1e-14); M q̈ = f − Gᵀλ, so λ(2k−1, 2k) is the
#: force on the closing body 3, 4, 6 at the common point F, from the coupler (body 2).
ANDREWS_LAMBDA = {0.0: [98.5668703962410896, -6.12268834425566266, 0, 0, 0, 0],
                  0.03: [0.1991753333731910e3, -0.2975531228015052e2, 0.2306654119098399e2,
                         0.3145271365475927e2, 0.2264249232082739e2, 0.1161740700019673e2]}


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_andrews_squeezer_reactions_match_the_published_multipliers(scenarios_dir, formulation):
    """(minimal: a closed loop, so multipliers at the state its coordinates reconstruct)"""
    scenario, res = _run(scenarios_dir / "andrews_squeezer.toml", output_every=3000,
                         formulation=formulation)
    assert res.t[-1] == pytest.approx(0.03, abs=1e-12)
    for i, t in ((0, 0.0), (-1, 0.03)):
        lam = np.array(ANDREWS_LAMBDA[t])
        got = np.array([_wrench(res, j, i)[:2] for j in ("F3", "F4", "F6")]).ravel()
        np.testing.assert_allclose(got, lam, atol=2e-6 * np.max(np.abs(lam)), err_msg=f"t={t}")


def test_newton_euler_of_every_squeezer_body(scenarios_dir):
    """m a = applied + the joint forces on the body (+ on body2, − on body1), and the moment
    about the centre likewise, at the run's last state (third law: body1 gets the opposite)."""
    scenario, res = _run(scenarios_dir / "andrews_squeezer.toml", output_every=3000)
    model = scenario.model
    system = MaximalSystem(model)
    state = state_of_row(model, res, -1)
    kin = Kinematics.of(state)
    vdot, wdot, _ = system.accelerations(state)
    force, torque = system.applied(state.t, kin)
    wrench, _ = MaximalReactions(model, system).wrenches(state)
    for b in range(1, model.n_bodies + 1):
        f, m = force[b - 1].copy(), torque[b - 1].copy()
        for k, joint in enumerate(model.joints):
            for body, sign in ((joint.marker2.body, 1.0), (joint.marker1.body, -1.0)):
                if body == b:
                    m2 = joint.marker2
                    p = kin.r[m2.body] + kin.R[m2.body] @ m2.position
                    f += sign * wrench[k, :3]
                    m += sign * (wrench[k, 3:] + np.cross(p - kin.r[b], wrench[k, :3]))
        inertia = np.reshape(model.bodies[b - 1].inertia, (3, 3))
        w = state.w[b - 1]
        tau = kin.R[b] @ (inertia @ wdot[b - 1] + np.cross(w, inertia @ w))
        scale = np.max(np.abs(wrench[:, :3]))
        np.testing.assert_allclose(f, model.bodies[b - 1].mass * vdot[b - 1], atol=1e-9 * scale)
        np.testing.assert_allclose(m, tau, atol=1e-9 * scale)


def test_reactions_are_opt_in(scenarios_dir, tmp_path):
    """Default results keep their columns; `rbcosim run --reactions` adds them; a
    co-simulation refuses the key."""
    from rbcosim.cli.main import main
    from rbcosim.errors import ScenarioError
    from rbcosim.results import Results

    plain = run_scenario(load_scenario(scenarios_dir / "double_pendulum.toml",
                                       {"solver.t_end": "0.01"}), progress=False)
    assert plain.columns[-1] == "constraint_drift" and "reactions" not in plain.diagnostics
    out = tmp_path / "dp.csv"
    assert main(["run", str(scenarios_dir / "double_pendulum.toml"), "--reactions", "-q",
                 "--t-end", "0.01", "-o", str(out)]) == 0
    assert Results.read_csv(out).columns[-12:] == [f"elbow.{f}" for f in (
        "fx", "fy", "fz", "mx", "my", "mz", "jfx", "jfy", "jfz", "jmx", "jmy", "jmz")]
    with pytest.raises(ScenarioError, match="reactions"):
        run_scenario(load_scenario(scenarios_dir / "rigid_flex_pendulum.toml",
                                   {"solver.reactions": "true"}), progress=False)
