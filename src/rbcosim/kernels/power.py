"""Power of the non-conservative forces: what changes the total energy E (kinetic +
gravity + spring potentials) along a solution, dE/dt = P.

P = Σ loads (f·v_point + τ·ω, inertial) − Σ spring dampers c ℓ̇² − Σ torsion dampers c θ̇²
+ Σ λ Φ_t (the drivers' rows: the power of the constraint forces −Jᵀλ on a state with Φ̇ = 0,
as `rbcosim.reactions` reports it) + Σ interface points' total wrench · [v_p, ω] (the
co-simulation's flexible side acting on the rigid bodies). The maximal route computes it in C
(`rbc_stage_power`, librbcosim/rigid/equations.c; loads and dampers: `rbc_force_power`,
rigid/forces.c). The numba `force_power` below serves only the minimal route's compiled
trees (`rbcosim.minimal.stepper`) until they move to C, which then call `rbc_force_power`.
"""

from __future__ import annotations

from rbcosim.kernels import jit
from rbcosim.kernels.forces import _interp, _spring_geometry, revolute_angle
from rbcosim.kernels.rotation import add, cr, dot3, mv, vec


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
