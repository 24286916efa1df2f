"""Co-simulations with the rigid side in the minimal formulation (joint coordinates): the same
coupled runs as the maximal formulation's, to the integrators' agreement."""

from pathlib import Path

import numpy as np
import pytest

from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.errors import SimulationError
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _both(name: str, *overrides: str):
    out = {}
    for formulation in ("maximal", "minimal"):
        scenario = load_scenario(SCENARIOS / name,
                                 [*overrides, f'solver.formulation="{formulation}"'])
        out[formulation] = run_scenario(scenario, progress=False)
    return out["maximal"], out["minimal"]


def _assert_same_run(maximal, minimal, tol):
    assert maximal.diagnostics["formulation"] == "maximal (rigid side)"
    assert minimal.diagnostics["formulation"] == "minimal (rigid side)"
    assert minimal.data.shape[0] == maximal.data.shape[0] > 2
    for column in maximal.columns:
        a, b = maximal[column], minimal[column]
        scale = max(1.0, float(np.max(np.abs(a))))
        assert np.max(np.abs(a - b)) <= tol * scale, column
    assert any(c.startswith("q.") for c in minimal.columns)


def test_floating_beam_with_added_mass_matches_the_maximal_route():
    """The rigid–flexible pendulum (floating beam, its added mass handed to the rigid side,
    Gauss–Seidel flexible first): link, point, wrench and beam columns agree to 1e-9."""
    maximal, minimal = _both("rigid_flex_pendulum.toml", "solver.t_end=0.05")
    _assert_same_run(maximal, minimal, 1e-9)
    assert np.ptp(minimal["link.wy"]) > 0.1  # the link swings
    assert np.max(np.abs(minimal["tip.fx"])) > 1.0  # the beam pulls on it


def test_grounded_structure_with_interface_jacobian_matches_the_maximal_route():
    """The two-mass oscillator (grounded matrices body) with interface-Jacobian coupling:
    the feedback gains K_x, K_v act inside the minimal route's macro steps too."""
    maximal, minimal = _both("two_mass_oscillator.toml", "solver.t_end=0.3",
                             'cosim.scheme="interface_jacobian"')
    _assert_same_run(maximal, minimal, 1e-9)
    assert np.ptp(minimal["mass1.x"]) > 1e-3


def test_minimal_rigid_side_state_round_trips():
    """get_state / set_state of a minimal rigid side: the steps after a restore repeat the
    first ones bit for bit."""
    scenario = load_scenario(SCENARIOS / "rigid_flex_pendulum.toml",
                             ['solver.formulation="minimal"'])
    side = RigidSide(scenario)
    side.set_wrench("tip", [1.0, 0.0, -2.0, 0.0, 0.3, 0.0])
    saved = side.get_state()
    side.step(1e-3, 4)
    first = side.results_row()
    side.set_state(saved)
    side.step(1e-3, 4)
    np.testing.assert_array_equal(side.results_row(), first)
    maximal = RigidSide(load_scenario(SCENARIOS / "rigid_flex_pendulum.toml"))
    with pytest.raises(SimulationError, match="not a saved rigid-side state"):
        maximal.set_state(saved)


def test_minimal_rigid_side_refuses_closed_loops():
    scenario = load_scenario(SCENARIOS / "flexible_slider_crank.toml",
                             ['solver.formulation="minimal"'])
    with pytest.raises(SimulationError) as info:
        RigidSide(scenario)
    assert str(info.value) == (
        'solver.formulation = "minimal": a co-simulation\'s rigid side runs in joint '
        'coordinates on trees only (no closed loops, no drivers); use solver.formulation = '
        '"maximal"')


def test_native_fmu_refuses_the_minimal_formulation(tmp_path):
    """The self-contained native FMU embeds the maximal route's C core: a scenario asking for
    the minimal formulation is refused by name, before anything is built."""
    from rbcosim.errors import ScenarioError
    from rbcosim.fmu_export.packaging.native_fmu import export_self_contained_fmu

    path = tmp_path / "pendulum.toml"
    text = (SCENARIOS / "rigid_flex_pendulum.toml").read_text()
    path.write_text(text.replace('integrator = "rk4"', 'integrator = "rk4"\nformulation = "minimal"'))
    with pytest.raises(ScenarioError) as info:
        export_self_contained_fmu(path, tmp_path / "out.fmu")
    assert str(info.value) == (
        f'{path}: cannot export as FMU: solver.formulation = "minimal": the native FMU\'s C '
        'core steps the maximal formulation; use solver.formulation = "maximal"')
    assert not (tmp_path / "out.fmu").exists()


def test_distributed_run_of_a_minimal_rigid_side_equals_the_in_process_one(tmp_path):
    """`rbcosim cosim` (service session + flexible solver process) on the minimal route: the
    same bits as `rbcosim run`, and both summaries name the formulation."""
    import json

    from rbcosim.cli.main import main
    from rbcosim.results import Results

    sets = ["--set", "solver.t_end=0.01", "--set", 'solver.formulation="minimal"']
    scenario = str(SCENARIOS / "rigid_flex_pendulum.toml")
    outs = {}
    for command, extra in (("run", []), ("cosim", ["--no-plot"])):
        out = tmp_path / f"{command}.csv"
        assert main([command, scenario, "--out", str(out), "--quiet", *extra, *sets]) == 0
        outs[command] = Results.read_csv(out)
        summary = json.loads((tmp_path / f"{command}.summary.json").read_text())
        assert summary["formulation"] == "minimal (rigid side)", command
    run, cosim = outs["run"], outs["cosim"]
    assert run.columns == cosim.columns and "q.hinge.angle" in run.columns
    np.testing.assert_array_equal(run.data, cosim.data)
