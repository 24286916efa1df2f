"""Applied forces of a model: gravity, body loads, spring–dampers, torsion springs.

`ForceTable` is the Python description; the maximal route computes the forces in C
(`librbcosim/rigid/forces.[ch]`: `rbc_applied_forces`, `rbc_potential_energy`,
`rbc_force_power` over an `rbc_forces` struct mirroring ForceTable; from Python
`_core.applied_forces(make_handle("forces", table), ...)`). The numba functions below serve
only the minimal route's compiled trees (`rbcosim.minimal.stepper`) until they move to C.

Arrays over bodies carry the ground at row 0: positions r, velocities v and angular velocities
w (n+1, 3), inertial; rotation matrices R (n+1, 3, 3), body -> inertial. Forces act at the
centres of mass of the moving bodies 1..n: force (n, 3) N and torque (n, 3) N·m, inertial.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.kernels.rotation import add, cr, dot3, mv, scaled, sub, vec
from rbcosim.model import Model


class ForceTable(NamedTuple):
    """The applied forces of a model as arrays (see `force_table`)."""

    gravity_force: np.ndarray  # (n, 3) N, m g of each body (zeros when built without gravity)
    load_index: np.ndarray     # (l+1, 2) body of each load; first row of its table
    load_point: np.ndarray     # (l, 3) point of application, body frame, m
    load_table: np.ndarray     # (rows, 7) [t s, fx fy fz N, tx ty tz N·m], inertial
    spring_body: np.ndarray    # (s, 2) bodies of the two markers
    spring_point: np.ndarray   # (s, 2, 3) marker origins, body frames, m
    spring_constants: np.ndarray  # (s, 3) stiffness N/m, damping N·s/m, free length m
    torsion_body: np.ndarray   # (k, 2) bodies of the revolute joint's markers
    torsion_axes: np.ndarray   # (k, 2, 3, 3) marker axes (columns x, y, z), body frames
    torsion_constants: np.ndarray  # (k, 3) stiffness N·m/rad, damping N·m·s/rad, rest angle rad


def has_applied_forces(model: Model) -> bool:
    """True when the model has body loads, spring–dampers or torsion springs."""
    return bool(model.loads or model.springs or model.torsion_springs)


def force_table(model: Model, *, gravity: bool = True) -> ForceTable:
    """The model's applied forces as arrays; `gravity=False` leaves gravity out."""
    n = model.n_bodies
    mass = np.array([b.mass for b in model.bodies], dtype=float).reshape(n)
    g = np.asarray(model.gravity, dtype=float) if gravity else np.zeros(3)
    loads = [x for x in model.loads if x.body > 0]
    start = np.cumsum([0] + [len(x.times) for x in loads]).astype(np.int64)
    springs, torsion = model.springs, model.torsion_springs
    joints = [model.joints[ts.joint] for ts in torsion]
    return ForceTable(
        gravity_force=np.ascontiguousarray(mass[:, None] * g[None, :]),
        load_index=np.column_stack([[x.body for x in loads] + [0], start]).astype(np.int64),
        load_point=np.array([x.point for x in loads], dtype=float).reshape(-1, 3),
        load_table=np.concatenate([np.zeros((0, 7))] + [
            np.column_stack([np.asarray(x.times, float), np.asarray(x.values, float).reshape(-1, 6)])
            for x in loads]),
        spring_body=np.array([(s.marker1.body, s.marker2.body) for s in springs],
                             dtype=np.int64).reshape(-1, 2),
        spring_point=np.array([(s.marker1.position, s.marker2.position) for s in springs],
                              dtype=float).reshape(-1, 2, 3),
        spring_constants=np.array([(s.stiffness, s.damping, s.free_length) for s in springs],
                                  dtype=float).reshape(-1, 3),
        torsion_body=np.array([(j.marker1.body, j.marker2.body) for j in joints],
                              dtype=np.int64).reshape(-1, 2),
        torsion_axes=np.array([(j.marker1.axes, j.marker2.axes) for j in joints],
                              dtype=float).reshape(-1, 2, 3, 3),
        torsion_constants=np.array([(ts.stiffness, ts.damping, ts.rest_angle) for ts in torsion],
                                   dtype=float).reshape(-1, 3),
    )


@jit
def _interp(table, k, t):
    """Column k of a load table (rows, 7) at time t (column 0): linear, held constant outside."""
    m = table.shape[0]
    if m == 1 or t <= table[0, 0]:
        return table[0, k]
    if t >= table[m - 1, 0]:
        return table[m - 1, k]
    i = np.searchsorted(table[:, 0], t, side="right") - 1
    s = (t - table[i, 0]) / (table[i + 1, 0] - table[i, 0])
    return table[i, k] + s * (table[i + 1, k] - table[i, k])


@jit
def revolute_angle(axes1, axes2, R1, R2, w1, w2):
    """(angle rad about marker 1's z, rate rad/s, z axis) of a revolute joint: x2 measured in
    marker 1's x–y plane; w1, w2 inertial angular velocities."""
    x1, y1 = mv(R1, axes1[:, 0]), mv(R1, axes1[:, 1])
    z1, x2 = mv(R1, axes1[:, 2]), mv(R2, axes2[:, 0])
    angle = math.atan2(dot3(x2, y1), dot3(x2, x1))
    return angle, dot3(sub(vec(w2), vec(w1)), z1), z1


