"""The Python API (`rbcosim.scenario.builder`) against the TOML form: docs/python-api.md's TOML blocks
read as the shipped scenario files, its Python blocks build field-by-field equal models and bitwise equal
runs; the two models' physics against the test's own derivations (the four-bar's loop-closure
equation, the arm's forward kinematics and hand statics, the work–energy theorem)."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import simpson

from rbcosim.errors import ScenarioError
from rbcosim.runner import run_scenario
from rbcosim.scenario.builder import ModelBuilder
from rbcosim.scenario.loader import build_scenario, load_scenario, load_scenario_text
from rbcosim.scenario.toml_writer import to_toml

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"
G = 9.81


def _guide_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(encoding="utf-8"),
                      flags=re.DOTALL)


@pytest.fixture(scope="module")
def built():
    """The guide's Python blocks, each run on its own as a reader would copy it (standalone):
    {"four_bar": ..., "three_link_arm": ..., "builders": (m, a)}."""
    namespace: dict = {}
    for code in _guide_blocks("python"):
        if "ModelBuilder(" in code:
            own: dict = {}
            exec(code, own)  # noqa: S102 (the guide's own example)
            namespace.update(own)
    return {"four_bar": namespace["four_bar"], "three_link_arm": namespace["arm"],
            "builders": (namespace["m"], namespace["a"])}


def _same(a, b, where: str) -> None:
    """Field by field; arrays bitwise (same dtype, shape and values)."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b) and a.tobytes() == b.tobytes(), where
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def _same_scenario(a, b) -> None:
    for field in ("model", "solver", "cosim", "couplings", "title"):
        _same(getattr(a, field), getattr(b, field), field)


def _fine(scenario):
    """Every step written (for the work integral)."""
    return dataclasses.replace(scenario, solver=dataclasses.replace(scenario.solver,
                                                                    output_every=1))


@pytest.fixture(scope="module")
def runs(built, scenarios_dir):
    """(from the file, from the builder) results of each model, every step written."""
    out = {}
    for name in ("four_bar", "three_link_arm"):
        from_file = load_scenario(scenarios_dir / f"{name}.toml")
        out[name] = (run_scenario(_fine(from_file), progress=False),
                     run_scenario(_fine(built[name]), progress=False))
    return out


def test_guide_toml_blocks_are_the_shipped_files(scenarios_dir):
    blocks = _guide_blocks("toml")
    for name in ("four_bar", "three_link_arm"):
        shipped = tomllib.loads((scenarios_dir / f"{name}.toml").read_text(encoding="utf-8"))
        assert shipped in [tomllib.loads(b) for b in blocks], name


def test_builder_models_equal_the_toml_files(built, scenarios_dir):
    for name in ("four_bar", "three_link_arm"):
        _same_scenario(built[name], load_scenario(scenarios_dir / f"{name}.toml"))


def test_to_toml_writes_the_same_scenario(built, scenarios_dir):
    for builder, name in zip(built["builders"], ("four_bar", "three_link_arm")):
        text = builder.to_toml()
        _same_scenario(load_scenario_text(text), load_scenario(scenarios_dir / f"{name}.toml"))


def test_writer_round_trips_every_shipped_scenario(scenarios_dir):
    for path in sorted(scenarios_dir.glob("*.toml")):
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        assert tomllib.loads(to_toml(raw)) == raw, path.name


def test_runs_are_bitwise_equal(runs):
    for name, (from_file, from_builder) in runs.items():
        assert from_file.columns == from_builder.columns, name
        assert from_file.data.tobytes() == from_builder.data.tobytes(), name


def _x_axis(q: np.ndarray) -> np.ndarray:
    """Body x axis in inertial axes from quaternions (rows q0..q3, scalar first)."""
    q0, q1, q2, q3 = q
    return np.array([1 - 2 * (q2**2 + q3**2), 2 * (q1 * q2 + q0 * q3), 2 * (q1 * q3 - q0 * q2)])


def _quaternions(res, body: str) -> np.ndarray:
    return np.array([res[f"{body}.q{k}"] for k in range(4)])


