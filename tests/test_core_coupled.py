"""The coupled macro steps in one C call (librbcosim/cosim/coupled.c, rbcosim.cosim.coupled).

The batched path must give the same bits as the step-by-step master (CosimMaster.step) on
every scheme and extrapolation order it takes, including the steps it hands back to Python
(gap violations); its gaps and energy ledger are checked against independent recomputations
(numpy / scipy from the two sides' reported kinematics, trapezoids of the interface power,
the rigid side's mechanical energy balance)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rbcosim.cosim.coupled import CoupledSteps
from rbcosim.cosim.master import CosimMaster
from rbcosim.scenario.loader import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _scenario(name: str, **overrides):
    return load_scenario(SCENARIOS / f"{name}.toml", {k: str(v) for k, v in overrides.items()})


def _pair(name: str, **overrides) -> tuple[CosimMaster, CosimMaster]:
    return CosimMaster(_scenario(name, **overrides)), CosimMaster(_scenario(name, **overrides))


def _assert_same(a: CosimMaster, b: CosimMaster) -> None:
    assert a.step_index == b.step_index
    ra, rb = a.row(), b.row()
    assert ra.tobytes() == rb.tobytes()
    assert a.get_state() == b.get_state()
    da, db = a.diagnostics(), b.diagnostics()
    assert da == db
    assert a.rigid.violations == b.rigid.violations


def _run_both(a: CosimMaster, b: CosimMaster, steps: int, every: int) -> None:
    """a in batches of `every` (the C path), b one step() at a time; equal after each batch."""
    for _ in range(steps // every):
        a.advance(every)
        for _ in range(every):
            b.step()
        _assert_same(a, b)


@pytest.mark.parametrize("name, overrides", [
    ("rigid_flex_pendulum", {}),  # floating, flexible side first, order 2
    ("two_beams", {}),  # two floating bodies, order 1
    ("kane_spinup", {}),  # floating with geometric stiffening
    ("two_mass_oscillator", {}),  # grounded, jacobi
    ("two_mass_oscillator", {"cosim.scheme": "gauss_seidel_rigid_first"}),
    ("two_mass_oscillator", {"cosim.scheme": "gauss_seidel_flex_first",
                             "cosim.extrapolation": 2}),
    ("two_mass_oscillator", {"cosim.extrapolation": 0}),
    ("two_mass_oscillator", {"cosim.scheme": "gauss_seidel_rigid_first",
                             "cosim.extrapolation": 2}),
    ("two_mass_oscillator", {"solver.integrator": "sdirk2"}),
    ("rigid_flex_pendulum", {"cosim.scheme": "jacobi", "cosim.extrapolation": 1,
                             "cosim.micro_steps": 3}),
    ("rigid_flex_pendulum", {"cosim.scheme": "gauss_seidel_rigid_first"}),
])
def test_batched_equals_step_by_step(name, overrides):
    a, b = _pair(name, **overrides)
    assert CoupledSteps.for_master(a) is not None
    python_steps = []
    step = a.step
    a.step = lambda: (python_steps.append(a.step_index), step())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_both(a, b, 120, 20)
    assert python_steps == []  # every step in C


def test_gap_violations_go_to_python_and_match():
    """A tolerance every step exceeds: each step falls back to step(), which records it."""
    over = {"couplings.coupling.tolerances.position": "1e-14", "solver.t_end": "0.05"}
    a, b = _pair("two_mass_oscillator", **over)
    _run_both(a, b, 40, 10)
    assert len(a.rigid.violations) > 0
    # a tolerance only some steps exceed: the batch runs between them
    mid = {"couplings.coupling.tolerances.position": "2e-9"}
    a, b = _pair("two_mass_oscillator", **mid)
    _run_both(a, b, 200, 50)
    assert 0 < len(a.rigid.violations) < 200


def test_warn_and_stop_actions_as_step_by_step():
    over = {"couplings.clamp.tolerances.position": "1e-12",
            "couplings.clamp.on_violation": "stop"}
    a, b = _pair("rigid_flex_pendulum", **over)
    from rbcosim.errors import SimulationError
    with pytest.raises(SimulationError) as ea:
        a.advance(50)
    with pytest.raises(SimulationError) as eb:
        for _ in range(50):
            b.step()
    assert str(ea.value) == str(eb.value)
    _assert_same(a, b)
    over["couplings.clamp.on_violation"] = "warn"
    a, b = _pair("rigid_flex_pendulum", **over)
    with pytest.warns(UserWarning) as wa:
        a.advance(30)
    with pytest.warns(UserWarning) as wb:
        for _ in range(30):
            b.step()
    assert [str(w.message) for w in wa] == [str(w.message) for w in wb]
    _assert_same(a, b)


@pytest.mark.parametrize("overrides", [
    {"parameters.omega_s": "10.0", "solver.t_end": "8.0"},  # DeformationWarning on the way
    {"parameters.omega_s": "6.0", "solver.t_end": "8.0",  # SpinWarning: no stiffening
     "flex_bodies.beam.geometric_stiffening": "false"},
])
def test_range_warnings_as_step_by_step(overrides):
    """The floating body's range checks: quiet steps stay in C, a step that may warn is the
    master's, and the warnings and bits are those of the step-by-step run."""
    a, b = _pair("kane_spinup", **overrides)
    n = 800
    with warnings.catch_warnings(record=True) as wa:
        warnings.simplefilter("always")
        a.advance(n)
    with warnings.catch_warnings(record=True) as wb:
        warnings.simplefilter("always")
        for _ in range(n):
            b.step()
    assert [str(w.message) for w in wa] == [str(w.message) for w in wb]
    assert len(wa) >= 1
    _assert_same(a, b)


