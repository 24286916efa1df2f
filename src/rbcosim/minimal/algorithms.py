"""Recursive tree kinematics and dynamics in joint coordinates, in plain Python floats.

Spatial vectors (Featherstone) in inertial axes, taken at the inertial origin O, angular part
first: a body's velocity V = (ω; v_O), v_O = v_c − ω × r_c the velocity of the body-fixed point
passing through O; a force f = (n_O; F). Because every quantity sits in one frame, the
recursions need no coordinate transforms:

    V_i = V_p + S_i v_i,    a_i = a_p + S_i v̇_i + c_i,
    c_i = V_p ×m (S_i v_i) + (S_P v_P) ×m (S_C v_C)

where S_i (6 × nv_i) is the joint's motion subspace, each column fixed either in the parent
(S_P) or in the child (S_C); that gives the velocity-product term c_i exactly. Gravity enters
as a base acceleration a_0 = (0; −g).

Algorithms on the kinematics:
  * `aba`  — articulated-body algorithm, O(n): a backward sweep building articulated inertias
             I^A and bias forces p^A, a forward sweep for the accelerations;
  * `mass_matrix` / `bias` — composite-rigid-body M(q) (dense, O(n·depth)) and recursive
             Newton–Euler C(q, v), with M v̇ = τ − C; used for closed loops and as a check.
The hot path is loops over Python floats, which beat chains of tiny numpy calls for small
models and long chains alike (DESIGN.md, "Speed facts").
"""

from __future__ import annotations

import math
from operator import add, mul, sub

import numpy as np

from rbcosim.minimal.tree import Tree, _conj, _qmul

_PARENT, _CHILD = 0, 1
_E = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
_IU = np.triu_indices(6)


def _rot(q):
    """Rotation matrix (row-major 9-tuple) of a quaternion (need not be unit)."""
    w, x, y, z = q
    s = 2.0 / (w * w + x * x + y * y + z * z)
    xx, yy, zz = s * x * x, s * y * y, s * z * z
    xy, xz, yz = s * x * y, s * x * z, s * y * z
    wx, wy, wz = s * w * x, s * w * y, s * w * z
    return (1.0 - yy - zz, xy - wz, xz + wy,
            xy + wz, 1.0 - xx - zz, yz - wx,
            xz - wy, yz + wx, 1.0 - xx - yy)


def _mv(R, a):
    return (R[0] * a[0] + R[1] * a[1] + R[2] * a[2],
            R[3] * a[0] + R[4] * a[1] + R[5] * a[2],
            R[6] * a[0] + R[7] * a[1] + R[8] * a[2])


def _line(a, o):
    """Unit twist of a rotation about axis a through point o: (a; o × a)."""
    return (a[0], a[1], a[2],
            o[1] * a[2] - o[2] * a[1], o[2] * a[0] - o[0] * a[2], o[0] * a[1] - o[1] * a[0])


def _crm(a, b):
    """Spatial motion cross product a ×m b."""
    w0, w1, w2, v0, v1, v2 = a
    x0, x1, x2, y0, y1, y2 = b
    return (w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0,
            w1 * y2 - w2 * y1 + v1 * x2 - v2 * x1,
            w2 * y0 - w0 * y2 + v2 * x0 - v0 * x2,
            w0 * y1 - w1 * y0 + v0 * x1 - v1 * x0)


def _crf(a, f):
    """Spatial force cross product a ×* f."""
    w0, w1, w2, v0, v1, v2 = a
    n0, n1, n2, f0, f1, f2 = f
    return (w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1,
            w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2,
            w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0,
            w1 * f2 - w2 * f1, w2 * f0 - w0 * f2, w0 * f1 - w1 * f0)


