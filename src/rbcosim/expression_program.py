"""Evaluation of an expression program with its first two derivatives in t (in C:
`librbcosim/rigid/expression.c`).

A program (`rbcosim.scenario.expressions.compile_expression`) is a float array
[n, depth, op_0, arg_0, ..., op_{n-1}, arg_{n-1}]: n postfix instructions on a stack of jets
(u, u', u'') whose deepest point is `depth`. CONST pushes (arg, 0, 0), TIME pushes (t, 1, 0);
the other instructions pop their operands and push the result. Derivatives are propagated
exactly by the chain rule (forward-mode automatic differentiation, second order); a
comparison is (1, 0, 0) when true, else (0, 0, 0), and `where(c, a, b)` is a's jet where c is
non-zero, else b's.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core

CONST, TIME = 0, 1
ADD, SUB, MUL, DIV, POW, MIN, MAX, ATAN2, LT, LE, GT, GE, EQ, NE, AND = range(2, 17)
NEG, SIN, COS, TAN, ASIN, ACOS, ATAN, SQRT, EXP, LOG, ABS = range(17, 28)
WHERE = 28
#: first unary opcode (below it and above TIME: the binary ones)
UNARY = NEG
#: Program header length: n, depth.
HEADER = 2


def program_jet(program: np.ndarray, t: float,
                stack: np.ndarray) -> tuple[float, float, float, int]:
    """(f, f', f'', bad) of `program` at time t (s), using stack (≥ depth, 3) as scratch;
    bad is -1 when f is finite, else the index of the first instruction whose value was not
    (a branch that where() discards may be non-finite)."""
    return _core.program_jet(program, float(t), stack)


def evaluate(program, t: float) -> tuple[float, float, float, int]:
    """(f, f', f'', bad) of a compiled expression program (numpy array) at time t (s), with a
    scratch stack of the program's depth (program_jet)."""
    program = np.ascontiguousarray(program, dtype=float)
    return program_jet(program, float(t), np.zeros((max(int(program[1]), 1), 3)))
