"""Tree kinematics as arrays: body poses, spatial velocities, motion subspaces, velocity
products and q̇ from the joint coordinates q and rates v (layout in `rbcosim.minimal.tree`,
joint data in `rbcosim.minimal.tables`), computed in the C core (`librbcosim/minimal/motion.c`,
called through `rbcosim.minimal.algorithms.TreeDynamics`).

Spatial vectors (Featherstone) are in inertial axes at the inertial origin O, angular part
first: a motion (ω; v_O), a force (n_O; F). With S_k the motion-subspace column of rate k,
fixed in the parent (S_P) or in the child (S_C):

    V_i = V_p + S_i v_i,    a_i = a_p + S_i v̇_i + c_i,
    c_i = V_p ×m (S_i v_i) + (S_P v_P) ×m (S_C v_C),

which gives the velocity-product term c_i exactly for every joint type.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class BodyKinematics(NamedTuple):
    """Arrays by body (ground row 0, identity and at rest) and by rate.

    q (n+1, 4): attitude quaternions body -> inertial as composed (not renormalised);
    R (n+1, 3, 3): their rotation matrices; r (n+1, 3): centres of mass, inertial, m;
    V (n+1, 6): spatial velocities (ω; v_O), rad/s and m/s; c (n+1, 6): velocity-product
    accelerations c_i; S (nv, 6): the motion-subspace column of every rate.
    """

    q: np.ndarray
    R: np.ndarray
    r: np.ndarray
    V: np.ndarray
    c: np.ndarray
    S: np.ndarray


def empty_kinematics(n_bodies: int, nv: int) -> BodyKinematics:
    """BodyKinematics for n moving bodies and nv rates, ground row set."""
    k = n_bodies + 1
    q = np.zeros((k, 4))
    R = np.zeros((k, 3, 3))
    q[0, 0] = 1.0
    for i in range(3):
        R[0, i, i] = 1.0
    return BodyKinematics(q, R, np.zeros((k, 3)), np.zeros((k, 6)), np.zeros((k, 6)),
                          np.zeros((nv, 6)))
