"""The multiplier system (J M⁻¹ Jᵀ) μ = rhs as a banded LDLᵀ factorisation (in C:
`librbcosim/rigid/multipliers.c`).

Rows i and j of J M⁻¹ Jᵀ couple only when they share a moving body, so with the rows ordered
by reverse Cuthill–McKee the matrix is banded: a chain's bandwidth stays about ten rows for
any length, and the factorisation costs O(m w²) — dense for a small mechanism, linear in size
for a long one. The pattern (pairs of rows sharing a body) is found once when the system is
built; M⁻¹ is block diagonal, one (6, 6) block per body (row 0, the ground, is zero).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle


class SchurPattern(NamedTuple):
    """Kept constraint rows in band order and the row pairs that share a moving body."""

    rows: np.ndarray    # (m, 3) per band row: index in the list of constraint rows, body a, b
    pairs: np.ndarray   # (p, 4) band rows i >= j sharing a body: i, side of i (0 = a, 1 = b),
                        # j, side of j
    width: int          # bandwidth w: J M⁻¹ Jᵀ[i, j] = 0 for |i − j| > w


def _pairs(a: np.ndarray, b: np.ndarray, n_bodies: int) -> np.ndarray:
    """All (i, side_i, j, side_j), i >= j, of rows sharing a moving body: per body, its row
    entries in row order, every pair (p, q) of them with q's row before p's (or q = p)."""
    entries: list[list[tuple[int, int]]] = [[] for _ in range(n_bodies + 1)]
    for i in range(a.size):
        entries[int(a[i])].append((i, 0))
        entries[int(b[i])].append((i, 1))
    out = []
    for body in range(1, n_bodies + 1):
        rows = entries[body]
        for p, (rp, sidep) in enumerate(rows):
            for q, (rq, sideq) in enumerate(rows):
                if rq < rp or (rq == rp and q <= p):
                    out.append((rp, sidep, rq, sideq))
    return np.array(out, dtype=np.int64).reshape(-1, 4)


def schur_pattern(row_bodies: np.ndarray, kept: np.ndarray, n_bodies: int) -> SchurPattern:
    """The band ordering and coupling pairs of the kept rows `kept` (indices into the
    constraint rows, whose bodies a, b are row_bodies (rows, 2))."""
    a, b = row_bodies[kept, 0], row_bodies[kept, 1]
    m = kept.size
    if m:
        import scipy.sparse as sp  # here: starting a process without scipy saves ~0.2 s
        from scipy.sparse.csgraph import reverse_cuthill_mckee

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


def solve(pattern: SchurPattern, band: np.ndarray, scale: np.ndarray, rhs: np.ndarray,
          out: np.ndarray) -> None:
    """μ with (J M⁻¹ Jᵀ) μ = rhs from the factor left in a workspace (band, scale = its
    work.band, work.solve[2]); rhs and out may be the same."""
    _core.band_solve(make_handle("pattern", pattern), band, scale, rhs, out)
