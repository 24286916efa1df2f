"""Drivers on the minimal route (prescribed tree coordinates) against the maximal route's
driver rows with multipliers, the slider-crank's loop geometry, and a driven pendulum's
inverse dynamics written by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rbcosim.errors import SimulationError
from rbcosim.minimal.route import make_system
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario_text

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
G = 9.81


def _driven(name: str, joint: str, polynomial: list[float]):
    """A shipped scenario with a driver `motor` on `joint`, f = Σ c_k t^k."""
    text = (SCENARIOS / f"{name}.toml").read_text()
    driver = (f'[joints.motor]\ntype = "driver"\njoint = "{joint}"\n'
              f"motion = {{ polynomial = {polynomial} }}\n\n[solver]")
    return load_scenario_text(text.replace("[solver]", driver), source=f"<{name}>")


def _run(scenario, formulation: str, dt: float, t_end: float, every: int = 1):
    solver = replace(scenario.solver, formulation=formulation, dt=dt, t_end=t_end,
                     output_every=every, reactions=True)
    return run_scenario(replace(scenario, solver=solver), progress=False)


def _positions(res, model) -> np.ndarray:
    return np.array([res[f"{b}.{c}"] for b in model.body_names for c in "xyz"])


def test_driven_slider_crank_follows_the_loop_geometry_and_the_maximal_route():
    """Crank angle θ = 45° + 10 t + 15 t² (the driven coordinate about +Y is −(θ − 45°)): no
    degree of freedom is left, the slider sits at x = r cos θ + √(l² − r² sin² θ), and the
    motor torque equals the maximal route's driver multiplier."""
    scenario = _driven("slider_crank", "crank_pivot", [0.0, -10.0, -15.0])
    minimal = _run(scenario, "minimal", 1e-3, 0.2, every=20)
    maximal = _run(scenario, "maximal", 1e-3, 0.2, every=20)
    d = minimal.diagnostics
    assert d["degrees_of_freedom"] == 0
    assert d["prescribed_coordinates"] == ["crank_pivot.angle"]
    t = minimal.t
    theta = np.pi / 4 + 10 * t + 15 * t**2
    r, l = 0.1, 0.3
    slider = r * np.cos(theta) + np.sqrt(l**2 - (r * np.sin(theta)) ** 2)
    np.testing.assert_allclose(minimal["slider.x"], slider, atol=1e-12)
    np.testing.assert_allclose(minimal["q.crank_pivot.angle"], -(theta - np.pi / 4), atol=1e-14)
    np.testing.assert_allclose(_positions(minimal, scenario.model),
                               _positions(maximal, scenario.model), atol=1e-10)
    # the maximal route's equations, driver row included, hold on the minimal route's states
    assert np.max(minimal["constraint_drift"]) < 1e-12
    scale = np.max(np.abs(maximal["motor.force"]))
    assert scale > 1.0
    np.testing.assert_allclose(minimal["motor.force"], maximal["motor.force"], atol=1e-8 * scale)
    np.testing.assert_allclose(minimal["motor.power"], maximal["motor.power"],
                               atol=1e-8 * scale * 20)


def test_driven_double_pendulum_agrees_with_maximal_at_the_integrators_error():
    """Shoulder driven by f = 3 t² − 2 t³ (from rest, as the file starts), elbow free. The
    route gap is of the size of RK4's own error (each route against itself at dt/2) and
    shrinks with dt⁴; the motor torque equals the maximal route's driver multiplier and its
    work equals the gain in mechanical energy."""
    scenario = _driven("double_pendulum", "shoulder", [0.0, 0.0, 3.0, -2.0])
    model, t_end = scenario.model, 0.6
    runs = {(f, dt): _run(scenario, f, dt, t_end, every=round(0.1 / dt))
            for f in ("minimal", "maximal") for dt in (2e-3, 1e-3)}
    pos = {k: _positions(v, model) for k, v in runs.items()}
    gap = {dt: np.max(np.abs(pos["minimal", dt] - pos["maximal", dt])) for dt in (2e-3, 1e-3)}
    own = sum(np.max(np.abs(pos[f, 2e-3] - pos[f, 1e-3])) for f in ("minimal", "maximal"))
    assert 0 < gap[2e-3] <= 2 * own
    assert gap[1e-3] < gap[2e-3] / 8
    assert runs["minimal", 1e-3].diagnostics["degrees_of_freedom"] == 1
    a, b = runs["minimal", 1e-3], runs["maximal", 1e-3]
    scale = np.max(np.abs(b["motor.force"]))
    np.testing.assert_allclose(a["motor.force"], b["motor.force"], atol=1e-9 * scale)
    # power balance: E(t) − E(0) = ∫ P dt, on every step's row (trapezoid, O(dt²))
    dense = _run(scenario, "minimal", 1e-3, t_end)
    work = np.concatenate([[0.0], np.cumsum(np.diff(dense.t) * 0.5 * (
        dense["motor.power"][1:] + dense["motor.power"][:-1]))])
    gain = dense["energy"] - dense["energy"][0]
    assert np.max(np.abs(gain)) > 1.0
    np.testing.assert_allclose(gain, work, atol=1e-5 * np.max(np.abs(gain)))


