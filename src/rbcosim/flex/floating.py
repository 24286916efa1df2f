"""Compiled kernels of the floating body (linear floating frame of reference).

Equations and frames: see :mod:`rbcosim.flex.body`. Structure-frame inputs are ``w``,
``alpha`` and ``b = a_p - g`` rotated by ``R_s = R(q) @ axis_rotation`` (structure ->
inertial). The modes obey ``eta'' = W @ z`` with ``W`` the model's ``ode_matrix`` (k, 20k + 15)
and ``z = [eta, eta', b, alpha, kron(w, w), kron(w, eta'), kron(alpha, eta),
kron(kron(w, w), eta), kron(b, eta)]`` (the last block and part of the one before: geometric
stiffening, :mod:`rbcosim.flex.geometric`).

A macro step integrates (q, eta, eta') by classic RK4 with ``n`` micro steps, in one call.
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim.flex.frame import (
    acceleration_polynomial,
    frame_at,
    quaternion_stages,
    set_frame,
    write_end_frame,
)
from rbcosim.flex.kinematics import rotation_matrix_of
from rbcosim.flex.layout import AL, ETA, A, Q, W
from rbcosim.flex.linalg import matvec
from rbcosim.kernels import jit_alloc


@jit_alloc
def modal_acceleration(wmat: np.ndarray, ws: np.ndarray, als: np.ndarray, bs: np.ndarray,
                       eta: np.ndarray, etad: np.ndarray, out: np.ndarray) -> None:
    """out (k,) = eta'' = W @ z for structure-frame w (rad/s), alpha (rad/s²), b (m/s²)."""
    k = eta.size
    o_b, o_al, o_ww = 2 * k, 2 * k + 3, 2 * k + 6
    o_g2, o_g1, o_h, o_gb = 2 * k + 15, 5 * k + 15, 8 * k + 15, 17 * k + 15
    for r in range(k):
        acc = 0.0
        for l in range(k):
            acc += wmat[r, l] * eta[l] + wmat[r, k + l] * etad[l]
        for i in range(3):
            acc += wmat[r, o_b + i] * bs[i] + wmat[r, o_al + i] * als[i]
            wi, ai, bi = ws[i], als[i], bs[i]
            for l in range(k):
                acc += (wmat[r, o_g2 + i * k + l] * wi * etad[l]
                        + wmat[r, o_g1 + i * k + l] * ai * eta[l]
                        + wmat[r, o_gb + i * k + l] * bi * eta[l])
            for j in range(3):
                c = wi * ws[j]
                m = 3 * i + j
                acc += wmat[r, o_ww + m] * c
                for l in range(k):
                    acc += wmat[r, o_h + m * k + l] * c * eta[l]
        out[r] = acc


@jit_alloc
def _frame_inputs(q, axis_rotation, w, al, a, gravity, rs, ws, als, bs):
    """Fill R_s (3, 3) and the structure-frame components of w, alpha and b = a - g (3,)."""
    rq = rotation_matrix_of(q)
    for i in range(3):
        for j in range(3):
            rs[i, j] = rq[i, 0] * axis_rotation[0, j] + rq[i, 1] * axis_rotation[1, j] \
                + rq[i, 2] * axis_rotation[2, j]
    for j in range(3):
        ws[j] = rs[0, j] * w[0] + rs[1, j] * w[1] + rs[2, j] * w[2]
        als[j] = rs[0, j] * al[0] + rs[1, j] * al[1] + rs[2, j] * al[2]
        bs[j] = (rs[0, j] * (a[0] - gravity[0]) + rs[1, j] * (a[1] - gravity[1])
                 + rs[2, j] * (a[2] - gravity[2]))


@jit_alloc
def floating_step(s: np.ndarray, motion: np.ndarray, past_taus: np.ndarray, past: np.ndarray,
                  H: float, n: int, gravity: np.ndarray, axis_rotation: np.ndarray,
                  wmat: np.ndarray) -> bool:
    """One macro step of the state s, in place (time left to the caller): the frame moves to
    the rigid side's ``motion`` (19,), the accelerations follow the polynomial through it and
    the ``past`` motions (m, 19) at ``past_taus`` (:mod:`rbcosim.flex.frame`), and (q, eta,
    eta') advance over [0, H] by n RK4 steps. False if the result is not finite (s then holds
    the re-synchronised frame and the old modes)."""
    set_frame(s, motion)
    coeff = acceleration_polynomial(motion, past_taus, past)
    k = (s.size - ETA) // 2
    h = H / n
    q = s[Q:Q + 4].copy()
    y = s[ETA:].copy()
    ya = np.empty(2 * k)
    rs, ws, als, bs = np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3)
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
                for m in range(2 * k):
                    ya[m] = y[m] + lead[j] * rates[j - 1, m] if j else y[m]
                f = kin[at[j]]
                _frame_inputs(stages[j], axis_rotation, f[12:15], f[15:18], f[6:9], gravity,
                              rs, ws, als, bs)
                rates[j, :k] = ya[k:]
                modal_acceleration(wmat, ws, als, bs, ya[:k], ya[k:], rates[j, k:])
            for m in range(2 * k):
                y[m] += (h / 6.0) * (rates[0, m] + 2.0 * (rates[1, m] + rates[2, m])
                                     + rates[3, m])
        q = q_next
    norm = math.sqrt(np.sum(q * q))
    if not (np.all(np.isfinite(q)) and norm > 0.0 and np.all(np.isfinite(y))):
        return False
    write_end_frame(s, coeff, H, q / norm)
    s[ETA:] = y
    return True


@jit_alloc
def _add_rotation_dofs_of_product(b: np.ndarray, v: np.ndarray, scale: float,
                                  out: np.ndarray) -> None:
    """out += scale * rotation_dofs(b @ [v]x) (:func:`rbcosim.flex.model.rotation_dofs`)."""
    # (B [v]x)_ij = sum_l B_il [v]x_lj: the entries 21, 12, 20, 10.
    p21 = b[2, 2] * v[0] - b[2, 0] * v[2]
    p12 = b[1, 0] * v[1] - b[1, 1] * v[0]
    p20 = b[2, 1] * v[2] - b[2, 2] * v[1]
    p10 = b[1, 1] * v[2] - b[1, 2] * v[1]
    out[0] += scale * 0.5 * (p21 - p12)
    out[1] -= scale * p20
    out[2] += scale * p10


@jit_alloc
def floating_wrench(s: np.ndarray, gravity: np.ndarray, axis_rotation: np.ndarray, wmat: np.ndarray,
                    nodes: np.ndarray, modes: np.ndarray, mass: np.ndarray, total_mass: float,
                    first_moment: np.ndarray, s_e: np.ndarray,
                    spin_inertia: np.ndarray) -> np.ndarray:
    """[force (3) N, moment (3) N·m] on the rigid body at the point, inertial, at the state s
    (its frame and modes; formulas in the module docstring of :mod:`rbcosim.flex.body`)."""
    k = (s.size - ETA) // 2
    eta, etad = s[ETA:ETA + k], s[ETA + k:]
    rs, ws, als, bs = np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3)
    _frame_inputs(s[Q:Q + 4], axis_rotation, s[W:W + 3], s[AL:AL + 3], s[A:A + 3], gravity,
                  rs, ws, als, bs)
    # A = [alpha]x + [w]x [w]x = [alpha]x + w w^T - (w.w) I
    big_a = np.empty((3, 3))
    wx = np.zeros((3, 3))
    wx[0, 1], wx[0, 2], wx[1, 2] = -ws[2], ws[1], -ws[0]
    wx[1, 0], wx[2, 0], wx[2, 1] = ws[2], -ws[1], ws[0]
    w2 = ws[0] * ws[0] + ws[1] * ws[1] + ws[2] * ws[2]
    for i in range(3):
        for j in range(3):
            big_a[i, j] = ws[i] * ws[j] - (w2 if i == j else 0.0)
    big_a[0, 1] -= als[2]
    big_a[0, 2] += als[1]
    big_a[1, 2] -= als[0]
    big_a[1, 0] += als[2]
    big_a[2, 0] -= als[1]
    big_a[2, 1] += als[0]
    n_nodes = nodes.shape[0]
    if k:
        etadd = np.empty(k)
        modal_acceleration(wmat, ws, als, bs, eta, etad, etadd)
        u, ud, udd = matvec(modes, eta), matvec(modes, etad), matvec(modes, etadd)
    else:
        u = ud = udd = np.zeros(6 * n_nodes)
    lever = np.empty((n_nodes, 3))
    acc = np.empty(6 * n_nodes)
    for i in range(n_nodes):
        o = 6 * i
        for j in range(3):
            lever[i, j] = nodes[i, j] + u[o + j]
        for j in range(3):
            # b + A (X + u) + u'' + 2 w x u'
            acc[o + j] = (bs[j] + big_a[j, 0] * lever[i, 0] + big_a[j, 1] * lever[i, 1]
                          + big_a[j, 2] * lever[i, 2] + udd[o + j]
                          + 2.0 * (wx[j, 0] * ud[o] + wx[j, 1] * ud[o + 1] + wx[j, 2] * ud[o + 2]))
        # rotation_dofs(A) + theta'' + 2 rotation_dofs([w]x [theta']x) + rotation_dofs(A [theta]x)
        acc[o + 3] = 0.5 * (big_a[2, 1] - big_a[1, 2]) + udd[o + 3]
        acc[o + 4] = -big_a[2, 0] + udd[o + 4]
        acc[o + 5] = big_a[1, 0] + udd[o + 5]
        _add_rotation_dofs_of_product(wx, ud[o + 3:o + 6], 2.0, acc[o + 3:o + 6])
        _add_rotation_dofs_of_product(big_a, u[o + 3:o + 6], 1.0, acc[o + 3:o + 6])
    f = mass @ acc
    force = np.empty(3)
    moment = np.empty(3)
    jw = matvec(spin_inertia, ws)
    # F = -(m b + A m r_cm + S eta'' + 2 w x S eta' + A S eta)
    se, sed, sedd = np.zeros(3), np.zeros(3), np.zeros(3)
    if k:
        se, sed, sedd = matvec(s_e, eta), matvec(s_e, etad), matvec(s_e, etadd)
    first = first_moment + se
    for j in range(3):
        force[j] = -(total_mass * bs[j] + big_a[j, 0] * first[0] + big_a[j, 1] * first[1]
                     + big_a[j, 2] * first[2] + sedd[j]
                     + 2.0 * (wx[j, 0] * sed[0] + wx[j, 1] * sed[1] + wx[j, 2] * sed[2]))
    # M = -(sum_i lever_i x f_t,i + f_r,i + w x J w)
    moment[0] = -(ws[1] * jw[2] - ws[2] * jw[1])
    moment[1] = -(ws[2] * jw[0] - ws[0] * jw[2])
    moment[2] = -(ws[0] * jw[1] - ws[1] * jw[0])
    for i in range(n_nodes):
        o = 6 * i
        x, y, z = lever[i, 0], lever[i, 1], lever[i, 2]
        moment[0] -= y * f[o + 2] - z * f[o + 1] + f[o + 3]
        moment[1] -= z * f[o] - x * f[o + 2] + f[o + 4]
        moment[2] -= x * f[o + 1] - y * f[o] + f[o + 5]
    out = np.zeros(6)
    for i in range(3):
        for j in range(3):
            out[i] += rs[i, j] * force[j]
            out[3 + i] += rs[i, j] * moment[j]
    return out
