"""Constraint rows Φ(q, t) = 0: values, Φ_t, γ and Jacobian blocks (computed in C,
`librbcosim/rigid/rows.c`).

Three row kinds cover the four primitives of the joints (the contact rows of rolling disks
and knife edges, kinds 3–5, are in `rbcosim.maximal.kernels.contact_rows`):
  plane (0)  Φ = u1 · (p_b − p_a), u1 fixed on body f (f = a for dot2 rows; f = ground with
             u1 = −e_c for the three rows of a point coincidence, so Φ = (p_a − p_b)_c);
  dot1  (1)  Φ = u1 · u2, u1 fixed on a, u2 on b;
  dist  (2)  Φ = ½(|p_b − p_a|² − L²).
Drivers combine auxiliary rows with a motion f(t): a revolute angle rotates two dot1 rows by
f, a prismatic coordinate subtracts f from a plane row. Jacobian blocks ja, jb (6,) act on
[v, ω^b] of bodies a and b, so Φ̇ = ja·ν_a + jb·ν_b + Φ_t and ja·ν̇_a + jb·ν̇_b = γ.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.maximal.kinematics import Kinematics

PLANE, DOT1, DIST = 0, 1, 2
POLYNOMIAL, HARMONIC, SPLINE, EXPRESSION = 0, 1, 2, 3
#: Rows of a values array (4, rows): Φ, Φ_t, γ, Φ̇ of every constraint row.
PHI, PHI_T, GAMMA, PHIDOT = 0, 1, 2, 3


class RowTable(NamedTuple):
    """Primitive rows (main rows first, then the drivers' auxiliary rows) and the drivers."""

    index: np.ndarray    # (p, 4) per primitive row: kind, body a, body b, body f carrying u1
    vectors: np.ndarray  # (p, 5, 3) u1 on f, u2 on b, point on a, point on b (body frames, m),
                         # plane normal (contact rows only, inertial)
    length: np.ndarray   # (p,) distance rows' L, m
    n_main: int          # rows before the auxiliary ones
    drivers: np.ndarray  # (d, 4) per driver: 1 if angle (0 slide), aux row 1, aux row 2, motion kind
    motion_start: np.ndarray  # (d+1,) slices of motion_data
    motion_data: np.ndarray   # coefficients; harmonic: offset, amplitude, Hz, phase;
                              # spline: intervals k, breaks (k+1), coefficients (4, k);
                              # expression: its program (rbcosim.expression_program)
    row_bodies: np.ndarray    # (m, 2) bodies a, b of every constraint row (main, then drivers)
    motion_stack: np.ndarray  # (s, 3) scratch: the expression programs' stack of jets


def evaluate_rows(table: RowTable, t: float, fr: Kinematics, values: np.ndarray, jac: np.ndarray,
                  aux: np.ndarray) -> None:
    """Φ, Φ_t, γ (values[PHI], values[PHI_T], values[GAMMA]) and Jacobian blocks jac (2, rows,
    6) of every constraint row (main rows, then one per driver) at time t and kinematics `fr`;
    aux (2, 2, 6) is scratch for the drivers' auxiliary rows."""
    _core.evaluate_rows(make_handle("rows", table, fr), float(t), values, jac, aux)
