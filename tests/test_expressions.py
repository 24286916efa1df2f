"""Parameters and expressions of scenario files (rbcosim.scenario.expressions, scenario_parameters):
values against Python's math computed here, derivatives against hand-derived ones, a driven
model with an expression motion against the same model with the equivalent polynomial and
harmonic motions, a parameterized scenario against the literal one, the Kane spin-up law
against its closed forms, and the errors (file, key path, cause)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rbcosim.errors import ScenarioError
from rbcosim.runner import run_scenario
from rbcosim.scenario.builder import ModelBuilder, expression, harmonic
from rbcosim.scenario.expressions import compile_expression, parse
from rbcosim.scenario.loader import load_scenario, load_scenario_text, scalar_parameters
from rbcosim.scenario.parameters import Parameters, evaluate
from rbcosim.scenario.toml_writer import to_toml

RHO, AREA, L, M = 7850.0, 1e-4, 0.3, 1.5


def test_parameter_values_equal_python_math():
    table = {"L": L, "rho": RHO, "A": "w*h", "w": 0.01, "h": 0.01, "m": "rho*A*L",
             "I": "m*L^2/12", "neg": "-2^2", "tower": "2^3^2", "inv": "2**-1",
             "arith": "(1 + 2) * 3 - 4 / 5",
             "funcs": "sin(pi/7) + cos(e) + tan(0.3) + asin(0.2) + acos(-0.4) + atan(5)"
                      " + atan2(-1, -2) + sqrt(2) + exp(1.5) + log(10) + abs(-3)"
                      " + min(3, 1, 2) + max(-1, -5)",
             "cond": "where(L > 0.2, 10, 20) + where(0 <= L < 0.2, 1, 2) + (L == 0.3)"
                     " + (L != 0.3)",
             "z": 0.0, "guard": "where(z > 0, 1/z, 7)"}
    values = Parameters("<test>", table).values
    m = RHO * (0.01 * 0.01) * L
    expected = {
        "A": 0.01 * 0.01, "m": m, "I": m * L**2 / 12, "neg": -4.0, "tower": 512.0, "inv": 0.5,
        "arith": (1 + 2) * 3 - 4 / 5,
        "funcs": (math.sin(math.pi / 7) + math.cos(math.e) + math.tan(0.3) + math.asin(0.2)
                  + math.acos(-0.4) + math.atan(5) + math.atan2(-1, -2) + math.sqrt(2)
                  + math.exp(1.5) + math.log(10) + 3 + 1 - 1),
        "cond": 10 + 2 + 1 + 0,
        "guard": 7.0,  # the discarded branch 1/0 is no error
    }
    for name, value in expected.items():
        assert values[name] == pytest.approx(value, rel=1e-15, abs=0), name


def _sec2(u):
    return 1 + math.tan(u) ** 2


#: text, (f, f', f'') written by hand
DERIVATIVES = {
    "0.5*sin(2*pi*t)": lambda t: (0.5 * math.sin(2 * math.pi * t),
                                  math.pi * math.cos(2 * math.pi * t),
                                  -2 * math.pi**2 * math.sin(2 * math.pi * t)),
    "exp(-t^2)*cos(3*t)": lambda t: (
        math.exp(-t * t) * math.cos(3 * t),
        math.exp(-t * t) * (-2 * t * math.cos(3 * t) - 3 * math.sin(3 * t)),
        math.exp(-t * t) * ((4 * t * t - 11) * math.cos(3 * t) + 12 * t * math.sin(3 * t))),
    "t^3/(1 + t^2)": lambda t: (t**3 / (1 + t * t), 1 - (1 - t * t) / (1 + t * t) ** 2,
                                (6 * t - 2 * t**3) / (1 + t * t) ** 3),
    "sqrt(1 + t^2)": lambda t: (math.hypot(1, t), t / math.hypot(1, t), math.hypot(1, t) ** -3),
    "atan2(sin(t), 2 + cos(t))": lambda t: (
        math.atan2(math.sin(t), 2 + math.cos(t)), (2 * math.cos(t) + 1) / (5 + 4 * math.cos(t)),
        -6 * math.sin(t) / (5 + 4 * math.cos(t)) ** 2),
    "2^t*log(3 + t)": lambda t: (
        2**t * math.log(3 + t),
        2**t * (math.log(2) * math.log(3 + t) + 1 / (3 + t)),
        2**t * (math.log(2) ** 2 * math.log(3 + t) + 2 * math.log(2) / (3 + t)
                - 1 / (3 + t) ** 2)),
    "t^t": lambda t: (t**t, t**t * (math.log(t) + 1), t**t * ((math.log(t) + 1) ** 2 + 1 / t)),
    "asin(t/4) + acos(t/5) + atan(2*t) + tan(t/3)": lambda t: (
        math.asin(t / 4) + math.acos(t / 5) + math.atan(2 * t) + math.tan(t / 3),
        1 / math.sqrt(16 - t * t) - 1 / math.sqrt(25 - t * t) + 2 / (1 + 4 * t * t)
        + _sec2(t / 3) / 3,
        t / (16 - t * t) ** 1.5 - t / (25 - t * t) ** 1.5 - 16 * t / (1 + 4 * t * t) ** 2
        + 2 * math.tan(t / 3) * _sec2(t / 3) / 9),
    "where(t > 0, sin(t)/t, 1)": lambda t: (
        math.sin(t) / t, (t * math.cos(t) - math.sin(t)) / t**2,
        (2 * math.sin(t) - 2 * t * math.cos(t) - t * t * math.sin(t)) / t**3),
    "-t^2 + 3/t": lambda t: (-t * t + 3 / t, -2 * t - 3 / t**2, -2 + 6 / t**3),
    "abs(t - 0.3)*t + max(t, 1 - t) - min(t^2, 0.5)": lambda t: (
        abs(t - 0.3) * t + max(t, 1 - t) - min(t * t, 0.5),
        math.copysign(1, t - 0.3) * (2 * t - 0.3) + (1 if t > 0.5 else -1)
        - (2 * t if t * t < 0.5 else 0),
        2 * math.copysign(1, t - 0.3) - (2 if t * t < 0.5 else 0)),
}


@pytest.mark.parametrize("text", list(DERIVATIVES))
def test_derivatives_equal_the_analytic_ones(text):
    program = compile_expression(parse(text), {}, "t")
    for t in (0.2, 0.45, 0.7, 0.9, 1.3):
        f, fd, fdd, bad = evaluate(program, t)
        assert bad == -1
        np.testing.assert_allclose((f, fd, fdd), DERIVATIVES[text](t), rtol=1e-12, atol=1e-12,
                                   err_msg=f"{text} at t = {t}")


KANE = """
[parameters]
ws = 6.0     # rad/s, final spin rate
Ts = 1.5     # s, spin-up time
[bodies.rod]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
[joints.spin]
type = "driver"
joint = "hinge"
motion = { expression = "where(t <= Ts, ws/Ts*(t^2/2 + (Ts/(2*pi))^2*(cos(2*pi*t/Ts) - 1)), ws*(t - Ts/2))" }
[world]
gravity = [0.0, 0.0, 0.0]
[solver]
dt = 1e-3
t_end = 3.0
output_every = 50
"""


def _kane(t, ws=6.0, ts=1.5):
    """θ, θ', θ'' of Kane's spin-up law (closed forms)."""
    if t <= ts:
        k = 2 * math.pi / ts
        return (ws / ts * (t * t / 2 + (ts / (2 * math.pi)) ** 2 * (math.cos(k * t) - 1)),
                ws / ts * (t - math.sin(k * t) / k), ws / ts * (1 - math.cos(k * t)))
    return ws * (t - ts / 2), ws, 0.0


def test_kane_spin_up_law_with_where():
    scenario = load_scenario_text(KANE)
    motion = scenario.model.joints[1].motion
    for t in (0.0, 0.1, 0.5, 0.75, 1.2, 1.5, 1.7, 2.9):
        np.testing.assert_allclose(motion.evaluate(t), _kane(t), rtol=1e-13, atol=1e-13,
                                   err_msg=f"t = {t}")
    # the compiled route: the driven rod turns by θ about +z at θ' (ω^b = ω, axis fixed)
    results = run_scenario(scenario, progress=False)
    rod = results.body("rod")
    expected = np.array([_kane(t) for t in results.t])
    angle = 2 * np.arctan2(rod["q3"], rod["q0"])
    np.testing.assert_allclose(np.angle(np.exp(1j * (angle - expected[:, 0]))), 0, atol=1e-9)
    np.testing.assert_allclose(rod["wz"], expected[:, 1], atol=1e-9)


def _driven_pendulum(motion: dict) -> ModelBuilder:
    m = ModelBuilder(gravity=(0.0, 0.0, -9.81), title="driven pendulum")
    m.body("rod", mass=1.0, inertia=(0.02, 0.02, 1e-6), position=(0.0, 0.0, -0.25))
    m.body("bob", mass=0.5, inertia=(1e-3, 1e-3, 1e-3), position=(0.0, 0.0, -0.6))
    m.revolute("hinge", "ground", "rod", at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    m.revolute("knee", "rod", "bob", at=(0.0, 0.0, -0.5), axis=(0.0, 1.0, 0.0))
    m.driver("drive", "hinge", motion)
    return m


def test_expression_motion_runs_like_harmonic_and_polynomial():
    """A second formulation of the same motion on the compiled route: equal runs."""
    a = _driven_pendulum(harmonic(0.2, 1.5, offset=0.1, phase=0.3)).scenario(dt=1e-3, t_end=1.0)
    b = _driven_pendulum(expression("0.1 + 0.2*sin(2*pi*1.5*t + 0.3)")).scenario(dt=1e-3,
                                                                                 t_end=1.0)
    ra, rb = run_scenario(a, progress=False), run_scenario(b, progress=False)
    assert ra.columns == rb.columns
    np.testing.assert_allclose(rb.data, ra.data, rtol=0, atol=1e-11)
    four_bar = "scenarios/four_bar.toml"
    pa = load_scenario(four_bar, ["solver.t_end=0.3"])
    pb = load_scenario(four_bar, ["solver.t_end=0.3",
                                  'joints.spin.motion={ expression = "pi/2*t^2" }'])
    ra, rb = run_scenario(pa, progress=False), run_scenario(pb, progress=False)
    assert ra.columns == rb.columns
    np.testing.assert_allclose(rb.data, ra.data, rtol=1e-10, atol=1e-10)


PARAMETRIC = """
[parameters]
m = "rho*A*L"      # kg, before the names it reads
rho = 7850.0
A = 1e-4
L = 0.3
w = "2*pi*f"
f = 1.5
[bodies.rod]
mass = "m"
inertia = ["m*L^2/12", "m*L^2/12", "m*1e-6"]
position = ["L/2", 0, 0]
velocity = [0, 0, "-w*L/2"]
angular_velocity = [0, "w", 0]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0, 0, 0]
axis = [0, 1, 0]
[joints.drive]
type = "driver"
joint = "hinge"
motion = { harmonic = { amplitude = "L/3", frequency = "f" } }
[solver]
dt = "1/(100*f)"
output_every = "2*5"
"""


def _literal(length: float) -> str:
    m = RHO * AREA * length
    w = 2 * math.pi * 1.5
    return f"""
