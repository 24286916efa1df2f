"""Interface points of a co-simulation, compiled: outputs, wrench inputs, added mass.

Inside a macro step the wrench at point k is W(t) = Σ_j c_kj (t − t0)^j (+ K_x Δx + K_v Δv
with interface-Jacobian feedback, Δ measured from the reference outputs at t0), inertial or
turned by the body's attitude when given in the body frame. It enters Newton–Euler as F and
τ = M + ρ × F at the centre of mass. An added mass M_a (6, 6) stands for the part −M_a [a_p;
α_p] of the flexible side's wrench and is treated implicitly, as extra body mass.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.kernels.rotation import (
    add,
    at2,
    cr,
    mat,
    mtt,
    multiply,
    mv,
    normalize,
    qmul,
    tuple_matrix,
    vec,
)

#: Highest power of (t − t0) in a wrench polynomial.
MAX_POLY_ORDER = 3


class PointInputs(NamedTuple):
    """The interface points and their inputs; the input arrays are written between steps."""

    body: np.ndarray       # (k,) body of each point
    geometry: np.ndarray   # (k, 7) point in the body frame (m), axes relative to the body (q)
    poly: np.ndarray       # (k, MAX_POLY_ORDER + 1, 6) wrench coefficients, N and N·m
    t0: np.ndarray         # (1,) time the polynomial is centred on, s
    switches: np.ndarray   # (2,) 1 while K_x, K_v apply; 1 when any added mass is set
    gains: np.ndarray      # (k, 2, 6, 6) ∂W/∂x, ∂W/∂v
    reference: np.ndarray  # (k, 13) point outputs at t0
    flags: np.ndarray      # (k, 2) 1 where W is in the body frame; 1 where M_a is in the
                           # point frame (else inertial)
    added: np.ndarray      # (k, 6, 6) added mass


def point_inputs(body, local, axes_q) -> PointInputs:
    """Inputs of k points, all zero; added masses in the point frame."""
    k = len(body)
    geometry = np.hstack([np.asarray(local, float).reshape(k, 3),
                          np.asarray(axes_q, float).reshape(k, 4)])
    flags = np.zeros((k, 2), np.int64)
    flags[:, 1] = 1
    return PointInputs(np.asarray(body, np.int64).reshape(k), geometry,
                       np.zeros((k, MAX_POLY_ORDER + 1, 6)), np.zeros(1), np.zeros(2, np.int64),
                       np.zeros((k, 2, 6, 6)), np.zeros((k, 13)), flags, np.zeros((k, 6, 6)))


@jit
def point_attitude(pts, fr, k, out):
    """Unit quaternion of point k's axes (4,) into `out`."""
    multiply(fr.q[pts.body[k]], pts.geometry[k, 3:], out)
    normalize(out)


@jit
def point_outputs(pts, fr, out):
    """(k, 13) [position, quaternion, velocity, angular velocity], inertial, into `out`."""
    for k in range(pts.body.size):
        b = pts.body[k]
        rho = mv(fr.R[b], pts.geometry[k, :3])
        vel = cr(vec(fr.wi[b]), rho)
        for c in range(3):
            out[k, c] = fr.r[b, c] + rho[c]
            out[k, 7 + c] = fr.v[b, c] + vel[c]
            out[k, 10 + c] = fr.wi[b, c]
        point_attitude(pts, fr, k, out[k, 3:7])


@jit
def point_accelerations(pts, fr, acc, out):
    """(k, 6) point accelerations a + α × ρ + ω × (ω × ρ) and α = R ω̇^b, inertial, from body
    accelerations acc (n, 6) [v̇, ω̇^b]."""
    for k in range(pts.body.size):
        b = pts.body[k]
        rho = mv(fr.R[b], pts.geometry[k, :3])
        alpha = mv(fr.R[b], acc[b - 1, 3:])
        w = vec(fr.wi[b])
        a = add(add(vec(acc[b - 1, :3]), cr(alpha, rho)), cr(w, cr(w, rho)))
        for c in range(3):
            out[k, c] = a[c]
            out[k, 3 + c] = alpha[c]


@jit
def point_wrenches(pts, t, fr, out):
    """(k, 6) input wrenches at time t, inertial, into `out`."""
    tau = t - pts.t0[0]
    order = pts.poly.shape[1]
    for k in range(pts.body.size):
        for c in range(6):
            s = pts.poly[k, order - 1, c]
            for j in range(order - 2, -1, -1):
                s = pts.poly[k, j, c] + tau * s
            out[k, c] = s
    if pts.switches[0]:
        _add_feedback(pts, fr, out)
    for k in range(pts.body.size):
        if pts.flags[k, 0]:
            R = mat(fr.R, pts.body[k])
            f = mtt(R, (out[k, 0], out[k, 1], out[k, 2]))
            m = mtt(R, (out[k, 3], out[k, 4], out[k, 5]))
            for c in range(3):
                out[k, c] = f[c]
                out[k, 3 + c] = m[c]


