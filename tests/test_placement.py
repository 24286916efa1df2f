"""Ground markers, relative placement and assembly from joint coordinates (`initial`) against
the test's own derivations: the same joints in the `at` form, poses composed by hand with
scipy's Rotation, the closed-form kinematics and the Lagrange equations of a double pendulum
of uniform rods."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from rbcosim.errors import ScenarioError
from rbcosim.maximal.checks import check_model
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.simulate import simulate
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario, load_scenario_text
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

pytestmark = pytest.mark.scenarios

G, M, L = 9.81, 1.0, 0.5
ROD = f"mass = {M}\ninertia = [{M * L**2 / 12}, {M * L**2 / 12}, 1e-8]\n"


def _rotation(q) -> Rotation:
    """scipy Rotation of a scalar-first quaternion."""
    return Rotation.from_quat(np.roll(np.asarray(q, float), -1))


# --- ground markers ------------------------------------------------------------------------------

PIVOT = [0.1, -0.2, 0.3]
HINGE_AT = f"""
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = {PIVOT}
axis = [0.0, 1.0, 0.2]
x_axis = [1.0, 0.0, 0.0]
[forces.spring]
type = "spring_damper"
body1 = "ground"
point1 = [1.0, 0.5, 0.0]
body2 = "rod"
point2 = [0.0, 0.0, -0.25]
stiffness = 30.0
"""
HINGE_MARKERS = """
[ground.markers.pivot]
position = [0.1, -0.2, 0.3]
axis = [0.0, 1.0, 0.2]
x_axis = [1.0, 0.0, 0.0]
[ground.markers.anchor]
position = [1.0, 0.5, 0.0]
[joints.hinge]
type = "revolute"
marker1 = "ground.pivot"
marker2 = "rod.top"
[forces.spring]
type = "spring_damper"
marker1 = "ground.anchor"
marker2 = "rod.tip"
stiffness = 30.0
"""


def _pendulum(joints: str) -> str:
    """A rod hanging from PIVOT (its top), markers at top and tip in the body frame."""
    centre = [PIVOT[0], PIVOT[1], PIVOT[2] - 0.25]
    return f"""
[bodies.rod]
{ROD}position = {centre}
velocity = [0.3, 0.0, 0.0]
angular_velocity = [0.0, 1.2, 0.0]
[bodies.rod.markers.top]
position = [0.0, 0.0, 0.25]
axis = [0.0, 1.0, 0.2]
x_axis = [1.0, 0.0, 0.0]
[bodies.rod.markers.tip]
position = [0.0, 0.0, -0.25]
{joints}
[solver]
dt = 1e-3
t_end = 0.3
"""


def test_ground_marker_joint_equals_the_at_form():
    """A hinge and a spring on ground markers build the model of the `at`/point form (same
    marker frames, bitwise) and run the same trajectory."""
    by_at = load_scenario_text(_pendulum(HINGE_AT))
    by_marker = load_scenario_text(_pendulum(HINGE_MARKERS))
    for a, b in ((by_at.model.joints[0], by_marker.model.joints[0]),
                 (by_at.model.springs[0], by_marker.model.springs[0])):
        for ma, mb in ((a.marker1, b.marker1), (a.marker2, b.marker2)):
            assert ma.body == mb.body
            np.testing.assert_allclose(ma.position, mb.position, rtol=0, atol=1e-15)
            np.testing.assert_allclose(ma.axes, mb.axes, rtol=0, atol=1e-15)
    assert by_marker.model.joints[0].marker1.body == 0
    np.testing.assert_array_equal(by_marker.model.joints[0].marker1.position, PIVOT)
    ra = simulate(by_at.model, by_at.solver, progress=False)
    rb = simulate(by_marker.model, by_marker.solver, progress=False)
    assert np.ptp(ra["rod.x"]) > 1e-2  # it swings
    np.testing.assert_allclose(rb.data, ra.data, rtol=0, atol=1e-12)


def test_joint_relative_to_a_marker_is_the_inertial_at_form():
    """`at`/`axis`/`x_axis` in the axes of marker rod.tip equal the same joint written with
    the point and axes transformed to inertial here with scipy."""
    tilt = Rotation.from_rotvec([0.3, -0.2, 0.5])
    tip = Rotation.from_rotvec([0.0, 0.0, 0.8])
    centre, tip_at = np.array([0.4, 0.1, -0.2]), np.array([0.05, 0.0, -0.25])
    frame = tilt * tip
    at = centre + tilt.apply(tip_at) + frame.apply([0.1, 0.2, 0.0])
    axis, x_axis = frame.apply([0.0, 1.0, 0.0]), frame.apply([1.0, 0.0, 0.0])
    rod = f"""
