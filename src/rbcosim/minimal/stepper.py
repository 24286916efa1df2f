"""Equations of motion of a tree, y = [q (nq), v (nv)] -> ẏ, and runs of fixed steps (RK4,
SDIRK2) in one call each, computed in the C core (`librbcosim/minimal/stepper.c`), so that a
batch of steps of a small model costs one Python-level call. The steps also integrate the work
of loads and dampers with their own stages (`TreeWork.done`).

Forces: gravity as the base acceleration of the recursions; body loads, spring–dampers and
torsion springs from the core's applied forces (`librbcosim/rigid/forces.h`) with a table built
without gravity, entering the articulated-body algorithm as spatial body forces at O.

This module holds the Python description of the C data: `TreeWork` (the scratch the kernels
write in place) and `system_handle`, the handle of one tree that `rbcosim.minimal.system`
passes to the core's `minimal_*` functions.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from rbcosim.core import make_handle
from rbcosim.maximal.kernels.forces import ForceTable
from rbcosim.minimal.motion import BodyKinematics, empty_kinematics
from rbcosim.minimal.recursions import DynamicsWork, dynamics_work
from rbcosim.minimal.tables import TreeTables

#: SDIRK2's diagonal coefficient γ = 1 − 1/√2 (Alexander's L-stable two-stage method)
SDIRK_GAMMA = 1.0 - 1.0 / math.sqrt(2.0)


class TreeWork(NamedTuple):
    """Scratch of a tree's evaluations and steps: kinematics, recursion arrays, spatial body
    forces f_ext (n+1, 6) at O, zero joint forces tau (nv,), the applied-force kernel's inputs
    (centre-of-mass velocities vc, angular velocities w (n+1, 3), inertial) and outputs (force,
    torque (n, 3), inertial, N and N·m); RK4 / SDIRK2 stages (5, ny); done (1,): the work W (J)
    of the loads and dampers over the steps so far, integrated with the steps' own stages;
    scratch (3, ny) of SDIRK2's Newton iteration (perturbed state, its derivative, the
    Newton update)."""

    kin: BodyKinematics
    dyn: DynamicsWork
    f_ext: np.ndarray
    tau: np.ndarray
    vc: np.ndarray
    w: np.ndarray
    force: np.ndarray
    torque: np.ndarray
    stages: np.ndarray
    done: np.ndarray
    scratch: np.ndarray


def tree_work(tab: TreeTables, ny: int) -> TreeWork:
    """TreeWork of the tree `tab` for states of ny = nq + nv entries."""
    n, nv = tab.mass.size - 1, tab.rate_kind.size
    return TreeWork(empty_kinematics(n, nv), dynamics_work(n, nv), np.zeros((n + 1, 6)),
                    np.zeros(nv), np.zeros((n + 1, 3)), np.zeros((n + 1, 3)),
                    np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((5, ny)), np.zeros(1),
                    np.zeros((3, ny)))


def system_handle(tab: TreeTables, forces: ForceTable, has_forces: bool, work: TreeWork):
    """The core's "minimal_system" handle: tables, the applied forces (a table built without
    gravity; not read when `has_forces` is False, gravity being the only force) and work."""
    return make_handle("minimal_system", tab, forces, work, int(bool(has_forces)))


class Newton(NamedTuple):
    """SDIRK2's Newton data, kept between steps: matrix (ny, ny) the LU factors of
    I − γh ∂f/∂y (reused while Newton converges), pivot (ny,) its row interchanges, valid (1,)
    0 until formed; tolerance and iteration limit (those of `rbcosim.maximal.integrators.SDIRK2`)."""

    matrix: np.ndarray
    pivot: np.ndarray
    valid: np.ndarray
    tol: float
    max_newton: int


def newton_data(ny: int, tol: float, max_newton: int) -> Newton:
    return Newton(np.zeros((ny, ny)), np.zeros(ny, dtype=np.int64), np.zeros(1, dtype=np.int64),
                  float(tol), int(max_newton))
