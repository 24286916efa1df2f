"""Compiled equations of motion of a tree, y = [q (nq), v (nv)] -> ẏ, and whole fixed steps
(RK4, SDIRK2) in one call each, so that a step of a small model costs one Python-level call.
The steps also integrate the work of loads and dampers with their own stages (`TreeWork.done`).

Forces: gravity as the base acceleration of the recursions; body loads, spring–dampers and
torsion springs from `rbcosim.kernels.forces.applied_forces` with a table built without
gravity (`forces`; None for a model with none, whose kernels then compile without them),
entering the articulated-body algorithm as spatial body forces at O.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba.typed import List

from rbcosim.kernels import jit, jit_alloc
from rbcosim.kernels.forces import applied_forces
from rbcosim.kernels.power import force_power
from rbcosim.minimal.motion import BodyKinematics, coordinate_rates, empty_kinematics, kinematics
from rbcosim.minimal.recursions import DynamicsWork, aba, dynamics_work

#: SDIRK2's diagonal coefficient γ = 1 − 1/√2 (Alexander's L-stable two-stage method)
SDIRK_GAMMA = 1.0 - 1.0 / math.sqrt(2.0)


class TreeWork(NamedTuple):
    """Scratch of a tree's evaluations and steps: kinematics, recursion arrays, spatial body
    forces f_ext (n+1, 6) at O, zero joint forces tau (nv,), the applied-force kernel's inputs
    (centre-of-mass velocities vc, angular velocities w (n+1, 3), inertial) and outputs (force,
    torque (n, 3), inertial, N and N·m); RK4 stages (5, ny); done (1,): the work W (J) of the
    loads and dampers over the steps so far, integrated with the steps' own stages."""

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


def tree_work(tab, ny: int) -> TreeWork:
    """TreeWork of the tree `tab` for states of ny = nq + nv entries."""
    n, nv = tab.mass.size - 1, tab.rate_kind.size
    return TreeWork(empty_kinematics(n, nv), dynamics_work(n, nv), np.zeros((n + 1, 6)),
                    np.zeros(nv), np.zeros((n + 1, 3)), np.zeros((n + 1, 3)),
                    np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((5, ny)), np.zeros(1))


@jit_alloc
def make_handle(tab, forces, work):
    """A typed List holding (tab, forces or None, work), the argument of the entry points
    called from Python: unboxed in about a microsecond, where the namedtuples themselves cost
    about 0.1 µs per array and call."""
    handle = List()
    handle.append((tab, forces, work))
    return handle


@jit
def external_forces(forces, t, kin, work):
    """Applied forces at time t (s) on the bodies of `kin` into work.f_ext (n+1, 6): moment
    about O and force, inertial."""
    r, V, w, vc, force, torque, f_ext = (kin.r, kin.V, work.w, work.vc, work.force,
                                         work.torque, work.f_ext)
    for b in range(r.shape[0]):
        w[b, 0], w[b, 1], w[b, 2] = V[b, 0], V[b, 1], V[b, 2]
        vc[b, 0] = V[b, 3] + V[b, 1] * r[b, 2] - V[b, 2] * r[b, 1]
        vc[b, 1] = V[b, 4] + V[b, 2] * r[b, 0] - V[b, 0] * r[b, 2]
        vc[b, 2] = V[b, 5] + V[b, 0] * r[b, 1] - V[b, 1] * r[b, 0]
    applied_forces(forces, t, r, kin.R, vc, w, force, torque)
    for b in range(1, r.shape[0]):
        F0, F1, F2 = force[b - 1, 0], force[b - 1, 1], force[b - 1, 2]
        f_ext[b, 0] = torque[b - 1, 0] + r[b, 1] * F2 - r[b, 2] * F1
        f_ext[b, 1] = torque[b - 1, 1] + r[b, 2] * F0 - r[b, 0] * F2
        f_ext[b, 2] = torque[b - 1, 2] + r[b, 0] * F1 - r[b, 1] * F0
        f_ext[b, 3], f_ext[b, 4], f_ext[b, 5] = F0, F1, F2


@jit
def derivative(tab, forces, t, y, work, ydot):
    """ẏ = [q̇, v̇] (articulated-body algorithm) into `ydot`, with the applied forces of
    `forces` (None: gravity only, compiled without them); returns the multiplications."""
    nq = y.size - tab.rate_kind.size
    q, v = y[:nq], y[nq:]
    ops = kinematics(tab, q, v, work.kin)
    if forces is not None:
        external_forces(forces, t, work.kin, work)
    ops += aba(tab, work.kin, work.tau, work.f_ext, tab.base_acceleration, work.dyn, ydot[nq:])
    coordinate_rates(tab, q, v, ydot[:nq])
    return ops


@jit_alloc
def evaluate(handle, t, y, ydot):
    """`derivative` from Python, on a handle."""
    tab, forces, work = handle[0]
    return derivative(tab, forces, t, y, work, ydot)


@jit_alloc
def body_forces(handle, t, kin):
    """`external_forces` from Python: spatial body forces at O of `kin` into work.f_ext."""
    _, forces, work = handle[0]
    external_forces(forces, t, kin, work)


