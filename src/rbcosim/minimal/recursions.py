"""Tree dynamics on the kinematics of `rbcosim.minimal.motion`, computed in the C core
(`librbcosim/minimal/recursions.c`, called through `rbcosim.minimal.algorithms.TreeDynamics`).

  * `aba` — articulated-body algorithm, O(n): a backward sweep builds articulated inertias
    I^A_p += I^A − U D⁻¹ Uᵀ (U = I^A S, D = Sᵀ U) and bias forces
    p^A_p += p^A + I^a c + U D⁻¹ u; a forward sweep gives v̇ = D⁻¹ (u − Uᵀ (a_p + c)).
  * `mass_matrix` / `bias` — composite-rigid-body M(q) (dense, O(n·depth)) and recursive
    Newton–Euler C(q, v), with M v̇ = τ − C; used for closed loops and as a check of `aba`.

Spatial quantities are inertial at the inertial origin O. Forces: joint forces τ (nv,) (N or
N·m per rate), external spatial forces f_ext (n+1, 6) = (moment at O N·m; force N) per body
(row 0, the ground, unused), gravity as the base acceleration `base` (6,) = (0; −g) or zero.
Every kernel returns the number of multiplications it did (the operation counts of the
tests). `DynamicsWork` is the recursions' scratch, viewed by the C kernels in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class DynamicsWork(NamedTuple):
    """Scratch arrays of the recursions: inertias I (n+1, 6, 6), forces p (n+1, 6), spatial
    accelerations acc (n+1, 6); per rate U (nv, 6), u (nv,), Dinv (nv, 6) (row of its joint's
    D⁻¹); small (6, 12) and (6, 6) blocks for one joint."""

    I: np.ndarray
    p: np.ndarray
    acc: np.ndarray
    U: np.ndarray
    u: np.ndarray
    Dinv: np.ndarray
    block: np.ndarray
    F: np.ndarray


def dynamics_work(n_bodies: int, nv: int) -> DynamicsWork:
    k = n_bodies + 1
    return DynamicsWork(np.zeros((k, 6, 6)), np.zeros((k, 6)), np.zeros((k, 6)),
                        np.zeros((nv, 6)), np.zeros(nv), np.zeros((nv, 6)), np.zeros((6, 12)),
                        np.zeros((6, 6)))