def _pendulum(m: float, l: float, ic: float, polynomial: list[float], reversed_: bool):
    """A body of mass m, inertia ic about its centre, hinged at the origin about −Y with its
    centre l below: the hinge angle θ turns it from the downward vertical towards +X. Written
    reversed (body1 the bob, axis +Y) the hinge angle is the ground's about +Y relative to the
    bob: θ again, and the driver's effort acts on the ground (body2), −τ about +Y = τ about −Y."""
    body1, body2, axis = ("bob", "ground", 1.0) if reversed_ else ("ground", "bob", -1.0)
    text = f"""
[world]
gravity = [0.0, 0.0, {-G}]
[bodies.bob]
mass = {m}
inertia = [{ic}, {ic}, {ic}]
position = [0.0, 0.0, {-l}]
[joints.hinge]
type = "revolute"
body1 = "{body1}"
body2 = "{body2}"
at = [0.0, 0.0, 0.0]
axis = [0.0, {axis}, 0.0]
[joints.motor]
type = "driver"
joint = "hinge"
motion = {{ polynomial = {polynomial} }}
[solver]
dt = 1e-3
t_end = 1.0
"""
    return load_scenario_text(text, source="<pendulum>")


@pytest.mark.parametrize("formulation", ["minimal", "maximal"])
@pytest.mark.parametrize("reversed_", [False, True])
def test_driven_pendulum_torque_is_the_inverse_dynamics(formulation, reversed_):
    """θ = 1.5 t² − 0.8 t³: τ = (I_c + m l²) θ̈ + m g l sin θ, power τ θ̇."""
    m, l, ic = 1.5, 0.4, 0.02
    scenario = _pendulum(m, l, ic, [0.0, 0.0, 1.5, -0.8], reversed_)
    res = _run(scenario, formulation, 1e-3, 1.0, every=50)
    t = res.t
    theta, rate, acc = 1.5 * t**2 - 0.8 * t**3, 3.0 * t - 2.4 * t**2, 3.0 - 4.8 * t
    # the minimal route sets θ = f(t) exactly; the maximal route holds it by its driver row
    tol = 1e-14 if formulation == "minimal" else 1e-10
    np.testing.assert_allclose(res["bob.x"], l * np.sin(theta), atol=tol)
    np.testing.assert_allclose(res["bob.z"], -l * np.cos(theta), atol=tol)
    torque = (ic + m * l**2) * acc + m * G * l * np.sin(theta)
    np.testing.assert_allclose(res["motor.force"], torque, atol=100 * tol * m * G * l)
    np.testing.assert_allclose(res["motor.power"], torque * rate, atol=100 * tol * m * G * l)


def _four_bar(drivers: str):
    """A planar four-bar A–B–C–D (revolutes about Z); the spanning tree uses A, B, D and
    closes the loop with C."""
    a, d = 0.3, 0.5
    text = "[world]\ngravity = [0.0, -9.81, 0.0]\n"
    for name, c in (("crank", (0, a / 2)), ("coupler", (d / 2, a)), ("rocker", (d, a / 2))):
        text += (f"[bodies.{name}]\nmass = 1.0\ninertia = [0.01, 0.01, 0.01]\n"
                 f"position = [{c[0]}, {c[1]}, 0.0]\n")
    for name, b1, b2, p in (("A", "ground", "crank", (0, 0)), ("B", "crank", "coupler", (0, a)),
                            ("C", "coupler", "rocker", (d, a)), ("D", "ground", "rocker", (d, 0))):
        text += (f'[joints.{name}]\ntype = "revolute"\nbody1 = "{b1}"\nbody2 = "{b2}"\n'
                 f"at = [{p[0]}, {p[1]}, 0.0]\naxis = [0.0, 0.0, 1.0]\n")
    return load_scenario_text(text + drivers, source="<four bar>").model


def _driver(name: str, joint: str) -> str:
    return f'[joints.{name}]\ntype = "driver"\njoint = "{joint}"\nmotion = {{ polynomial = [0.0] }}\n'


@pytest.mark.parametrize("drivers, message", [
    (_driver("m", "C"), "driver 'm': its joint 'C' closes a loop"),
    (_driver("m", "A") + _driver("n", "A"), "drivers 'm' and 'n' both drive joint 'A'"),
    (_driver("m", "A") + _driver("n", "D"), "the loop closure already fixes"),
])
def test_drivers_the_minimal_route_cannot_take_are_refused_by_name(drivers, message):
    with pytest.raises(SimulationError, match=message):
        make_system(_four_bar(drivers))


def test_check_reports_a_driven_tree_and_its_one_degree_of_freedom(capsys, tmp_path):
    """The double pendulum with a driven shoulder: still a tree; in joint coordinates
    2 rates − 1 prescribed = 1 degree of freedom."""
    from rbcosim.cli.main import main

    text = (SCENARIOS / "double_pendulum.toml").read_text().replace(
        "[solver]", '[joints.motor]\ntype = "driver"\njoint = "shoulder"\n'
                    'motion = { polynomial = [0.0] }\n[solver]\nformulation = "minimal"')
    path = tmp_path / "driven.toml"
    path.write_text(text)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "topology: tree, 1 driver" in out
    assert "generalized coordinates (2; 1 degrees of freedom)" in out
