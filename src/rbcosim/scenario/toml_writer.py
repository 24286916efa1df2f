"""Write scenario tables as TOML text that `tomllib` reads back to the same data.

Layout of a scenario file: top-level values first (`title`), then one `[section]` per settings
table (`[world]`, `[solver]`, ...) and one `[section.NAME]` per named element (`[bodies.crank]`,
`[joints.A]`), with the named frames of a body as `[bodies.NAME.markers.M]` (of the ground:
`[ground.markers.M]`); smaller tables
(an orientation, a motion, tolerances) are written inline. Floats are written with `repr`, which
reads back to the same float64, so a written scenario builds bitwise the same model.
"""

from __future__ import annotations

import json
import math
import re

#: Top-level tables whose entries are named elements, each written as its own header.
NAMED_SECTIONS = ("bodies", "joints", "forces", "interface_points", "flex_bodies", "couplings",
                  "generators")
#: Top-level tables written like one named element (`[ground]`, its `[ground.markers.M]`).
ELEMENT_TABLES = ("ground",)
#: Keys inside a named element whose entries are again named tables with their own headers.
NAMED_SUBTABLES = ("markers",)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def to_toml(raw: dict) -> str:
    """TOML text of a scenario's raw tables (the `Scenario.raw` form)."""
    lines = _values(raw, skip_tables=True)
    for key, value in raw.items():
        if not isinstance(value, dict):
            continue
        if key in NAMED_SECTIONS:
            for name, element in value.items():
                lines += _element([key, name], element)
        elif key in ELEMENT_TABLES:
            lines += _element([key], value)
        else:
            lines += ["", f"[{_key(key)}]", *_values(value)]
    return "\n".join(lines).lstrip("\n") + "\n"


def _element(path: list[str], table: dict) -> list[str]:
    lines = ["", f"[{'.'.join(_key(p) for p in path)}]"]
    lines += _values(table, skip=NAMED_SUBTABLES)
    for sub in NAMED_SUBTABLES:
        for name, element in table.get(sub, {}).items():
            lines += _element([*path, sub, name], element)
    return lines


def _values(table: dict, *, skip=(), skip_tables=False) -> list[str]:
    return [f"{_key(k)} = {_value(v)}" for k, v in table.items()
            if k not in skip and not (skip_tables and isinstance(v, dict))]


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as TOML")
