"""Joint coordinates, sensors, body accelerations and the energy balance E − E0 − W against
independent sources: a hinged rod's geometry (atan2 of its centre), its equation of motion and
small-amplitude solution, the slider-crank's loop geometry, the maximal vs minimal routes, a
free body's work F·Δx + τ·Δφ in closed form, the drivers' power from the reactions, and the
integrators' order as dt halves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rbcosim.errors import ScenarioError
from rbcosim.maximal.simulate import simulate
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario, load_scenario_text

G = 9.81
M, L, IC = 2.0, 0.8, 0.1   # rod: mass kg, hinge–centre distance m, inertia about the centre
IO = IC + M * L**2         # inertia about the hinge, kg·m²
TIP = 1.2                  # m, hinge–tip distance of the marker sensor


def _rod(theta0: float, rate0: float, extra: str = "", solver: str = "") -> str:
    """A rod hinged at the origin about −Y, so that its joint angle θ is measured from the
    downward vertical towards +X: centre L (sin θ, 0, −cos θ), ω^b = (0, −θ̇, 0)."""
    s, c = float(np.sin(theta0)), float(np.cos(theta0))
    return f"""
[world]
gravity = [0.0, 0.0, {-G}]
[bodies.rod]
mass = {M}
inertia = [{IC}, {IC}, 0.01]
position = [{L * s!r}, 0.0, {-L * c!r}]
orientation = {{ axis = [0.0, -1.0, 0.0], angle = {theta0!r} }}
velocity = [{L * c * rate0!r}, 0.0, {L * s * rate0!r}]
angular_velocity = [0.0, {-rate0!r}, 0.0]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, -1.0, 0.0]
[sensors.tip]
type = "marker"
body = "rod"
at = [{TIP * s!r}, 0.0, {-TIP * c!r}]
{extra}
[solver]
joint_coordinates = true
{solver}
"""


def _run(text: str, **solver):
    scenario = load_scenario_text(text, source="test.toml")
    return run_scenario(replace(scenario, solver=replace(scenario.solver, **solver)),
                        progress=False)


def _rod_angle(res):
    """θ (unwrapped) and θ̇ of the rod from its centre and body angular velocity (hand)."""
    return np.unwrap(np.arctan2(res["rod.x"], -res["rod.z"])), -res["rod.wy"]


def test_revolute_angle_is_atan2_of_the_centre_and_continuous_over_a_loop():
    """Fast enough to go over the top (½ I_o θ̇² > 2 m g L): the angle passes 2π without a
    jump; the rate equals −ω_y; a finite difference of the angle agrees (cross-check)."""
    res = _run(_rod(0.0, 9.0, solver="dt = 1e-3\nt_end = 1.5\noutput_every = 10"))
    theta, rate = _rod_angle(res)
    angle = res["hinge.angle"]
    np.testing.assert_allclose(angle, theta, atol=1e-12)
    assert angle[-1] > 2 * np.pi and np.all(np.diff(angle) > 0)
    np.testing.assert_allclose(res["hinge.rate"], rate, atol=1e-12)
    fd = np.gradient(angle, res.t)[1:-1]
    np.testing.assert_allclose(fd, res["hinge.rate"][1:-1], atol=2e-2 * np.abs(rate).max())


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_small_swing_follows_the_linear_solution(formulation):
    """θ0 = 1e-3 rad from rest: θ = θ0 cos Ωt, Ω² = m g L / I_o (the nonlinear terms are
    ~θ0³, below 1e-9 rad here); the joint (`at` form) counts from the initial pose, θ − θ0."""
    theta0 = 1e-3
    res = _run(_rod(theta0, 0.0, solver="dt = 1e-3\nt_end = 1.0\noutput_every = 20"),
               formulation=formulation)
    omega = np.sqrt(M * G * L / IO)
    np.testing.assert_allclose(res["hinge.angle"], theta0 * (np.cos(omega * res.t) - 1),
                               atol=1e-9)
    np.testing.assert_allclose(res["hinge.rate"], -theta0 * omega * np.sin(omega * res.t),
                               atol=1e-8)


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_marker_and_body_accelerations_follow_the_equation_of_motion(formulation):
    """I_o θ̈ = −m g L sin θ; a point at distance d from the hinge has position d e_r,
    velocity d θ̇ e_t and acceleration d θ̈ e_t − d θ̇² e_r, e_r = (sin θ, 0, −cos θ),
    e_t = (cos θ, 0, sin θ); the body's ω̇^b = (0, −θ̈, 0)."""
    res = _run(_rod(0.7, 2.5, solver="dt = 1e-3\nt_end = 0.3\noutput_every = 25"),
               formulation=formulation, accelerations=True)
    theta, rate = _rod_angle(res)
    acc = -M * G * L * np.sin(theta) / IO
    e_r = np.array([np.sin(theta), 0 * theta, -np.cos(theta)])
    e_t = np.array([np.cos(theta), 0 * theta, np.sin(theta)])
    np.testing.assert_allclose(_xyz(res, "tip."), TIP * e_r, atol=1e-9)
    np.testing.assert_allclose(_xyz(res, "tip.v"), TIP * rate * e_t, atol=1e-9)
    np.testing.assert_allclose(_xyz(res, "tip.a"), TIP * (acc * e_t - rate**2 * e_r), atol=1e-8)
    np.testing.assert_allclose(_xyz(res, "rod.a"), L * (acc * e_t - rate**2 * e_r), atol=1e-8)
    np.testing.assert_allclose(_xyz(res, "rod.alpha"), [0 * acc, -acc, 0 * acc], atol=1e-8)


