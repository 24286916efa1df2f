"""Whole scenarios in joint coordinates against the maximal route (an independent formulation:
Newton–Euler with multipliers) and against conservation of energy."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rbcosim.maximal.constraints import joint_coordinate
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.maximal.simulate import simulate
from rbcosim.minimal import coordinate_names, degrees_of_freedom, is_tree, simulate_minimal
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

pytestmark = pytest.mark.scenarios

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
POSE_TOL = 1e-8  # m and rad


def rotation_gap(p: np.ndarray, q: np.ndarray) -> float:
    """Angle (rad) between two attitudes, accurate for small angles (unlike arccos)."""
    d = quat.multiply(p * np.array([1.0, -1.0, -1.0, -1.0]), q)
    return 2.0 * float(np.arcsin(min(1.0, np.linalg.norm(d[1:]))))


def run_both(name: str, dt: float, t_end: float = 1.0):
    scenario = load_scenario(SCENARIOS / f"{name}.toml")
    solver = replace(scenario.solver, dt=dt, t_end=t_end, output_every=round(t_end / dt))
    minimal = simulate_minimal(scenario.model, solver, progress=False)
    maximal = simulate(scenario.model, replace(solver, formulation="maximal"), progress=False)
    return scenario.model, minimal, maximal


def assert_same_poses(model, minimal, maximal) -> None:
    assert minimal.t[-1] == pytest.approx(maximal.t[-1], abs=1e-12)
    for body in model.body_names:
        a, b = minimal.body(body), maximal.body(body)
        gap = max(abs(a[c][-1] - b[c][-1]) for c in "xyz")
        assert gap <= POSE_TOL, (body, gap)
        qa = np.array([a[f"q{k}"][-1] for k in range(4)])
        qb = np.array([b[f"q{k}"][-1] for k in range(4)])
        angle = rotation_gap(qa, qb)
        assert angle <= POSE_TOL, (body, angle)


def test_double_pendulum_agrees_with_maximal():
    model, minimal, maximal = run_both("double_pendulum", dt=1e-3)
    assert_same_poses(model, minimal, maximal)
    assert minimal.diagnostics["formulation"] == "minimal"
    assert minimal.diagnostics["coordinates"] == ["shoulder.angle", "elbow.angle"]
    # the q./qd. columns are the joint coordinates the maximal route measures on its bodies
    state = State(1.0, *(np.array([[maximal[f"{b}.{c}"][-1] for c in cols]
                                   for b in model.body_names])
                         for cols in ("xyz", ("q0", "q1", "q2", "q3"),
                                      ("vx", "vy", "vz"), ("wx", "wy", "wz"))))
    kin = Kinematics.of(state)
    for joint in model.joints:
        angle, rate = joint_coordinate(joint, kin)
        assert minimal[f"q.{joint.name}.angle"][-1] == pytest.approx(angle, abs=1e-8)
        assert minimal[f"qd.{joint.name}.angle"][-1] == pytest.approx(rate, abs=1e-7)


def test_chain_of_ten_links_agrees_with_maximal():
    model, minimal, maximal = run_both("chain", dt=1e-3)
    assert model.n_bodies == 10
    assert_same_poses(model, minimal, maximal)


@pytest.mark.slow
def test_heavy_top_agrees_with_maximal():
    # spins at 60 rad/s: dt = 1e-3 leaves 3e-7 rad of RK4 error, dt = 2.5e-4 about 1e-9
    model, minimal, maximal = run_both("heavy_top", dt=2.5e-4)
    assert minimal.diagnostics["coordinates"] == ["pivot.q0", "pivot.q1", "pivot.q2", "pivot.q3"]
    assert_same_poses(model, minimal, maximal)


@pytest.mark.slow
def test_slider_crank_agrees_with_maximal():
    # the RK4 gap between the routes is 1.7e-7 rad at dt = 1e-3, 1e-8 at 5e-4, ~4e-9 at 4e-4
    model, minimal, maximal = run_both("slider_crank", dt=4e-4)
    assert not is_tree(model)
    assert degrees_of_freedom(model) == 1
    d = minimal.diagnostics
    assert d["loop_joints"] == ["wrist"]
    assert len(d["independent_coordinates"]) == 1
    assert d["max_constraint_violation"] < 1e-12  # measured by the maximal route's equations
    assert_same_poses(model, minimal, maximal)


@pytest.mark.slow
def test_double_pendulum_conserves_energy():
    """RK4 at dt = 1e-4 over the seed's 10 s: relative energy error below 1e-9 (measured on
    the bodies, by the maximal route's energy function; ~16 s alone)."""
    scenario = load_scenario(SCENARIOS / "double_pendulum.toml")
    solver = replace(scenario.solver, dt=1e-4, t_end=10.0, output_every=100)
    results = simulate_minimal(scenario.model, solver, progress=False)
    energy = results["energy"]
    assert results.t[-1] == pytest.approx(10.0)
    assert np.max(np.abs(energy - energy[0])) / abs(energy[0]) < 1e-9
    assert results.diagnostics["energy_max_relative_drift"] < 1e-9


def test_free_body_runs_as_a_free_joint():
    scenario = load_scenario(SCENARIOS / "free_body.toml")
    solver = replace(scenario.solver, dt=1e-3, t_end=0.5, output_every=500)
    minimal = simulate_minimal(scenario.model, solver, progress=False)
    maximal = simulate(scenario.model, solver, progress=False)
    assert coordinate_names(scenario.model)[:3] == ["racket.free.x", "racket.free.y",
                                                   "racket.free.z"]
    assert_same_poses(scenario.model, minimal, maximal)


def test_runner_dispatches_auto_to_minimal_for_trees():
    scenario = load_scenario(SCENARIOS / "double_pendulum.toml",
                             ["solver.formulation=\"auto\"", "solver.t_end=0.01"])
    results = run_scenario(scenario, progress=False)
    assert results.diagnostics["formulation"] == "minimal"
    assert "q.shoulder.angle" in results.columns and "qd.elbow.angle" in results.columns


@pytest.mark.slow
def test_slider_crank_repartitions_at_a_dead_point():
    """Started with the slider displacement as the independent coordinate, the partition turns
    ill-conditioned when the crank passes θ = 180° (the slider stops); the route picks a new
    one and stays on the same trajectory as the run that starts with the crank angle."""
    from rbcosim.minimal.route import MinimalSimulation

    scenario = load_scenario(SCENARIOS / "slider_crank.toml")
    solver = replace(scenario.solver, dt=5e-4, t_end=0.3)
    runs = []
    for start in (None, "slide.displacement"):
        sim = MinimalSimulation(scenario.model, solver)
        if start:
            sim.system.choose(0.0, [start])
        for _ in range(600):
            sim.step(solver.dt)
        runs.append(sim)
    history = runs[1].system.history  # automatic choice, imposed choice, re-partitions
    assert history[0]["independent"] == ["crank_pivot.angle"]
    assert history[1]["independent"] == ["slide.displacement"]
    assert len(history) >= 3
    assert 0.0 < history[2]["t"] < 0.3
    assert history[-1]["independent"] != ["slide.displacement"]
    a, b = (r.observe() for r in runs)
    assert np.max(np.abs(a[1:-2] - b[1:-2])[: 13 * scenario.model.n_bodies]) < 1e-8
