"""Compiled evaluation of an expression program with its first two derivatives in t.

A program (`rbcosim.expressions.compile_expression`) is a float array
[n, depth, op_0, arg_0, ..., op_{n-1}, arg_{n-1}]: n postfix instructions on a stack of jets
(u, u', u'') whose deepest point is `depth`. CONST pushes (arg, 0, 0), TIME pushes (t, 1, 0);
the other instructions pop their operands and push the result. Derivatives are propagated
exactly by the chain rule (forward-mode automatic differentiation, second order); a
comparison is (1, 0, 0) when true, else (0, 0, 0), and `where(c, a, b)` is a's jet where c is
non-zero, else b's.
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim.kernels import jit

CONST, TIME = 0, 1
ADD, SUB, MUL, DIV, POW, MIN, MAX, ATAN2, LT, LE, GT, GE, EQ, NE, AND = range(2, 17)
NEG, SIN, COS, TAN, ASIN, ACOS, ATAN, SQRT, EXP, LOG, ABS = range(17, 28)
WHERE = 28
#: first unary opcode (below it and above TIME: the binary ones)
UNARY = NEG
#: Program header length: n, depth.
HEADER = 2


@jit
def _unary(op, u):
    """(g(u), g'(u), g''(u)) of a one-argument function."""
    if op == NEG:
        return -u, -1.0, 0.0
    if op == SIN:
        s, c = math.sin(u), math.cos(u)
        return s, c, -s
    if op == COS:
        s, c = math.sin(u), math.cos(u)
        return c, -s, -c
    if op == TAN:
        g = math.tan(u)
        d = 1.0 + g * g
        return g, d, 2.0 * g * d
    if op == ASIN or op == ACOS:
        w = 1.0 - u * u
        d, dd = 1.0 / math.sqrt(w), u / (w * math.sqrt(w))
        if op == ASIN:
            return math.asin(u) if abs(u) <= 1.0 else math.nan, d, dd
        return math.acos(u) if abs(u) <= 1.0 else math.nan, -d, -dd
    if op == ATAN:
        w = 1.0 + u * u
        return math.atan(u), 1.0 / w, -2.0 * u / (w * w)
    if op == SQRT:
        g = math.sqrt(u) if u >= 0.0 else math.nan
        return g, 0.5 / g, -0.25 / (g * g * g)
    if op == EXP:
        g = math.exp(u)
        return g, g, g
    if op == LOG:
        g = math.log(u) if u > 0.0 else (-math.inf if u == 0.0 else math.nan)
        return g, 1.0 / u, -1.0 / (u * u)
    # ABS
    return abs(u), (1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)), 0.0


@jit
def _chain1(h1, u1):
    """(h∘u)' = h'(u) u', zero where u' is (h' may be infinite there, as sqrt's at 0)."""
    return h1 * u1 if u1 != 0.0 else 0.0


@jit
def _chain2(h1, h2, u1, u2):
    """(h∘u)'' = h''(u) u'² + h'(u) u'', each term zero where its factor of u is."""
    return (h2 * u1 * u1 if u1 != 0.0 else 0.0) + (h1 * u2 if u2 != 0.0 else 0.0)


@jit
def _power(a, a1, a2, b, b1, b2):
    """Jet of a^b; a constant exponent keeps negative bases with integral exponents."""
    if b1 == 0.0 and b2 == 0.0:
        g = a**b
        g1 = b * a ** (b - 1.0) if b != 0.0 else 0.0
        g2 = b * (b - 1.0) * a ** (b - 2.0) if b != 0.0 and b != 1.0 else 0.0
        return g, _chain1(g1, a1), _chain2(g1, g2, a1, a2)
    g = a**b
    la = math.log(a) if a > 0.0 else math.nan
    w1 = b1 * la + b * a1 / a
    w2 = b2 * la + 2.0 * b1 * a1 / a + b * (a2 / a - a1 * a1 / (a * a))
    return g, g * w1, g * (w2 + w1 * w1)


@jit
def _binary(op, a, a1, a2, b, b1, b2):
    """Jet of a binary operation on the jets (a, a1, a2) and (b, b1, b2)."""
    if op == ADD:
        return a + b, a1 + b1, a2 + b2
    if op == SUB:
        return a - b, a1 - b1, a2 - b2
    if op == MUL:
        return a * b, a1 * b + a * b1, a2 * b + 2.0 * a1 * b1 + a * b2
    if op == DIV:
        q = a / b
        q1 = (a1 - q * b1) / b
        return q, q1, (a2 - 2.0 * q1 * b1 - q * b2) / b
    if op == POW:
        return _power(a, a1, a2, b, b1, b2)
    if op == MIN:
        return (a, a1, a2) if a <= b else (b, b1, b2)
    if op == MAX:
        return (a, a1, a2) if a >= b else (b, b1, b2)
    if op == ATAN2:  # atan2(y = a, x = b)
        d = a * a + b * b
        g1 = (b * a1 - a * b1) / d
        d1 = 2.0 * (a * a1 + b * b1)
        return math.atan2(a, b), g1, ((b * a2 - a * b2) - g1 * d1) / d
    if op == LT:
        truth = a < b
    elif op == LE:
        truth = a <= b
    elif op == GT:
        truth = a > b
    elif op == GE:
        truth = a >= b
    elif op == EQ:
        truth = a == b
    elif op == NE:
        truth = a != b
    else:  # AND
        truth = a != 0.0 and b != 0.0
    return (1.0 if truth else 0.0), 0.0, 0.0


@jit
def program_jet(program, t, stack):
    """(f, f', f'', bad) of `program` at time t (s), using stack (≥ depth, 3) as scratch;
    bad is -1 when f is finite, else the index of the first instruction whose value was not
    (a branch that where() discards may be non-finite)."""
    n = int(program[0])
    sp = 0
    bad = -1
    for i in range(n):
        op = int(program[HEADER + 2 * i])
        arg = program[HEADER + 2 * i + 1]
        if op == CONST:
            g, g1, g2 = arg, 0.0, 0.0
        elif op == TIME:
            g, g1, g2 = t, 1.0, 0.0
        elif op < UNARY:
            sp -= 2
            g, g1, g2 = _binary(op, stack[sp, 0], stack[sp, 1], stack[sp, 2],
                                stack[sp + 1, 0], stack[sp + 1, 1], stack[sp + 1, 2])
        elif op < WHERE:
            sp -= 1
            u, u1, u2 = stack[sp, 0], stack[sp, 1], stack[sp, 2]
            g, h1, h2 = _unary(op, u)
            g1, g2 = _chain1(h1, u1), _chain2(h1, h2, u1, u2)
        else:
            sp -= 3
            k = sp + 1 if stack[sp, 0] != 0.0 else sp + 2
            g, g1, g2 = stack[k, 0], stack[k, 1], stack[k, 2]
        stack[sp, 0], stack[sp, 1], stack[sp, 2] = g, g1, g2
        sp += 1
        if bad < 0 and not math.isfinite(g):
            bad = i
    if math.isfinite(stack[0, 0]):
        bad = -1
    return stack[0, 0], stack[0, 1], stack[0, 2], bad


def evaluate(program, t: float) -> tuple[float, float, float, int]:
    """(f, f', f'', bad) of a compiled expression program (numpy array) at time t (s), with a
    scratch stack of the program's depth (program_jet)."""
    return program_jet(program, float(t), np.zeros((max(int(program[1]), 1), 3)))