def _xyz(res, stem: str) -> np.ndarray:
    """Columns stem+x, stem+y, stem+z as rows (3, rows)."""
    return np.array([res[f"{stem}{k}"] for k in "xyz"])


_CRANK_SENSORS = """
[sensors.slider_gap]
type = "distance"
body1 = "ground"
point1 = [0.0, 0.0, 0.0]
body2 = "slider"
point2 = [0.36225827286091977, 0.0, 0.0]
[sensors.rod_length]
type = "distance"
body1 = "crank"
point1 = [0.07071067811865477, 0.0, 0.07071067811865475]
body2 = "slider"
point2 = [0.36225827286091977, 0.0, 0.0]
[sensors.crank_turn]
type = "angle"
body1 = "ground"
body2 = "crank"
axis = [0.0, 1.0, 0.0]
"""


def _crank_text(scenarios_dir, extra: str = "", t_end: float = 0.5) -> str:
    text = (scenarios_dir / "slider_crank.toml").read_text()
    return text.replace("t_end = 2.0", f"t_end = {t_end}") + extra


def _turn(res, body):
    """A body's rotation (rad) about +Y from its quaternion (planar motion), unwrapped."""
    return np.unwrap(2 * np.arctan2(res[f"{body}.q2"], res[f"{body}.q0"]))


def _wrap(x):
    return np.angle(np.exp(1j * x))


