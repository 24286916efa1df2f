"""Planar mode ([world] planar): the double pendulum and an all-revolute slider-crank run in
the plane against the same models in space, and `check` counts their rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rbcosim.errors import ScenarioError
from rbcosim.maximal.checks import check_model
from rbcosim.maximal.simulate import simulate
from rbcosim.scenario.loader import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
PLANE = {"world.planar": "{normal = [0.0, 1.0, 0.0]}"}
# the slider-crank with a revolute crank pin and wrist (about Y): over-constrained in space
ALL_REVOLUTE = {"joints.crank_pin.type": '"revolute"', "joints.crank_pin.axis": "[0, 1, 0]",
                "joints.wrist.type": '"revolute"', "joints.wrist.axis": "[0, 1, 0]",
                "joints.wrist.x_axis": "[1, 0, 0]"}


def run(name: str, overrides: dict):
    scenario = load_scenario(SCENARIOS / name, overrides)
    solver = replace(scenario.solver, formulation="maximal", t_end=0.5)
    return scenario.model, simulate(scenario.model, solver, progress=False)


@pytest.mark.scenarios
@pytest.mark.parametrize("name, overrides, rows_3d, redundant_3d", [
    ("double_pendulum.toml", {}, 10, 0),
    ("slider_crank.toml", ALL_REVOLUTE, 20, 3),
], ids=["double_pendulum", "slider_crank"])
def test_planar_run_reproduces_the_spatial_one(name, overrides, rows_3d, redundant_3d):
    """Same columns to 1e-10 (a second formulation of the same motion: in space the joints'
    five rows per revolute, in the plane two per joint and three per body); in the plane no
    row is redundant and the degrees of freedom are the same."""
    model_3d, spatial = run(name, overrides)
    model_2d, planar = run(name, {**overrides, **PLANE})
    assert planar.columns == spatial.columns
    body = [c for c in spatial.columns if c.split(".")[-1] in
            ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")]
    for c in body:
        np.testing.assert_allclose(planar[c], spatial[c], atol=1e-10, err_msg=c)
    r3, r2 = check_model(model_3d), check_model(model_2d)
    n = model_3d.n_bodies
    in_plane_joint_rows = 2 * len(model_3d.joints)  # revolute and prismatic: 2 each in a plane
    assert (r3.n_equations, len(r3.redundant)) == (rows_3d, redundant_3d)
    assert (r2.n_equations, r2.redundant) == (3 * n + in_plane_joint_rows, [])
    assert r2.dof == r3.dof == r2.gruebler_dof == 3 * n - in_plane_joint_rows


@pytest.mark.unit
def test_a_joint_out_of_the_plane_is_refused():
    with pytest.raises(ScenarioError, match=r"world\.planar: .*shoulder.*in and out of the plane"):
        load_scenario(SCENARIOS / "double_pendulum.toml",
                      {"world.planar": "{normal = [0.0, 0.0, 1.0]}"})
