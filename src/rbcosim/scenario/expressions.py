"""Arithmetic expressions of scenario files, parsed safely and compiled to a program.

The text is parsed by Python's `ast` and every node is checked against a whitelist: numbers,
names, + - * / ^ (or **), unary minus, parentheses, comparisons (< <= > >= == !=, chained as
in 0 <= t < 1) and calls of FUNCTIONS. Nothing is ever passed to eval or exec, and attribute
access, indexing, strings, keywords and every other construct are refused. `^` is the power
(as ** : right-associative, above unary minus: -2^2 = -4).

Names are resolved when compiling: the constants pi and e, the caller's values (parameters,
already numbers) and optionally one variable (time t). The result is a postfix program that
`rbcosim.expression_program.program_jet` evaluates with its exact first two derivatives.
"""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Mapping

import numpy as np

from rbcosim import expression_program as op

#: name -> (opcode, number of arguments; None: two or more, folded pairwise)
FUNCTIONS = {
    "sin": (op.SIN, 1), "cos": (op.COS, 1), "tan": (op.TAN, 1), "asin": (op.ASIN, 1),
    "acos": (op.ACOS, 1), "atan": (op.ATAN, 1), "atan2": (op.ATAN2, 2), "sqrt": (op.SQRT, 1),
    "exp": (op.EXP, 1), "log": (op.LOG, 1), "abs": (op.ABS, 1), "min": (op.MIN, None),
    "max": (op.MAX, None), "where": (op.WHERE, 3),
}
CONSTANTS = {"pi": math.pi, "e": math.e}
#: Longest expression text, characters (bounds the parse's depth and work).
MAX_LENGTH = 500

_BINARY = {ast.Add: op.ADD, ast.Sub: op.SUB, ast.Mult: op.MUL, ast.Div: op.DIV,
           ast.Pow: op.POW}
_COMPARE = {ast.Lt: op.LT, ast.LtE: op.LE, ast.Gt: op.GT, ast.GtE: op.GE, ast.Eq: op.EQ,
            ast.NotEq: op.NE}
_REFUSED = {ast.Attribute: "attribute access", ast.Subscript: "indexing",
            ast.Lambda: "lambda", ast.BoolOp: "and/or (use comparisons, chained: 0 <= t < 1)",
            ast.IfExp: "if-else (use where(condition, a, b))", ast.Starred: "*arguments",
            ast.List: "a list", ast.Tuple: "a tuple", ast.JoinedStr: "a string"}


class ExpressionError(ValueError):
    """A refused or unresolvable expression; the message names the cause, not the key."""


def parse(text: str) -> ast.expr:
    """The checked syntax tree of `text` (ExpressionError for anything off the whitelist)."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"not an arithmetic expression ({exc.msg})") from None
    except ValueError as exc:  # e.g. a null byte
        raise ExpressionError(f"not an arithmetic expression ({exc})") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("expression nested too deeply") from None
    for node in ast.walk(tree):
        _check(node)
    return tree


def _check(node: ast.AST) -> None:
    """Refuse a node off the whitelist."""
    allowed = (ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Compare, ast.Call,
               *_BINARY, *_COMPARE, ast.USub, ast.UAdd)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"not allowed in an expression: {node.value!r} "
                                  "(only numbers)")
        try:
            finite = math.isfinite(float(node.value))
        except OverflowError:
            finite = False
        if not finite:
            raise ExpressionError("a number too large for float64 (at most about 1.8e308)")
    elif isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            what = name if name else ast.unparse(node.func)
            raise ExpressionError(f"not an allowed function: {what!r} (allowed: "
                                  f"{sorted(FUNCTIONS)}){_suggest(what, FUNCTIONS)}")
        if node.keywords:
            raise ExpressionError(f"{name}(): keyword arguments are not allowed")
        count = FUNCTIONS[name][1]
        if (count is None and len(node.args) < 2) or (count is not None
                                                      and len(node.args) != count):
            wanted = "two or more" if count is None else str(count)
            raise ExpressionError(f"{name}() takes {wanted} arguments, got {len(node.args)}")
    elif not isinstance(node, allowed):
        what = _REFUSED.get(type(node), type(node).__name__)
        raise ExpressionError(f"not allowed in an expression: {what}")


def _suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def free_names(tree: ast.expr) -> list[str]:
    """The names an expression reads (called functions excluded), each once."""
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return list(dict.fromkeys(n.id for n in ast.walk(tree)
                              if isinstance(n, ast.Name) and id(n) not in calls))


def compile_expression(tree: ast.expr, values: Mapping[str, float],
                       variable: str | None = None) -> np.ndarray:
    """The program (see rbcosim.expression_program) of a parsed expression: names are the
    constants pi and e, `values` or `variable` (ExpressionError naming an unknown one)."""
    code: list[tuple[int, float]] = []
    depth = [0, 0]  # current, deepest

    def emit(opcode: int, arg: float, pops: int) -> None:
        code.append((opcode, arg))
        depth[0] += 1 - pops
        depth[1] = max(depth[1], depth[0])

    def walk(node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            emit(op.CONST, float(node.value), 0)
        elif isinstance(node, ast.Name):
            if node.id == variable:
                emit(op.TIME, 0.0, 0)
            elif node.id in values or node.id in CONSTANTS:
                emit(op.CONST, float(values.get(node.id, CONSTANTS.get(node.id))), 0)
            else:
                raise ExpressionError(_unknown(node.id, values, variable))
        elif isinstance(node, ast.BinOp):
            walk(node.left)
            walk(node.right)
            emit(_BINARY[type(node.op)], 0.0, 2)
        elif isinstance(node, ast.UnaryOp):
            walk(node.operand)
            if isinstance(node.op, ast.USub):
                emit(op.NEG, 0.0, 1)
        elif isinstance(node, ast.Compare):
            left = node.left
            for k, (cmp, right) in enumerate(zip(node.ops, node.comparators)):
                walk(left)
                walk(right)
                emit(_COMPARE[type(cmp)], 0.0, 2)
                if k:
                    emit(op.AND, 0.0, 2)
                left = right
        else:  # a call, checked by parse
            opcode, count = FUNCTIONS[node.func.id]
            walk(node.args[0])
            for arg in node.args[1:]:
                walk(arg)
                if count is None:
                    emit(opcode, 0.0, 2)
            if count is not None:
                emit(opcode, 0.0, count)

    walk(tree)
    program = [float(len(code)), float(depth[1])]
    for opcode, arg in code:
        program += [float(opcode), arg]
    return np.array(program)


def _unknown(name: str, values: Mapping[str, float], variable: str | None) -> str:
    known = sorted([*values, *CONSTANTS, *([variable] if variable else [])])
    hint = (" (time t is only known in a driver's motion expression)"
            if name == "t" and variable is None else "")
    return f"unknown name {name!r}{hint}{_suggest(name, known)} (known names: {known})"


def describe_failure(program: np.ndarray, bad: int) -> str:
    """Why instruction `bad` of `program` gave a non-finite value."""
    opcode = int(program[op.HEADER + 2 * bad])
    if opcode == op.DIV:
        return "division by zero"
    if opcode == op.POW:
        return "a power outside its domain (negative base, fractional exponent) or too large"
    name = next((n for n, (code, _) in FUNCTIONS.items() if code == opcode), "arithmetic")
    return f"{name}() of an argument outside its domain or with a too large result"