def test_slider_crank_coordinates_and_sensors_match_its_geometry(scenarios_dir):
    """The loop in the X–Z plane: the prismatic's displacement is the slider's x travel; the
    crank's revolute angle, the universal's first angle and the spherical's rotation vector are
    the bodies' turns about Y (second universal angle 0); the slider's distance from the pivot
    is its x; the pin–slider distance is the rod's 0.3 m."""
    res = _run(_crank_text(scenarios_dir, _CRANK_SENSORS), joint_coordinates=True)
    crank, rod = _turn(res, "crank"), _turn(res, "rod")
    crank, rod = crank - crank[0], rod - rod[0]
    x0 = 0.36225827286091977
    np.testing.assert_allclose(res["slide.disp"], res["slider.x"] - x0, atol=1e-12)
    np.testing.assert_allclose(res["slide.speed"], res["slider.vx"], atol=1e-12)
    np.testing.assert_allclose(res["crank_pivot.angle"], crank, atol=1e-9)
    assert res["crank_pivot.angle"].min() < -2 * np.pi  # more than a turn, continuous
    np.testing.assert_allclose(res["crank_pivot.rate"], res["crank.wy"], atol=1e-9)
    np.testing.assert_allclose(res["crank_turn.angle"], crank, atol=1e-9)
    np.testing.assert_allclose(res["wrist.angle1"], rod, atol=1e-9)
    np.testing.assert_allclose(res["wrist.rate1"], res["rod.wy"], atol=1e-9)
    np.testing.assert_allclose(res["wrist.angle2"], 0.0, atol=1e-9)
    np.testing.assert_allclose(_wrap(res["crank_pin.roty"] - (rod - crank)), 0.0, atol=1e-9)
    np.testing.assert_allclose(res["crank_pin.rotx"], 0.0, atol=1e-9)
    np.testing.assert_allclose(res["crank_pin.ratey"], res["rod.wy"] - res["crank.wy"],
                               atol=1e-9)
    np.testing.assert_allclose(res["slider_gap.distance"], res["slider.x"], atol=1e-12)
    np.testing.assert_allclose(res["slider_gap.distance_rate"], res["slider.vx"], atol=1e-12)
    np.testing.assert_allclose(res["rod_length.distance"], 0.3, atol=1e-9)
    np.testing.assert_allclose(res["rod_length.distance_rate"], 0.0, atol=1e-7)


def test_maximal_and_minimal_routes_give_the_same_joint_coordinates(scenarios_dir):
    """The slider-crank on both routes (the minimal one by coordinate partitioning): every
    joint coordinate agrees to the integrators' difference, and on the minimal route the
    revolute and prismatic columns equal its own tree coordinates q."""
    text = _crank_text(scenarios_dir)
    a = _run(text, joint_coordinates=True, formulation="maximal")
    b = _run(text, joint_coordinates=True, formulation="minimal")
    fields = ("angle", "rate", "disp", "speed", "angle1", "rate1", "angle2", "rate2", "rotx",
              "roty", "rotz", "ratex", "ratey", "ratez")
    joint_columns = [c for c in a.columns if c.rpartition(".")[2] in fields]
    assert len(joint_columns) == 14
    for column in joint_columns:
        np.testing.assert_allclose(b[column], a[column], atol=1e-7, err_msg=column)
    tree = {"angle": "angle", "disp": "displacement"}
    checked = 0
    for column in joint_columns:
        joint, _, field = column.rpartition(".")
        if field in tree and f"q.{joint}.{tree[field]}" in b.columns:
            np.testing.assert_allclose(b[column], b[f"q.{joint}.{tree[field]}"], atol=1e-12)
            checked += 1
    assert checked >= 1


def test_free_body_work_is_force_times_displacement():
    """A constant force F at the centre and torque τ about the spin axis z: W = F·Δx + τ Δφ
    with Δx = v0 t + ½ (F/m + g) t² and Δφ = ω0 t + ½ (τ/I) t² (gravity is potential energy,
    not work); the balance E − E0 − W stays at rounding level."""
    mass, izz, t = 2.0, 3.0, 1.0
    force, torque = np.array([1.5, -0.5, 2.0]), 0.3
    v0, w0, g = np.array([0.3, 0.0, 0.1]), 0.5, np.array([0.0, 0.0, -G])
    text = f"""
[world]
gravity = [0.0, 0.0, {-G}]
[bodies.b]
mass = {mass}
inertia = [1.0, 2.0, {izz}]
velocity = {v0.tolist()}
angular_velocity = [0.0, 0.0, {w0}]
[forces.push]
type = "load"
body = "b"
force = {force.tolist()}
torque = [0.0, 0.0, {torque}]
[solver]
dt = 1e-2
t_end = {t}
"""
    res = _run(text)
    dx = v0 * t + 0.5 * (force / mass + g) * t**2
    work = force @ dx + torque * (w0 * t + 0.5 * torque / izz * t**2)
    d = res.diagnostics
    assert d["work_J"] == pytest.approx(work, rel=1e-12)
    assert d["energy_max_relative_drift"] < 1e-12
    assert not d["energy_conservative"]


