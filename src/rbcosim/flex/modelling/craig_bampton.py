"""Craig–Bampton reduction: boundary DOFs kept physically, interior replaced by modes.

Reduced coordinates are ``q = [u_b; eta]``: the ``n_b`` boundary DOFs (in the order given) and
``k`` fixed-interface modal coordinates. Physical DOFs ``u = T @ q`` with

    T[b, :] = [I, 0]
    T[i, :] = [Psi, Phi]      Psi = -K_ii^-1 K_ib (constraint modes), Phi (fixed-interface modes)

Fixed-interface modes are mass-normalised (``Phi.T M_ii Phi = I``) and ordered by frequency, so
``M_cb[eta, eta] = I`` and ``K_cb[eta, eta] = diag(omega²)``; ``K_cb[b, eta] = 0``.

Sign convention (:func:`mode_signs`). An eigensolver returns ``phi`` or ``-phi`` depending on
the mesh and the LAPACK build, so each mode's sign is fixed here: the mode's physical field
``T[:, j]`` is read through reference blocks of rows, tried in order — the output nodes'
displacements (x, y, z of each output node, in the outputs' order), then every translational DOF
(in DOF order), then every DOF — and the first block in which the mode is not negligible (its
largest value above ``1e-9`` of the mode's largest physical component) decides: the first entry
of that block (in its order) whose magnitude is within ``1e-6`` (relative) of the block's
largest is made positive (the tolerance breaks round-off ties, e.g. mirror-symmetric nodes, by
the first index). A cantilever beam with a tip output: every mode's largest tip displacement is
positive, on any mesh. The sign of a mode of a repeated frequency is fixed the same way, but
which basis of its eigenspace the solver returns is not.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_MECHANISM = 1e-13  # lowest fixed-interface eigenvalue / largest diagonal K_ii / M_ii
#: A mode whose reference block is at most this fraction of its largest component skips it.
SIGN_NEGLIGIBLE = 1e-9
#: Entries within this fraction of a block's largest magnitude tie; the first of them decides.
SIGN_TIE = 1e-6


class _SciPy:
    """scipy, imported at first use: importing the flexible bodies then needs no scipy (about
    0.2 s of a process's start-up); tests may replace the module attribute ``scipy``."""

    @property
    def linalg(self):
        import scipy.linalg

        return scipy.linalg


scipy = _SciPy()


def _sparse():
    """scipy.sparse, imported at first use (as ``scipy`` above)."""
    from scipy import sparse

    return sparse


def _is_sparse(a) -> bool:
    """Whether ``a`` is a scipy.sparse matrix or array, without importing scipy.sparse (none
    exists before it is imported): a dense body's reduction never loads it."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(a)


def _sparse_linalg():
    """scipy.sparse.linalg, imported at first use."""
    from scipy.sparse import linalg

    return linalg


@dataclass(frozen=True)
class CraigBampton:
    """Result of :func:`craig_bampton`.

    Attributes:
        mass: reduced mass ``T.T M T``, shape (n_b + k, n_b + k).
        stiffness: reduced stiffness ``T.T K T``, shape (n_b + k, n_b + k).
        transformation: T, physical = T @ [u_b; eta], shape (n_dof, n_b + k).
        frequencies_hz: fixed-interface natural frequencies of the kept modes, shape (k,), Hz.
        boundary_dofs: physical indices of the boundary DOFs, shape (n_b,).
        interior_dofs: physical indices of the interior DOFs, ascending, shape (n_dof - n_b,).
    """

    mass: np.ndarray
    stiffness: np.ndarray
    transformation: np.ndarray
    frequencies_hz: np.ndarray
    boundary_dofs: np.ndarray
    interior_dofs: np.ndarray

    def reduce(self, matrix: np.ndarray) -> np.ndarray:
        """Project another physical matrix (e.g. damping) onto the reduced coordinates."""
        t = self.transformation
        return t.T @ np.asarray(matrix, dtype=float) @ t


def mode_signs(modes: np.ndarray, references: Sequence[np.ndarray] = ()) -> np.ndarray:
    """Signs (k,) of ±1 that put the modes ``modes`` (n, k; physical fields, columns) in the
    sign convention of the module docstring: ``modes * mode_signs(modes, references)``.

    ``references``: blocks of rows on the n physical coordinates, shape (r, n) each (or
    (..., n), flattened in C order; or a scipy.sparse (r, n) matrix), tried in order before the fallback of every coordinate.
    ``mode_signs(-modes, refs) == -mode_signs(modes, refs)``: either solver output gives the
    same normalised basis.
    """
    modes = np.asarray(modes, dtype=float)
    n, k = modes.shape
    blocks = [r @ modes if _is_sparse(r) else np.asarray(r, dtype=float).reshape(-1, n)
              @ modes for r in references]
    blocks.append(modes)
    size = np.max(np.abs(modes), axis=0) if n else np.zeros(k)
    signs = np.ones(k)
    for j in range(k):
        for values in blocks:
            column = values[:, j]
            if not column.size:
                continue
            largest = float(np.max(np.abs(column)))
            if largest <= SIGN_NEGLIGIBLE * size[j]:
                continue
            pivot = int(np.flatnonzero(np.abs(column) >= (1.0 - SIGN_TIE) * largest)[0])
            signs[j] = 1.0 if column[pivot] > 0.0 else -1.0
            break
    return signs


def craig_bampton(
    mass: np.ndarray, stiffness: np.ndarray, boundary_dofs, n_modes: int | None,
    sign_references: Sequence[np.ndarray] = (),
) -> CraigBampton:
    """Reduce (M, K) keeping ``boundary_dofs`` and the lowest ``n_modes`` fixed-interface modes.

    Args:
        mass: physical mass matrix, symmetric PSD, shape (n, n); dense or sparse.
        stiffness: physical stiffness, symmetric, shape (n, n); K_ii must be positive definite
            (the structure clamped at the boundary is stable).
        boundary_dofs: indices of the boundary DOFs, any order, no repeats.
        n_modes: number of interior modes kept; None keeps all.
        sign_references: blocks of rows on the physical DOFs, shape (r, n) each (the output
            nodes' displacement rows, then the translational DOFs' unit rows): the reference
            components of each mode's sign (:func:`mode_signs`; every DOF is the last resort).

    Raises:
        ValueError: bad indices, too many modes, or K_ii / M_ii not positive definite.
    """
    m, k = _matrix(mass), _matrix(stiffness)
    n = m.shape[0]
    b = np.asarray(boundary_dofs, dtype=np.int64).reshape(-1)
    if b.size and (b.min() < 0 or b.max() >= n or np.unique(b).size != b.size):
        raise ValueError(f"boundary_dofs: expected distinct indices in [0, {n}), got {b.tolist()}")
    interior = np.setdiff1d(np.arange(n), b)
    n_i = interior.size
    if n_modes is None:
        n_modes = n_i
    if n_modes < 0 or n_modes > n_i:
        raise ValueError(f"n_modes: expected 0..{n_i} (interior DOFs), got {n_modes}")
    if n_i:
        k_ii = k[interior][:, interior]
        m_ii = m[interior][:, interior]
        k_ib = k[interior][:, b]
        solve = _factor(k_ii)
        psi = -solve(k_ib.toarray() if _is_sparse(k_ib) else k_ib)
        lam, phi = _fixed_interface_modes(k_ii, m_ii, n_modes, solve)
        # A mechanism (e.g. a beam free to swing about a released rotation) passes the
        # Cholesky test at round-off: its eigenvalue is ~1e-16 of the stiffest DOF's.
        diag_k, diag_m = k_ii.diagonal(), m_ii.diagonal()
        if n_modes and lam[0] <= _MECHANISM * np.max(diag_k / np.maximum(diag_m, 1e-300)):
            raise ValueError(
                "stiffness: the interior block K_ii is not positive definite (the structure "
                "is not held by its boundary DOFs: a mechanism with eigenvalue "
                f"{lam[0]:.3g} 1/s²)")
    else:
        psi, lam, phi = np.zeros((0, b.size)), np.zeros(0), np.zeros((0, 0))
    t = np.zeros((n, b.size + n_modes))
    t[b, : b.size] = np.eye(b.size)
    t[np.ix_(interior, np.arange(b.size))] = psi
    t[np.ix_(interior, np.arange(b.size, b.size + n_modes))] = phi
    t[:, b.size:] *= mode_signs(t[:, b.size:], sign_references)
    m_cb = t.T @ (m @ t)
    k_cb = t.T @ (k @ t)
    m_cb = 0.5 * (m_cb + m_cb.T)
    k_cb = 0.5 * (k_cb + k_cb.T)
    return CraigBampton(
        mass=m_cb,
        stiffness=k_cb,
        transformation=t,
        frequencies_hz=np.sqrt(np.clip(lam, 0.0, None)) / (2 * np.pi),
        boundary_dofs=b,
        interior_dofs=interior,
    )


#: Largest interior block solved densely; above it, sparse LU and shift-invert Lanczos.
DENSE_LIMIT = 2000
#: SuperLU options for K_ii (symmetric positive definite) already in nested-dissection order:
#: that order kept, no row interchanges. On a 100,000-DOF hexahedral bar METIS's nested
#: dissection gives 0.74x the fill of minimum degree on K + K^T (and 0.4x of the default
#: COLAMD) and factors in a quarter of the time (benchmarks/bench_reduction.py).
SYMMETRIC_LU = {"permc_spec": "NATURAL", "diag_pivot_thresh": 0.0,
                "options": {"SymmetricMode": True}}
_NOT_HELD = ("stiffness: the interior block K_ii is not positive definite (the structure is not "
             "held by its boundary DOFs)")
_MASSLESS = ("mass: the interior block M_ii is not positive definite (every interior DOF needs "
             "mass for fixed-interface modes; an FE mass of reduced-integration elements, e.g. "
             "C3D20R, can be singular: use full integration (C3D20) or a lumped mass)")


def _matrix(a):
    """A square matrix: kept sparse (CSC) when sparse and large, dense otherwise."""
    if _is_sparse(a):
        if a.shape[0] > DENSE_LIMIT:
            return _sparse().csc_matrix(a, dtype=float)
        a = a.toarray()
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {a.shape}")
    return a


def nested_dissection(a) -> np.ndarray:
    """A fill-reducing order (permutation of the rows) of the sparse symmetric matrix ``a``:
    METIS's nested dissection of its graph (an edge per off-diagonal nonzero)."""
    import pymetis

    graph = _sparse().csr_matrix(a, dtype=float)
    graph = _sparse().csr_matrix(abs(graph) + abs(graph.T))
    graph.setdiag(0.0)
    graph.eliminate_zeros()
    adjacency = pymetis.CSRAdjacency(graph.indptr, graph.indices)
    order, _ = pymetis.nested_dissection(adjacency)
    return np.asarray(order, dtype=np.int64)


def _factor(k_ii):
    """A solver of K_ii x = y: Cholesky (dense) or sparse LU; ValueError if K_ii is singular
    or (dense) not positive definite."""
    if _is_sparse(k_ii):
        order = nested_dissection(k_ii)
        permuted = _sparse().csc_matrix(k_ii)[order][:, order]
        try:  # symmetric: nested dissection, diagonal pivots (SPD needs no others)
            lu = _sparse_linalg().splu(_sparse().csc_matrix(permuted), **SYMMETRIC_LU)
        except RuntimeError as exc:  # "Factor is exactly singular"
            raise ValueError(_NOT_HELD) from exc

        def solve(y):
            x = np.empty_like(y, dtype=float)
            x[order] = lu.solve(np.asarray(y, dtype=float)[order])
            return x
        return solve
    try:
        chol = scipy.linalg.cho_factor(k_ii)
    except np.linalg.LinAlgError as exc:
        raise ValueError(_NOT_HELD) from exc
    return lambda y: scipy.linalg.cho_solve(chol, y)


def _fixed_interface_modes(k_ii, m_ii, n_modes: int, solve):
    """The lowest ``n_modes`` eigenpairs of K_ii phi = lam M_ii phi, ascending, mass-normalised:
    dense ``eigh``, or (sparse) shift-invert Lanczos about 0 through the factor of K_ii."""
    if not n_modes:
        return np.zeros(0), np.zeros((k_ii.shape[0], 0))
    if not _is_sparse(k_ii):
        try:
            return scipy.linalg.eigh(k_ii, m_ii, subset_by_index=[0, n_modes - 1])
        except np.linalg.LinAlgError as exc:
            raise ValueError(_MASSLESS) from exc
    n = k_ii.shape[0]
    inverse = _sparse_linalg().LinearOperator((n, n), matvec=solve, dtype=float)
    if n_modes >= n - 1:
        raise ValueError(f"n_modes: at most {n - 2} modes of {n} interior DOFs by Lanczos")
    lam, phi = _sparse_linalg().eigsh(k_ii, k=n_modes, M=m_ii, sigma=0.0, which="LM",
                                         OPinv=inverse, tol=0.0)
    order = np.argsort(lam)
    lam, phi = lam[order], phi[:, order]
    norms = np.sqrt(np.einsum("ij,ij->j", phi, m_ii @ phi))
    if np.any(~np.isfinite(lam)) or np.any(norms <= 0.0):
        raise ValueError(_MASSLESS)
    return lam, phi / norms
