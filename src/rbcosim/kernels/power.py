"""Power of the non-conservative forces, compiled: what changes the total energy E (kinetic +
gravity + spring potentials) along a solution, dE/dt = P.

P = Σ loads (f·v_point + τ·ω, inertial) − Σ spring dampers c ℓ̇² − Σ torsion dampers c θ̇²
+ Σ λ Φ_t (the drivers' rows: the power of the constraint forces −Jᵀλ on a state with Φ̇ = 0,
as `rbcosim.reactions` reports it). Read from the workspace of the `equations.accelerations`
call at the same state (frames, multipliers and Φ_t are there).
"""

from __future__ import annotations

from rbcosim.kernels import jit
from rbcosim.kernels.equations import accelerations
from rbcosim.kernels.forces import _interp, _spring_geometry, revolute_angle
from rbcosim.kernels.rotation import add, cr, dot3, mv, vec
from rbcosim.kernels.rows import PHI_T


@jit
def _load_power(table, t, fr):
    """Σ f·(v + ω × ρ) + τ·ω over the body loads, W."""
    p = 0.0
    for i in range(table.load_point.shape[0]):
        body = table.load_index[i, 0]
        rows = table.load_table[table.load_index[i, 1]:table.load_index[i + 1, 1]]
        f = (_interp(rows, 1, t), _interp(rows, 2, t), _interp(rows, 3, t))
        tq = (_interp(rows, 4, t), _interp(rows, 5, t), _interp(rows, 6, t))
        wi = vec(fr.wi[body])
        vp = add(vec(fr.v[body]), cr(wi, mv(fr.R[body], table.load_point[i])))
        p += dot3(f, vp) + dot3(tq, wi)
    return p


@jit
def _damper_power(table, fr):
    """−Σ c ℓ̇² (spring dampers) − Σ c θ̇² (torsion dampers), W."""
    p = 0.0
    for i in range(table.spring_body.shape[0]):
        _, _, _, _, rate = _spring_geometry(table, i, fr.r, fr.R, fr.v, fr.wi)
        p -= table.spring_constants[i, 1] * rate * rate
    for i in range(table.torsion_body.shape[0]):
        b1, b2 = table.torsion_body[i, 0], table.torsion_body[i, 1]
        _, rate, _ = revolute_angle(table.torsion_axes[i, 0], table.torsion_axes[i, 1],
                                    fr.R[b1], fr.R[b2], fr.wi[b1], fr.wi[b2])
        p -= table.torsion_constants[i, 1] * rate * rate
    return p


@jit
def stage_power(sys, w, t):
    """P (W) at the state of the last `accelerations(sys, w, t, ·)` call."""
    p = _load_power(sys.forces, t, w.frames) + _damper_power(sys.forces, w.frames)
    rows = sys.pattern.rows
    for i in range(rows.shape[0]):
        p += w.solve[1, i] * w.rows[PHI_T, rows[i, 0]]
    return p


@jit
def power(sys, w, t, y):
    """(status, P in W) of state y at time t."""
    status = accelerations(sys, w, t, y)
    return status, stage_power(sys, w, t)
