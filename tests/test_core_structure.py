"""The formulations' shape (issue: one System interface, one run loop, one kinematics type, no
private reach-ins from the co-simulation's rigid side, no dead code), read from the sources
with `ast` and from the classes themselves."""

import ast
import importlib.util
from pathlib import Path

import pytest

from rbcosim.maximal.constraints import ConstraintValues
from rbcosim.maximal.kernels import equations
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.maximal.simulate import RigidSimulation
from rbcosim.minimal.route import MinimalSimulation
from rbcosim.minimal.tree import Tree
from rbcosim.run_loop import System
from rbcosim.state import State

SRC = Path(__file__).resolve().parents[1] / "src" / "rbcosim"


def _functions(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text())
    return {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize("cls", [RigidSimulation, MinimalSimulation])
def test_each_formulation_implements_the_system_interface(cls):
    wanted = {name for name, value in vars(System).items()
              if callable(value) and not name.startswith("_")}
    assert {"steps", "derivative", "project", "energy", "observe"} <= wanted
    assert [name for name in sorted(wanted) if not callable(getattr(cls, name, None))] == []
    assert isinstance(cls.label, str)


def test_one_run_loop():
    """The loops live in run_loop only: neither formulation defines its own."""
    for module in ("maximal/simulate.py", "minimal/route.py"):
        names = _functions(SRC / module)
        assert not {"_probe_run", "_simulate_adaptive", "_stops"} & set(names), module


def test_one_kinematics_type_seen_by_the_core():
    assert importlib.util.find_spec("rbcosim.maximal.kernels.frames") is None
    work = equations.workspace(2, 0, _empty_pattern(), 0)
    assert type(work.frames) is Kinematics


def _empty_pattern():
    import numpy as np

    from rbcosim.maximal.kernels.multipliers import schur_pattern

    return schur_pattern(np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64), 2)


def test_rigid_side_reaches_into_no_formulation_internals():
    """rigid_side.py uses its simulation's public interface: no `_raise`, `handle`,
    `integrator` or `system` attribute anywhere in it."""
    tree = ast.parse((SRC / "cosim" / "rigid_side.py").read_text())
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not used & {"_raise", "handle", "integrator", "system", "_stats"}


def test_dead_code_is_gone():
    assert not hasattr(ConstraintValues, "velocity_error")
    assert not hasattr(Tree, "quaternion_slices")
    assert not hasattr(State, "set_velocities")


@pytest.mark.parametrize("module", ["cli/check_cmd.py", "maximal/simulate.py", "run_loop.py",
                                    "minimal/route.py", "minimal/points.py",
                                    "cosim/rigid_side.py"])
def test_functions_stay_under_80_lines(module):
    assert {name: n for name, n in _functions(SRC / module).items() if n > 80} == {}


def test_the_run_loop_sits_above_both_formulations():
    """run_loop.py (and the accuracy probe it takes) import neither formulation: the
    formulations import the loop, so the other way round would close an import cycle."""
    for module in ("run_loop.py", "accuracy_probe.py", "diagnostics.py"):
        tree = ast.parse((SRC / module).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in imported if m and m.startswith(("rbcosim.maximal",
                                                                "rbcosim.minimal"))}, module