@jit
def _add_feedback(pts, fr, out):
    """K_x Δx + K_v Δv into the wrenches out (k, 6): Δ of the point outputs since t0, the
    rotation as the small inertial rotation vector 2 vec(q ⊗ q_ref*) (sign of q0 ≥ 0)."""
    for k in range(pts.body.size):
        b = pts.body[k]
        ref = pts.reference[k]
        rho = mtt(mat(fr.R, b), (pts.geometry[k, 0], pts.geometry[k, 1], pts.geometry[k, 2]))
        wi = at2(fr.wi, b)
        pos = add(at2(fr.r, b), rho)
        vel = add(at2(fr.v, b), cr(wi, rho))
        q = qmul((fr.q[b, 0], fr.q[b, 1], fr.q[b, 2], fr.q[b, 3]),
                 (pts.geometry[k, 3], pts.geometry[k, 4], pts.geometry[k, 5], pts.geometry[k, 6]))
        nq = math.sqrt(q[0] ** 2 + q[1] ** 2 + q[2] ** 2 + q[3] ** 2)
        d = qmul((q[0] / nq, q[1] / nq, q[2] / nq, q[3] / nq), (ref[3], -ref[4], -ref[5], -ref[6]))
        sign = -2.0 if d[0] < 0 else 2.0
        delta = (pos[0] - ref[0], pos[1] - ref[1], pos[2] - ref[2],
                 sign * d[1], sign * d[2], sign * d[3],
                 vel[0] - ref[7], vel[1] - ref[8], vel[2] - ref[9],
                 wi[0] - ref[10], wi[1] - ref[11], wi[2] - ref[12])
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += pts.gains[k, 0, r, c] * delta[c] + pts.gains[k, 1, r, c] * delta[6 + c]
            out[k, r] += s


@jit
def add_point_loads(pts, fr, wrenches, force, torque):
    """Point wrenches (k, 6) onto the bodies: F at the centre of mass and τ = M + ρ × F."""
    for k in range(pts.body.size):
        b = pts.body[k]
        tmp = cr(mv(fr.R[b], pts.geometry[k, :3]), wrenches[k, :3])
        for c in range(3):
            force[b - 1, c] += wrenches[k, c]
            torque[b - 1, c] += wrenches[k, 3 + c] + tmp[c]


@jit
def inertial_added_mass(pts, fr, k, out):
    """Added mass (6, 6) of point k in inertial axes into `out`: T M_a Tᵀ with
    T = diag(R_p, R_p) when it is given in the point frame, else M_a."""
    ma = pts.added[k]
    if not pts.flags[k, 1]:
        for r in range(6):
            for c in range(6):
                out[r, c] = ma[r, c]
        return
    b = pts.body[k]
    q = qmul((fr.q[b, 0], fr.q[b, 1], fr.q[b, 2], fr.q[b, 3]),
             (pts.geometry[k, 3], pts.geometry[k, 4], pts.geometry[k, 5], pts.geometry[k, 6]))
    Rp = tuple_matrix(q)
    for r in range(6):
        for c in range(6):
            s = 0.0
            for i in range(3):
                for j in range(3):
                    s += Rp[r % 3][i] * ma[3 * (r // 3) + i, 3 * (c // 3) + j] * Rp[c % 3][j]
            out[r, c] = s


@jit
def add_added_mass(pts, fr, blocks, bias, scratch):
    """Gᵀ M_a G into the bodies' mass blocks (n+1, 6, 6) and −Gᵀ M_a [ω×(ω×ρ); 0] into their
    generalized forces bias (n, 6), with [a_p; α_p] = G [v̇; ω̇^b] + [ω×(ω×ρ); 0] and
    G = [[I, −[ρ]× R], [0, R]]; scratch (3, 6, 6)."""
    G, ma, gt_ma = scratch[0], scratch[1], scratch[2]
    for k in range(pts.body.size):
        for r in range(6):
            for c in range(6):
                G[r, c] = 0.0
        b = pts.body[k]
        R = fr.R[b]
        rho = mv(R, pts.geometry[k, :3])
        for i in range(3):
            G[i, i] = 1.0
            for j in range(3):
                # −[ρ]× R: column j is −ρ × R[:, j]
                G[i, 3 + j] = -(rho[(i + 1) % 3] * R[(i + 2) % 3, j]
                                - rho[(i + 2) % 3] * R[(i + 1) % 3, j])
                G[3 + i, 3 + j] = R[i, j]
        inertial_added_mass(pts, fr, k, ma)
        for r in range(6):
            for c in range(6):
                s = 0.0
                for i in range(6):
                    s += G[i, r] * ma[i, c]
                gt_ma[r, c] = s
        w = vec(fr.wi[b])
        cen = cr(w, cr(w, rho))
        for r in range(6):
            for c in range(6):
                s = 0.0
                for i in range(6):
                    s += gt_ma[r, i] * G[i, c]
                blocks[b, r, c] += s
            bias[b - 1, r] -= gt_ma[r, 0] * cen[0] + gt_ma[r, 1] * cen[1] + gt_ma[r, 2] * cen[2]


@jit
def spd_inverse(a, out, m):
    """Inverse of a symmetric positive definite matrix a (k, k) into out (Gauss–Jordan);
    m (k, k) is scratch."""
    k = a.shape[0]
    for r in range(k):
        for c in range(k):
            m[r, c] = a[r, c]
    for r in range(k):
        for c in range(k):
            out[r, c] = 1.0 if r == c else 0.0
    for p in range(k):
        inv = 1.0 / m[p, p]
        for c in range(k):
            m[p, c] *= inv
            out[p, c] *= inv
        for r in range(k):
            if r != p:
                f = m[r, p]
                for c in range(k):
                    m[r, c] -= f * m[p, c]
                    out[r, c] -= f * out[p, c]
