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
from rbcosim.minimal.spatial import (
    crm,
    cross3,
    half_turn,
    mv,
    qmul,
    rotation_into,
    vec3,
    vec4,
    vec6,
)
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


@jit
def kinematics(tab, q, v, kin):
    """Fill `kin` from joint coordinates q (nq,) and rates v (nv,); returns the number of
    multiplications done."""
    # namedtuple fields read once: a field read inside a loop costs a reference count
    joint_body, joint_parent, joint_v0, joint_nv = (tab.joint_body, tab.joint_parent,
                                                    tab.joint_v0, tab.joint_nv)
    joint_quat, fixed_shift, marker_a, marker_b = (tab.joint_quat, tab.fixed_shift,
                                                   tab.marker_a, tab.marker_b)
    marker_parent, marker_child = tab.marker_parent, tab.marker_child
    rate_q, rate_kind, rate_side, rate_axis, rate_u = (tab.rate_q, tab.rate_kind,
                                                       tab.rate_side, tab.rate_axis, tab.rate_u)
    Q, R, r, V, c, S = kin.q, kin.R, kin.r, kin.V, kin.c, kin.S
    ops = 0
    for j in range(joint_body.size):
        b, p = joint_body[j], joint_parent[j]
        k0, k1 = joint_v0[j], joint_v0[j] + joint_nv[j]
        sp = mv(R, p, vec3(marker_parent, j))
        o = (r[p, 0] + sp[0], r[p, 1] + sp[1], r[p, 2] + sp[2])
        # relative attitude A ⊗ e(q) ⊗ B and marker shift t_fix + Σ d_k a_k (parent frame)
        iq = joint_quat[j]
        e = (1.0, 0.0, 0.0, 0.0) if iq < 0 else (q[iq], q[iq + 1], q[iq + 2], q[iq + 3])
        d = vec3(fixed_shift, j)
        for k in range(k0, k1):
            i = rate_q[k]
            if i < 0:
                continue
            if rate_kind[k] == TRANSLATION:
                x = q[i]
                d = (d[0] + rate_axis[k, 0] * x, d[1] + rate_axis[k, 1] * x,
                     d[2] + rate_axis[k, 2] * x)
            else:
                e = qmul(e, half_turn(vec3(rate_u, k), q[i]))
        L = qmul(qmul(vec4(marker_a, j), e), vec4(marker_b, j))
        qb = qmul(vec4(Q, p), L)
        rotation_into(qb, R, b)
        t = mv(R, p, d)
        o2 = (o[0] + t[0], o[1] + t[1], o[2] + t[2])
        sc = mv(R, b, vec3(marker_child, j))
        for m in range(4):
            Q[b, m] = qb[m]
        for m in range(3):
            r[b, m] = o2[m] - sc[m]
        # motion subspace, joint velocity S v split by side, velocity product
        svp = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        svc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for k in range(k0, k1):
            parent_side = rate_side[k] == PARENT
            a = mv(R, p if parent_side else b, vec3(rate_axis, k))
            if rate_kind[k] == TRANSLATION:
                s = (0.0, 0.0, 0.0, a[0], a[1], a[2])
            else:
                n = cross3(o if parent_side else o2, a)
                s = (a[0], a[1], a[2], n[0], n[1], n[2])
            x = v[k]
            for m in range(6):
                S[k, m] = s[m]
            if parent_side:
                svp = (svp[0] + s[0] * x, svp[1] + s[1] * x, svp[2] + s[2] * x,
                       svp[3] + s[3] * x, svp[4] + s[4] * x, svp[5] + s[5] * x)
            else:
                svc = (svc[0] + s[0] * x, svc[1] + s[1] * x, svc[2] + s[2] * x,
                       svc[3] + s[3] * x, svc[4] + s[4] * x, svc[5] + s[5] * x)
        Vp = vec6(V, p)
        sv = (svp[0] + svc[0], svp[1] + svc[1], svp[2] + svc[2],
              svp[3] + svc[3], svp[4] + svc[4], svp[5] + svc[5])
        c1, c2 = crm(Vp, sv), crm(svp, svc)
        for m in range(6):
            V[b, m] = Vp[m] + sv[m]
            c[b, m] = c1[m] + c2[m]
        nv = k1 - k0
        ops += 9 + 16 + 19 + 9 + 18 + (30 if nv == 1 else 6 * nv + 48)
    return ops


@jit
def body_accelerations(tab, kin, vdot, base, acc):
    """Spatial accelerations (ω̇; v̇_O) (n+1, 6) into `acc` from v̇ (nv,), base acceleration
    `base` (6,) of the ground (zero, or (0; −g) to include gravity)."""
    joint_body, joint_parent, joint_v0, joint_nv = (tab.joint_body, tab.joint_parent,
                                                    tab.joint_v0, tab.joint_nv)
    c, S = kin.c, kin.S
    for m in range(6):
        acc[0, m] = base[m]
    for j in range(joint_body.size):
        b, p = joint_body[j], joint_parent[j]
        for m in range(6):
            acc[b, m] = acc[p, m] + c[b, m]
        for k in range(joint_v0[j], joint_v0[j] + joint_nv[j]):
            for m in range(6):
                acc[b, m] += S[k, m] * vdot[k]


@jit
def coordinate_rates(tab, q, v, qdot):
    """q̇ (nq,) into `qdot`: equal to the rate for ordinary coordinates, ½ e ⊗ (0, ω) for a
    joint quaternion e (ω in the child marker's axes, rad/s)."""
    rate_q, joint_quat, joint_v0, joint_nv = tab.rate_q, tab.joint_quat, tab.joint_v0, tab.joint_nv
    for k in range(rate_q.size):
        if rate_q[k] >= 0:
            qdot[rate_q[k]] = v[k]
    for j in range(joint_quat.size):
        i = joint_quat[j]
        if i < 0:
            continue
        k = joint_v0[j] + joint_nv[j] - 3  # the angular velocity: last three rates
        q0, q1, q2, q3 = q[i], q[i + 1], q[i + 2], q[i + 3]
        wx, wy, wz = v[k], v[k + 1], v[k + 2]
        qdot[i] = 0.5 * (-q1 * wx - q2 * wy - q3 * wz)
        qdot[i + 1] = 0.5 * (q0 * wx - q3 * wy + q2 * wz)
        qdot[i + 2] = 0.5 * (q3 * wx + q0 * wy - q1 * wz)
        qdot[i + 3] = 0.5 * (-q2 * wx + q1 * wy + q0 * wz)