def test_four_bar_rocker_follows_the_loop_closure(runs):
    """Crank a = 0.1 at angle φ = π t²/2 from +Z towards +X; C is where the circles about B
    (radius b) and D (radius c) meet, on the branch the linkage starts on."""
    res = runs["four_bar"][0]
    t = res.t
    a, b, c, d = 0.1, np.hypot(0.4, 0.2), 0.3, np.array([0.4, 0.0])
    phi = np.pi * t**2 / 2
    B = a * np.column_stack([np.sin(phi), np.cos(phi)])  # (x, z)
    BD = d - B
    dist = np.linalg.norm(BD, axis=1)[:, None]
    e = (b**2 - c**2 + dist**2) / (2 * dist)
    h = np.sqrt(b**2 - e**2)
    u = BD / dist
    perp = np.column_stack([-u[:, 1], u[:, 0]])  # BD turned by +90° in the (x, z) plane
    C = B + e * u + h * perp
    assert np.allclose(C[0], (0.4, 0.3))  # the branch the file starts on
    rocker = _x_axis(_quaternions(res, "rocker"))[[0, 2]].T  # unit D → C
    np.testing.assert_allclose(rocker, (C - d) / c, atol=1e-9)
    crank = _x_axis(_quaternions(res, "crank"))[[0, 2]].T
    np.testing.assert_allclose(crank, B / a, atol=1e-9)
    assert phi[-1] == pytest.approx(2 * np.pi)  # one full turn of the crank
    swing = np.degrees(np.ptp(np.arctan2(rocker[:, 1], rocker[:, 0])))
    assert 20 < swing < 90  # a rocker, not a crank


def test_driver_work_is_the_change_of_energy(runs):
    """Work–energy theorem: ∫ Σ P_driver dt = E(t_end) − E(0) (every step written, Simpson)."""
    drivers = {"four_bar": ("spin",),
               "three_link_arm": ("drive_yaw", "drive_shoulder", "drive_elbow")}
    for name, (res, _) in runs.items():
        power = sum(res[f"{d}.power"] for d in drivers[name])
        work = simpson(power, x=res.t)
        change = res["energy"][-1] - res["energy"][0]
        assert abs(change) > 0.1, name
        np.testing.assert_allclose(work, change, rtol=1e-8, err_msg=name)


