"""Applied forces of a model: gravity, body loads, spring–dampers, torsion springs.

`ForceTable` is the Python description; the maximal route computes the forces in C
(`librbcosim/rigid/forces.[ch]`: `rbc_applied_forces`, `rbc_potential_energy`,
`rbc_force_power` over an `rbc_forces` struct mirroring ForceTable; from Python
`_core.applied_forces(make_handle("forces", table), ...)`). Both routes, maximal and minimal, use those C functions.

Arrays over bodies carry the ground at row 0: positions r, velocities v and angular velocities
w (n+1, 3), inertial; rotation matrices R (n+1, 3, 3), body -> inertial. Forces act at the
centres of mass of the moving bodies 1..n: force (n, 3) N and torque (n, 3) N·m, inertial.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

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
