"""Newton–Euler with Lagrange multipliers in maximal coordinates, compiled.

State vector y = [r (n,3), q (n,4), v (n,3), ω^b (n,3)] flat (State.to_vector layout). Per
body m v̇ = F and I ω̇ + ω × I ω = τ^b; the joints add Jᵀλ, with λ from
(J M⁻¹ Jᵀ) λ = J a_free − (γ − 2α Φ̇ − β² Φ) (Baumgarte). Projection moves positions then
velocities onto the constraint manifold, mass-weighted and minimum-norm.

Functions take the constant tables `sys` (MaximalTables) and the scratch arrays `w`
(Workspace) of one system.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.kernels.forces import ForceTable, applied_forces, potential_energy
from rbcosim.kernels.frames import Frames, empty_frames, fill_frames
from rbcosim.kernels.interface import (
    PointInputs,
    add_added_mass,
    add_point_loads,
    inertial_added_mass,
    point_accelerations,
    point_outputs,
    point_wrenches,
    spd_inverse,
)
from rbcosim.kernels.multipliers import SchurPattern, apply_correction, factor, solve
from rbcosim.kernels.rotation import at2, cr, mat, mtt, mtt_t, rotate_by_vector, sub
from rbcosim.kernels.rows import (
    GAMMA,
    PHI,
    PHIDOT,
    RowTable,
    evaluate_rows,
    velocity_errors,
)

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

    frames: Frames
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


def workspace(n: int, n_rows: int, pattern: SchurPattern, n_points: int) -> Workspace:
    m = pattern.rows.shape[0]
    return Workspace(empty_frames(n), np.zeros((4, n, 6)), np.zeros((2, n + 1, 6, 6)),
                     np.zeros((4, n_rows)), np.zeros((2, n_rows, 6)), np.zeros((2, m, 6)),
                     np.zeros((3, m)), np.zeros((m, 2, 6)), np.zeros((m, pattern.width + 1)),
                     np.zeros((n_points, 6)), np.zeros((4, 6, 6)), np.zeros((2, 2, 6)),
                     np.zeros((n_points, 6)))


@jit
def _inertia(mass_blocks, b):
    """Body b's inertia (kg·m², body axes) as a tuple matrix."""
    return ((mass_blocks[b, 3, 3], mass_blocks[b, 3, 4], mass_blocks[b, 3, 5]),
            (mass_blocks[b, 4, 3], mass_blocks[b, 4, 4], mass_blocks[b, 4, 5]),
            (mass_blocks[b, 5, 3], mass_blocks[b, 5, 4], mass_blocks[b, 5, 5]))


@jit
def _free_accelerations(sys, w, t):
    """Unconstrained [v̇, ω̇^b] of every body into w.body[ACC]; returns True when added masses
    are in use (their M⁻¹ blocks then in w.blocks[1], else sys.minv)."""
    fr = w.frames
    n = sys.mass_blocks.shape[0] - 1
    loads = w.body[LOADS]
    applied_forces(sys.forces, t, fr.r, fr.R, fr.v, fr.wi, loads[:, :3], loads[:, 3:])
    pts = sys.points
    minv = sys.minv
    added = pts.body.size > 0 and pts.switches[1] != 0
    if pts.body.size:
        point_wrenches(pts, t, fr, w.wrench)
        add_point_loads(pts, fr, w.wrench, loads[:, :3], loads[:, 3:])
    if added:
        blocks, minv = w.blocks[0], w.blocks[1]
        for b in range(n + 1):
            for r in range(6):
                for c in range(6):
                    blocks[b, r, c] = sys.mass_blocks[b, r, c]
                    minv[b, r, c] = sys.minv[b, r, c]
        for i in range(n):
            for c in range(6):
                w.body[BIAS, i, c] = 0.0
        add_added_mass(pts, fr, blocks, w.body[BIAS], w.scratch)
        for k in range(pts.body.size):
            spd_inverse(blocks[pts.body[k]], minv[pts.body[k]], w.scratch[3])
    acc = w.body[ACC]
    for i in range(n):
        b = i + 1
        wb = at2(fr.wb, b)
        iw = mtt(_inertia(sys.mass_blocks, b), wb)
        tb = sub(mtt_t(mat(fr.R, b), (loads[i, 3], loads[i, 4], loads[i, 5])), cr(wb, iw))
        gen = (loads[i, 0], loads[i, 1], loads[i, 2], tb[0], tb[1], tb[2])
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += minv[b, r, c] * gen[c]
            if added:
                for c in range(6):
                    s += minv[b, r, c] * w.body[BIAS, i, c]
            acc[i, r] = s
    return added