[bodies.rod]
mass = {m!r}
inertia = [{m * length**2 / 12!r}, {m * length**2 / 12!r}, {m * 1e-6!r}]
position = [{length / 2!r}, 0.0, 0.0]
velocity = [0.0, 0.0, {-w * length / 2!r}]
angular_velocity = [0.0, {w!r}, 0.0]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
[joints.drive]
type = "driver"
joint = "hinge"
motion = {{ harmonic = {{ amplitude = {length / 3!r}, frequency = 1.5 }} }}
[solver]
dt = {1 / 150!r}
output_every = 10
"""


def _assert_same_model(a, b):
    for ba, bb in zip(a.model.bodies, b.model.bodies, strict=True):
        for key in ("mass", "inertia", "position", "velocity", "angular_velocity",
                    "quaternion"):
            np.testing.assert_allclose(getattr(ba, key), getattr(bb, key), rtol=1e-15, atol=0)
    np.testing.assert_allclose(a.model.joints[1].motion.coefficients,
                               b.model.joints[1].motion.coefficients, rtol=1e-15, atol=0)
    assert a.solver == b.solver


def test_parameters_build_the_literal_model_and_set_overrides_them():
    _assert_same_model(load_scenario_text(PARAMETRIC), load_scenario_text(_literal(L)))
    # --set parameters.L changes every number that reads L
    _assert_same_model(load_scenario_text(PARAMETRIC, overrides=["parameters.L=0.5"]),
                       load_scenario_text(_literal(0.5)))
    # a --set value that is not TOML is an expression
    s = load_scenario_text(PARAMETRIC, overrides=["bodies.rod.mass=2*m"])
    assert s.model.bodies[0].mass == pytest.approx(2 * RHO * AREA * L, rel=1e-15)
    # FMU parameters / --set targets: the parameters (numbers) stay, expressions are derived
    keys = scalar_parameters(load_scenario_text(PARAMETRIC).raw)
    assert {"parameters.L", "parameters.rho", "parameters.f"} <= set(keys)
    assert "bodies.rod.mass" not in keys and "parameters.m" not in keys


def test_builder_writes_parameters_and_expressions():
    m = ModelBuilder(title="p")
    m.parameters(L=0.4, m="2*L")
    m.body("rod", mass="m", inertia=["m*L^2/12", "m*L^2/12", 1e-6], position=("L/2", 0, 0))
    m.revolute("hinge", "ground", "rod", at=(0, 0, 0), axis=(0, 1, 0))
    m.driver("drive", "hinge", expression("0.5*sin(2*pi*t)"))
    text = m.to_toml()
    back = load_scenario_text(text)
    rod = back.model.bodies[0]
    assert rod.mass == pytest.approx(0.8, rel=1e-15)
    np.testing.assert_allclose(rod.inertia.diagonal(), [0.8 * 0.16 / 12, 0.8 * 0.16 / 12, 1e-6],
                               rtol=1e-15)
    np.testing.assert_allclose(rod.position, [0.2, 0, 0], rtol=1e-15)
    motion = back.model.joints[1].motion
    np.testing.assert_allclose(motion.evaluate(0.1),
                               (0.5 * math.sin(0.2 * math.pi), math.pi * math.cos(0.2 * math.pi),
                                -2 * math.pi**2 * math.sin(0.2 * math.pi)), rtol=1e-14)
    assert to_toml(back.raw) == text


BASE = """
[parameters]
L = 0.3
rho = 7850.0
{extra}
[bodies.rod]
mass = {mass}
inertia = [0.01, 0.01, 0.01]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
[joints.drive]
type = "driver"
joint = "hinge"
motion = {{ expression = {motion} }}
"""

ERRORS = {
    "unknown name": ({"mass": '"rh*L"'}, ["bodies.rod.mass", "unknown name 'rh'",
                                          "did you mean 'rho'?"]),
    "cycle": ({"extra": 'a = "b + 1"\nb = "2*a"'}, ["parameters.a",
                                                  "circular definition: a -> b -> a"]),
    "import": ({"mass": "\"__import__('os')\""}, ["bodies.rod.mass",
                                                   "not an allowed function: '__import__'"]),
    "attribute": ({"mass": '"L.real"'}, ["bodies.rod.mass", "attribute access"]),
    "dunder": ({"mass": '"().__class__"'}, ["bodies.rod.mass", "attribute access"]),
    "unlisted function": ({"mass": '"eval(1)"'}, ["not an allowed function: 'eval'"]),
    "misspelt function": ({"mass": '"sine(1)"'}, ["not an allowed function: 'sine'",
                                                  "did you mean 'sin' or 'asin'?"]),
    "string": ({"mass": "\"'a'\""}, ["not allowed in an expression: 'a'"]),
    "list": ({"mass": '"[1, 2]"'}, ["bodies.rod.mass", "not allowed in an expression: a list"]),
    "division by zero": ({"mass": '"rho/(L - 0.3)"'}, ["bodies.rod.mass", "division by zero"]),
    "domain": ({"extra": 'bad = "sqrt(-L)"'}, ["parameters.bad", "sqrt() of an argument"]),
    "t outside a motion": ({"mass": '"1 + t"'}, ["unknown name 't'", "driver's motion"]),
    "motion singular at 0": ({"motion": '"1/t"'}, ["joints.drive.motion.expression",
                                                  "at t = 0: division by zero"]),
    "infinite slope at 0": ({"motion": '"sqrt(t)"'}, ["joints.drive.motion.expression",
                                                     "derivatives at t = 0 are not finite"]),
    "reserved parameter": ({"extra": "pi = 3.0"}, ["parameters.pi",
                                                   "not a usable parameter name"]),
    "syntax": ({"mass": '"2*"'}, ["bodies.rod.mass", "not an arithmetic expression"]),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_expressions_name_the_file_and_key(case, tmp_path):
    keys, fragments = ERRORS[case]
    values = {"extra": "", "mass": "1.0", "motion": '"0.1*t"', **keys}
    path = tmp_path / "bad.toml"
    path.write_text(BASE.format(**values), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    for fragment in fragments:
        assert fragment in message


def test_vector_element_error_names_its_index():
    text = BASE.format(extra="", mass="1.0", motion='"0.1*t"').replace(
        "inertia = [0.01, 0.01, 0.01]", 'inertia = [0.01, "Lx", 0.01]')
    with pytest.raises(ScenarioError, match=r"bodies\.rod\.inertia\[1\]: expression 'Lx': "
                                            r"unknown name 'Lx'; did you mean 'L'\?"):
        load_scenario_text(text)


RIGID_SIDE = """
[parameters]
L = 0.4        # m, rod length
w = 3.0        # rad/s
[bodies.rod]
mass = 1.0
inertia = ["L^2/12", "L^2/12", 1e-6]
position = [0, 0, "-L/2"]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0, 0, 0]
axis = [0, 1, 0]
[joints.drive]
type = "driver"
joint = "hinge"
motion = { expression = "w*t^2/2" }
[interface_points.tip]
body = "rod"
position = [0, 0, "-L/2"]
[cosim]
macro_step = 1e-3
"""


def test_rigid_side_of_fmus_and_the_service_takes_parameters():
    """The FMU/service backend: parameters.* are its parameters; set, they move the point."""
    from rbcosim.cosim.rigid_side import RigidSide

    side = RigidSide.from_scenario(text=RIGID_SIDE, overrides={"parameters.L": "0.5"})
    assert side.parameters()["parameters.L"] == 0.5
    for _ in range(200):
        side.step(1e-3)
    t = side.time
    theta = 3.0 * t * t / 2  # about +y: the tip at (−L sin θ, 0, −L cos θ)
    x, _, z = side.point_outputs()["tip"][:3]
    assert t == pytest.approx(0.2, rel=1e-12)
    np.testing.assert_allclose([x, z], [-0.5 * math.sin(theta), -0.5 * math.cos(theta)],
                               atol=1e-9)


def test_service_session_takes_parameter_overrides_and_expression_drivers(tmp_path):
    """`rbcosim serve`: a session on the scenario with --set-style parameters.L = 0.5."""
    from service_helpers import message

    from rbcosim.service import Service

    path = tmp_path / "driven.toml"
    path.write_text(RIGID_SIDE, encoding="utf-8")
    svc = Service()
    created = svc.request(message("create_session", scenario=str(path),
                                  overrides={"parameters.L": "0.5"}))
    assert created["status"] == "ok", created.get("error")
    sid = created["content"]["session"]
    assert created["content"]["parameters"]["parameters.L"] == 0.5
    client = svc.request(message("attach", sid, points=["tip"], joints=[]))["content"]["client"]
    for k in range(100):
        reply = svc.request(message("step", sid, client=client, step=k, wrench=np.zeros((1, 6))))
        assert reply["status"] == "ok", reply.get("error")
    t, tip = reply["content"]["time"], reply["content"]["kinematics"][0]
    theta = 3.0 * t * t / 2
    assert t == pytest.approx(0.1, rel=1e-12)
    np.testing.assert_allclose(tip[[0, 2]], [-0.5 * math.sin(theta), -0.5 * math.cos(theta)],
                               atol=1e-9)


def test_a_too_long_chain_of_parameters_is_refused():
    table = {f"p{k}": f"p{k + 1} + 1" for k in range(150)} | {"p150": 0.0}
    with pytest.raises(ScenarioError, match=r"parameters\.p0: parameters read through more "
                                            r"than 100 others"):
        Parameters("<test>", table)
    table = {f"p{k}": f"p{k + 1} + 1" for k in range(50)} | {"p50": 0.0}
    assert Parameters("<test>", table).values["p0"] == 50.0


@pytest.mark.fmu
def test_exported_fmu_has_the_parameters_and_applies_them(tmp_path):
    """parameters.L and parameters.w are FMU parameters; keys written as expressions are not.
    Set to L = 0.5 in the FMU, the driven tip follows (−L sin θ, −L cos θ), θ = w t²/2."""
    import fmpy
    from test_fmu_support import open_fmu

    from rbcosim.fmu_export import ExportOptions, export_fmu

    path = tmp_path / "driven.toml"
    path.write_text(RIGID_SIDE, encoding="utf-8")
    fmu_path = export_fmu(path, tmp_path / "driven.fmu", ExportOptions(fmi_version=2))
    md = fmpy.read_model_description(str(fmu_path))
    params = {v.name: float(v.start) for v in md.modelVariables if v.causality == "parameter"
              and v.name.startswith(("parameters.", "bodies."))}
    # Initial-state vectors are parameters by component, except those written as expressions.
    vectors = {name for name in params if "[" in name}
    assert vectors == {f"bodies.rod.{key}[{i}]" for key in ("velocity", "angular_velocity")
                       for i in (1, 2, 3)}
    params = {name: value for name, value in params.items() if name not in vectors}
    assert params == {"parameters.L": 0.4, "parameters.w": 3.0, "bodies.rod.mass": 1.0}
    fmu = open_fmu(fmu_path, tmp_path / "unzipped", start_values={"parameters.L": 0.5})
    t = 0.0
    for _ in range(100):
        fmu.do_step(t, 1e-3)
        t += 1e-3
    x, z = fmu.get(["tip.x", "tip.z"])
    fmu.close()
    theta = 3.0 * t * t / 2
    np.testing.assert_allclose([x, z], [-0.5 * math.sin(theta), -0.5 * math.cos(theta)],
                               atol=1e-9)


def test_flexible_body_numbers_take_expressions():
    """[flex_bodies.beam] written with parameters equals the shipped literal beam."""
    from rbcosim.scenario.flex_config import flex_model_from_config

    pendulum = "scenarios/rigid_flex_pendulum.toml"
    literal = load_scenario(pendulum, ["flex_bodies.beam.damping.modal_ratio=0.005"])
    written = load_scenario(pendulum, [
        "parameters.E=2.1e11", "parameters.b=0.01", "parameters.n=10",
        "flex_bodies.beam.youngs_modulus=E", "flex_bodies.beam.width=sqrt(b*b)",
        "flex_bodies.beam.elements=2*n/2", "flex_bodies.beam.damping.modal_ratio=0.5/100",
        "flex_bodies.beam.axis_in_point_frame=['b/b', 0, 0]"])
    assert written.flex_bodies["beam"] == {**literal.flex_bodies["beam"],
                                           "axis_in_point_frame": [1.0, 0, 0]}
    assert isinstance(written.flex_bodies["beam"]["elements"], int)
    a = flex_model_from_config(literal.flex_bodies["beam"], literal.base_dir, "a")
    b = flex_model_from_config(written.flex_bodies["beam"], written.base_dir, "b")
    np.testing.assert_array_equal(a.mass, b.mass)
    np.testing.assert_array_equal(a.stiffness, b.stiffness)
    with pytest.raises(ScenarioError, match=r"flex_bodies\.beam\.length: expression 'Lb': "
                                            r"unknown name 'Lb'"):
        load_scenario(pendulum, ["flex_bodies.beam.length=Lb"])
