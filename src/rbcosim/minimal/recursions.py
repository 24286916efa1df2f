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
from rbcosim.minimal.spatial import crf, spatial_inertia_into


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


@jit
def dynamics_work(n_bodies, nv):
    k = n_bodies + 1
    return DynamicsWork(np.zeros((k, 6, 6)), np.zeros((k, 6)), np.zeros((k, 6)),
                        np.zeros((nv, 6)), np.zeros(nv), np.zeros((nv, 6)), np.zeros((6, 12)),
                        np.zeros((6, 6)))


@jit
def _times(I, x):
    """I x for a (6, 6) array and a 6-vector, as a tuple."""
    return (I[0, 0] * x[0] + I[0, 1] * x[1] + I[0, 2] * x[2] + I[0, 3] * x[3] + I[0, 4] * x[4] + I[0, 5] * x[5],
            I[1, 0] * x[0] + I[1, 1] * x[1] + I[1, 2] * x[2] + I[1, 3] * x[3] + I[1, 4] * x[4] + I[1, 5] * x[5],
            I[2, 0] * x[0] + I[2, 1] * x[1] + I[2, 2] * x[2] + I[2, 3] * x[3] + I[2, 4] * x[4] + I[2, 5] * x[5],
            I[3, 0] * x[0] + I[3, 1] * x[1] + I[3, 2] * x[2] + I[3, 3] * x[3] + I[3, 4] * x[4] + I[3, 5] * x[5],
            I[4, 0] * x[0] + I[4, 1] * x[1] + I[4, 2] * x[2] + I[4, 3] * x[3] + I[4, 4] * x[4] + I[4, 5] * x[5],
            I[5, 0] * x[0] + I[5, 1] * x[1] + I[5, 2] * x[2] + I[5, 3] * x[3] + I[5, 4] * x[4] + I[5, 5] * x[5])  # noqa: E501


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
    ops = 0
    for j in range(tab.joint_body.size):
        b = tab.joint_body[j]
        ops += spatial_inertia_into(tab.mass[b], tab.inertia[b], kin.R[b], kin.r[b], I[b])
    return ops


@jit
def _body_forces(tab, kin, f_ext, work):
    """Velocity-product forces V ×* (I V) − f_ext into work.p, from the inertias in work.I."""
    for j in range(tab.joint_body.size):
        b = tab.joint_body[j]
        p = crf(kin.V[b], _times(work.I[b], kin.V[b]))
        for m in range(6):
            work.p[b, m] = p[m] - f_ext[b, m]
    return 60 * tab.joint_body.size