def _sym_matvec(I, x):
    """Symmetric 6×6 (upper triangle, 21 entries) times a 6-vector."""
    x0, x1, x2, x3, x4, x5 = x
    return [
        I[0] * x0 + I[1] * x1 + I[2] * x2 + I[3] * x3 + I[4] * x4 + I[5] * x5,
        I[1] * x0 + I[6] * x1 + I[7] * x2 + I[8] * x3 + I[9] * x4 + I[10] * x5,
        I[2] * x0 + I[7] * x1 + I[11] * x2 + I[12] * x3 + I[13] * x4 + I[14] * x5,
        I[3] * x0 + I[8] * x1 + I[12] * x2 + I[15] * x3 + I[16] * x4 + I[17] * x5,
        I[4] * x0 + I[9] * x1 + I[13] * x2 + I[16] * x3 + I[18] * x4 + I[19] * x5,
        I[5] * x0 + I[10] * x1 + I[14] * x2 + I[17] * x3 + I[19] * x4 + I[20] * x5,
    ]


def _sym_rank1_sub(I, W, U):
    """I − W Uᵀ for symmetric I (21 entries) and W ∥ U (the result stays symmetric)."""
    w0, w1, w2, w3, w4, w5 = W
    u0, u1, u2, u3, u4, u5 = U
    return [
        I[0] - w0 * u0, I[1] - w0 * u1, I[2] - w0 * u2,
        I[3] - w0 * u3, I[4] - w0 * u4, I[5] - w0 * u5,
        I[6] - w1 * u1, I[7] - w1 * u2, I[8] - w1 * u3,
        I[9] - w1 * u4, I[10] - w1 * u5, I[11] - w2 * u2,
        I[12] - w2 * u3, I[13] - w2 * u4, I[14] - w2 * u5,
        I[15] - w3 * u3, I[16] - w3 * u4, I[17] - w3 * u5,
        I[18] - w4 * u4, I[19] - w4 * u5, I[20] - w5 * u5,
    ]


def _sym_full(I) -> np.ndarray:
    """Full (6, 6) array of a 21-entry symmetric matrix."""
    out = np.empty((6, 6))
    out[_IU] = I
    out[_IU[1], _IU[0]] = I
    return out


def _spd_inverse(D: list[list[float]]) -> list[list[float]]:
    """Inverse of a small symmetric positive definite matrix (Gauss–Jordan, no pivoting)."""
    n = len(D)
    if n == 1:
        return [[1.0 / D[0][0]]]
    a = [row[:] + [1.0 if i == j else 0.0 for j in range(n)] for i, row in enumerate(D)]
    for i in range(n):
        inv = 1.0 / a[i][i]
        ai = [x * inv for x in a[i]]
        a[i] = ai
        for r in range(n):
            if r != i:
                f = a[r][i]
                if f:
                    a[r] = [x - f * y for x, y in zip(a[r], ai)]
    return [row[n:] for row in a]


class _Joint:
    """Constant per-joint data, precomputed from the TreeJoint for the hot loop."""

    __slots__ = (
        "A",
        "B",
        "L",
        "P0",
        "P1",
        "body",
        "frame",
        "kind",
        "nv",
        "parent",
        "q0",
        "sc",
        "sp",
        "tp",
        "u1",
        "u2",
        "uc",
        "up",
        "v0",
        "zc",
    )

    def __init__(self, j):
        self.kind, self.body, self.parent = j.kind, j.body, j.parent
        self.q0, self.v0, self.nv = j.q0, j.v0, j.nv
        self.sp, self.sc = j.sp, j.sc
        rap, rac = _rot(j.qap), _rot(j.qac)
        self.A, self.B = j.qap, _conj(j.qac)
        self.P0 = _qmul(self.A, self.B)
        if j.kind in ("revolute", "cylindrical"):
            self.P1 = _qmul(_qmul(self.A, (0.0, *j.axes[0])), self.B)
        if j.kind in ("revolute", "prismatic", "cylindrical", "universal"):
            self.up = _mv(rap, j.axes[0])
        if j.kind == "universal":
            self.u1, self.u2 = j.axes
            self.uc = _mv(rac, j.axes[1])
        if j.kind == "planar":
            self.frame = tuple(_mv(rap, e) for e in _E)
            self.zc = _mv(rac, _E[2])
        if j.kind == "spherical":
            self.frame = tuple(_mv(rac, e) for e in _E)
        if j.kind == "fixed":
            self.L = _qmul(_qmul(self.A, j.fixed_q), self.B)
            self.tp = _mv(rap, j.fixed_t)