_MOTOR = """
[joints.motor]
type = "driver"
joint = "crank_pivot"
motion = { polynomial = [0.0, -10.0, -20.0] }
"""


def _balance(res):
    """(E_end − E0 − W, E_end − E0 + W) J: the balance and the same with the work's sign
    flipped."""
    change = res["energy"][-1] - res["energy"][0]
    work = res.diagnostics["work_J"]
    return change - work, change + work


def test_driven_crank_energy_balance_converges_at_fourth_order(scenarios_dir):
    """Driven at θ = −10 t − 20 t² (it accelerates): max |E − E0 − W| / scale falls by
    2⁴ = 16 when dt halves (RK4 with W as a quadrature state); W equals the time integral of
    the driver's power from the multipliers at the rows (`motor.power`, Simpson's rule); with
    the sign of W flipped the balance is off by 2 W."""
    text = _crank_text(scenarios_dir, _MOTOR)
    coarse = _run(text, dt=2e-3, output_every=1)
    fine = _run(text, dt=1e-3, output_every=1, reactions=True)
    ratio = (coarse.diagnostics["energy_max_relative_drift"]
             / fine.diagnostics["energy_max_relative_drift"])
    assert 13.0 < ratio < 19.0
    assert fine.diagnostics["energy_max_relative_drift"] < 1e-7
    work = fine.diagnostics["work_J"]
    power = fine["motor.power"]
    h = fine.t[1] - fine.t[0]
    assert len(power) % 2 == 1  # an even number of intervals
    simpson = h / 3 * (power[0] + power[-1] + 4 * power[1:-1:2].sum() + 2 * power[2:-1:2].sum())
    assert work == pytest.approx(simpson, rel=1e-7)
    right, wrong = _balance(fine)
    assert abs(right) < 1e-6 and abs(wrong) > 1.0


_DAMPED = """
[forces.hinge_damper]
type = "torsional_spring_damper"
joint = "hinge"
stiffness = 5.0
damping = 0.8
[forces.strap]
type = "spring_damper"
body1 = "ground"
point1 = [0.5, 0.0, -0.5]
body2 = "rod"
point2 = [0.2, 0.0, 0.0]
stiffness = 40.0
damping = 3.0
[forces.push]
type = "load"
body = "rod"
point = [0.0, 0.0, -0.3]
table = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.2, 6.0, 0.0, 2.0, 0.0, 1.5, 0.0],
         [0.4, -4.0, 0.0, 0.0, 0.0, -1.0, 0.0]]
"""


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
@pytest.mark.parametrize("integrator, dts, order", [("rk4", (4e-3, 2e-3), 4),
                                                    ("sdirk2", (2e-3, 1e-3), 2)])
def test_loaded_damped_rod_balance_converges_at_the_integrators_order(integrator, dts, order,
                                                                      formulation):
    """A swinging rod with a torsional damper, a spring–damper strap and a load table (its
    corners at whole steps): max |E − E0 − W| / scale falls by 2^order when dt halves, on both
    routes (the minimal one integrates W in its compiled tree steps); with the work's sign
    flipped the balance fails."""
    text = _rod(0.7, 2.5, _DAMPED, solver="t_end = 0.6")
    coarse, fine = (_run(text, dt=dt, integrator=integrator, formulation=formulation)
                    for dt in dts)
    ratio = (coarse.diagnostics["energy_max_relative_drift"]
             / fine.diagnostics["energy_max_relative_drift"])
    assert 2**order * 0.8 < ratio < 2**order * 1.25
    right, wrong = _balance(fine)
    assert abs(wrong) > 1e3 * abs(right)


def test_both_routes_do_the_same_work():
    """The loaded damped rod's W on the maximal route (multiplier dynamics) and on the minimal
    one (joint coordinates) agree to the integrators' difference."""
    text = _rod(0.7, 2.5, _DAMPED, solver="t_end = 0.6")
    a, b = (_run(text, formulation=f).diagnostics["work_J"] for f in ("maximal", "minimal"))
    assert b == pytest.approx(a, rel=1e-9)
    assert abs(a) > 0.1


