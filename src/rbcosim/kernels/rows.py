"""Constraint rows Φ(q, t) = 0, compiled: values, Φ_t, γ and Jacobian blocks.

Three row kinds cover the four primitives of the joints (the contact rows of rolling disks
and knife edges, kinds 3–5, are in `rbcosim.kernels.contact_rows`):
  plane (0)  Φ = u1 · (p_b − p_a), u1 fixed on body f (f = a for dot2 rows; f = ground with
             u1 = −e_c for the three rows of a point coincidence, so Φ = (p_a − p_b)_c);
  dot1  (1)  Φ = u1 · u2, u1 fixed on a, u2 on b;
  dist  (2)  Φ = ½(|p_b − p_a|² − L²).
Drivers combine auxiliary rows with a motion f(t): a revolute angle rotates two dot1 rows by
f, a prismatic coordinate subtracts f from a plane row. Jacobian blocks ja, jb (6,) act on
[v, ω^b] of bodies a and b, so Φ̇ = ja·ν_a + jb·ν_b + Φ_t and ja·ν̇_a + jb·ν̇_b = γ.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from rbcosim.kernels import jit
from rbcosim.kernels.contact_rows import CONTACT_HEIGHT, contact_row
from rbcosim.kernels.expression import program_jet
from rbcosim.kernels.rotation import add, at2, at3, cr, dot3, mat, mtt, mtt_t, scaled, sub

PLANE, DOT1, DIST = 0, 1, 2
POLYNOMIAL, HARMONIC, SPLINE, EXPRESSION = 0, 1, 2, 3
#: Rows of a values array (4, rows): Φ, Φ_t, γ, Φ̇ of every constraint row.
PHI, PHI_T, GAMMA, PHIDOT = 0, 1, 2, 3


class RowTable(NamedTuple):
    """Primitive rows (main rows first, then the drivers' auxiliary rows) and the drivers."""

    index: np.ndarray    # (p, 4) per primitive row: kind, body a, body b, body f carrying u1
    vectors: np.ndarray  # (p, 5, 3) u1 on f, u2 on b, point on a, point on b (body frames, m),
                         # plane normal (contact rows only, inertial)
    length: np.ndarray   # (p,) distance rows' L, m
    n_main: int          # rows before the auxiliary ones
    drivers: np.ndarray  # (d, 4) per driver: 1 if angle (0 slide), aux row 1, aux row 2, motion kind
    motion_start: np.ndarray  # (d+1,) slices of motion_data
    motion_data: np.ndarray   # coefficients; harmonic: offset, amplitude, Hz, phase;
                              # spline: intervals k, breaks (k+1), coefficients (4, k);
                              # expression: its program (rbcosim.kernels.expression)
    row_bodies: np.ndarray    # (m, 2) bodies a, b of every constraint row (main, then drivers)
    motion_stack: np.ndarray  # (s, 3) scratch: the expression programs' stack of jets


@jit
def motion_at(table, j, t):
    """(f, ḟ, f̈) of driver j's motion at time t."""
    data = table.motion_data[table.motion_start[j]:table.motion_start[j + 1]]
    kind = table.drivers[j, 3]
    if kind == POLYNOMIAL:
        f = fd = fdd = 0.0
        for k in range(data.size - 1, -1, -1):
            fdd = fdd * t + 2.0 * fd
            fd = fd * t + f
            f = f * t + data[k]
        return f, fd, fdd
    if kind == HARMONIC:
        offset, amplitude, frequency, phase = data[0], data[1], data[2], data[3]
        w = 2.0 * math.pi * frequency
        s, c = math.sin(w * t + phase), math.cos(w * t + phase)
        return offset + amplitude * s, amplitude * w * c, -amplitude * w * w * s
    if kind == EXPRESSION:
        f, fd, fdd, _ = program_jet(data, t, table.motion_stack)
        return f, fd, fdd
    k = int(data[0])
    breaks = data[1:k + 2]
    coef = data[k + 2:]  # (4, k) row-major
    i = np.searchsorted(breaks, t, side="right") - 1
    i = min(max(i, 0), k - 1)
    x = t - breaks[i]
    c0, c1, c2, c3 = coef[i], coef[k + i], coef[2 * k + i], coef[3 * k + i]
    return (((c0 * x + c1) * x + c2) * x + c3, (3.0 * c0 * x + 2.0 * c1) * x + c2,
            6.0 * c0 * x + 2.0 * c1)


@jit
def primitive_row(index, vectors, length, R, r, v, wi, i, jac, slot):
    """(Φ, γ) of primitive row i (RowTable index, vectors, length) at the bodies' R, r, v, wi
    (Frames); Jacobian blocks ja, jb into jac[0, slot], jac[1, slot] (jac (2, rows, 6)).
    Arrays come in as arguments and are read element by element into tuples: taking fields
    of namedtuples or views of arrays in a hot loop costs atomic reference counting."""
    kind, a, b, f = index[i, 0], index[i, 1], index[i, 2], index[i, 3]
    if kind >= CONTACT_HEIGHT:
        return contact_row(index, vectors, length, R, r, v, wi, i, jac, slot)
    Ra, Rb = mat(R, a), mat(R, b)
    u1, u2 = mtt(mat(R, f), at3(vectors, i, 0)), mtt(Rb, at3(vectors, i, 1))
    rho_a, rho_b = mtt(Ra, at3(vectors, i, 2)), mtt(Rb, at3(vectors, i, 3))
    wa, wb, wf = at2(wi, a), at2(wi, b), at2(wi, f)
    wa_rho, wb_rho = cr(wa, rho_a), cr(wb, rho_b)
    d = sub(add(at2(r, b), rho_b), add(at2(r, a), rho_a))
    dd = sub(add(at2(v, b), wb_rho), add(at2(v, a), wa_rho))
    zero = (0.0, 0.0, 0.0)
    if kind == DIST:
        phi = 0.5 * (dot3(d, d) - length[i] ** 2)
        gamma = -(dot3(dd, dd) + dot3(d, sub(cr(wb, wb_rho), cr(wa, wa_rho))))
        trans, w_a, w_b = d, scaled(-1.0, cr(rho_a, d)), cr(rho_b, d)
    else:
        wf_u1 = cr(wf, u1)
        wf_wf_u1 = cr(wf, wf_u1)
        if kind == PLANE:
            phi = dot3(u1, d)
            gamma = -(dot3(wf_wf_u1, d) + 2.0 * dot3(wf_u1, dd)
                      + dot3(u1, sub(cr(wb, wb_rho), cr(wa, wa_rho))))
            trans, w_a, w_b = u1, cr(u1, rho_a), cr(rho_b, u1)
            if f == a:
                w_a = add(w_a, cr(u1, d))
        else:
            phi = dot3(u1, u2)
            wb_u2 = cr(wb, u2)
            gamma = -(dot3(wf_wf_u1, u2) + 2.0 * dot3(wf_u1, wb_u2) + dot3(u1, cr(wb, wb_u2)))
            u1_u2 = cr(u1, u2)
            trans, w_a, w_b = zero, (u1_u2 if f == a else zero), scaled(-1.0, u1_u2)
    wa_body, wb_body = mtt_t(Ra, w_a), mtt_t(Rb, w_b)
    for k in range(3):
        jac[0, slot, k] = -trans[k]
        jac[1, slot, k] = trans[k]
        jac[0, slot, 3 + k] = wa_body[k]
        jac[1, slot, 3 + k] = wb_body[k]
    return phi, gamma


@jit
def _rate(jac, slot, v, wb, a, b):
    """ja·ν_a + jb·ν_b of jac[:, slot] with ν = [v, ω^b]."""
    s = 0.0
    for k in range(3):
        s += jac[0, slot, k] * v[a, k] + jac[0, slot, 3 + k] * wb[a, k]
        s += jac[1, slot, k] * v[b, k] + jac[1, slot, 3 + k] * wb[b, k]
    return s


@jit
def evaluate_rows(table, t, fr, values, jac, aux):
    """Φ, Φ_t, γ (values[PHI], values[PHI_T], values[GAMMA]) and Jacobian blocks jac (2, rows,
    6) of every constraint row (main rows, then one per driver) at time t and frames `fr`;
    aux (2, 2, 6) is scratch for the drivers' auxiliary rows."""
    n = table.n_main
    index, vectors, length = table.index, table.vectors, table.length
    R, r, v, wi = fr.R, fr.r, fr.v, fr.wi
    for i in range(n):
        values[PHI, i], values[GAMMA, i] = primitive_row(index, vectors, length, R, r, v, wi, i,
                                                         jac, i)
        values[PHI_T, i] = 0.0
    if table.drivers.shape[0]:
        _driver_rows(table, t, fr, values, jac, aux)


@jit
def _driver_rows(table, t, fr, values, jac, aux):
    """The drivers' rows, after the main rows, from their auxiliary rows and motions."""
    n = table.n_main
    index, vectors, length = table.index, table.vectors, table.length
    R, r, v, wi, wb = fr.R, fr.r, fr.v, fr.wi, fr.wb
    for j in range(table.drivers.shape[0]):
        f, fd, fdd = motion_at(table, j, t)
        i1, i2 = table.drivers[j, 1], table.drivers[j, 2]
        a, b = table.index[i1, 1], table.index[i1, 2]
        out = n + j
        phi_a, gam_a = primitive_row(index, vectors, length, R, r, v, wi, i1, aux, 0)
        if table.drivers[j, 0]:
            phi_b, gam_b = primitive_row(index, vectors, length, R, r, v, wi, i2, aux, 1)
            rate_a = _rate(aux, 0, v, wb, a, b)
            rate_b = _rate(aux, 1, v, wb, a, b)
            c, s = math.cos(f), math.sin(f)
            values[PHI, out] = phi_a * c - phi_b * s
            values[PHI_T, out] = -(phi_a * s + phi_b * c) * fd
            values[GAMMA, out] = (c * gam_a - s * gam_b + 2.0 * (rate_a * s + rate_b * c) * fd
                                  + (phi_a * c - phi_b * s) * fd * fd
                                  + (phi_a * s + phi_b * c) * fdd)
            for side in range(2):
                for k in range(6):
                    jac[side, out, k] = c * aux[side, 0, k] - s * aux[side, 1, k]
        else:
            values[PHI, out], values[PHI_T, out] = phi_a - f, -fd
            values[GAMMA, out] = gam_a + fdd
            for side in range(2):
                for k in range(6):
                    jac[side, out, k] = aux[side, 0, k]


@jit
def velocity_errors(table, fr, values, jac):
    """Φ̇ = ja·ν_a + jb·ν_b + Φ_t of every row into values[PHIDOT]."""
    bodies, v, wb = table.row_bodies, fr.v, fr.wb
    for i in range(values.shape[1]):
        values[PHIDOT, i] = _rate(jac, i, v, wb, bodies[i, 0], bodies[i, 1]) + values[PHI_T, i]
