"""The sparse Craig–Bampton path (SuperLU of K_ii in symmetric mode, shift-invert Lanczos)
against the dense one (Cholesky, LAPACK eigh) on a small solid, and its refusal of a
structure its boundary does not hold."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

cb_module = importlib.import_module("rbcosim.flex.modelling.craig_bampton")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_reduction import assemble  # the benchmark's C3D8 bar


def _clamped_bar():
    k, m, _, sets = assemble(8, 2, 3)  # no repeated frequency
    boundary = (3 * sets["END0"][:, None] + np.arange(3)).ravel()
    return k, m, boundary


def test_sparse_reduction_equals_the_dense_one(monkeypatch):
    """A C3D8 bar clamped at one end: the sparse path's frequencies, reduced matrices and
    transformation equal the dense path's (1e-9 relative)."""
    k, m, boundary = _clamped_bar()
    dense = cb_module.craig_bampton(m, k, boundary, 6)
    monkeypatch.setattr(cb_module, "DENSE_LIMIT", 0)
    sparse = cb_module.craig_bampton(m, k, boundary, 6)
    assert sparse.frequencies_hz == pytest.approx(dense.frequencies_hz, rel=1e-9)
    for a, b in ((sparse.mass, dense.mass), (sparse.stiffness, dense.stiffness),
                 (sparse.transformation, dense.transformation)):
        assert np.max(np.abs(a - b)) <= 1e-9 * np.max(np.abs(b))


def test_sparse_reduction_refuses_a_structure_its_boundary_does_not_hold(monkeypatch):
    """Held at one node only (three translations), the bar can rotate about it: K_ii is
    singular, and the sparse path says so (as the dense one does)."""
    k, m, _ = _clamped_bar()
    monkeypatch.setattr(cb_module, "DENSE_LIMIT", 0)
    with pytest.raises(ValueError, match="the interior block K_ii is not positive definite"):
        cb_module.craig_bampton(scipy.sparse.csr_matrix(m), k, [0, 1, 2], 4)


def test_the_sparse_factor_solves_in_nested_dissection_order_with_less_fill():
    """K_ii's factor (nested dissection, METIS) solves as a direct sparse solve does, and its
    order fills less than the matrix's own (lexicographic) order on a 3D grid Laplacian."""
    import scipy.sparse
    import scipy.sparse.linalg

    from rbcosim.flex.modelling import craig_bampton as cb

    n = 14
    line = scipy.sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    eye = scipy.sparse.identity(n)
    grid = (scipy.sparse.kron(scipy.sparse.kron(line, eye), eye)
            + scipy.sparse.kron(scipy.sparse.kron(eye, line), eye)
            + scipy.sparse.kron(scipy.sparse.kron(eye, eye), line)).tocsc()
    rhs = np.random.default_rng(3).standard_normal((n**3, 2))
    x = cb._factor(grid)(rhs)
    np.testing.assert_allclose(x, scipy.sparse.linalg.spsolve(grid, rhs), rtol=0, atol=1e-10)
    order = cb.nested_dissection(grid)
    assert np.array_equal(np.sort(order), np.arange(n**3))

    def fill(a):
        lu = scipy.sparse.linalg.splu(a.tocsc(), **cb.SYMMETRIC_LU)
        return lu.L.nnz + lu.U.nnz

    assert fill(grid[order][:, order]) < 0.7 * fill(grid)
