"""Bounded nesting of scenario values: TOML text and `--set` values whose arrays and tables nest
deeper than MAX_NESTING levels are refused with a sentence, before anything (Python's TOML
reader included) walks them recursively and runs out of stack."""

from __future__ import annotations

import tomllib
from typing import Any

from rbcosim.errors import ScenarioError

#: Most levels of tables and arrays a scenario value may nest (a scenario uses about five).
MAX_NESTING = 64


class NestingError(ScenarioError):
    """A value nests deeper than MAX_NESTING levels."""


def loads_toml(text: str, where: str) -> dict:
    """tomllib.loads(text), nested at most MAX_NESTING levels; ScenarioError naming `where`
    (e.g. "scenario.toml: invalid TOML: ...") otherwise."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:
        raise NestingError(f"{where}: invalid TOML: arrays or tables nested deeper than "
                            f"{MAX_NESTING} levels") from None
    check_nesting(table, where)
    return table


def check_nesting(value: Any, where: str, depth: int = 0) -> None:
    """NestingError naming `where` when `value`, itself `depth` levels deep (0: a whole table;
    a `--set a.b.c` value: 3), nests tables and arrays past MAX_NESTING levels; walked without
    recursion."""
    pending = [(value, depth)]
    while pending:
        node, level = pending.pop()
        if level > MAX_NESTING:
            raise NestingError(f"{where}: arrays or tables nested deeper than {MAX_NESTING} "
                               "levels")
        if isinstance(node, (dict, list)):
            children = node.values() if isinstance(node, dict) else node
            pending.extend((child, level + 1) for child in children)