[bodies.rod]
{ROD}position = {centre.tolist()}
orientation = {{ quaternion = {np.roll(tilt.as_quat(), 1).tolist()} }}
[bodies.rod.markers.tip]
position = {tip_at.tolist()}
orientation = {{ axis = [0.0, 0.0, 1.0], angle = 0.8 }}
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
"""
    relative = load_scenario_text(rod + 'relative_to = "rod.tip"\nat = [0.1, 0.2, 0.0]\n'
                                  "axis = [0.0, 1.0, 0.0]\nx_axis = [1.0, 0.0, 0.0]\n")
    inertial = load_scenario_text(rod + f"at = {at.tolist()}\naxis = {axis.tolist()}\n"
                                  f"x_axis = {x_axis.tolist()}\n")
    a, b = relative.model.joints[0], inertial.model.joints[0]
    for ma, mb in ((a.marker1, b.marker1), (a.marker2, b.marker2)):
        np.testing.assert_allclose(ma.position, mb.position, rtol=0, atol=1e-15)
        np.testing.assert_allclose(ma.axes, mb.axes, rtol=0, atol=1e-15)


# --- relative placement --------------------------------------------------------------------------

PLACED = """
[bodies.c]
{rod}center_of_mass = [0.01, 0.02, -0.03]
placement = {{ parent = "b.end", position = [0.0, 0.1, -0.2], orientation = {{ axis = [1.0, 1.0, 0.0], angle = 0.4 }} }}
[bodies.b]
{rod}center_of_mass = [0.0, 0.0, 0.05]
placement = {{ parent = "ground.base", position = [0.3, 0.0, 0.0], orientation = {{ axis = [0.0, 0.0, 1.0], angle = -0.9 }} }}
[bodies.b.markers.end]
position = [0.2, -0.1, 0.4]
orientation = {{ axis = [0.0, 1.0, 0.0], angle = 1.1 }}
[ground.markers.base]
position = [1.0, 2.0, 3.0]
orientation = {{ axis = [1.0, 0.0, 0.0], angle = 0.7 }}
"""


def test_relative_placement_composes_the_marker_frames():
    """c is placed on b's marker, b on a ground marker (c comes first in the file): body
    frame = marker frame ∘ (position, orientation), composed here with scipy."""
    model = load_scenario_text(PLACED.format(rod=ROD)).model
    base = Rotation.from_rotvec(0.7 * np.array([1.0, 0.0, 0.0]))
    rb = base * Rotation.from_rotvec([0.0, 0.0, -0.9])
    origin_b = np.array([1.0, 2.0, 3.0]) + base.apply([0.3, 0.0, 0.0])
    end = rb * Rotation.from_rotvec([0.0, 1.1, 0.0])
    point_end = origin_b + rb.apply([0.2, -0.1, 0.4])
    rc = end * Rotation.from_rotvec(0.4 * np.array([1.0, 1.0, 0.0]) / np.sqrt(2))
    origin_c = point_end + end.apply([0.0, 0.1, -0.2])
    c, b = model.bodies
    assert (c.name, b.name) == ("c", "b")
    np.testing.assert_allclose(b.position, origin_b + rb.apply([0.0, 0.0, 0.05]), atol=1e-14)
    np.testing.assert_allclose(c.position, origin_c + rc.apply([0.01, 0.02, -0.03]), atol=1e-14)
    np.testing.assert_allclose(quat.to_matrix(b.quaternion), rb.as_matrix(), atol=1e-14)
    np.testing.assert_allclose(quat.to_matrix(c.quaternion), rc.as_matrix(), atol=1e-14)


def _error(text: str) -> str:
    with pytest.raises(ScenarioError) as err:
        load_scenario_text(text, source="x.toml")
    return str(err.value)


def test_placement_errors_name_the_key():
    text = PLACED.format(rod=ROD)
    unknown = _error(text.replace('parent = "b.end"', 'parent = "b.nowhere"'))
    assert unknown.startswith("x.toml: bodies.c.placement.parent: no marker 'b.nowhere'; "
                              "valid names: ['b.end', 'ground.base']"), unknown
    cycle = _error(text.replace('parent = "ground.base"', 'parent = "c.top"')
                   + "[bodies.c.markers.top]\n")
    assert cycle.startswith("x.toml: bodies.c.placement.parent: placements form a cycle: "
                            "c -> b -> c"), cycle


def test_placement_refuses_an_inertial_pose_too():
    text = PLACED.format(rod=ROD).replace("[bodies.b]\n", "[bodies.b]\nposition = [0.0, 0.0, 1.0]\n")
    with pytest.raises(ScenarioError, match=r"^x.toml: bodies.b.position: give either placement"):
        load_scenario_text(text, source="x.toml")


# --- assembly from joint coordinates -------------------------------------------------------------

def _double_pendulum(shoulder: str, elbow: str, t_end: float = 1.0) -> str:
    """The seed's double pendulum written hanging straight down; hinge axes along −Y, so a
    joint angle turns the rod below it from the downward vertical towards +X."""
    return f"""