@pytest.mark.parametrize("formulation", ["maximal", "minimal"])
def test_adaptive_run_integrates_the_work_as_a_state(formulation):
    """RK45 at rtol 1e-10 carries W as one more ODE state: the balance closes to ~1e-9."""
    res = _run(_rod(0.7, 2.5, _DAMPED, solver="t_end = 0.6\ndt = 1e-2"), integrator="RK45",
               formulation=formulation)
    assert res.diagnostics["energy_max_relative_drift"] < 1e-8
    right, wrong = _balance(res)
    assert abs(wrong) > 1e6 * abs(right)


def test_a_resumed_run_keeps_its_work(tmp_path):
    """A run resumed from a checkpoint at t = 0.3 s ends with the same W as one straight run."""
    text = _rod(0.7, 2.5, _DAMPED, solver="t_end = 0.6")
    scenario = load_scenario_text(text, source="test.toml")
    straight = simulate(scenario.model, scenario.solver, progress=False)
    checkpoint = tmp_path / "half.ckpt"
    simulate(scenario.model, replace(scenario.solver, t_end=0.3), progress=False,
             checkpoint=checkpoint, checkpoint_every=100)
    resumed = simulate(scenario.model, scenario.solver, progress=False, resume=checkpoint)
    assert resumed.diagnostics["work_J"] == pytest.approx(straight.diagnostics["work_J"],
                                                          rel=1e-13)
    assert abs(straight.diagnostics["work_J"]) > 0.1


@pytest.mark.parametrize("sensor, key, message", [
    ('type = "gauge"', "sensors.s.type", "expected one of"),
    ('type = "marker"\nmarker = "rod.nothing"', "sensors.s.marker", "no marker"),
    ('type = "angle"\nbody1 = "ground"\nbody2 = "rod"', "sensors.s.axis", "missing"),
    ('type = "distance"\nbody1 = "ground"\npoint1 = [0.0, 0.0, 0.0]\nbody2 = "rod"',
     "sensors.s.point2", "missing"),
])
def test_bad_sensors_name_the_file_and_key(sensor, key, message):
    text = _rod(0.0, 0.0).replace("[solver]", f"[sensors.s]\n{sensor}\n[solver]")
    with pytest.raises(ScenarioError, match=f"test.toml: {key}: .*{message}"):
        load_scenario_text(text, source="test.toml")


def test_a_sensor_may_not_take_a_body_or_joint_name():
    text = _rod(0.0, 0.0).replace("[sensors.tip]", "[sensors.hinge]")
    with pytest.raises(ScenarioError, match="test.toml: sensors.hinge: .*already"):
        load_scenario_text(text, source="test.toml")


def test_summary_reports_the_balance_of_every_rigid_model(scenarios_dir):
    """The shipped slider-crank (conservative, no loads) does no work: W = 0 exactly."""
    scenario = load_scenario(scenarios_dir / "slider_crank.toml", ["solver.t_end=0.1"])
    d = run_scenario(scenario, progress=False).diagnostics
    assert d["work_J"] == 0.0 and d["energy_max_relative_drift"] < 1e-8


def test_cosimulation_has_joint_coordinates_and_refuses_marker_sensors(scenarios_dir):
    """The rigid–flexible pendulum (a co-simulation) writes its hinge's angle, the link's turn
    about Y from its quaternion; a marker sensor (it needs the rigid dynamics alone) is
    refused naming the sensor."""
    path = scenarios_dir / "rigid_flex_pendulum.toml"
    scenario = load_scenario(path, ["solver.t_end=0.01", "solver.joint_coordinates=true"])
    res = run_scenario(scenario, progress=False)
    turn = _turn(res, "link")
    np.testing.assert_allclose(res["hinge.angle"], turn - turn[0], atol=1e-12)
    np.testing.assert_allclose(res["hinge.rate"], res["link.wy"], atol=1e-12)
    assert np.ptp(res["hinge.angle"]) > 1e-4
    sensor = ['sensors.end.type="marker"', 'sensors.end.body="link"', "sensors.end.at=[0,0,0]"]
    with pytest.raises(ScenarioError, match="sensors.end: a marker sensor .* rigid runs only"):
        run_scenario(load_scenario(path, ["solver.t_end=0.01", *sensor]), progress=False)


