"""Power of the non-conservative forces, compiled: what changes the total energy E (kinetic +
gravity + spring potentials) along a solution, dE/dt = P.

P = Σ loads (f·v_point + τ·ω, inertial) − Σ spring dampers c ℓ̇² − Σ torsion dampers c θ̇²
+ Σ λ Φ_t (the drivers' rows: the power of the constraint forces −Jᵀλ on a state with Φ̇ = 0,
as `rbcosim.reactions` reports it) + Σ interface points' total wrench · [v_p, ω] (the
co-simulation's flexible side acting on the rigid bodies). Read from the workspace of the `equations.accelerations`
call at the same state (frames, multipliers and Φ_t are there); `force_power` alone serves the
minimal route's trees (`rbcosim.minimal.stepper`), which have no drivers.
"""

from __future__ import annotations

from rbcosim.kernels import jit
from rbcosim.kernels.equations import ACC, accelerations
from rbcosim.kernels.forces import _interp, _spring_geometry, revolute_angle
from rbcosim.kernels.interface import inertial_added_mass, point_accelerations
from rbcosim.kernels.rotation import add, cr, dot3, mv, vec
from rbcosim.kernels.rows import PHI_T


@jit
def _load_power(table, t, R, v, w):
    """Σ f·(v + ω × ρ) + τ·ω over the body loads, W."""
    p = 0.0
    for i in range(table.load_point.shape[0]):
        body = table.load_index[i, 0]
        rows = table.load_table[table.load_index[i, 1]:table.load_index[i + 1, 1]]
        f = (_interp(rows, 1, t), _interp(rows, 2, t), _interp(rows, 3, t))
        tq = (_interp(rows, 4, t), _interp(rows, 5, t), _interp(rows, 6, t))
        wi = vec(w[body])
        vp = add(vec(v[body]), cr(wi, mv(R[body], table.load_point[i])))
        p += dot3(f, vp) + dot3(tq, wi)
    return p


@jit
def _damper_power(table, r, R, v, w):
    """−Σ c ℓ̇² (spring dampers) − Σ c θ̇² (torsion dampers), W."""
    p = 0.0
    for i in range(table.spring_body.shape[0]):
        _, _, _, _, rate = _spring_geometry(table, i, r, R, v, w)
        p -= table.spring_constants[i, 1] * rate * rate
    for i in range(table.torsion_body.shape[0]):
        b1, b2 = table.torsion_body[i, 0], table.torsion_body[i, 1]
        _, rate, _ = revolute_angle(table.torsion_axes[i, 0], table.torsion_axes[i, 1],
                                    R[b1], R[b2], w[b1], w[b2])
        p -= table.torsion_constants[i, 1] * rate * rate
    return p


@jit
def force_power(table, t, r, R, v, w):
    """P (W) of the loads and dampers of a ForceTable; arrays over ground + bodies (as
    `forces.applied_forces`): centres r, rotations R, centre velocities v, ω inertial."""
    return _load_power(table, t, R, v, w) + _damper_power(table, r, R, v, w)


@jit
def _interface_power(sys, w):
    """Σ over the interface points of their total wrench · [v_p, ω], W: the input wrench
    (w.wrench, inertial, moment about the point) minus M_a [a_p; α_p] where an added mass is
    set (`equations.point_state`'s total wrench)."""
    pts, fr = sys.points, w.frames
    added = pts.switches[1] != 0
    if added:
        point_accelerations(pts, fr, w.body[ACC], w.point_acc)
    ma = w.scratch[0]
    p = 0.0
    for k in range(pts.body.size):
        b = pts.body[k]
        wi = vec(fr.wi[b])
        vp = add(vec(fr.v[b]), cr(wi, mv(fr.R[b], pts.geometry[k, :3])))
        velocity = (vp[0], vp[1], vp[2], wi[0], wi[1], wi[2])
        if added:
            inertial_added_mass(pts, fr, k, ma)
        for r in range(6):
            f = w.wrench[k, r]
            if added:
                for c in range(6):
                    f -= ma[r, c] * w.point_acc[k, c]
            p += f * velocity[r]
    return p


@jit
def stage_power(sys, w, t):
    """P (W) at the state of the last `accelerations(sys, w, t, ·)` call."""
    fr = w.frames
    p = force_power(sys.forces, t, fr.r, fr.R, fr.v, fr.wi)
    if sys.points.body.size:
        p += _interface_power(sys, w)
    rows = sys.pattern.rows
    for i in range(rows.shape[0]):
        p += w.solve[1, i] * w.rows[PHI_T, rows[i, 0]]
    return p


@jit
def power(sys, w, t, y):
    """(status, P in W) of state y at time t."""
    status = accelerations(sys, w, t, y)
    return status, stage_power(sys, w, t)