[bodies.rod1]
{ROD}position = [0.0, 0.0, -0.25]
[bodies.rod2]
{ROD}position = [0.0, 0.0, -0.75]
[joints.shoulder]
type = "revolute"
body1 = "ground"
body2 = "rod1"
at = [0.0, 0.0, 0.0]
axis = [0.0, -1.0, 0.0]
initial = {shoulder}
[joints.elbow]
type = "revolute"
body1 = "rod1"
body2 = "rod2"
at = [0.0, 0.0, -0.5]
axis = [0.0, -1.0, 0.0]
initial = {elbow}
[solver]
dt = 1e-3
t_end = {t_end}
output_every = 10
"""


def _planar_kinematics(th1, th2, w1, w2):
    """Centres of mass (x, z) and their velocities of the two rods, θ from the downward
    vertical towards +X, θ̇ their absolute rates."""
    s1, c1, s2, c2 = np.sin(th1), np.cos(th1), np.sin(th2), np.cos(th2)
    r1 = np.array([L / 2 * s1, -L / 2 * c1])
    r2 = np.array([L * s1 + L / 2 * s2, -L * c1 - L / 2 * c2])
    v1 = np.array([L / 2 * c1 * w1, L / 2 * s1 * w1])
    v2 = np.array([L * c1 * w1 + L / 2 * c2 * w2, L * s1 * w1 + L / 2 * s2 * w2])
    return r1, r2, v1, v2


def _lagrange(t, y):
    """θ̈ of two uniform rods (mass M, length L) from T = ½ M L² [4/3 θ̇1² + θ̇1 θ̇2 cos(θ1 − θ2)
    + 1/3 θ̇2²], V = −M g L (3/2 cos θ1 + 1/2 cos θ2), by the Euler–Lagrange equations."""
    th1, th2, w1, w2 = y
    c, s = np.cos(th1 - th2), np.sin(th1 - th2)
    mass = M * L**2 * np.array([[4 / 3, c / 2], [c / 2, 1 / 3]])
    force = np.array([-M * L**2 / 2 * w2**2 * s - 1.5 * M * G * L * np.sin(th1),
                      M * L**2 / 2 * w1**2 * s - 0.5 * M * G * L * np.sin(th2)])
    return np.concatenate([[w1, w2], np.linalg.solve(mass, force)])


def _angles(results):
    """θ1, θ2 (rad) from the rods' centres of mass."""
    x1, z1, x2, z2 = (results[f"rod{k}.{c}"] for k in (1, 2) for c in ("x", "z"))
    return np.arctan2(x1, -z1), np.arctan2(x2 - 2 * x1, -(z2 - 2 * z1))


def test_angles_in_degrees_assemble_the_seed_pendulum(scenarios_dir):
    """60° and 30° − 60° at the joints: the pose written by hand in double_pendulum.toml."""
    built = load_scenario_text(_double_pendulum("{ angle_deg = 60.0 }", "{ angle_deg = -30.0 }"))
    seed = load_scenario(scenarios_dir / "double_pendulum.toml")
    for a, b in zip(built.model.bodies, seed.model.bodies):
        np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-15)
        np.testing.assert_allclose(quat.to_matrix(a.quaternion), quat.to_matrix(b.quaternion),
                                   rtol=0, atol=1e-15)
        np.testing.assert_array_equal(a.velocity, 0.0)


