"""Contact rows on a ground plane (computed in C, librbcosim/rigid/rows.c): a disk rolling
without slip and a knife edge.

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
error only. Jacobian blocks act on [v, ω^b] as in `rbcosim.maximal.kernels.rows`.
"""

from __future__ import annotations

#: Row kinds after rows.PLANE, DOT1, DIST.
CONTACT_HEIGHT, CONTACT_SLIP, KNIFE = 3, 4, 5