class BodyKinematics:
    """Lists indexed by body (0 = ground): attitude quaternion (sign as composed), rotation R
    (row-major 9-tuple), centre of mass r, spatial velocity V, motion-subspace columns S with
    their sides, velocity-product term c, joint rates."""

    __slots__ = ("R", "S", "V", "c", "q", "r", "rates")

    def __init__(self, n: int):
        self.q = [(1.0, 0.0, 0.0, 0.0)] * (n + 1)
        self.R = [(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)] * (n + 1)
        self.r = [(0.0, 0.0, 0.0)] * (n + 1)
        self.V = [(0.0,) * 6] * (n + 1)
        self.S: list = [()] * (n + 1)
        self.c = [(0.0,) * 6] * (n + 1)
        self.rates: list = [()] * (n + 1)


class TreeDynamics:
    """Kinematics, ABA, CRBA and RNEA of a spanning tree; `ops` counts multiplications."""

    def __init__(self, tree: Tree):
        self.tree = tree
        model = tree.model
        self.n = model.n_bodies
        self.nv = tree.nv
        self.mass = [0.0] + [float(b.mass) for b in model.bodies]
        self.inertia = [()] + [tuple(np.asarray(b.inertia, float).ravel()) for b in model.bodies]
        g = [float(x) for x in model.gravity]
        self.base_acceleration = (0.0, 0.0, 0.0, -g[0], -g[1], -g[2])
        self.ops = 0
        self.joints = [_Joint(j) for j in tree.joints]

    # --- kinematics -------------------------------------------------------------------------
    def kinematics(self, q, v) -> BodyKinematics:
        """Poses, spatial velocities, motion subspaces, velocity products; q, v sequences."""
        kin = BodyKinematics(self.n)
        Q, RR, rr, VV, SS, CC, RATES = kin.q, kin.R, kin.r, kin.V, kin.S, kin.c, kin.rates
        ops = 0
        for J in self.joints:
            kind, b, par, i = J.kind, J.body, J.parent, J.q0
            Rp, rp = RR[par], rr[par]
            sp = J.sp
            o = (rp[0] + Rp[0] * sp[0] + Rp[1] * sp[1] + Rp[2] * sp[2],
                 rp[1] + Rp[3] * sp[0] + Rp[4] * sp[1] + Rp[5] * sp[2],
                 rp[2] + Rp[6] * sp[0] + Rp[7] * sp[1] + Rp[8] * sp[2])
            o2 = o
            if kind == "revolute" or kind == "cylindrical":
                h = 0.5 * q[i]
                ch, sh = math.cos(h), math.sin(h)
                P0, P1 = J.P0, J.P1
                L = (ch * P0[0] + sh * P1[0], ch * P0[1] + sh * P1[1],
                     ch * P0[2] + sh * P1[2], ch * P0[3] + sh * P1[3])
                a = _mv(Rp, J.up)
                cols = [(_line(a, o), _PARENT)]
                if kind == "cylindrical":
                    d = q[i + 1]
                    o2 = (o[0] + a[0] * d, o[1] + a[1] * d, o[2] + a[2] * d)
                    cols.append(((0.0, 0.0, 0.0, a[0], a[1], a[2]), _PARENT))
            elif kind == "prismatic":
                L = J.P0
                a = _mv(Rp, J.up)
                d = q[i]
                o2 = (o[0] + a[0] * d, o[1] + a[1] * d, o[2] + a[2] * d)
                cols = [((0.0, 0.0, 0.0, a[0], a[1], a[2]), _PARENT)]
            elif kind == "spherical":
                L = _qmul(_qmul(J.A, (q[i], q[i + 1], q[i + 2], q[i + 3])), J.B)
                cols = None
            elif kind == "universal":
                h1, h2 = 0.5 * q[i], 0.5 * q[i + 1]
                s1, s2 = math.sin(h1), math.sin(h2)
                u1, u2 = J.u1, J.u2
                e = _qmul((math.cos(h1), s1 * u1[0], s1 * u1[1], s1 * u1[2]),
                          (math.cos(h2), s2 * u2[0], s2 * u2[1], s2 * u2[2]))
                L = _qmul(_qmul(J.A, e), J.B)
                cols = [(_line(_mv(Rp, J.up), o), _PARENT)]
            elif kind == "planar":
                h = 0.5 * q[i + 2]
                L = _qmul(_qmul(J.A, (math.cos(h), 0.0, 0.0, math.sin(h))), J.B)
                x1, y1 = _mv(Rp, J.frame[0]), _mv(Rp, J.frame[1])
                x, y = q[i], q[i + 1]
                o2 = (o[0] + x1[0] * x + y1[0] * y, o[1] + x1[1] * x + y1[1] * y,
                      o[2] + x1[2] * x + y1[2] * y)
                cols = [((0.0, 0.0, 0.0, *x1), _PARENT), ((0.0, 0.0, 0.0, *y1), _PARENT)]
            elif kind == "free":
                L = (q[i + 3], q[i + 4], q[i + 5], q[i + 6])
                o2 = (q[i], q[i + 1], q[i + 2])
                cols = [((0.0, 0.0, 0.0, *e), _PARENT) for e in _E]
            else:  # fixed
                L = J.L
                t = _mv(Rp, J.tp)
                o2 = (o[0] + t[0], o[1] + t[1], o[2] + t[2])
                cols = []
            qb = _qmul(Q[par], L)
            R = _rot(qb)
            sc = J.sc
            r = (o2[0] - R[0] * sc[0] - R[1] * sc[1] - R[2] * sc[2],
                 o2[1] - R[3] * sc[0] - R[4] * sc[1] - R[5] * sc[2],
                 o2[2] - R[6] * sc[0] - R[7] * sc[1] - R[8] * sc[2])
            if kind == "spherical":
                cols = [(_line(_mv(R, e), o), _CHILD) for e in J.frame]
            elif kind == "universal":
                cols.append((_line(_mv(R, J.uc), o), _CHILD))
            elif kind == "planar":
                cols.append((_line(_mv(R, J.zc), o2), _CHILD))
            elif kind == "free":
                cols += [(_line((R[0], R[3], R[6]), r), _CHILD),
                         (_line((R[1], R[4], R[7]), r), _CHILD),
                         (_line((R[2], R[5], R[8]), r), _CHILD)]
            Vp = VV[par]
            rates = v[J.v0 : J.v0 + J.nv]
            if J.nv == 1:
                s, qd = cols[0][0], rates[0]
                sv = (s[0] * qd, s[1] * qd, s[2] * qd, s[3] * qd, s[4] * qd, s[5] * qd)
                c = _crm(Vp, sv)
                ops += 6 + 24
            else:
                svp = [0.0] * 6
                svc = [0.0] * 6
                for (s, side), qd in zip(cols, rates):
                    tgt = svp if side == _PARENT else svc
                    for m in range(6):
                        tgt[m] += s[m] * qd
                sv = tuple(x + y for x, y in zip(svp, svc))
                c = _crm(Vp, sv)
                if any(svp) and any(svc):
                    c = tuple(x + y for x, y in zip(c, _crm(svp, svc)))
                ops += 6 * len(cols) + 48
            Q[b], RR[b], rr[b], SS[b], CC[b], RATES[b] = qb, R, r, cols, c, rates
            VV[b] = (Vp[0] + sv[0], Vp[1] + sv[1], Vp[2] + sv[2],
                     Vp[3] + sv[3], Vp[4] + sv[4], Vp[5] + sv[5])
            ops += 9 + 16 + 19 + 9 + 18
        self.ops += ops
        return kin

    # --- body inertias and bias forces ------------------------------------------------------
    def spatial_inertia(self, kin: BodyKinematics, b: int) -> list[float]:
        """Spatial inertia of body b at the inertial origin, inertial axes: the upper triangle
        of the symmetric 6×6, row by row (21 entries)."""
        m = self.mass[b]
        I00, I01, I02, _, I11, I12, _, _, I22 = self.inertia[b]
        R0, R1, R2, R3, R4, R5, R6, R7, R8 = kin.R[b]
        # T = R I, Ic = T Rᵀ
        T0 = R0 * I00 + R1 * I01 + R2 * I02
        T1 = R0 * I01 + R1 * I11 + R2 * I12
        T2 = R0 * I02 + R1 * I12 + R2 * I22
        T3 = R3 * I00 + R4 * I01 + R5 * I02
        T4 = R3 * I01 + R4 * I11 + R5 * I12
        T5 = R3 * I02 + R4 * I12 + R5 * I22
        T6 = R6 * I00 + R7 * I01 + R8 * I02
        T7 = R6 * I01 + R7 * I11 + R8 * I12
        T8 = R6 * I02 + R7 * I12 + R8 * I22
        cx, cy, cz = kin.r[b]
        mx, my, mz = m * cx, m * cy, m * cz
        xx, yy, zz = mx * cx, my * cy, mz * cz
        xy, xz, yz = mx * cy, mx * cz, my * cz
        self.ops += 27 + 18 + 9
        return [
            T0 * R0 + T1 * R1 + T2 * R2 + yy + zz, T0 * R3 + T1 * R4 + T2 * R5 - xy,
            T0 * R6 + T1 * R7 + T2 * R8 - xz, 0.0, -mz, my,
            T3 * R3 + T4 * R4 + T5 * R5 + xx + zz, T3 * R6 + T4 * R7 + T5 * R8 - yz, mz, 0.0, -mx,
            T6 * R6 + T7 * R7 + T8 * R8 + xx + yy, -my, mx, 0.0,
            m, 0.0, 0.0,
            m, 0.0,
            m,
        ]

    # --- articulated-body algorithm ---------------------------------------------------------
    def aba(self, kin: BodyKinematics, tau=None, f_ext=None, gravity: bool = True) -> list[float]:
        """Joint accelerations v̇ (nv,) from joint forces tau (nv,) and external body forces
        f_ext (list by body of spatial forces at O, None entries allowed, or None); gravity as
        the base acceleration when `gravity`."""
        n = self.n
        joints = self.joints
        IA = [None] * (n + 1)
        pA = [None] * (n + 1)
        V, C, SS = kin.V, kin.c, kin.S
        inertia = self.spatial_inertia
        for J in joints:
            b = J.body
            I6 = inertia(kin, b)
            Vb = V[b]
            p = _crf(Vb, _sym_matvec(I6, Vb))
            if f_ext is not None and f_ext[b] is not None:
                p = list(map(sub, p, f_ext[b]))
            IA[b], pA[b] = I6, p
        ops = 60 * n
        U_all = [None] * (n + 1)
        Dinv_all = [None] * (n + 1)
        u_all = [None] * (n + 1)
        for J in reversed(joints):
            b, par, nv = J.body, J.parent, J.nv
            Ib, pb = IA[b], pA[b]
            if nv == 1:
                s = SS[b][0][0]
                s0, s1, s2, s3, s4, s5 = s
                U = _sym_matvec(Ib, s)
                dinv = 1.0 / (s0 * U[0] + s1 * U[1] + s2 * U[2] + s3 * U[3] + s4 * U[4]
                              + s5 * U[5])
                uu = (0.0 if tau is None else tau[J.v0]) - (
                    s0 * pb[0] + s1 * pb[1] + s2 * pb[2] + s3 * pb[3] + s4 * pb[4] + s5 * pb[5])
                U_all[b], Dinv_all[b], u_all[b] = U, dinv, uu
                ops += 36 + 6 + 6 + 1
                if par:
                    W = [x * dinv for x in U]
                    Ia = _sym_rank1_sub(Ib, W, U)
                    Iac = _sym_matvec(Ia, C[b])
                    wu0, wu1, wu2, wu3, wu4, wu5 = (x * uu for x in W)
                    pp = pA[par]
                    pA[par] = [pp[0] + pb[0] + Iac[0] + wu0, pp[1] + pb[1] + Iac[1] + wu1,
                               pp[2] + pb[2] + Iac[2] + wu2, pp[3] + pb[3] + Iac[3] + wu3,
                               pp[4] + pb[4] + Iac[4] + wu4, pp[5] + pb[5] + Iac[5] + wu5]
                    IA[par] = list(map(add, IA[par], Ia))
                    ops += 6 + 21 + 36 + 6
                continue
            S = [col for col, _ in SS[b]]
            U = [_sym_matvec(Ib, col) for col in S]
            D = [[sum(map(mul, S[r], U[k])) for k in range(nv)] for r in range(nv)]
            Dinv = _spd_inverse(D) if nv else []
            uu = [(tau[J.v0 + k] if tau is not None else 0.0) - sum(map(mul, S[k], pb))
                  for k in range(nv)]
            U_all[b], Dinv_all[b], u_all[b] = U, Dinv, uu
            ops += 36 * nv + 6 * nv * nv + nv**3 + 6 * nv
            if par:
                Ia = Ib
                pa = list(pb)
                for k in range(nv):
                    Wk = [sum(U[m][r] * Dinv[m][k] for m in range(nv)) for r in range(6)]
                    Ia = _sym_rank1_sub(Ia, Wk, U[k])
                    pa = [x + w * uu[k] for x, w in zip(pa, Wk)]
                Iac = _sym_matvec(Ia, C[b])
                pA[par] = [x + y + z for x, y, z in zip(pA[par], pa, Iac)]
                IA[par] = list(map(add, IA[par], Ia))
                ops += 6 * nv * nv + 21 * nv + 36 + 6 * nv
        vdot = [0.0] * self.nv
        acc = [None] * (n + 1)
        acc[0] = self.base_acceleration if gravity else (0.0,) * 6
        for J in joints:
            b, nv = J.body, J.nv
            ap, c = acc[J.parent], C[b]
            a0, a1, a2, a3, a4, a5 = (ap[0] + c[0], ap[1] + c[1], ap[2] + c[2], ap[3] + c[3],
                                      ap[4] + c[4], ap[5] + c[5])
            if nv == 1:
                s = SS[b][0][0]
                U = U_all[b]
                qdd = Dinv_all[b] * (u_all[b] - (U[0] * a0 + U[1] * a1 + U[2] * a2 + U[3] * a3
                                                 + U[4] * a4 + U[5] * a5))
                vdot[J.v0] = qdd
                acc[b] = (a0 + s[0] * qdd, a1 + s[1] * qdd, a2 + s[2] * qdd, a3 + s[3] * qdd,
                          a4 + s[4] * qdd, a5 + s[5] * qdd)
                ops += 6 + 1 + 6
                continue
            a = [a0, a1, a2, a3, a4, a5]
            U, Dinv, uu = U_all[b], Dinv_all[b], u_all[b]
            rhs = [uu[k] - sum(map(mul, U[k], a)) for k in range(nv)]
            qdd = [sum(Dinv[k][m] * rhs[m] for m in range(nv)) for k in range(nv)]
            for k in range(nv):
                vdot[J.v0 + k] = qdd[k]
                a = [x + y * qdd[k] for x, y in zip(a, SS[b][k][0])]
            acc[b] = a
            ops += 6 * nv + nv * nv + 6 * nv
        self.ops += ops
        return vdot

    def body_accelerations(self, kin: BodyKinematics, vdot) -> list:
        """Spatial accelerations (ω̇; v̇_O) by body (inertial, at O, gravity not included)."""
        acc = [(0.0,) * 6] * (self.n + 1)
        for J in self.joints:
            a = list(map(add, acc[J.parent], kin.c[J.body]))
            for k, (s, _) in enumerate(kin.S[J.body]):
                qdd = vdot[J.v0 + k]
                a = [x + y * qdd for x, y in zip(a, s)]
            acc[J.body] = a
        return acc

    # --- composite-rigid-body algorithm and recursive Newton–Euler --------------------------
    def subspace_matrix(self, kin: BodyKinematics, b: int) -> np.ndarray:
        """Motion subspace S_b (6, nv_b) of body b's joint, inertial axes at O."""
        return np.array([s for s, _ in kin.S[b]], dtype=float).reshape(-1, 6).T

    def mass_matrix(self, kin: BodyKinematics) -> np.ndarray:
        """Joint-space mass matrix M(q) (nv, nv) by the composite-rigid-body algorithm."""
        n = self.n
        Ic = [None] * (n + 1)
        for J in self.joints:
            Ic[J.body] = _sym_full(self.spatial_inertia(kin, J.body))
        for J in reversed(self.joints):
            if J.parent:
                Ic[J.parent] = Ic[J.parent] + Ic[J.body]
        M = np.zeros((self.nv, self.nv))
        joint_of = {J.body: J for J in self.joints}
        ops = 21 * n
        for J in self.joints:
            if not J.nv:
                continue
            Si = self.subspace_matrix(kin, J.body)
            F = Ic[J.body] @ Si
            i0 = J.v0
            M[i0 : i0 + J.nv, i0 : i0 + J.nv] = Si.T @ F
            ops += 36 * J.nv + 6 * J.nv * J.nv
            anc = J.parent
            while anc:
                A = joint_of[anc]
                if A.nv:
                    block = self.subspace_matrix(kin, anc).T @ F
                    M[A.v0 : A.v0 + A.nv, i0 : i0 + J.nv] = block
                    M[i0 : i0 + J.nv, A.v0 : A.v0 + A.nv] = block.T
                    ops += 6 * A.nv * J.nv
                anc = A.parent
        self.ops += ops
        return M

    def bias(self, kin: BodyKinematics, f_ext=None, gravity: bool = True) -> np.ndarray:
        """C(q, v) (nv,): joint forces that hold v̇ = 0 (velocity products, gravity, f_ext)."""
        n = self.n
        acc = [None] * (n + 1)
        force = [None] * (n + 1)
        acc[0] = self.base_acceleration if gravity else (0.0,) * 6
        for J in self.joints:
            b = J.body
            a = list(map(add, acc[J.parent], kin.c[b]))
            acc[b] = a
            I6 = self.spatial_inertia(kin, b)
            f = list(map(add, _sym_matvec(I6, a), _crf(kin.V[b], _sym_matvec(I6, kin.V[b]))))
            if f_ext is not None and f_ext[b] is not None:
                f = list(map(sub, f, f_ext[b]))
            force[b] = f
        C = np.zeros(self.nv)
        for J in reversed(self.joints):
            b = J.body
            for k, (s, _) in enumerate(kin.S[b]):
                C[J.v0 + k] = sum(map(mul, s, force[b]))
            if J.parent:
                force[J.parent] = list(map(add, force[J.parent], force[b]))
        return C
