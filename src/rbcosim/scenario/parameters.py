"""The [parameters] table of a scenario: named numbers, and the expressions that read them.

A parameter is a number or an expression string of other parameters (any order; a circular
definition is an error). Any number of the scenario may instead be an expression string of the
parameters (`mass = "rho*A*L"`); a driver's `motion = { expression = "..." }` may also read
time t. Messages name the file, the key path and the cause, e.g.
`x.toml: bodies.rod.mass: expression 'rh*L': unknown name 'rh'; did you mean 'rho'? ...`.
"""

from __future__ import annotations

import keyword
import math

import numpy as np

from rbcosim.bounds import MAX_MAGNITUDE
from rbcosim.errors import ScenarioError
from rbcosim.expression_program import evaluate
from rbcosim.scenario.expressions import (
    CONSTANTS,
    FUNCTIONS,
    ExpressionError,
    compile_expression,
    describe_failure,
    free_names,
    parse,
)

#: The time variable of motion expressions.
TIME = "t"
#: Longest chain of parameters read through one another (a = "b", b = "c", ...).
MAX_DEPTH = 100


class Parameters:
    """The resolved [parameters] of file `source`: name -> value (float)."""

    def __init__(self, source: str, table: object):
        self.source = source
        if not isinstance(table, dict):
            raise self._error("parameters", "expected a table of named numbers or expressions")
        self._table = table
        self.values: dict[str, float] = {}
        for name in table:
            if (not name.isidentifier() or keyword.iskeyword(name) or name in FUNCTIONS
                    or name in CONSTANTS or name == TIME):
                raise self._error(f"parameters.{name}", "not a usable parameter name: names "
                                  "are identifiers other than pi, e, t and the function names")
        for name in table:
            self._resolve(name, [])

    def _error(self, key_path: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {key_path}: {message}")

    def _resolve(self, name: str, chain: list[str]) -> None:
        """Evaluate parameter `name` after the parameters it reads (chain: those waiting)."""
        if name in self.values:
            return
        if name in chain:
            cycle = " -> ".join(chain[chain.index(name):] + [name])
            raise self._error(f"parameters.{chain[0]}", f"circular definition: {cycle}")
        if len(chain) >= MAX_DEPTH:
            raise self._error(f"parameters.{chain[0]}", f"parameters read through more than "
                                                       f"{MAX_DEPTH} others in a chain")
        key_path, value = f"parameters.{name}", self._table[name]
        if isinstance(value, str):
            tree = self._parse(key_path, value)
            for other in free_names(tree):
                if other in self._table:
                    self._resolve(other, [*chain, name])
            number = self._constant(key_path, value, tree)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        else:
            raise self._error(key_path, f"expected a number or an expression string, got "
                                        f"{type(value).__name__} {value!r}")
        if not math.isfinite(number) or abs(number) > MAX_MAGNITUDE:
            raise self._error(key_path, f"expected a finite number of magnitude at most "
                                        f"{MAX_MAGNITUDE:g}, got {number}")
        self.values[name] = number

    def _parse(self, key_path: str, text: str):
        try:
            return parse(text)
        except ExpressionError as exc:
            raise self._error(key_path, f"expression {text!r}: {exc}") from None

    def _compile(self, key_path: str, text: str, tree, variable: str | None) -> np.ndarray:
        try:
            return compile_expression(tree, self.values, variable)
        except ExpressionError as exc:
            raise self._error(key_path, f"expression {text!r}: {exc}") from None

    def _constant(self, key_path: str, text: str, tree) -> float:
        program = self._compile(key_path, text, tree, None)
        value, _, _, bad = evaluate(program, 0.0)
        if bad >= 0:
            raise self._error(key_path, f"expression {text!r}: "
                                        f"{describe_failure(program, bad)}")
        return float(value)

    def number(self, key_path: str, text: str) -> float:
        """The value of expression `text` found at `key_path`."""
        return self._constant(key_path, text, self._parse(key_path, text))

    def motion_program(self, key_path: str, text: str) -> np.ndarray:
        """The program of motion expression `text` in time t (s), checked finite with its two
        derivatives at t = 0."""
        program = self._compile(key_path, text, self._parse(key_path, text), TIME)
        _, fd, fdd, bad = evaluate(program, 0.0)
        if bad >= 0:
            raise self._error(key_path, f"expression {text!r} at t = 0: "
                                        f"{describe_failure(program, bad)}")
        if not (math.isfinite(fd) and math.isfinite(fdd)):
            raise self._error(key_path, f"expression {text!r}: its derivatives at t = 0 are "
                                        f"not finite ({fd}, {fdd})")
        return program
