"""Compiled tree dynamics on the kinematics of `rbcosim.minimal.motion`.

  * `aba` — articulated-body algorithm, O(n): a backward sweep builds articulated inertias
    I^A_p += I^A − U D⁻¹ Uᵀ (U = I^A S, D = Sᵀ U) and bias forces
    p^A_p += p^A + I^a c + U D⁻¹ u; a forward sweep gives v̇ = D⁻¹ (u − Uᵀ (a_p + c)).
  * `mass_matrix` / `bias` — composite-rigid-body M(q) (dense, O(n·depth)) and recursive
    Newton–Euler C(q, v), with M v̇ = τ − C; used for closed loops and as a check of `aba`.

Spatial quantities are inertial at the inertial origin O. Forces: joint forces τ (nv,) (N or
N·m per rate), external spatial forces f_ext (n+1, 6) = (moment at O N·m; force N) per body
(row 0, the ground, unused), gravity as the base acceleration `base` (6,) = (0; −g) or zero.
Every kernel returns the number of multiplications it did (the operation counts of the tests).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.minimal.spatial import crf, spatial_inertia_into, vec6


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


@jit
def _times(I, b, x):
    """I[b] x for an (m, 6, 6) array I and a 6-tuple x, as a tuple."""
    return (_row_dot(I, b, 0, x), _row_dot(I, b, 1, x), _row_dot(I, b, 2, x),
            _row_dot(I, b, 3, x), _row_dot(I, b, 4, x), _row_dot(I, b, 5, x))


@jit
def _row_dot(I, b, r, x):
    return (I[b, r, 0] * x[0] + I[b, r, 1] * x[1] + I[b, r, 2] * x[2]
            + I[b, r, 3] * x[3] + I[b, r, 4] * x[4] + I[b, r, 5] * x[5])


@jit
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@jit
def _invert_spd(block, n, out, row0):
    """Inverse of the symmetric positive definite n × n matrix in block[:n, :n] (Gauss–Jordan
    without pivoting; block[:, 6:] is scratch) into out[row0 : row0 + n, :n]."""
    if n == 1:
        out[row0, 0] = 1.0 / block[0, 0]
        return
    for i in range(n):
        for j in range(n):
            block[i, 6 + j] = 1.0 if i == j else 0.0
    for i in range(n):
        inv = 1.0 / block[i, i]
        for j in range(n):
            block[i, j] *= inv
            block[i, 6 + j] *= inv
        for r in range(n):
            f = block[r, i]
            if r != i and f != 0.0:
                for j in range(n):
                    block[r, j] -= f * block[i, j]
                    block[r, 6 + j] -= f * block[i, 6 + j]
    for i in range(n):
        for j in range(n):
            out[row0 + i, j] = block[i, 6 + j]


@jit
def _body_inertias(tab, kin, I):
    """Spatial inertias I_b (n+1, 6, 6) of the moving bodies at O, inertial axes."""
    joint_body, mass, inertia, R, r = tab.joint_body, tab.mass, tab.inertia, kin.R, kin.r
    ops = 0
    for j in range(joint_body.size):
        b = joint_body[j]
        ops += spatial_inertia_into(mass[b], inertia, R, r, b, I)
    return ops


@jit
def _body_forces(tab, kin, f_ext, work):
    """Velocity-product forces V ×* (I V) − f_ext into work.p, from the inertias in work.I."""
    joint_body, V, I, P = tab.joint_body, kin.V, work.I, work.p
    for j in range(joint_body.size):
        b = joint_body[j]
        Vb = vec6(V, b)
        p = crf(Vb, _times(I, b, Vb))
        for m in range(6):
            P[b, m] = p[m] - f_ext[b, m]
    return 60 * joint_body.size


@jit
def aba(tab, kin, tau, f_ext, base, work, vdot):
    """Joint accelerations v̇ (nv,) into `vdot` by the articulated-body algorithm."""
    ops = _body_inertias(tab, kin, work.I) + _body_forces(tab, kin, f_ext, work)
    joint_body, joint_parent, joint_v0, joint_nv = (tab.joint_body, tab.joint_parent,
                                                    tab.joint_v0, tab.joint_nv)
    S, c = kin.S, kin.c
    I, P, U, u, Dinv, block, acc = (work.I, work.p, work.U, work.u, work.Dinv, work.block,
                                    work.acc)
    for j in range(joint_body.size - 1, -1, -1):
        b, par = joint_body[j], joint_parent[j]
        k0, nv = joint_v0[j], joint_nv[j]
        pb = vec6(P, b)
        for k in range(k0, k0 + nv):
            Sk = vec6(S, k)
            Uk = _times(I, b, Sk)
            for m in range(6):
                U[k, m] = Uk[m]
            u[k] = tau[k] - _dot6(Sk, pb)
        for a in range(nv):
            for k in range(nv):
                block[a, k] = _dot6(vec6(S, k0 + a), vec6(U, k0 + k))
        _invert_spd(block, nv, Dinv, k0)
        ops += 36 * nv + 6 * nv * nv + nv**3 + 6 * nv
        if par == 0:
            continue
        # I^a = I^A − W Uᵀ and p^a = p^A + W u + I^a c, W = U D⁻¹, in place (I_b and p_b are
        # not needed again), then added to the parent's
        for col in range(nv):
            W = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            for a in range(nv):
                x = Dinv[k0 + a, col]
                W = (W[0] + U[k0 + a, 0] * x, W[1] + U[k0 + a, 1] * x,
                     W[2] + U[k0 + a, 2] * x, W[3] + U[k0 + a, 3] * x,
                     W[4] + U[k0 + a, 4] * x, W[5] + U[k0 + a, 5] * x)
            uc = u[k0 + col]
            for r in range(6):
                for m in range(6):
                    I[b, r, m] -= W[r] * U[k0 + col, m]
                P[b, r] += W[r] * uc
        Ic = _times(I, b, vec6(c, b))
        for r in range(6):
            P[par, r] += P[b, r] + Ic[r]
            for m in range(6):
                I[par, r, m] += I[b, r, m]
        ops += 6 * nv * nv + 42 * nv + 36
    for m in range(6):
        acc[0, m] = base[m]
    for j in range(joint_body.size):
        b, par = joint_body[j], joint_parent[j]
        k0, nv = joint_v0[j], joint_nv[j]
        for m in range(6):
            acc[b, m] = acc[par, m] + c[b, m]
        ab = vec6(acc, b)
        for k in range(k0, k0 + nv):
            block[0, k - k0] = u[k] - _dot6(vec6(U, k), ab)
        for k in range(k0, k0 + nv):
            x = 0.0
            for a in range(nv):
                x += Dinv[k, a] * block[0, a]
            vdot[k] = x
            for m in range(6):
                acc[b, m] += S[k, m] * x
        ops += 6 * nv + nv * nv + 6 * nv
    return ops


@jit
def _composite(tab, kin, work, M):
    """M(q) into `M` from the body inertias in work.I (turned into composite inertias)."""
    joint_body, joint_parent, joint_v0, joint_nv = (tab.joint_body, tab.joint_parent,
                                                    tab.joint_v0, tab.joint_nv)
    body_joint = tab.body_joint
    Ic, S, F = work.I, kin.S, work.F
    ops = 0
    nj = joint_body.size
    for j in range(nj - 1, -1, -1):
        b, par = joint_body[j], joint_parent[j]
        if par:
            for r in range(6):
                for m in range(6):
                    Ic[par, r, m] += Ic[b, r, m]
    M[:] = 0.0
    for j in range(nj):
        b, k0, nv = joint_body[j], joint_v0[j], joint_nv[j]
        for k in range(nv):
            Fk = _times(Ic, b, vec6(S, k0 + k))
            for m in range(6):
                F[k, m] = Fk[m]
            for a in range(nv):
                M[k0 + a, k0 + k] = _dot6(vec6(S, k0 + a), Fk)
        ops += 36 * nv + 6 * nv * nv
        anc = joint_parent[j]
        while anc and nv:
            ja = body_joint[anc]
            a0, na = joint_v0[ja], joint_nv[ja]
            for a in range(a0, a0 + na):
                Sa = vec6(S, a)
                for k in range(nv):
                    x = _dot6(Sa, vec6(F, k))
                    M[a, k0 + k] = x
                    M[k0 + k, a] = x
            ops += 6 * na * nv
            anc = joint_parent[ja]
    return ops


@jit
def _newton_euler(tab, kin, f_ext, base, work, C):
    """C(q, v) into `C` from the body inertias in work.I (recursive Newton–Euler)."""
    ops = _body_forces(tab, kin, f_ext, work)
    joint_body, joint_parent, joint_v0, joint_nv = (tab.joint_body, tab.joint_parent,
                                                    tab.joint_v0, tab.joint_nv)
    S, c, I, acc, P = kin.S, kin.c, work.I, work.acc, work.p
    for m in range(6):
        acc[0, m] = base[m]
    for j in range(joint_body.size):
        b, par = joint_body[j], joint_parent[j]
        for m in range(6):
            acc[b, m] = acc[par, m] + c[b, m]
        Ia = _times(I, b, vec6(acc, b))
        for m in range(6):
            P[b, m] += Ia[m]
    for j in range(joint_body.size - 1, -1, -1):
        b, par = joint_body[j], joint_parent[j]
        pb = vec6(P, b)
        for k in range(joint_v0[j], joint_v0[j] + joint_nv[j]):
            C[k] = _dot6(vec6(S, k), pb)
        if par:
            for m in range(6):
                P[par, m] += pb[m]
    return ops + 42 * joint_body.size


@jit
def mass_matrix(tab, kin, work, M):
    """Joint-space mass matrix M(q) (nv, nv) into `M` by the composite-rigid-body algorithm."""
    return _body_inertias(tab, kin, work.I) + _composite(tab, kin, work, M)


@jit
def bias(tab, kin, f_ext, base, work, C):
    """C(q, v) (nv,) into `C`: the joint forces that hold v̇ = 0 against velocity products,
    gravity (`base`) and f_ext (recursive Newton–Euler)."""
    return _body_inertias(tab, kin, work.I) + _newton_euler(tab, kin, f_ext, base, work, C)


@jit
def mass_matrix_and_bias(tab, kin, f_ext, base, work, M, C):
    """Both M (into `M`) and C (into `C`), the body inertias computed once."""
    ops = _body_inertias(tab, kin, work.I) + _newton_euler(tab, kin, f_ext, base, work, C)
    return ops + _composite(tab, kin, work, M)
