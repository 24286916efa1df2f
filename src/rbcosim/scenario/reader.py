"""Typed access to one TOML table with errors that name the file and the key path.

Every getter records the key it read; `finish()` rejects the keys nobody read (unknown keys are
errors). Messages look like `scenarios/x.toml: bodies.link2.inertia: expected 3 or 3x3 numbers,
got 2`.

Numbers are finite and at most MAX_MAGNITUDE in size: a product of three of them (an energy
m·v², a moment I·ω²) stays far inside float64 (1.8e308), so a scenario cannot overflow the
physics by its inputs alone (a run that overflows later stops with a non-finite error). Counts
(integer=True) must be written as integers: 1e9 or 2.5 are refused. Wherever a number is
read, a string is an expression of the scenario's [parameters] (`rbcosim.scenario.parameters`).
"""

from __future__ import annotations

import difflib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from rbcosim.bounds import MAX_MAGNITUDE
from rbcosim.errors import ScenarioError, UnknownKeyError

if TYPE_CHECKING:
    from rbcosim.scenario.parameters import Parameters

REQUIRED = object()
#: Least difflib similarity ratio at which an unknown key is taken for a misspelled one.
TYPO_RATIO = 0.75


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


class TableReader:
    """Reads keys of `table` found at `path` (e.g. "bodies.link1") in file `source`; numbers
    written as expression strings are evaluated with `parameters`."""

    def __init__(self, source: str, path: str, table: Any, parameters: Parameters):
        self.source, self.path, self.parameters = source, path, parameters
        if not isinstance(table, dict):
            raise self.error_at(path, f"expected a table, got {_describe(table)}")
        self.table = table
        self._read: set[str] = set()

    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error_at(self, key_path: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {key_path}: {message}")

    def error(self, key: str, message: str) -> ScenarioError:
        return self.error_at(self.key_path(key), message)

    def has(self, key: str) -> bool:
        return key in self.table

    def raw(self, key: str, default: Any = REQUIRED) -> Any:
        self._read.add(key)
        if key not in self.table:
            if default is REQUIRED:
                typo = self.typo_of(key)
                if typo is not None:
                    raise UnknownKeyError(f"{self.source}: {self.key_path(typo)}: unknown key "
                                          f"(did you mean {key!r}?)")
                error = self.error(key, "missing (required)")
                error.missing = self.key_path(key)
                raise error
            return default
        return self.table[key]

    def typo_of(self, key: str) -> str | None:
        """The key of this table not read so far that looks like a misspelling of `key`
        (difflib ratio ≥ TYPO_RATIO; keys that differ from it only in digits, such as body2
        for body1, are other keys)."""
        unread = [k for k in self.table if k not in self._read and k.rstrip("0123456789")
                  != key.rstrip("0123456789")]
        close = difflib.get_close_matches(key, unread, n=1, cutoff=TYPO_RATIO)
        return close[0] if close else None

    def number(self, key: str, default: Any = REQUIRED, *, positive=False, nonnegative=False,
               integer=False, maximum: float | None = None) -> float:
        value = self.raw(key, default)
        if value is default and default is not REQUIRED:
            return value
        if isinstance(value, str):
            value = self.parameters.number(self.key_path(key), value)
            value = int(value) if integer and value.is_integer() else value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, got {_describe(value)}")
        if integer and not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {value} (a count: write it "
                                  "without a decimal point or exponent)")
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise self.error(key, f"expected a finite number of magnitude at most "
                                  f"{MAX_MAGNITUDE:g}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"expected at most {maximum:g}, got {value}")
        if positive and value <= 0:
            raise self.error(key, f"expected a positive number, got {value}")
        if nonnegative and value < 0:
            raise self.error(key, f"expected a non-negative number, got {value}")
        return int(value) if integer else float(value)

    def boolean(self, key: str, default: Any = REQUIRED) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {_describe(value)}")
        return value

    def string(self, key: str, default: Any = REQUIRED, *, choices=None) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {_describe(value)}")
        if choices is not None and value not in choices:
            raise self.error(key, f"expected one of {list(choices)}, got {value!r}")
        return value

    def vector(self, key: str, size: int | tuple[int, ...], default: Any = REQUIRED) -> np.ndarray:
        """A list of numbers whose length is `size` (or one of the sizes)."""
        value = self.raw(key, default)
        if value is default and default is not REQUIRED:
            return np.array(default, dtype=float)
        return self.as_vector(key, value, size)

    def as_vector(self, key: str, value: Any, size, *, wanted: str | None = None) -> np.ndarray:
        """`value` as a flat vector of one of the lengths `size`; `wanted` words the sizes."""
        sizes = (size,) if isinstance(size, int) else size
        wanted = wanted or " or ".join(str(s) for s in sizes)
        if not isinstance(value, list):
            raise self.error(key, f"expected {wanted} numbers, got {_describe(value)}")
        flat = value
        if value and any(isinstance(row, list) for row in value):
            flat = self._square_rows(key, value, sizes, wanted)
        if len(flat) not in sizes:
            raise self.error(key, f"expected {wanted} numbers, got {len(flat)}")
        flat = [self.parameters.number(f"{self.key_path(key)}[{i}]", x) if isinstance(x, str)
                else x for i, x in enumerate(flat)]
        for x in flat:
            if (isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
                    or abs(x) > MAX_MAGNITUDE):
                raise self.error(key, f"expected {wanted} finite numbers of magnitude at most "
                                      f"{MAX_MAGNITUDE:g}, found {_describe(x)}")
        return np.array(flat, dtype=float)

    def _square_rows(self, key: str, value: list, sizes, wanted: str) -> list:
        """The numbers of a square matrix written as rows (n lists of n), for a size n²."""
        n = len(value)
        if n * n not in sizes or not all(isinstance(row, list) and len(row) == n for row in value):
            lengths = [len(row) if isinstance(row, list) else _describe(row) for row in value]
            raise self.error(key, f"expected {wanted} numbers, got nested lists of lengths "
                                  f"{lengths} (ragged, or rows where a flat list belongs)")
        return [x for row in value for x in row]

    def matrix_rows(self, key: str, width: int, default: Any = REQUIRED) -> np.ndarray:
        """A list of rows, each with `width` numbers."""
        value = self.raw(key, default)
        if not isinstance(value, list) or not value:
            raise self.error(key, f"expected a non-empty list of rows of {width} numbers")
        rows = []
        for i, row in enumerate(value):
            rows.append(self.as_vector(f"{key}[{i}]", row, width))
        return np.array(rows)

    def sub(self, key: str, default: Any = REQUIRED) -> TableReader:
        value = self.raw(key, {} if default is not REQUIRED else REQUIRED)
        return TableReader(self.source, self.key_path(key), value, self.parameters)

    def items(self, key: str) -> list[tuple[str, TableReader]]:
        """Named sub-tables of table `key` (e.g. bodies.*), in file order."""
        table = self.raw(key, {})
        if not isinstance(table, dict):
            raise self.error(key, f"expected a table of named entries, got {_describe(table)}")
        path = self.key_path(key)
        return [(name, TableReader(self.source, f"{path}.{name}", sub, self.parameters))
                for name, sub in table.items()]

    def finish(self) -> None:
        unknown = sorted(set(self.table) - self._read)
        if unknown:
            known = sorted(self._read)
            close = difflib.get_close_matches(unknown[0], known, n=1, cutoff=TYPO_RATIO)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UnknownKeyError(f"{self.source}: {self.key_path(unknown[0])}: unknown key "
                                  f"({hint}known keys here: {known})")
