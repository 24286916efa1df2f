"""Compiled tree kinematics: body poses, spatial velocities, motion subspaces, velocity
products and q̇ from the joint coordinates q and rates v (layout in `rbcosim.minimal.tree`,
joint data in `rbcosim.minimal.tables`).

Spatial vectors are in inertial axes at the inertial origin O (see `spatial`). With S_k the
motion-subspace column of rate k, fixed in the parent (S_P) or in the child (S_C):

    V_i = V_p + S_i v_i,    a_i = a_p + S_i v̇_i + c_i,
    c_i = V_p ×m (S_i v_i) + (S_P v_P) ×m (S_C v_C),

which gives the velocity-product term c_i exactly for every joint type.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.minimal.spatial import cross3, crm, half_turn, mv, qmul, rotation_into
from rbcosim.minimal.tables import PARENT, TRANSLATION


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


@jit
def empty_kinematics(n_bodies, nv):
    """BodyKinematics for n moving bodies and nv rates, ground row set."""
    k = n_bodies + 1
    q = np.zeros((k, 4))
    R = np.zeros((k, 3, 3))
    q[0, 0] = 1.0
    for i in range(3):
        R[0, i, i] = 1.0
    return BodyKinematics(q, R, np.zeros((k, 3)), np.zeros((k, 6)), np.zeros((k, 6)),
                          np.zeros((nv, 6)))


@jit
def kinematics(tab, q, v, kin):
    """Fill `kin` from joint coordinates q (nq,) and rates v (nv,); returns the number of
    multiplications done."""
    ops = 0
    for j in range(tab.joint_body.size):
        b, p = tab.joint_body[j], tab.joint_parent[j]
        k0, k1 = tab.joint_v0[j], tab.joint_v0[j] + tab.joint_nv[j]
        Rp = kin.R[p]
        sp = mv(Rp, tab.marker_parent[j])
        o = (kin.r[p, 0] + sp[0], kin.r[p, 1] + sp[1], kin.r[p, 2] + sp[2])
        # relative attitude A ⊗ e(q) ⊗ B and marker shift t_fix + Σ d_k a_k (parent frame)
        iq = tab.joint_quat[j]
        e = (1.0, 0.0, 0.0, 0.0) if iq < 0 else (q[iq], q[iq + 1], q[iq + 2], q[iq + 3])
        d0, d1, d2 = tab.fixed_shift[j, 0], tab.fixed_shift[j, 1], tab.fixed_shift[j, 2]
        for k in range(k0, k1):
            i = tab.rate_q[k]
            if i < 0:
                continue
            if tab.rate_kind[k] == TRANSLATION:
                a = tab.rate_axis[k]
                d0, d1, d2 = d0 + a[0] * q[i], d1 + a[1] * q[i], d2 + a[2] * q[i]
            else:
                e = qmul(e, half_turn(tab.rate_u[k], q[i]))
        ma, mb = tab.marker_a[j], tab.marker_b[j]
        L = qmul(qmul((ma[0], ma[1], ma[2], ma[3]), e), (mb[0], mb[1], mb[2], mb[3]))
        qp = kin.q[p]
        qb = qmul((qp[0], qp[1], qp[2], qp[3]), L)
        R = kin.R[b]
        rotation_into(qb, R)
        t = mv(Rp, (d0, d1, d2))
        o2 = (o[0] + t[0], o[1] + t[1], o[2] + t[2])
        sc = mv(R, tab.marker_child[j])
        for m in range(4):
            kin.q[b, m] = qb[m]
        for m in range(3):
            kin.r[b, m] = o2[m] - sc[m]
        # motion subspace, joint velocity S v split by side, velocity product
        svp = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        svc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for k in range(k0, k1):
            parent_side = tab.rate_side[k] == PARENT
            a = mv(Rp if parent_side else R, tab.rate_axis[k])
            if tab.rate_kind[k] == TRANSLATION:
                s = (0.0, 0.0, 0.0, a[0], a[1], a[2])
            else:
                m_ = cross3(o if parent_side else o2, a)
                s = (a[0], a[1], a[2], m_[0], m_[1], m_[2])
            for m in range(6):
                kin.S[k, m] = s[m]
            x = v[k]
            if parent_side:
                svp = (svp[0] + s[0] * x, svp[1] + s[1] * x, svp[2] + s[2] * x,
                       svp[3] + s[3] * x, svp[4] + s[4] * x, svp[5] + s[5] * x)
            else:
                svc = (svc[0] + s[0] * x, svc[1] + s[1] * x, svc[2] + s[2] * x,
                       svc[3] + s[3] * x, svc[4] + s[4] * x, svc[5] + s[5] * x)
        Vp = kin.V[p]
        sv = (svp[0] + svc[0], svp[1] + svc[1], svp[2] + svc[2],
              svp[3] + svc[3], svp[4] + svc[4], svp[5] + svc[5])
        c1, c2 = crm(Vp, sv), crm(svp, svc)
        for m in range(6):
            kin.V[b, m] = Vp[m] + sv[m]
            kin.c[b, m] = c1[m] + c2[m]
        nv = k1 - k0
        ops += 9 + 16 + 19 + 9 + 18 + (30 if nv == 1 else 6 * nv + 48)
    return ops


@jit
def body_accelerations(tab, kin, vdot, base, acc):
    """Spatial accelerations (ω̇; v̇_O) (n+1, 6) into `acc` from v̇ (nv,), base acceleration
    `base` (6,) of the ground (zero, or (0; −g) to include gravity)."""
    acc[0] = base
    for j in range(tab.joint_body.size):
        b, p = tab.joint_body[j], tab.joint_parent[j]
        for m in range(6):
            acc[b, m] = acc[p, m] + kin.c[b, m]
        for k in range(tab.joint_v0[j], tab.joint_v0[j] + tab.joint_nv[j]):
            for m in range(6):
                acc[b, m] += kin.S[k, m] * vdot[k]


@jit
def coordinate_rates(tab, q, v, qdot):
    """q̇ (nq,) into `qdot`: equal to the rate for ordinary coordinates, ½ e ⊗ (0, ω) for a
    joint quaternion e (ω in the child marker's axes, rad/s)."""
    for k in range(tab.rate_q.size):
        if tab.rate_q[k] >= 0:
            qdot[tab.rate_q[k]] = v[k]
    for j in range(tab.joint_body.size):
        i = tab.joint_quat[j]
        if i < 0:
            continue
        k = tab.joint_v0[j] + tab.joint_nv[j] - 3  # the angular velocity: last three rates
        q0, q1, q2, q3 = q[i], q[i + 1], q[i + 2], q[i + 3]
        wx, wy, wz = v[k], v[k + 1], v[k + 2]
        qdot[i] = 0.5 * (-q1 * wx - q2 * wy - q3 * wz)
        qdot[i + 1] = 0.5 * (q0 * wx - q3 * wy + q2 * wz)
        qdot[i + 2] = 0.5 * (q3 * wx + q0 * wy - q1 * wz)
        qdot[i + 3] = 0.5 * (-q2 * wx + q1 * wy + q0 * wz)