@jit
def _rows_and_factor(sys, w, t, minv):
    """Every constraint row at w.frames, the kept rows gathered in band order and J M⁻¹ Jᵀ
    factorised with the blocks minv; False when it is singular."""
    evaluate_rows(sys.rows, t, w.frames, w.rows, w.jac, w.aux)
    order = sys.pattern.rows
    for i in range(order.shape[0]):
        r = order[i, 0]
        for c in range(6):
            w.kept[0, i, c] = w.jac[0, r, c]
            w.kept[1, i, c] = w.jac[1, r, c]
    return factor(sys.pattern, w.kept, minv, w.mj, w.band, w.solve[2])


@jit
def accelerations(sys, w, t, y):
    """[v̇, ω̇^b] (n, 6) of state y at time t into w.body[ACC], multipliers in w.solve[1]
    (band order). Returns OK or SINGULAR."""
    fr = w.frames
    fill_frames(y, fr)
    added = _free_accelerations(sys, w, t)
    pat = sys.pattern
    m = pat.rows.shape[0]
    if m == 0:
        return OK
    if not _rows_and_factor(sys, w, t, w.blocks[1] if added else sys.minv):
        return SINGULAR
    velocity_errors(sys.rows, fr, w.rows, w.jac)
    acc, rhs = w.body[ACC], w.solve[0]
    for i in range(m):
        r, a, b = pat.rows[i, 0], pat.rows[i, 1], pat.rows[i, 2]
        s = 0.0
        for c in range(6):
            if a > 0:
                s += w.kept[0, i, c] * acc[a - 1, c]
            if b > 0:
                s += w.kept[1, i, c] * acc[b - 1, c]
        rhs[i] = s - (w.rows[GAMMA, r] - 2.0 * sys.alpha * w.rows[PHIDOT, r]
                      - sys.beta ** 2 * w.rows[PHI, r])
    solve(pat, w.band, w.solve[2], rhs, w.solve[1])
    apply_correction(pat, w.mj, w.solve[1], acc)
    return OK


@jit
def derivative(sys, w, t, y, out):
    """ẏ of y at time t into `out`; returns OK or SINGULAR."""
    status = accelerations(sys, w, t, y)
    fr = w.frames
    acc = w.body[ACC]
    n = acc.shape[0]
    for i in range(n):
        b = i + 1
        for c in range(3):
            out[3 * i + c] = fr.v[b, c]
            out[7 * n + 3 * i + c] = acc[i, c]
            out[10 * n + 3 * i + c] = acc[i, 3 + c]
        q0, q1, q2, q3 = fr.q[b, 0], fr.q[b, 1], fr.q[b, 2], fr.q[b, 3]
        wx, wy, wz = fr.wb[b, 0], fr.wb[b, 1], fr.wb[b, 2]
        o = 3 * n + 4 * i  # q̇ = ½ q ⊗ [0, ω^b]
        out[o] = 0.5 * (-q1 * wx - q2 * wy - q3 * wz)
        out[o + 1] = 0.5 * (q0 * wx - q3 * wy + q2 * wz)
        out[o + 2] = 0.5 * (q3 * wx + q0 * wy - q1 * wz)
        out[o + 3] = 0.5 * (-q2 * wx + q1 * wy + q0 * wz)
    return status


@jit
def _kept_violation(sys, w):
    """max |Φ| over the kept rows."""
    worst = 0.0
    for i in range(sys.pattern.rows.shape[0]):
        worst = max(worst, abs(w.rows[PHI, sys.pattern.rows[i, 0]]))
    return worst