def _ry(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rz(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def test_arm_tip_follows_the_forward_kinematics(runs):
    """tip = Rz(ψ) [S + Ry(φ1)(E − S) + Ry(φ1 + φ2)(T − E)] with the drivers' angles."""
    res = runs["three_link_arm"][0]
    S, E, T = np.array([0, 0, 0.2]), np.array([0.4, 0, 0.2]), np.array([0.55, 0, 0.4])
    centre = np.column_stack([res[f"fore.{k}"] for k in "xyz"])
    tip = centre + 0.125 * _x_axis(_quaternions(res, "fore")).T
    for i in range(0, len(res.t), 100):
        t = res.t[i]
        psi, phi1, phi2 = 1.5 * t**3, -0.5 * t**3, 0.8 * t**3
        expected = _rz(psi) @ (S + _ry(phi1) @ (E - S) + _ry(phi1 + phi2) @ (T - E))
        np.testing.assert_allclose(tip[i], expected, atol=1e-9, err_msg=f"t={t}")


def test_arm_hold_torques_at_rest_match_hand_statics(runs):
    """At t = 0 (rest, zero driver accelerations) each driver holds the gravity moment of
    what is outboard of its joint: −g Σ m x about +Y, horizontal arms from the joint."""
    res = runs["three_link_arm"][0]
    expected = {"drive_yaw": 0.0, "drive_shoulder": -G * (1.5 * 0.2 + 1.0 * 0.475),
                "drive_elbow": -G * 1.0 * (0.475 - 0.4)}
    for driver, torque in expected.items():
        assert res[f"{driver}.force"][0] == pytest.approx(torque, abs=1e-9), driver


def test_builder_errors_are_the_file_errors():
    """A bad argument gives the TOML reader's message, naming element and key."""
    m = ModelBuilder(title="bad")
    m.body("rod", mass=-1.0, inertia=(0.02, 0.02, 1e-8))
    with pytest.raises(ScenarioError) as from_builder:
        m.scenario()
    text = "[bodies.rod]\nmass = -1.0\ninertia = [0.02, 0.02, 1e-8]\n"
    with pytest.raises(ScenarioError) as from_file:
        load_scenario_text(text, source="bad.toml")
    assert str(from_builder.value) == "ModelBuilder 'bad': bodies.rod.mass: " \
                                      "expected a positive number, got -1.0"
    assert str(from_file.value) == str(from_builder.value).replace("ModelBuilder 'bad'",
                                                                   "bad.toml")


def test_builder_refuses_duplicates_and_unknown_references():
    m = ModelBuilder()
    m.body("rod", mass=1.0, inertia=(0.02, 0.02, 1e-8))
    with pytest.raises(ScenarioError, match=r"^ModelBuilder: bodies\.rod: defined twice$"):
        m.body("rod", mass=1.0, inertia=(0.02, 0.02, 1e-8))
    with pytest.raises(ScenarioError, match=r"bodies\.arm\.markers\.tip: no body 'arm'"):
        m.marker("arm", "tip")
    m.revolute("hinge", "ground", "link", at=(0, 0, 0))
    with pytest.raises(ScenarioError, match=r"joints\.hinge\.body2: no body 'link'"):
        m.scenario()


def test_every_element_kind_builds_as_its_toml_does():
    """Each joint type, forces, markers, interface points and settings: the builder's tables
    written as TOML and read back build the same model as the builder's own."""
    m = ModelBuilder(gravity=np.array([0.0, 0.0, -1.0]), title="all kinds")
    kinds = ("fixed", "revolute", "prismatic", "spherical", "universal", "cylindrical",
             "planar")
    for k, kind in enumerate(kinds):
        body = m.body(f"b{k}", mass=1.0 + k, inertia=np.array([0.1, 0.1, 0.1]),
                      position=(float(k), 0.0, 0.0))
        getattr(m, kind)(f"j{k}", "ground", body, at=(float(k), 0.0, 0.0), axis=(0, 0, 1),
                         x_axis=(1, 0, 0))
    m.body("b7", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(7.0, 0.0, 0.0))
    tip = m.marker("b7", "tip", position=(0.0, 0.0, -0.5), axis=(0, 1, 0))
    end = m.marker("b6", "end", position=(0.0, 0.0, -0.5))
    m.distance("rope", "b6", "b7", point1=(6.0, 0.0, 1.0), point2=(7.0, 0.0, 1.0))
    m.driver("turn", "j1", {"harmonic": {"amplitude": 0.1, "frequency": 2.0}})
    m.load("push", "b2", point=(0.0, 0.0, 0.1), force=(1.0, 0.0, 0.0), torque=(0, 0, 0.5))
    m.spring_damper("spring", marker1=end, marker2=tip, stiffness=10.0, damping=0.1)
    m.torsional_spring_damper("twist", "j1", stiffness=2.0, rest_angle=0.1)
    m.interface_point("port", "b7", position=(0.0, 0.0, -0.5), axis=(1, 0, 0))
    m.solver(integrator="sdirk2", dt=2e-3, t_end=0.1, baumgarte=(5.0, 5.0))
    m.cosim(macro_step=2e-3, scheme="iterative")
    own = m.scenario()
    _same_scenario(own, load_scenario_text(m.to_toml()))
    _same_scenario(own, build_scenario(tomllib.loads(to_toml(m.tables()))))
    assert [j.kind for j in own.model.joints] == [*kinds, "distance", "driver"]


PLACED_TOML = """
[ground.markers.pivot]
position = [0.0, 0.0, 1.0]
axis = [0.0, -1.0, 0.0]
[bodies.rod1]
mass = 1.0
inertia = [0.02, 0.02, 1e-8]
placement = { parent = "ground.pivot", position = [0.0, -0.25, 0.0] }
[bodies.rod1.markers.top]
position = [0.0, 0.0, 0.25]
axis = [0.0, -1.0, 0.0]
[bodies.rod1.markers.tip]
position = [0.0, 0.0, -0.25]
[bodies.rod2]
mass = 1.0
inertia = [0.02, 0.02, 1e-8]
placement = { parent = "rod1.tip", position = [0.0, 0.0, -0.25], orientation = { axis = [0.0, 1.0, 0.0], angle_deg = 10.0 } }
[bodies.slider]
mass = 0.5
inertia = [0.01, 0.01, 0.01]
position = [2.0, 0.0, 0.0]
[joints.shoulder]
type = "revolute"
marker1 = "ground.pivot"
marker2 = "rod1.top"
initial = { angle_deg = 40.0, rate = 1.5 }
[joints.elbow]
type = "revolute"
body1 = "rod1"
body2 = "rod2"
relative_to = "rod1.tip"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
initial = { angle = -0.3 }
[joints.rail]
type = "prismatic"
body1 = "ground"
body2 = "slider"
at = [2.0, 0.0, 0.0]
axis = [1.0, 0.0, 0.0]
initial = { displacement = 0.2, rate = -0.5 }
[bodies.sleeve]
mass = 0.5
inertia = [0.01, 0.01, 0.01]
position = [3.0, 0.0, 0.0]
[joints.shaft]
type = "cylindrical"
body1 = "ground"
body2 = "sleeve"
at = [3.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
initial = { angle = 0.5, rate = 2.0, displacement = 0.1, displacement_rate = 0.3 }
"""


def test_placements_and_joint_starts_build_as_their_toml_does():
    """Ground markers, placements, `relative_to` and `initial` from the builder equal the
    same tables written by hand in TOML (and the builder's own TOML read back)."""
    from rbcosim.scenario.builder import joint_start, placement, rotation

    m = ModelBuilder()
    m.marker("ground", "pivot", position=(0.0, 0.0, 1.0), axis=(0.0, -1.0, 0.0))
    m.body("rod1", mass=1.0, inertia=(0.02, 0.02, 1e-8),
           placement=placement("ground.pivot", position=(0.0, -0.25, 0.0)))
    m.marker("rod1", "top", position=(0.0, 0.0, 0.25), axis=(0.0, -1.0, 0.0))
    m.marker("rod1", "tip", position=(0.0, 0.0, -0.25))
    m.body("rod2", mass=1.0, inertia=(0.02, 0.02, 1e-8),
           placement=placement("rod1.tip", position=(0.0, 0.0, -0.25),
                               orientation=rotation((0.0, 1.0, 0.0), angle_deg=10.0)))
    m.body("slider", mass=0.5, inertia=(0.01, 0.01, 0.01), position=(2.0, 0.0, 0.0))
    m.revolute("shoulder", marker1="ground.pivot", marker2="rod1.top",
               initial=joint_start(angle_deg=40.0, rate=1.5))
    m.revolute("elbow", "rod1", "rod2", relative_to="rod1.tip", at=(0.0, 0.0, 0.0),
               axis=(0.0, 1.0, 0.0), initial=joint_start(angle=-0.3))
    m.prismatic("rail", "ground", "slider", at=(2.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0),
                initial=joint_start(displacement=0.2, rate=-0.5))
    m.body("sleeve", mass=0.5, inertia=(0.01, 0.01, 0.01), position=(3.0, 0.0, 0.0))
    m.cylindrical("shaft", "ground", "sleeve", at=(3.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0),
                  initial=joint_start(angle=0.5, rate=2.0, displacement=0.1,
                                      displacement_rate=0.3))
    own = m.scenario()
    by_hand = load_scenario_text(PLACED_TOML)
    _same_scenario(own, by_hand)
    _same_scenario(load_scenario_text(m.to_toml()), by_hand)
    # the build really moved the slider (by 0.2 m, at −0.5 m/s) and the sleeve (up the shaft
    # through its centre by 0.1 m at 0.3 m/s, spinning at 2 rad/s about Z)
    slider, sleeve = own.model.bodies[2:]
    assert slider.position.tolist() == [2.2, 0.0, 0.0] and slider.velocity[0] == -0.5
    assert sleeve.position.tolist() == [3.0, 0.0, 0.1] and sleeve.velocity.tolist() == [0, 0, 0.3]
    np.testing.assert_allclose(sleeve.angular_velocity, [0.0, 0.0, 2.0], rtol=0, atol=1e-15)
    assert "[ground.markers.pivot]" in m.to_toml()
