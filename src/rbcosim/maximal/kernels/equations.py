"""Newton–Euler with Lagrange multipliers in maximal coordinates: the tables and workspace of
the C core (`librbcosim/rigid/maximal.h`, which mirrors these NamedTuples field by field).

State vector y = [r (n,3), q (n,4), v (n,3), ω^b (n,3)] flat (State.to_vector layout). Per
body m v̇ = F and I ω̇ + ω × I ω = τ^b; the joints add Jᵀλ, with λ from
(J M⁻¹ Jᵀ) λ = J a_free − (γ − 2α Φ̇ − β² Φ) (Baumgarte). Projection moves positions then
velocities onto the constraint manifold, mass-weighted and minimum-norm.

The C functions take the constant tables (MaximalTables) and the scratch arrays (Workspace)
of one system as one handle (`rbcosim.maximal.kernels.handle.make_handle`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.maximal.kernels.forces import ForceTable
from rbcosim.maximal.kernels.interface_points import PointInputs
from rbcosim.maximal.kernels.multipliers import SchurPattern
from rbcosim.maximal.kernels.rows import RowTable
from rbcosim.maximal.kinematics import Kinematics

#: Status codes of the compiled routines.
OK, NOT_FINITE, SINGULAR, NO_CONVERGENCE = 0, 1, 2, 3
#: Rows of Workspace.body: force and torque, accelerations, bias, projection step.
LOADS, ACC, BIAS, STEP = 0, 1, 2, 3


class MaximalTables(NamedTuple):
    """Everything the compiled equations of motion read."""

    mass_blocks: np.ndarray  # (n+1, 6, 6) diag(m I, I_b) per body, kg and kg·m²; ground zero
    minv: np.ndarray         # (n+1, 6, 6) their inverses; ground zero
    forces: ForceTable
    rows: RowTable
    pattern: SchurPattern
    alpha: float             # Baumgarte, 1/s
    beta: float
    points: PointInputs


class Workspace(NamedTuple):
    """Scratch arrays of one system's evaluations."""

    frames: Kinematics
    body: np.ndarray      # (4, n, 6) LOADS [F, τ inertial], ACC [v̇, ω̇^b], BIAS, STEP
    blocks: np.ndarray    # (2, n+1, 6, 6) mass blocks with added mass, their inverses
    rows: np.ndarray      # (4, rows) PHI, PHI_T, GAMMA, PHIDOT
    jac: np.ndarray       # (2, rows, 6) Jacobian blocks ja, jb of every row
    kept: np.ndarray      # (2, m, 6) ja, jb of the kept rows in band order
    solve: np.ndarray     # (3, m) right-hand side, multipliers μ (band order), row scaling
    mj: np.ndarray        # (m, 2, 6) M⁻¹ jaᵀ, M⁻¹ jbᵀ
    band: np.ndarray      # (m, w + 1) LDLᵀ factor
    wrench: np.ndarray    # (k, 6) input wrenches at the points
    scratch: np.ndarray   # (4, 6, 6) added-mass products and inverse
    aux: np.ndarray       # (2, 2, 6) drivers' auxiliary rows
    point_acc: np.ndarray  # (k, 6) point accelerations
    factored: np.ndarray  # (2 + 7n,) 1 while band holds rbc_project's factor, its t, its r and q


def workspace(n: int, n_rows: int, pattern: SchurPattern, n_points: int) -> Workspace:
    m = pattern.rows.shape[0]
    return Workspace(Kinematics.empty(n), np.zeros((4, n, 6)), np.zeros((2, n + 1, 6, 6)),
                     np.zeros((4, n_rows)), np.zeros((2, n_rows, 6)), np.zeros((2, m, 6)),
                     np.zeros((3, m)), np.zeros((m, 2, 6)), np.zeros((m, pattern.width + 1)),
                     np.zeros((n_points, 6)), np.zeros((4, 6, 6)), np.zeros((2, 2, 6)),
                     np.zeros((n_points, 6)), np.zeros(2 + 7 * n))