@jit
def stage_power(forces, t, work):
    """Power (W) of the loads and dampers at the state of the last `derivative` call (0 for a
    model with none)."""
    if forces is None:
        return 0.0
    return force_power(forces, t, work.kin.r, work.kin.R, work.vc, work.w)


@jit_alloc
def power(handle, t, y):
    """The power (W) of the loads and dampers at y, time t, from Python."""
    tab, forces, work = handle[0]
    derivative(tab, forces, t, y, work, work.stages[4])
    return stage_power(forces, t, work)


@jit
def normalize(tab, y):
    """Renormalise the joint quaternions of y in place. Returns the largest |‖e‖ − 1| before,
    or NaN when y has a non-finite entry."""
    for i in range(y.size):
        if not math.isfinite(y[i]):
            return math.nan
    err = 0.0
    joint_quat = tab.joint_quat
    for j in range(joint_quat.size):
        i = joint_quat[j]
        if i < 0:
            continue
        norm = math.sqrt(y[i] ** 2 + y[i + 1] ** 2 + y[i + 2] ** 2 + y[i + 3] ** 2)
        err = max(err, abs(norm - 1.0))
        for m in range(4):
            y[i + m] /= norm
    return err


@jit_alloc
def rk4_step(handle, t, y, h):
    """One classic RK4 step of h seconds from time t (s), y updated in place and its joint
    quaternions renormalised. Returns what `normalize` returns."""
    tab, forces, work = handle[0]
    k, z = work.stages[:4], work.stages[4]
    z[:] = y
    done = 0.0
    for s in range(4):  # stages at t, t + h/2, t + h/2, t + h
        ts = t if s == 0 else t + h / 2 if s < 3 else t + h
        derivative(tab, forces, ts, z, work, k[s])
        done += (1.0 if s == 0 or s == 3 else 2.0) * stage_power(forces, ts, work)
        c = h / 2 if s < 2 else h
        for i in range(y.size):
            z[i] = y[i] + c * k[s, i]
    for i in range(y.size):
        y[i] = y[i] + h / 6 * (k[0, i] + 2 * k[1, i] + 2 * k[2, i] + k[3, i])
    work.done[0] += h / 6 * done
    return normalize(tab, y)


@jit_alloc
def _jacobian(tab, forces, t, y, work, f0, jac):
    """Forward-difference ∂ẏ/∂y (ny, ny) into `jac` (steps 1e-7 max(1, |y_k|))."""
    derivative(tab, forces, t, y, work, f0)
    yp, fp = y.copy(), np.empty_like(y)
    for k in range(y.size):
        dy = 1e-7 * max(1.0, abs(y[k]))
        yp[k] = y[k] + dy
        derivative(tab, forces, t, yp, work, fp)
        jac[:, k] = (fp - f0) / dy
        yp[k] = y[k]


@jit_alloc
def _stage(tab, forces, t, base, gh, z, work, newton, out):
    """Solve z = base + gh f(t, z) by Newton's method from the guess in z; f(t, z) into `out`.
    newton = (matrix I − gh ∂f/∂y (ny, ny), kept between calls while Newton converges; its
    valid flag (1,); tolerance; iteration limit). Returns False when it did not converge."""
    matrix, valid, tol, max_newton = newton
    fz = np.empty_like(z)
    for attempt in range(2):
        if valid[0] == 0 or attempt == 1:
            _jacobian(tab, forces, t, z, work, fz, matrix)
            matrix[:] = np.eye(z.size) - gh * matrix
            valid[0] = 1
        for _ in range(max_newton):
            derivative(tab, forces, t, z, work, fz)
            dz = np.linalg.solve(matrix, -(z - base - gh * fz))
            z += dz
            if np.linalg.norm(dz) <= tol * (1.0 + np.linalg.norm(z)):
                derivative(tab, forces, t, z, work, out)
                return True
    return False


@jit_alloc
def sdirk2_step(handle, newton, t, y, h):
    """One step of Alexander's two-stage L-stable SDIRK2 (as `rbcosim.integrators.SDIRK2`:
    forward-difference Jacobian, reused while Newton converges). y is updated in place and
    renormalised. Returns (what `normalize` returns, NaN; or NaN and the stage time at which
    Newton failed)."""
    g = SDIRK_GAMMA
    tab, forces, work = handle[0]
    k1, k2 = np.empty_like(y), np.empty_like(y)
    z = y.copy()
    if not _stage(tab, forces, t + g * h, y, g * h, z, work, newton, k1):
        return math.nan, t + g * h
    done = (1 - g) * stage_power(forces, t + g * h, work)
    base = y + (1 - g) * h * k1
    z[:] = y + h * k1
    if not _stage(tab, forces, t + h, base, g * h, z, work, newton, k2):
        return math.nan, t + h
    done += g * stage_power(forces, t + h, work)
    y[:] = y + h * ((1 - g) * k1 + g * k2)
    work.done[0] += h * done
    return normalize(tab, y), math.nan