def test_model_builder_sensor_and_switches_equal_the_file():
    """rbcosim.scenario.builder's sensor() and solver(joint_coordinates=, accelerations=) build the same
    scenario as the file form: the runs agree bitwise, the tip where the geometry puts it."""
    from rbcosim.scenario.builder import ModelBuilder, rotation

    theta0 = 0.7
    s, c = np.sin(theta0), np.cos(theta0)
    b = ModelBuilder(gravity=[0.0, 0.0, -G])
    b.body("rod", mass=M, inertia=[IC, IC, 0.01], position=[L * s, 0.0, -L * c],
           orientation=rotation([0.0, -1.0, 0.0], angle=theta0))
    b.revolute("hinge", "ground", "rod", at=[0.0, 0.0, 0.0], axis=[0.0, -1.0, 0.0])
    b.sensor("tip", "marker", body="rod", at=[TIP * s, 0.0, -TIP * c])
    built = b.scenario(joint_coordinates=True, accelerations=True, t_end=0.1, output_every=10)
    a = run_scenario(built, progress=False)
    f = _run(_rod(theta0, 0.0), accelerations=True, t_end=0.1, output_every=10)
    assert a.columns == f.columns
    np.testing.assert_array_equal(a.data, f.data)
    theta = np.arctan2(a["rod.x"], -a["rod.z"])
    np.testing.assert_allclose(a["tip.x"], TIP * np.sin(theta), atol=1e-12)


def test_marker_form_equals_the_at_form():
    """A marker sensor on a declared marker (body frame: the hinge is at z = +L from the
    centre, the tip at L − TIP) writes the same columns as the `at` form's."""
    extra = f"""
[bodies.rod.markers.end]
position = [0.0, 0.0, {L - TIP}]
[sensors.end]
type = "marker"
marker = "rod.end"
"""
    text = _rod(0.7, 2.5, solver="t_end = 0.05\noutput_every = 10").replace(
        "[joints.hinge]", extra + "[joints.hinge]")
    res = _run(text)
    for f in ("x", "y", "z", "vx", "vy", "vz", "ax", "ay", "az"):
        np.testing.assert_allclose(res[f"end.{f}"], res[f"tip.{f}"], atol=1e-12, err_msg=f)


def test_a_checkpoint_between_rows_keeps_the_steps_work(tmp_path):
    """A checkpoint taken where no row was written (the diagnostics last saw an earlier
    state) still carries the integrator's W of that step."""
    from rbcosim.maximal.simulate import RigidSimulation, _load_checkpoint, _save_checkpoint

    scenario = load_scenario_text(_rod(0.7, 2.5, _DAMPED), source="test.toml")
    sim = RigidSimulation(scenario.model, scenario.solver)
    rows = [sim.observe()]
    sim.advance(1e-3 * np.arange(0, 151), 1e-3)
    _save_checkpoint(sim, rows, 150, tmp_path / "mid.ckpt")
    other = RigidSimulation(scenario.model, scenario.solver)
    _load_checkpoint(other, tmp_path / "mid.ckpt")
    assert other.integrator.work == sim.integrator.work != 0.0
    assert other.diagnostics.work == sim.integrator.work


def test_cosimulation_balance_counts_the_interface_wrenches():
    """The rigid–flexible pendulum: the beam's wrench on the link (input minus added mass
    times the point's acceleration) does work on the rigid side; E − E0 − W of the link closes
    to the integration error, far below the interface's own work."""
    path = Path(__file__).resolve().parents[1] / "scenarios" / "rigid_flex_pendulum.toml"
    res = run_scenario(load_scenario(path, ["solver.t_end=0.05"]), progress=False)
    d = res.diagnostics
    right, wrong = _balance(res)
    assert abs(d["work_J"]) > 1e-3
    assert d["energy_max_relative_drift"] < 1e-6
    assert abs(wrong) > 1e3 * abs(right)
