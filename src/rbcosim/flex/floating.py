"""Compiled kernels of the floating body (linear floating frame of reference).

Equations and frames: see :mod:`rbcosim.flex.body`. Structure-frame inputs are ``w``,
``alpha`` and ``b = a_p - g`` rotated by ``R_s = R(q) @ axis_rotation`` (structure ->
inertial). The modes obey ``eta'' = W @ z`` with ``W`` the model's ``ode_matrix`` (k, 17k + 15)
and ``z = [eta, eta', b, alpha, kron(w, w), kron(w, eta'), kron(alpha, eta),
kron(kron(w, w), eta)]``.

A macro step integrates (q, eta, eta') by classic RK4 with ``n`` micro steps, in one call.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rbcosim.flex.frame import frame_at, quaternion_stages, write_end_frame
from rbcosim.flex.kinematics import rotation_matrix_of
from rbcosim.flex.layout import AL, ETA, A, Q, W


@njit(cache=True)
def modal_acceleration(wmat: np.ndarray, ws: np.ndarray, als: np.ndarray, bs: np.ndarray,
                       eta: np.ndarray, etad: np.ndarray) -> np.ndarray:
    """eta'' (k,) = W @ z for structure-frame w (rad/s), alpha (rad/s²), b (m/s²)."""
    k = eta.size
    out = np.zeros(k)
    ww = np.empty(9)
    for i in range(3):
        for j in range(3):
            ww[3 * i + j] = ws[i] * ws[j]
    o_b, o_al, o_ww = 2 * k, 2 * k + 3, 2 * k + 6
    o_g2, o_g1, o_h = 2 * k + 15, 5 * k + 15, 8 * k + 15
    for r in range(k):
        row = wmat[r]
        acc = 0.0
        for l in range(k):
            acc += row[l] * eta[l] + row[k + l] * etad[l]
        for i in range(3):
            acc += row[o_b + i] * bs[i] + row[o_al + i] * als[i]
            wi, ai = ws[i], als[i]
            for l in range(k):
                acc += row[o_g2 + i * k + l] * wi * etad[l] + row[o_g1 + i * k + l] * ai * eta[l]
        for m in range(9):
            acc += row[o_ww + m] * ww[m]
            c = ww[m]
            for l in range(k):
                acc += row[o_h + m * k + l] * c * eta[l]
        out[r] = acc
    return out


@njit(cache=True)
def _frame_inputs(q, axis_rotation, w, al, a, gravity):
    """(R_s, w, alpha, b) with the last three in structure-frame components."""
    rs = rotation_matrix_of(q) @ axis_rotation
    return rs, rs.T @ w, rs.T @ al, rs.T @ (a - gravity)


@njit(cache=True)
def floating_step(s: np.ndarray, H: float, n: int, coeff: np.ndarray, gravity: np.ndarray,
                  axis_rotation: np.ndarray, wmat: np.ndarray) -> bool:
    """Advance the state s in place over tau in [0, H] (time left to the caller) with the
    acceleration polynomial ``coeff`` (see :mod:`rbcosim.flex.frame`); False if the new
    orientation or modal state is not finite (s is then left unchanged)."""
    k = (s.size - ETA) // 2
    h = H / n
    q = s[Q:Q + 4].copy()
    y = s[ETA:].copy()
    kin = np.empty((3, 18))  # frame at the micro step's start, middle, end
    stages = np.empty((4, 4))
    rates = np.empty((4, 2 * k))
    lead = (0.0, 0.5 * h, 0.5 * h, h)
    at = (0, 1, 1, 2)
    for i in range(n):
        for j in range(3):
            frame_at(s, coeff, (i + 0.5 * j) * h, kin[j])
        q_next = quaternion_stages(q, kin[0, 12:15], kin[1, 12:15], kin[2, 12:15], h, stages)
        if k:
            for j in range(4):
                ya = y + lead[j] * rates[j - 1] if j else y.copy()
                f = kin[at[j]]
                _, ws, als, bs = _frame_inputs(stages[j], axis_rotation, f[12:15], f[15:18],
                                               f[6:9], gravity)
                rates[j, :k] = ya[k:]
                rates[j, k:] = modal_acceleration(wmat, ws, als, bs, ya[:k], ya[k:])
            y = y + (h / 6.0) * (rates[0] + 2.0 * (rates[1] + rates[2]) + rates[3])
        q = q_next
    norm = math.sqrt(np.sum(q * q))
    if not (np.all(np.isfinite(q)) and norm > 0.0 and np.all(np.isfinite(y))):
        return False
    write_end_frame(s, coeff, H, q / norm)
    s[ETA:] = y
    return True


@njit(cache=True)
def _rotation_dofs(b: np.ndarray, out: np.ndarray) -> None:
    out[0] = 0.5 * (b[2, 1] - b[1, 2])
    out[1] = -b[2, 0]
    out[2] = b[1, 0]


@njit(cache=True)
def _skew(v: np.ndarray) -> np.ndarray:
    out = np.zeros((3, 3))
    out[0, 1], out[0, 2] = -v[2], v[1]
    out[1, 0], out[1, 2] = v[2], -v[0]
    out[2, 0], out[2, 1] = -v[1], v[0]
    return out


@njit(cache=True)
def floating_wrench(s: np.ndarray, gravity: np.ndarray, axis_rotation: np.ndarray, wmat: np.ndarray,
                    nodes: np.ndarray, modes: np.ndarray, mass: np.ndarray, total_mass: float,
                    first_moment: np.ndarray, s_e: np.ndarray,
                    spin_inertia: np.ndarray) -> np.ndarray:
    """[force (3) N, moment (3) N·m] on the rigid body at the point, inertial, at the state s
    (its frame and modes; formulas in the module docstring of :mod:`rbcosim.flex.body`)."""
    k = (s.size - ETA) // 2
    eta, etad = s[ETA:ETA + k], s[ETA + k:]
    rs, ws, als, bs = _frame_inputs(s[Q:Q + 4], axis_rotation, s[W:W + 3], s[AL:AL + 3],
                                    s[A:A + 3], gravity)
    wx = _skew(ws)
    big_a = _skew(als) + wx @ wx
    n_nodes = nodes.shape[0]
    acc = np.empty((n_nodes, 6))
    rot = np.empty(3)
    _rotation_dofs(big_a, rot)
    for i in range(n_nodes):
        acc[i, :3] = bs + big_a @ nodes[i]
        acc[i, 3:] = rot
    lever = nodes.copy()
    force = -(total_mass * bs + big_a @ first_moment)
    if k:
        etadd = modal_acceleration(wmat, ws, als, bs, eta, etad)
        u = (modes @ eta).reshape(n_nodes, 6)
        ud = (modes @ etad).reshape(n_nodes, 6)
        udd = (modes @ etadd).reshape(n_nodes, 6)
        for i in range(n_nodes):
            acc[i, :3] += udd[i, :3] + 2.0 * (wx @ ud[i, :3]) + big_a @ u[i, :3]
            _rotation_dofs(wx @ _skew(ud[i, 3:]), rot)
            acc[i, 3:] += udd[i, 3:] + 2.0 * rot
            _rotation_dofs(big_a @ _skew(u[i, 3:]), rot)
            acc[i, 3:] += rot
            lever[i] += u[i, :3]
        force -= s_e @ etadd + 2.0 * np.cross(ws, s_e @ etad) + big_a @ (s_e @ eta)
    f = (mass @ acc.ravel()).reshape(n_nodes, 6)
    moment = -np.cross(ws, spin_inertia @ ws)
    for i in range(n_nodes):
        moment -= np.cross(lever[i], f[i, :3]) + f[i, 3:]
    out = np.empty(6)
    out[:3] = rs @ force
    out[3:] = rs @ moment
    return out