@jit
def aba(tab, kin, tau, f_ext, base, work, vdot):
    """Joint accelerations v̇ (nv,) into `vdot` by the articulated-body algorithm."""
    ops = _body_inertias(tab, kin, work.I) + _body_forces(tab, kin, f_ext, work)
    S, U, u, Dinv, block = kin.S, work.U, work.u, work.Dinv, work.block
    for j in range(tab.joint_body.size - 1, -1, -1):
        b, par = tab.joint_body[j], tab.joint_parent[j]
        k0, nv = tab.joint_v0[j], tab.joint_nv[j]
        Ib, pb = work.I[b], work.p[b]
        for k in range(k0, k0 + nv):
            Uk = _times(Ib, S[k])
            for m in range(6):
                U[k, m] = Uk[m]
            u[k] = tau[k] - _dot6(S[k], pb)
        for a in range(nv):
            for k in range(nv):
                block[a, k] = _dot6(S[k0 + a], U[k0 + k])
        _invert_spd(block, nv, Dinv, k0)
        ops += 36 * nv + 6 * nv * nv + nv**3 + 6 * nv
        if par == 0:
            continue
        # I^a = I^A − W Uᵀ and p^a = p^A + I^a c + W u, W = U D⁻¹ (in place: I_b, p_b are
        # not needed again)
        for c in range(nv):
            W = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            for a in range(nv):
                x = Dinv[k0 + a, c]
                Ua = U[k0 + a]
                W = (W[0] + Ua[0] * x, W[1] + Ua[1] * x, W[2] + Ua[2] * x,
                     W[3] + Ua[3] * x, W[4] + Ua[4] * x, W[5] + Ua[5] * x)
            Uc, uc = U[k0 + c], u[k0 + c]
            for r in range(6):
                for m in range(6):
                    Ib[r, m] -= W[r] * Uc[m]
                pb[r] += W[r] * uc
        Ic = _times(Ib, kin.c[b])
        Ip, pp = work.I[par], work.p[par]
        for r in range(6):
            pp[r] += pb[r] + Ic[r]
            for m in range(6):
                Ip[r, m] += Ib[r, m]
        ops += 6 * nv * nv + 42 * nv + 36
    acc = work.acc
    for m in range(6):
        acc[0, m] = base[m]
    for j in range(tab.joint_body.size):
        b, par = tab.joint_body[j], tab.joint_parent[j]
        k0, nv = tab.joint_v0[j], tab.joint_nv[j]
        for m in range(6):
            acc[b, m] = acc[par, m] + kin.c[b, m]
        for k in range(k0, k0 + nv):
            block[0, k - k0] = u[k] - _dot6(U[k], acc[b])
        for k in range(k0, k0 + nv):
            x = 0.0
            for a in range(nv):
                x += Dinv[k, a] * block[0, a]
            vdot[k] = x
        for k in range(k0, k0 + nv):
            for m in range(6):
                acc[b, m] += S[k, m] * vdot[k]
        ops += 6 * nv + nv * nv + 6 * nv
    return ops


@jit
def _composite(tab, kin, work, M):
    """M(q) into `M` from the body inertias in work.I (turned into composite inertias)."""
    ops = 0
    nj = tab.joint_body.size
    Ic = work.I
    for j in range(nj - 1, -1, -1):
        b, par = tab.joint_body[j], tab.joint_parent[j]
        if par:
            Ic[par] += Ic[b]
    M[:] = 0.0
    S, F = kin.S, work.F
    for j in range(nj):
        b, k0, nv = tab.joint_body[j], tab.joint_v0[j], tab.joint_nv[j]
        if nv == 0:
            continue
        for k in range(nv):
            Fk = _times(Ic[b], S[k0 + k])
            for m in range(6):
                F[k, m] = Fk[m]
            for a in range(nv):
                M[k0 + a, k0 + k] = _dot6(S[k0 + a], F[k])
        ops += 36 * nv + 6 * nv * nv
        anc = tab.joint_parent[j]
        while anc:
            ja = tab.body_joint[anc]
            a0, na = tab.joint_v0[ja], tab.joint_nv[ja]
            for a in range(a0, a0 + na):
                for k in range(nv):
                    x = _dot6(S[a], F[k])
                    M[a, k0 + k] = x
                    M[k0 + k, a] = x
            ops += 6 * na * nv
            anc = tab.joint_parent[ja]
    return ops


@jit
def _newton_euler(tab, kin, f_ext, base, work, C):
    """C(q, v) into `C` from the body inertias in work.I (recursive Newton–Euler)."""
    ops = _body_forces(tab, kin, f_ext, work)
    acc = work.acc
    for m in range(6):
        acc[0, m] = base[m]
    for j in range(tab.joint_body.size):
        b, par = tab.joint_body[j], tab.joint_parent[j]
        for m in range(6):
            acc[b, m] = acc[par, m] + kin.c[b, m]
        Ia = _times(work.I[b], acc[b])
        for m in range(6):
            work.p[b, m] += Ia[m]
    for j in range(tab.joint_body.size - 1, -1, -1):
        b, par = tab.joint_body[j], tab.joint_parent[j]
        for k in range(tab.joint_v0[j], tab.joint_v0[j] + tab.joint_nv[j]):
            C[k] = _dot6(kin.S[k], work.p[b])
        if par:
            for m in range(6):
                work.p[par, m] += work.p[b, m]
    return ops + 42 * tab.joint_body.size


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