@jit
def _spring_geometry(table, i, r, R, v, w):
    """Lever arms, direction, length and stretch rate of spring i."""
    b1, b2 = table.spring_body[i, 0], table.spring_body[i, 1]
    rho1, rho2 = mv(R[b1], table.spring_point[i, 0]), mv(R[b2], table.spring_point[i, 1])
    d = sub(add(vec(r[b2]), rho2), add(vec(r[b1]), rho1))
    length = math.sqrt(dot3(d, d))
    e = scaled(1.0 / length, d)
    rel = sub(add(vec(v[b2]), cr(vec(w[b2]), rho2)), add(vec(v[b1]), cr(vec(w[b1]), rho1)))
    return rho1, rho2, e, length, dot3(e, rel)


@jit
def applied_forces(table, t, r, R, v, w, force, torque):
    """Gravity, loads, springs and torsion springs into force, torque (n, 3), overwritten.
    Each kind of force is its own function, called only when the model has one: the code of
    an absent kind would still cost its set-up on every call."""
    for i in range(force.shape[0]):
        for k in range(3):
            force[i, k] = table.gravity_force[i, k]
            torque[i, k] = 0.0
    if table.load_point.shape[0]:
        _add_loads(table, t, R, force, torque)
    if table.spring_body.shape[0]:
        _add_springs(table, r, R, v, w, force, torque)
    if table.torsion_body.shape[0]:
        _add_torsion_springs(table, R, w, torque)


@jit
def _add_loads(table, t, R, force, torque):
    """Body loads (tables linear in time) at their points."""
    for i in range(table.load_point.shape[0]):
        body = table.load_index[i, 0]
        rows = table.load_table[table.load_index[i, 1]:table.load_index[i + 1, 1]]
        f = (_interp(rows, 1, t), _interp(rows, 2, t), _interp(rows, 3, t))
        tq = add((_interp(rows, 4, t), _interp(rows, 5, t), _interp(rows, 6, t)),
                 cr(mv(R[body], table.load_point[i]), f))
        for k in range(3):
            force[body - 1, k] += f[k]
            torque[body - 1, k] += tq[k]


@jit
def _add_springs(table, r, R, v, w, force, torque):
    """Translational spring–dampers: tension k (ℓ − ℓ0) + c ℓ̇ along the line between the
    markers, pulling marker 1 towards marker 2 and back."""
    for i in range(table.spring_body.shape[0]):
        rho1, rho2, e, length, rate = _spring_geometry(table, i, r, R, v, w)
        k_s, c_s, free = table.spring_constants[i, 0], table.spring_constants[i, 1], \
            table.spring_constants[i, 2]
        pull = scaled(k_s * (length - free) + c_s * rate, e)
        b1, b2 = table.spring_body[i, 0], table.spring_body[i, 1]
        t1, t2 = cr(rho1, pull), cr(rho2, pull)
        for k in range(3):
            if b1 > 0:
                force[b1 - 1, k] += pull[k]
                torque[b1 - 1, k] += t1[k]
            if b2 > 0:
                force[b2 - 1, k] -= pull[k]
                torque[b2 - 1, k] -= t2[k]


@jit
def _add_torsion_springs(table, R, w, torque):
    """Torsion spring–dampers on revolute joints: −k (θ − θ0) − c θ̇ about the joint axis."""
    for i in range(table.torsion_body.shape[0]):
        b1, b2 = table.torsion_body[i, 0], table.torsion_body[i, 1]
        angle, rate, axis = revolute_angle(table.torsion_axes[i, 0], table.torsion_axes[i, 1],
                                           R[b1], R[b2], w[b1], w[b2])
        moment = (-table.torsion_constants[i, 0] * (angle - table.torsion_constants[i, 2])
                  - table.torsion_constants[i, 1] * rate)
        for k in range(3):
            if b2 > 0:
                torque[b2 - 1, k] += moment * axis[k]
            if b1 > 0:
                torque[b1 - 1, k] -= moment * axis[k]


@jit
def potential_energy(table, r, R, v, w):
    """Gravitational (−Σ m g·r) plus spring and torsion-spring potential energy, J."""
    energy = 0.0
    for i in range(table.gravity_force.shape[0]):
        energy -= dot3(table.gravity_force[i], r[i + 1])
    for i in range(table.spring_body.shape[0]):
        _, _, _, length, _ = _spring_geometry(table, i, r, R, v, w)
        stretch = length - table.spring_constants[i, 2]
        energy += 0.5 * table.spring_constants[i, 0] * stretch * stretch
    for i in range(table.torsion_body.shape[0]):
        b1, b2 = table.torsion_body[i, 0], table.torsion_body[i, 1]
        angle, _, _ = revolute_angle(table.torsion_axes[i, 0], table.torsion_axes[i, 1],
                                     R[b1], R[b2], w[b1], w[b2])
        d = angle - table.torsion_constants[i, 2]
        energy += 0.5 * table.torsion_constants[i, 0] * d * d
    return energy