@jit
def project(sys, w, t, y, tol, max_iter):
    """Newton iterations on the positions of y (in place) to max |Φ| ≤ tol, then the velocity
    correction to Φ̇ = 0 with the last Jacobian. Returns (status, final max |Φ|)."""
    pat = sys.pattern
    m = pat.rows.shape[0]
    if m == 0:
        return OK, 0.0
    n = sys.mass_blocks.shape[0] - 1
    fr = w.frames
    rhs, mu, step = w.solve[0], w.solve[1], w.body[STEP]
    fill_frames(y, fr)
    if not _rows_and_factor(sys, w, t, sys.minv):
        return SINGULAR, np.nan
    worst = _kept_violation(sys, w)
    for _ in range(max_iter):
        if not worst > tol:
            break
        for i in range(m):
            rhs[i] = w.rows[PHI, pat.rows[i, 0]]
        solve(pat, w.band, w.solve[2], rhs, mu)
        for i in range(n):
            for c in range(6):
                step[i, c] = 0.0
        apply_correction(pat, w.mj, mu, step)
        for i in range(n):
            for c in range(3):
                y[3 * i + c] += step[i, c]
            rotate_by_vector(y[3 * n + 4 * i: 3 * n + 4 * i + 4], step[i, 3:])
        fill_frames(y, fr)
        if not _rows_and_factor(sys, w, t, sys.minv):
            return SINGULAR, np.nan
        worst = _kept_violation(sys, w)
    velocity_errors(sys.rows, fr, w.rows, w.jac)
    for i in range(m):
        rhs[i] = w.rows[PHIDOT, pat.rows[i, 0]]
    solve(pat, w.band, w.solve[2], rhs, mu)
    for i in range(n):
        for c in range(3):
            step[i, c] = fr.v[i + 1, c]
            step[i, 3 + c] = fr.wb[i + 1, c]
    apply_correction(pat, w.mj, mu, step)
    for i in range(n):
        for c in range(3):
            y[7 * n + 3 * i + c] = step[i, c]
            y[10 * n + 3 * i + c] = step[i, 3 + c]
    return OK, worst


@jit
def drift(sys, w, t, y):
    """(max |Φ|, max |Φ̇|) over every constraint row, redundant ones included."""
    fr = w.frames
    fill_frames(y, fr)
    evaluate_rows(sys.rows, t, fr, w.rows, w.jac, w.aux)
    velocity_errors(sys.rows, fr, w.rows, w.jac)
    a = b = 0.0
    for i in range(w.rows.shape[1]):
        a = max(a, abs(w.rows[PHI, i]))
        b = max(b, abs(w.rows[PHIDOT, i]))
    return a, b


@jit
def energy(sys, w, y):
    """(total, kinetic) energy of y, J: kinetic + gravity + spring potentials."""
    fr = w.frames
    fill_frames(y, fr)
    kinetic = 0.0
    for i in range(sys.mass_blocks.shape[0] - 1):
        b = i + 1
        v, wb = at2(fr.v, b), at2(fr.wb, b)
        iw = mtt(_inertia(sys.mass_blocks, b), wb)
        kinetic += 0.5 * sys.mass_blocks[b, 0, 0] * (v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
        kinetic += 0.5 * (wb[0] * iw[0] + wb[1] * iw[1] + wb[2] * iw[2])
    return kinetic + potential_energy(sys.forces, fr.r, fr.R, fr.v, fr.wi), kinetic


@jit
def point_state(sys, w, t, y, out):
    """Interface points at state y, time t: out (k, 19) = [outputs (13), total wrench (6)],
    inertial; the total wrench is the input minus M_a [a_p; α_p] where an added mass is set,
    with the point accelerations of the current inputs (in w.point_acc). Returns a status."""
    status = accelerations(sys, w, t, y)
    pts, fr = sys.points, w.frames
    point_outputs(pts, fr, out[:, :13])
    point_accelerations(pts, fr, w.body[ACC], w.point_acc)
    point_wrenches(pts, t, fr, out[:, 13:])
    if pts.switches[1]:
        ma = w.scratch[0]
        for k in range(pts.body.size):
            inertial_added_mass(pts, fr, k, ma)
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += ma[r, c] * w.point_acc[k, c]
                out[k, 13 + r] -= s
    return status