def _gaps(rigid: np.ndarray, flex: np.ndarray) -> np.ndarray:
    """Independent gaps: norms of the differences, rotation angle by scipy."""
    ra = Rotation.from_quat(np.roll(rigid[3:7], -1))
    rb = Rotation.from_quat(np.roll(flex[3:7], -1))
    return np.array([np.linalg.norm(rigid[:3] - flex[:3]), (ra.inv() * rb).magnitude(),
                     np.linalg.norm(rigid[7:10] - flex[7:10]),
                     np.linalg.norm(rigid[10:13] - flex[10:13])])


@pytest.mark.parametrize("name", ["rigid_flex_pendulum", "two_mass_oscillator"])
def test_gaps_and_energy_against_independent_sums(name):
    """One macro step per C call: the ledger the C core keeps against numpy recomputations."""
    m = CosimMaster(_scenario(name))
    rigid = m.rigid
    (joint, group), = m.endpoints.items()
    ep, H = group, m.H
    point = rigid.points.index(ep.coupling.point)

    def flex_power():
        return float(ep.body.wrench() @ ep.body.node_kinematics()[7:13])

    e_flex, e_rigid, gap_max = ep.energy, rigid.energy_rigid[joint], rigid.gap_max[joint].copy()
    e_rigid0 = e_rigid
    e0 = rigid.sim.system.energy(rigid.sim.state)
    p_flex = flex_power()
    for _ in range(400):
        v0 = rigid.point_outputs_array()[point, 7:13]
        m.advance(1)
        p_new = flex_power()
        e_flex += 0.5 * H * (p_flex + p_new)
        p_flex = p_new
        # the rigid side's work: trapezoid of W·V, the wrench at the step's start (the new
        # polynomial) and at its end
        v1 = rigid.point_outputs_array()[point, 7:13]
        e_rigid += 0.5 * H * (float(rigid.start_wrenches[point] @ v0)
                              + float(rigid.end_wrenches[point] @ v1))
        gaps = _gaps(rigid.point_outputs_array()[point], ep.body.node_kinematics())
        np.testing.assert_allclose(rigid.last_gaps[joint], gaps, rtol=1e-9, atol=1e-13)
        gap_max = np.maximum(gap_max, rigid.last_gaps[joint])
    assert CoupledSteps.for_master(m) is not None and m.step_index == 400
    np.testing.assert_array_equal(rigid.gap_max[joint], gap_max)
    assert rigid.energy_flex[joint] == ep.energy
    assert ep.energy == pytest.approx(e_flex, rel=1e-12, abs=1e-15)
    assert rigid.energy_rigid[joint] == pytest.approx(e_rigid, rel=1e-12, abs=1e-15)
    # energy balance of the rigid side: its mechanical energy changes by the interface work
    de = rigid.sim.system.energy(rigid.sim.state) - e0
    work = rigid.energy_rigid[joint] - e_rigid0
    scale = max(abs(work), abs(de), 1e-3)
    assert abs(de - work) < 1e-4 * scale
    # and the coupling's residual stays small against the energy exchanged
    assert abs(rigid.energy_residual(joint)) < 1e-2 * max(abs(ep.energy), 1e-3)
