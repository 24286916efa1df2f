"""A strict reader of real Matrix Market files (``.mtx``), dense or sparse.

Why not ``scipy.io.mmread``: its compiled reader can crash the process on a damaged size
line or entry count, and a scenario file must only ever give an error. This reader accepts
what FE codes and ``scipy.io.mmwrite`` write:

- banner ``%%MatrixMarket matrix FORMAT FIELD SYMMETRY`` (case-insensitive), FORMAT
  ``array`` or ``coordinate``, FIELD ``real``, ``double`` or ``integer``, SYMMETRY
  ``general``, ``symmetric`` or ``skew-symmetric``;
- ``%`` comment lines, then the size line ``rows columns`` (array) or
  ``rows columns entries`` (coordinate);
- array: the values column by column (for a symmetric file, the lower triangle only);
  coordinate: one ``row column value`` line per entry, 1-based, duplicates summed.

Every problem raises ValueError with a sentence naming the line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

_FIELDS = ("real", "double", "integer")
_SYMMETRIES = ("general", "symmetric", "skew-symmetric")

#: Largest matrix dimension a file may declare.
MAX_DIMENSION = 100_000
#: Largest number of values (entries) a file may declare.
MAX_VALUES = 20_000_000
#: Largest file read, bytes.
MAX_BYTES = 512 * 1024 * 1024


def read_matrix_market_file(path: Path) -> np.ndarray:
    """:func:`read_matrix_market` of a regular file of at most MAX_BYTES (OSError when it
    cannot be opened, ValueError when it is not a regular file or too large)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > MAX_BYTES:
            raise ValueError(f"{info.st_size} bytes; at most {MAX_BYTES} are read")
        return read_matrix_market(f.read(MAX_BYTES + 1))


def read_matrix_market(text: bytes) -> np.ndarray:
    """The dense (rows, columns) float array a Matrix Market file's bytes describe."""
    lines = text.decode("ascii", errors="replace").splitlines()
    if not lines:
        raise ValueError("line 1: empty file, expected a '%%MatrixMarket matrix' banner")
    banner = lines[0].lower().split()
    if len(banner) != 5 or banner[:2] != ["%%matrixmarket", "matrix"]:
        raise ValueError(f"line 1: expected '%%MatrixMarket matrix FORMAT FIELD SYMMETRY', "
                         f"got {lines[0][:80]!r}")
    layout, kind, symmetry = banner[2:]
    if layout not in ("array", "coordinate"):
        raise ValueError(f"line 1: format {layout!r}: expected 'array' or 'coordinate'")
    if kind not in _FIELDS:
        raise ValueError(f"line 1: field {kind!r}: expected one of {list(_FIELDS)}")
    if symmetry not in _SYMMETRIES:
        raise ValueError(f"line 1: symmetry {symmetry!r}: expected one of {list(_SYMMETRIES)}")

    number = 1
    while number < len(lines) and (not lines[number].strip() or lines[number].startswith("%")):
        number += 1
    if number == len(lines):
        raise ValueError("end of file: expected the size line")
    size = lines[number].split()
    want = 2 if layout == "array" else 3
    if len(size) != want or not all(x.isdigit() for x in size):
        raise ValueError(f"line {number + 1}: expected the size line "
                         f"'{'rows columns' if want == 2 else 'rows columns entries'}', "
                         f"got {lines[number][:80]!r}")
    rows, cols = int(size[0]), int(size[1])
    if not (1 <= rows <= MAX_DIMENSION and 1 <= cols <= MAX_DIMENSION):
        raise ValueError(f"line {number + 1}: dimensions {rows}x{cols}: each must be 1.."
                         f"{MAX_DIMENSION}")
    if symmetry != "general" and rows != cols:
        raise ValueError(f"line {number + 1}: a {symmetry} matrix must be square, got "
                         f"{rows}x{cols}")
    body = " ".join(lines[number + 1:]).split()
    if layout == "array":
        return _array(body, rows, cols, symmetry, number + 2)
    entries = int(size[2])
    if entries > min(MAX_VALUES, rows * cols):
        raise ValueError(f"line {number + 1}: {entries} entries for a {rows}x{cols} matrix")
    return _coordinate(body, rows, cols, entries, symmetry, number + 2)


def _numbers(tokens: list[str], where: int) -> np.ndarray:
    try:
        values = np.array(tokens, dtype=float)
    except ValueError:
        bad = next(t for t in tokens if not _is_number(t))
        raise ValueError(f"from line {where}: {bad[:40]!r} is not a number") from None
    if not np.all(np.isfinite(values)):
        raise ValueError(f"from line {where}: contains non-finite values")
    return values


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _array(tokens, rows, cols, symmetry, where) -> np.ndarray:
    if symmetry == "general":
        if len(tokens) != rows * cols:
            raise ValueError(f"from line {where}: expected {rows * cols} values, got "
                             f"{len(tokens)}")
        return _numbers(tokens, where).reshape(cols, rows).T.copy()
    # The lower triangle column by column (skew-symmetric: without the diagonal). Its order
    # is the row-major order of the upper triangle's (column, row) pairs.
    col, row = np.triu_indices(rows, 0 if symmetry == "symmetric" else 1)
    if len(tokens) != len(row):
        raise ValueError(f"from line {where}: expected {len(row)} values (the lower "
                         f"triangle), got {len(tokens)}")
    a = np.zeros((rows, cols))
    a[row, col] = _numbers(tokens, where)
    return _mirrored(a, symmetry)


def _coordinate(tokens, rows, cols, entries, symmetry, where) -> np.ndarray:
    if len(tokens) != 3 * entries:
        raise ValueError(f"from line {where}: expected {entries} 'row column value' lines "
                         f"({3 * entries} numbers), got {len(tokens)} numbers")
    triples = _numbers(tokens, where).reshape(entries, 3)
    i, j = triples[:, 0], triples[:, 1]
    bad = ~((i == np.floor(i)) & (j == np.floor(j)) & (i >= 1) & (i <= rows)
            & (j >= 1) & (j <= cols))
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"line {where + k}: index ({triples[k, 0]:g}, {triples[k, 1]:g}) is "
                         f"outside the 1..{rows} x 1..{cols} matrix")
    i, j = i.astype(np.int64) - 1, j.astype(np.int64) - 1
    if symmetry != "general" and np.any(j > i):
        k = int(np.argmax(j > i))
        raise ValueError(f"line {where + k}: a {symmetry} file holds the lower triangle only, "
                         f"got entry ({i[k] + 1}, {j[k] + 1})")
    a = np.zeros((rows, cols))
    np.add.at(a, (i, j), triples[:, 2])
    return a if symmetry == "general" else _mirrored(a, symmetry)


def _mirrored(lower: np.ndarray, symmetry: str) -> np.ndarray:
    """The full matrix of a lower triangle (the diagonal kept once)."""
    strict = np.tril(lower, -1)
    sign = 1.0 if symmetry == "symmetric" else -1.0
    return np.tril(lower) + sign * strict.T
