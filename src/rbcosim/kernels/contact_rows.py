"""Contact rows on a ground plane, compiled: a disk rolling without slip and a knife edge.

Body a is the ground, which carries the plane: its unit normal n (RowTable vectors slot 4)
and a point on it (slot 2), inertial. Body b carries the disk or the blade (slot 1: disk axis
or blade direction; slot 3: disk centre or blade point, body frame, m). Slot 0 holds the
row's inertial direction e.

Disk of radius R (RowTable length): the contact point is C = c + R d, c the disk centre and
d = −(n − (n·a)a)/|n − (n·a)a| the unit vector from c to the lowest point of the rim (a the
disk axis, inertial). Its velocity as a point of the body is v_C = v + ω × ρ, ρ = C − r_b.
  CONTACT_HEIGHT  e = n, holonomic: Φ = n·(C − p0); Φ̇ = n·v_C since the contact point slides
                  along the rim, whose tangent at C is horizontal.
  CONTACT_SLIP    e tangent to the plane, non-holonomic: e·v_C = 0 (no Φ).
For both, e·v̇_C + e·(ω × ρ̇) = 0 gives γ = −e·(ω × ρ̇), ρ̇ the rate of ρ (C moves on the body).
  KNIFE           non-holonomic: the blade point P does not move across the blade within the
                  plane, c·v_P = 0 with c = n × u (u the blade direction, in the plane);
                  γ = −(ċ·v_P + c·(ω × (ω × ρ))), ċ = n × (ω × u).
Non-holonomic rows have Φ = 0: Baumgarte stabilisation and projection act on their velocity
error only. Jacobian blocks act on [v, ω^b] as in `rbcosim.kernels.rows`.
"""

from __future__ import annotations

import math

from rbcosim.kernels import jit
from rbcosim.kernels.rotation import add, at2, at3, cr, dot3, mat, mtt, mtt_t, scaled, sub

#: Row kinds after rows.PLANE, DOT1, DIST.
CONTACT_HEIGHT, CONTACT_SLIP, KNIFE = 3, 4, 5


@jit
def contact_row(index, vectors, length, R, r, v, wi, i, jac, slot):
    """(Φ, γ) of contact row i; Jacobian blocks into jac[0, slot] (ground: zero) and
    jac[1, slot]. Arguments as `rows.primitive_row`."""
    kind, b = index[i, 0], index[i, 2]
    Rb = mat(R, b)
    e, n = at3(vectors, i, 0), at3(vectors, i, 4)
    u = mtt(Rb, at3(vectors, i, 1))
    rho0 = mtt(Rb, at3(vectors, i, 3))
    w = at2(wi, b)
    phi = 0.0
    if kind == KNIFE:
        rho = rho0
        e = cr(n, u)
        v_p = add(at2(v, b), cr(w, rho))
        gamma = -(dot3(cr(n, cr(w, u)), v_p) + dot3(e, cr(w, cr(w, rho))))
    else:
        radius = length[i]
        na = dot3(n, u)
        p = sub(n, scaled(na, u))
        s = math.sqrt(dot3(p, p))
        d = scaled(-1.0 / s, p)
        rho = add(rho0, scaled(radius, d))
        u_dot = cr(w, u)
        p_dot = scaled(-1.0, add(scaled(dot3(n, u_dot), u), scaled(na, u_dot)))
        s_dot = dot3(p, p_dot) / s
        d_dot = scaled(-1.0 / s, sub(p_dot, scaled(s_dot / s, p)))
        rho_dot = add(cr(w, rho0), scaled(radius, d_dot))
        gamma = -dot3(e, cr(w, rho_dot))
        if kind == CONTACT_HEIGHT:
            phi = dot3(n, sub(add(at2(r, b), rho), at3(vectors, i, 2)))
    rot = mtt_t(Rb, cr(rho, e))
    for k in range(3):
        jac[0, slot, k] = 0.0
        jac[0, slot, 3 + k] = 0.0
        jac[1, slot, k] = e[k]
        jac[1, slot, 3 + k] = rot[k]
    return phi, gamma