@pytest.fixture(scope="module")
def swinging():
    """θ1 = 0.7, θ2 = −0.4 rad; θ̇1 = 1.3, θ̇2 = −2.1 rad/s (the elbow's: their differences)."""
    th, w = (0.7, -0.4), (1.3, -2.1)
    text = _double_pendulum(f"{{ angle = {th[0]}, rate = {w[0]} }}",
                            f"{{ angle = {th[1] - th[0]}, rate = {w[1] - w[0]} }}")
    return th, w, load_scenario_text(text)


def test_assembled_state_is_the_planar_kinematics(swinging):
    (th1, th2), (w1, w2), scenario = swinging
    rod1, rod2 = scenario.model.bodies
    expected = _planar_kinematics(th1, th2, w1, w2)
    for body, r, v, th, w in ((rod1, expected[0], expected[2], th1, w1),
                              (rod2, expected[1], expected[3], th2, w2)):
        np.testing.assert_allclose(body.position, [r[0], 0.0, r[1]], rtol=0, atol=1e-15)
        np.testing.assert_allclose(body.velocity, [v[0], 0.0, v[1]], rtol=0, atol=1e-15)
        turn = Rotation.from_rotvec([0.0, -th, 0.0])  # about −Y by θ
        np.testing.assert_allclose(_rotation(body.quaternion).as_matrix(), turn.as_matrix(),
                                   rtol=0, atol=1e-15)
        # ω = −θ̇ Y inertially; Y is also the body's y axis (the rod turns about it)
        np.testing.assert_allclose(body.angular_velocity, [0.0, -w, 0.0], rtol=0, atol=1e-15)
    phi, phidot = MaximalSystem(scenario.model).drift(State.initial(scenario.model))
    assert phi < 1e-15 and phidot < 1e-15, (phi, phidot)


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_assembled_run_follows_the_lagrange_equations(swinging, formulation):
    (th1, th2), (w1, w2), scenario = swinging
    solver = replace(scenario.solver, formulation=formulation)
    results = run_scenario(replace(scenario, solver=solver), progress=False)
    t = results.t
    ref = solve_ivp(_lagrange, (0.0, t[-1]), [th1, th2, w1, w2], method="DOP853", rtol=1e-12,
                    atol=1e-12, t_eval=t)
    assert ref.success and np.ptp(ref.y[1]) > 1.0  # the elbow really swings
    for k, angle in enumerate(_angles(results)):
        np.testing.assert_allclose(angle, ref.y[k], rtol=0, atol=1e-8)  # ~1e-9 seen


CART = f"""
[bodies.cart]
mass = 2.0
inertia = [0.1, 0.1, 0.1]
position = [0.0, 0.0, 1.0]
[bodies.rod]
{ROD}position = [0.0, 0.0, 0.75]
[joints.rail]
type = "prismatic"
body1 = "cart"
body2 = "ground"
at = [0.0, 0.0, 1.0]
axis = [1.0, 0.0, 0.0]
initial = {{ displacement = -0.3, rate = -0.8 }}
[joints.hinge]
type = "revolute"
body1 = "cart"
body2 = "rod"
at = [0.0, 0.0, 1.0]
axis = [0.0, -1.0, 0.0]
initial = {{ angle = 0.5, rate = 2.0 }}
"""


