"""The Matrix Market reader against scipy.io.mmwrite/mmread (an independent implementation)
on every layout it accepts, and its errors on damaged files."""

from __future__ import annotations

import io

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from rbcosim.flex.io.matrix_market import read_matrix_market


def _written(a, **kw) -> bytes:
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, a, **kw)
    return buf.getvalue()


def _scipy(data: bytes) -> np.ndarray:
    a = scipy.io.mmread(io.BytesIO(data))
    return a.toarray() if hasattr(a, "toarray") else np.asarray(a)


rng = np.random.default_rng(7)
general = rng.normal(size=(4, 3))
sym = general @ general.T
skew = np.triu(rng.normal(size=(4, 4)), 1)
skew = skew - skew.T


@pytest.mark.parametrize("matrix, kw", [
    (general, {}),                                     # array general
    (sym, {}),                                         # array symmetric (lower triangle)
    (skew, {"symmetry": "skew-symmetric"}),            # array skew-symmetric
    (scipy.sparse.coo_matrix(general), {}),            # coordinate general
    (scipy.sparse.coo_matrix(sym), {}),                # coordinate symmetric
    (scipy.sparse.coo_matrix(skew), {"symmetry": "skew-symmetric"}),
    (np.arange(6).reshape(2, 3), {}),                  # integer field
])
def test_reads_what_scipy_writes_as_scipy_reads_it(matrix, kw):
    data = _written(matrix, precision=17, **kw)
    np.testing.assert_array_equal(read_matrix_market(data), _scipy(data))


def test_coordinate_duplicates_are_summed_like_scipy():
    data = b"%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.5\n1 1 2.0\n2 1 -1\n"
    np.testing.assert_array_equal(read_matrix_market(data), [[3.5, 0.0], [-1.0, 0.0]])


@pytest.mark.parametrize("data, message", [
    (b"", "line 1: empty file"),
    (b"%%MatrixMarket tensor array real general\n1 1\n1\n", "line 1: expected"),
    (b"%%MatrixMarket matrix array complex general\n1 1\n1 0\n", "field 'complex'"),
    (b"%%MatrixMarket matrix array real hermitian\n1 1\n1\n", "symmetry 'hermitian'"),
    (b"%%MatrixMarket matrix array real general\n% c\n", "expected the size line"),
    (b"%%MatrixMarket matrix array real general\n2 -2\n1\n", "line 2: expected the size line"),
    (b"%%MatrixMarket matrix array real general\n0 2\n", "line 2: dimensions 0x2"),
    (b"%%MatrixMarket matrix array real general\n99999999 2\n", "dimensions 99999999x2"),
    (b"%%MatrixMarket matrix array real symmetric\n2 3\n1 2 3\n", "must be square"),
    (b"%%MatrixMarket matrix array real general\n2 2\n1 2 3\n", "expected 4 values, got 3"),
    (b"%%MatrixMarket matrix array real general\n1 2\n1 x\n", "'x' is not a number"),
    (b"%%MatrixMarket matrix array real general\n1 1\nnan\n", "non-finite"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2 9\n", "9 entries for a 2x2"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n", "line 3: index (3, 1)"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1.5 1 1.0\n", "index (1.5, 1)"),
    (b"%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1.0\n", "lower triangle"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n", "expected 2 'row"),
])
def test_damaged_files_are_refused_with_the_line(data, message):
    with pytest.raises(ValueError) as info:
        read_matrix_market(data)
    assert message in str(info.value)
