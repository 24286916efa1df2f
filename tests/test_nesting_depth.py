"""Scenario text and `--set` values nested 5,000 deep (past Python's TOML reader's stack) or 100
deep (past rbcosim.scenario.nesting.MAX_NESTING = 64) are a one-line error on the command line and a
`scenario_error` from the server ("the scenario or an override is invalid"), not a
RecursionError traceback or an `internal_error`."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_helpers import message

from rbcosim.cli.main import main
from rbcosim.scenario.nesting import MAX_NESTING
from rbcosim.service import Service

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
PENDULUM = SCENARIOS / "rigid_flex_pendulum.toml"
DEEP = f"arrays or tables nested deeper than {MAX_NESTING} levels"


def nested(depth: int, kind: str) -> str:
    """A TOML value `depth` levels deep: arrays [[[1]]] or inline tables {a={a=1}}."""
    if kind == "array":
        return "[" * depth + "1" + "]" * depth
    return "{a=" * depth + "1" + "}" * depth


def cli_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    return lines[0]


@pytest.mark.parametrize("kind", ["array", "table"])
@pytest.mark.parametrize("depth", [5000, 100])
def test_a_set_value_nested_too_deep_is_a_one_line_error(capsys, depth, kind):
    line = cli_error(capsys, ["check", str(PENDULUM), "--set", f"world.extra={nested(depth, kind)}"])
    prefix = f"rbcosim check: error: {PENDULUM}: --set world.extra: "
    assert line == prefix + ("invalid TOML: " if depth == 5000 else "") + DEEP


def test_a_set_key_with_too_many_parts_is_a_one_line_error(capsys):
    key = ".".join(["a"] * 5000)
    line = cli_error(capsys, ["run", str(PENDULUM), "--set", f"{key}=1"])
    assert line == f"rbcosim run: error: {PENDULUM}: --set {key}: {DEEP}"


def test_a_value_at_the_nesting_bound_still_loads(tmp_path):
    """64 levels in all (the table, the key, 62 arrays) pass the check and reach the reader,
    which names the unknown key: the bound is where it says."""
    from rbcosim.errors import ScenarioError
    from rbcosim.scenario.loader import load_scenario

    with pytest.raises(ScenarioError) as err:
        load_scenario(PENDULUM, [f"world.extra={nested(MAX_NESTING - 2, 'array')}"])
    assert "nested deeper" not in str(err.value)
    with pytest.raises(ScenarioError) as err:
        load_scenario(PENDULUM, [f"world.extra={nested(MAX_NESTING - 1, 'array')}"])
    assert str(err.value) == f"{PENDULUM}: --set world.extra: {DEEP}"


@pytest.mark.parametrize("depth", [5000, 100])
def test_scenario_text_nested_too_deep_is_a_one_line_error(capsys, tmp_path, depth):
    path = tmp_path / "deep.toml"
    path.write_text(PENDULUM.read_text() + f"\n[extra]\nvalue = {nested(depth, 'table')}\n")
    line = cli_error(capsys, ["check", str(path)])
    assert line == (f"rbcosim check: error: {path}: " + ("invalid TOML: " if depth == 5000 else "")
                    + DEEP)


def test_the_server_answers_scenario_error_for_deep_text_and_overrides():
    service = Service()
    deep_text = PENDULUM.read_text() + f"\n[extra]\nvalue = {nested(5000, 'array')}\n"
    reply = service.request(message("create_session", text=deep_text,
                                    base_dir=str(SCENARIOS)))
    assert reply["status"] == "error" and reply["error"] == {
        "code": "scenario_error", "message": f"<inline>: invalid TOML: {DEEP}"}, reply
    reply = service.request(message("create_session", scenario=str(PENDULUM),
                                    overrides={"world.extra": nested(5000, "table")}))
    assert reply["status"] == "error" and reply["error"] == {
        "code": "scenario_error",
        "message": f"{PENDULUM}: --set world.extra: invalid TOML: {DEEP}"}, reply
    # The server still serves: the same scenario without the override makes a session.
    reply = service.request(message("create_session", scenario=str(PENDULUM)))
    assert reply["status"] == "ok" and reply["content"]["session"], reply