def test_prismatic_start_moves_the_side_beyond_the_joint():
    """The rail is written cart → ground, so the cart is its body 1: a displacement of the
    ground's marker by −0.3 m along the cart's x is the cart at x = +0.3 m (rate likewise);
    the rod hangs from it at 0.5 rad, turning at 2 rad/s relative to it."""
    model = load_scenario_text(CART).model
    cart, rod = model.bodies
    th, w, x, v = 0.5, 2.0, 0.3, 0.8
    np.testing.assert_allclose(cart.position, [x, 0.0, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(cart.velocity, [v, 0.0, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(cart.quaternion, [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(rod.position, [x + L / 2 * np.sin(th), 0.0,
                                              1.0 - L / 2 * np.cos(th)], rtol=0, atol=1e-15)
    np.testing.assert_allclose(rod.velocity, [v + L / 2 * np.cos(th) * w, 0.0,
                                              L / 2 * np.sin(th) * w], rtol=0, atol=1e-15)
    np.testing.assert_allclose(rod.angular_velocity, [0.0, -w, 0.0], rtol=0, atol=1e-15)
    phi, phidot = MaximalSystem(model).drift(State.initial(model))
    assert phi < 1e-15 and phidot < 1e-15, (phi, phidot)


def test_cylindrical_start_turns_and_slides_about_a_tilted_axis():
    """A body on a cylindrical joint to the ground along a = (1, 1, 1)/√3 through p: turned
    about the line by 0.4 rad and slid 0.25 m along it, moving at 1.1 rad/s and −0.7 m/s;
    pose and velocities composed here with scipy."""
    p, r0 = np.array([0.2, -0.1, 0.5]), np.array([0.6, 0.3, -0.2])
    text = f"""
[bodies.block]
mass = 2.0
inertia = [0.1, 0.2, 0.25]
position = {r0.tolist()}
orientation = {{ axis = [0.0, 0.0, 1.0], angle = 0.3 }}
[joints.shaft]
type = "cylindrical"
body1 = "ground"
body2 = "block"
at = {p.tolist()}
axis = [1.0, 1.0, 1.0]
initial = {{ angle = 0.4, rate = 1.1, displacement = 0.25, displacement_rate = -0.7 }}
"""
    model = load_scenario_text(text).model
    (block,) = model.bodies
    a = np.ones(3) / np.sqrt(3)
    turn = Rotation.from_rotvec(0.4 * a)
    r = p + turn.apply(r0 - p) + 0.25 * a
    attitude = turn * Rotation.from_rotvec([0.0, 0.0, 0.3])
    np.testing.assert_allclose(block.position, r, rtol=0, atol=1e-15)
    np.testing.assert_allclose(_rotation(block.quaternion).as_matrix(), attitude.as_matrix(),
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(block.velocity, np.cross(1.1 * a, r - p) - 0.7 * a, rtol=0,
                               atol=1e-15)
    np.testing.assert_allclose(block.angular_velocity, attitude.inv().apply(1.1 * a), rtol=0,
                               atol=1e-15)
    phi, phidot = MaximalSystem(model).drift(State.initial(model))
    assert phi < 1e-15 and phidot < 1e-15, (phi, phidot)


def test_closed_loop_start_is_left_to_the_projection(scenarios_dir):
    """Turning the four-bar's crank hinge A by 0.1 rad (its driver starting there too) turns
    the whole tree (crank, coupler, rocker) about A: the rocker's end at D = (0.4, 0, 0) m
    leaves the loop-closing hinge D by 0.4 (cos 0.1 − 1) along X and 0.4 sin 0.1 along Z,
    the largest row, which `check` reports and its assembly removes."""
    scenario = load_scenario(scenarios_dir / "four_bar.toml", {
        "joints.A.initial.angle": "0.1",
        "joints.spin.motion.polynomial": "[0.1, 0.0, 1.5707963267948966]"})
    report = check_model(scenario.model)
    assert report.phi_initial == pytest.approx(0.4 * np.sin(0.1), rel=1e-12)
    assert report.phi_assembled < 1e-12 and report.usable


SPHERICAL = 'type = "spherical"\nbody1 = "ground"\nbody2 = "rod1"\nat = [0.0, 0.0, 0.0]\n'
TO_ROD2 = 'type = "revolute"\nbody1 = "ground"\nbody2 = "rod2"\nat = [0.0, 0.0, -1.0]\n'


@pytest.mark.parametrize("joint, message", [
    (SPHERICAL + "initial = { angle = 0.1 }\n",
     ("x.toml: joints.extra.initial: only revolute, prismatic and cylindrical joints take "
      "initial coordinates; this joint is spherical")),
    (TO_ROD2 + "initial = { angle = 0.1 }\n",
     ("x.toml: joints.extra.initial: this joint closes a kinematic loop of joints that all "
      "have initial coordinates")),
    (TO_ROD2 + "initial = { angle = 0.1, speed = 1.0 }\n",
     "x.toml: joints.extra.initial.speed: unknown key"),
    (TO_ROD2 + "initial = { angle = 0.1, angle_deg = 6.0 }\n",
     "x.toml: joints.extra.initial.angle_deg: give angle (rad) or angle_deg, not both"),
])
def test_initial_errors_name_the_key(joint, message):
    text = _double_pendulum("{ angle = 0.2 }", "{ rate = 1.0 }") + f"[joints.extra]\n{joint}"
    assert _error(text).startswith(message)
