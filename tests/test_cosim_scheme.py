"""Coupling schemes are objects (rbcosim.scheme) that own the order of the exchange: no
other module compares scheme names, and the names a scenario may give are the Scheme's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rbcosim.errors import ScenarioError
from rbcosim.scenario.loader import load_scenario
from rbcosim.scheme import SCHEMES, scheme_named
from rbcosim.settings import SCHEMES as SCENARIO_SCHEMES

SRC = Path(__file__).resolve().parents[1] / "src" / "rbcosim"
ROOT = Path(__file__).resolve().parents[1]


def _compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every scheme name in a comparison (==, !=, in, not in)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for operand in [node.left, *node.comparators]:
            items = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [
                operand]
            found += [(node.lineno, i.value) for i in items
                      if isinstance(i, ast.Constant) and i.value in SCHEMES]
    return found


def test_no_module_but_the_schemes_compares_scheme_names():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "cosim" / "scheme.py":
            continue
        for line, name in _compared_names(ast.parse(path.read_text("utf-8"))):
            offenders.append(f"{path.relative_to(SRC)}:{line}: {name!r}")
    assert not offenders, offenders


def test_the_scenario_takes_exactly_the_schemes_names_and_names_them_on_a_typo(tmp_path):
    assert SCENARIO_SCHEMES == tuple(SCHEMES)
    assert [s.name for s in SCHEMES.values()] == list(SCHEMES)
    with pytest.raises(ScenarioError) as info:
        load_scenario(ROOT / "scenarios" / "rigid_flex_pendulum.toml",
                      ['cosim.scheme="gauss_seidel"'])
    assert "cosim.scheme" in str(info.value) and "gauss_seidel_flex_first" in str(info.value)


def test_each_scheme_says_which_side_steps_first_and_where_it_runs():
    jacobi, rigid_first = scheme_named("jacobi"), scheme_named("gauss_seidel_rigid_first")
    flex_first, iterative = scheme_named("gauss_seidel_flex_first"), scheme_named("iterative")
    jacobian = scheme_named("interface_jacobian")
    assert [s.overlaps for s in (jacobi, rigid_first, flex_first, iterative, jacobian)] == [
        True, False, False, False, True]
    assert rigid_first.rigid_first and flex_first.flex_first and jacobian.jacobian
    assert [s.distributed for s in SCHEMES.values()] == [True, True, True, False, True]
    # the C batch's codes (librbcosim/cosim/coupled.h)
    assert (jacobi.batch_code, rigid_first.batch_code, flex_first.batch_code) == (0, 1, 2)
    assert iterative.batch_code is None and jacobian.batch_code is None
    with pytest.raises(ValueError, match="cosim.scheme: 'nope' is not a coupling scheme"):
        scheme_named("nope")
