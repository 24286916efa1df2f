"""The multiplier system (J M⁻¹ Jᵀ) μ = rhs, compiled, as a banded LDLᵀ factorisation.

Rows i and j of J M⁻¹ Jᵀ couple only when they share a moving body, so with the rows ordered
by reverse Cuthill–McKee the matrix is banded: a chain's bandwidth stays about ten rows for
any length, and the factorisation costs O(m w²) — dense for a small mechanism, linear in size
for a long one. The pattern (pairs of rows sharing a body) is found once when the system is
built; M⁻¹ is block diagonal, one (6, 6) block per body (row 0, the ground, is zero).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from rbcosim.kernels import jit, jit_alloc


class SchurPattern(NamedTuple):
    """Kept constraint rows in band order and the row pairs that share a moving body."""

    rows: np.ndarray    # (m, 3) per band row: index in the list of constraint rows, body a, b
    pairs: np.ndarray   # (p, 4) band rows i >= j sharing a body: i, side of i (0 = a, 1 = b),
                        # j, side of j
    width: int          # bandwidth w: J M⁻¹ Jᵀ[i, j] = 0 for |i − j| > w


@jit_alloc
def _pairs(a, b, n_bodies):
    """All (i, side_i, j, side_j), i >= j, of rows sharing a moving body."""
    m = a.size
    count = np.zeros(n_bodies + 1, np.int64)
    for i in range(m):
        count[a[i]] += 1
        count[b[i]] += 1
    start = np.zeros(n_bodies + 2, np.int64)
    for k in range(n_bodies + 1):
        start[k + 1] = start[k] + count[k]
    fill = start[:-1].copy()
    entry_row = np.empty(2 * m, np.int64)
    entry_side = np.empty(2 * m, np.int64)
    for i in range(m):
        for side, body in ((0, a[i]), (1, b[i])):
            entry_row[fill[body]] = i
            entry_side[fill[body]] = side
            fill[body] += 1
    total = 0
    for body in range(1, n_bodies + 1):
        c = count[body]
        total += c * (c + 1) // 2
    out = np.empty((total, 4), np.int64)
    k = 0
    for body in range(1, n_bodies + 1):
        for p in range(start[body], start[body + 1]):
            for q in range(start[body], start[body + 1]):
                rp, rq = entry_row[p], entry_row[q]
                if rq < rp or (rq == rp and q <= p):
                    out[k, 0], out[k, 1] = rp, entry_side[p]
                    out[k, 2], out[k, 3] = rq, entry_side[q]
                    k += 1
    return out[:k]


def schur_pattern(row_bodies: np.ndarray, kept: np.ndarray, n_bodies: int) -> SchurPattern:
    """The band ordering and coupling pairs of the kept rows `kept` (indices into the
    constraint rows, whose bodies a, b are row_bodies (rows, 2))."""
    a, b = row_bodies[kept, 0], row_bodies[kept, 1]
    m = kept.size
    if m:
        incidence = sp.csr_matrix(
            (np.ones(2 * m), (np.repeat(np.arange(m), 2), np.column_stack([a, b]).ravel())),
            shape=(m, n_bodies + 1))[:, 1:]
        perm = reverse_cuthill_mckee((incidence @ incidence.T).tocsr(), symmetric_mode=True)
        perm = np.asarray(perm, dtype=np.int64)
    else:
        perm = np.zeros(0, np.int64)
    order = kept[perm].astype(np.int64)
    a, b = row_bodies[order, 0].astype(np.int64), row_bodies[order, 1].astype(np.int64)
    pairs = _pairs(a, b, n_bodies)
    width = int(np.max(pairs[:, 0] - pairs[:, 2])) if pairs.size else 0
    return SchurPattern(np.column_stack([order, a, b]).astype(np.int64), pairs, width)


@jit
def factor(pattern, kept, minv, mj, band, scale):
    """LDLᵀ factor of the Jacobi-scaled J M⁻¹ Jᵀ into `band` (m, w+1): band[i, 0] = D_i,
    band[i, k] = L[i, i − k], from the rows' Jacobian blocks kept (2, m, 6) in band order;
    scale (m,) receives 1/√diag; mj (m, 2, 6) receives M⁻¹ jaᵀ, M⁻¹ jbᵀ of each row. The scaling matters: a thin rod's axial inertia puts 1e10 next to 1 on
    the diagonal. Returns False when a pivot vanishes (dependent rows: a singularity)."""
    m = pattern.rows.shape[0]
    w = pattern.width
    for i in range(m):
        for side in range(2):
            body = pattern.rows[i, 1 + side]
            for r in range(6):
                s = 0.0
                if body > 0:
                    for c in range(6):
                        s += minv[body, r, c] * kept[side, i, c]
                mj[i, side, r] = s
    for i in range(m):
        for k in range(w + 1):
            band[i, k] = 0.0
    for p in range(pattern.pairs.shape[0]):
        i, side_i, j, side_j = pattern.pairs[p, 0], pattern.pairs[p, 1], pattern.pairs[p, 2], \
            pattern.pairs[p, 3]
        s = 0.0
        for c in range(6):
            s += kept[side_i, i, c] * mj[j, side_j, c]
        band[i, i - j] += s
    for i in range(m):
        if not band[i, 0] > 0.0:
            return False
        scale[i] = 1.0 / math.sqrt(band[i, 0])
    for i in range(m):
        for k in range(min(w, i) + 1):
            band[i, k] *= scale[i] * scale[i - k]
    for i in range(m):
        for j in range(max(0, i - w), i + 1):
            s = band[i, i - j]
            for k in range(max(0, i - w), j):
                s -= band[i, i - k] * band[k, 0] * band[j, j - k]
            if i == j:
                if s == 0.0 or not math.isfinite(s):
                    return False
                band[i, 0] = s
            else:
                band[i, i - j] = s / band[j, 0]
    return True


@jit
def solve(pattern, band, scale, rhs, out):
    """μ with (J M⁻¹ Jᵀ) μ = rhs from the factor of `factor` (rhs and out may be the same)."""
    m = rhs.size
    w = pattern.width
    for i in range(m):
        s = rhs[i] * scale[i]
        for k in range(max(0, i - w), i):
            s -= band[i, i - k] * out[k]
        out[i] = s
    for i in range(m):
        out[i] /= band[i, 0]
    for i in range(m - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, min(m, i + w + 1)):
            s -= band[k, k - i] * out[k]
        out[i] = s
    for i in range(m):
        out[i] *= scale[i]


@jit
def apply_correction(pattern, mj, mu, acc):
    """acc (n, 6) −= M⁻¹ Jᵀ μ, over the moving bodies."""
    for i in range(mu.size):
        for side in range(2):
            body = pattern.rows[i, 1 + side]
            if body > 0:
                for r in range(6):
                    acc[body - 1, r] -= mj[i, side, r] * mu[i]
