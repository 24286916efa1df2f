"""What a structure file declares, read from its headers only (no array is loaded).

A Matrix Market ``.mtx`` declares its matrix on the size line; a ``.npy`` in its header, and a
``.npz`` each array in the header of its ``.npy`` member, read through the zip's decompressor a
few hundred bytes at a time, so a file that would inflate to gigabytes costs nothing to size.
The loaders (:mod:`rbcosim.flex.io.matrices_io`, :mod:`rbcosim.flex.io.convert`) and the run limits
(:mod:`rbcosim.limits`) compare these sizes with their bounds before anything is allocated.
"""

from __future__ import annotations

import math
import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from rbcosim.errors import ScenarioError

#: Most bytes a structure file's arrays may declare, as loaded (dense float64 for .mtx): a
#: reader bound that holds whatever the run limits say (a larger model does not fit this tool).
MAX_DECLARED_BYTES = 16 * 2**30
#: Most header bytes read from a .mtx before its size line (comments included).
_MTX_HEADER_BYTES = 1 << 20
#: Most members a .npz may have (a structure file has at most 14 keys).
_NPZ_MEMBERS = 64
_NPY_HEADER_BYTES = 10_000
#: What a damaged archive or array header raises inside zipfile, zlib and numpy's reader.
_DAMAGED = (ValueError, EOFError, KeyError, NotImplementedError, OverflowError, RuntimeError,
            SyntaxError, struct.error, zipfile.BadZipFile, zlib.error)


@dataclass(frozen=True)
class DeclaredArray:
    """One array a file declares: its name (key, or '' for a .mtx), shape and bytes loaded."""

    name: str
    shape: tuple[int, ...]
    nbytes: int

    def describe(self) -> str:
        size = "x".join(str(n) for n in self.shape)
        return f"{self.name} {size}" if self.name else size


class DeclaredSizeError(ValueError):
    """A file's header cannot be read; the loader reports the file in its own words."""


def declared_arrays(path: Path) -> list[DeclaredArray]:
    """The arrays `path` declares (a .npy, a zip of them (.npz), else a Matrix Market file, by
    its first bytes); DeclaredSizeError (OSError for a missing file) when its header cannot be
    read."""
    path = Path(path)
    with _open_regular(path) as f:
        magic = f.read(6)
        f.seek(0)
        try:
            if magic == b"\x93NUMPY":
                return [_npy_array(path.stem, f)]
            if magic.startswith(b"PK"):
                return _npz_arrays(f)
        except _DAMAGED as exc:
            raise DeclaredSizeError(str(exc)) from None
        return [_mtx_array(f.read(_MTX_HEADER_BYTES))]


def _open_regular(path: Path):
    """`path` opened for reading without blocking (a FIFO cannot stall the caller), if it is a
    regular file; DeclaredSizeError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise DeclaredSizeError("not a regular file")
    return f


def refuse_oversized(path: Path, label: str) -> None:
    """ScenarioError naming `label`, what `path` declares and the bound when its arrays need
    more than MAX_DECLARED_BYTES once loaded; a header that cannot be read passes (the loader
    then reports the file)."""
    try:
        arrays = declared_arrays(path)
    except (OSError, DeclaredSizeError):
        return
    total = sum(a.nbytes for a in arrays)
    if total > MAX_DECLARED_BYTES:
        raise ScenarioError(
            f"{label}: declares {', '.join(a.describe() for a in arrays if a.shape)}: {total} "
            f"bytes once loaded, over the {MAX_DECLARED_BYTES} bytes "
            f"({MAX_DECLARED_BYTES // 2**30} GiB) a structure file may hold")


def _mtx_array(head: bytes) -> DeclaredArray:
    """The dense matrix a Matrix Market file's size line declares (8 bytes per entry)."""
    lines = head.decode("ascii", errors="replace").splitlines()
    if not lines or not lines[0].lower().startswith("%%matrixmarket"):
        raise DeclaredSizeError("no Matrix Market banner")
    for line in lines[1:]:
        if line.strip() and not line.startswith("%"):
            words = line.split()
            if len(words) in (2, 3) and all(w.isdigit() and len(w) < 19 for w in words):
                rows, cols = int(words[0]), int(words[1])
                return DeclaredArray("", (rows, cols), 8 * rows * cols)
            break
    raise DeclaredSizeError("no size line in the header")


def _npz_arrays(f) -> list[DeclaredArray]:
    """Each .npy member's declared shape and bytes, from its header."""
    with zipfile.ZipFile(f) as archive:
        members = archive.infolist()
        if len(members) > _NPZ_MEMBERS:
            raise DeclaredSizeError(f"{len(members)} members")
        out = []
        for info in members:
            with archive.open(info) as member:
                out.append(_npy_array(info.filename.removesuffix(".npy"), member))
        return out


def _npy_array(name: str, member) -> DeclaredArray:
    from numpy.lib import format as npy  # here: `rbcosim serve` imports this module lean

    version = npy.read_magic(member)
    read = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}.get(version)
    if read is None:
        raise DeclaredSizeError(f"{name}: .npy format version {version}")
    shape, _, dtype = read(member, max_header_size=_NPY_HEADER_BYTES)
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise DeclaredSizeError(f"{name}: shape {shape}")
    return DeclaredArray(name, tuple(shape), math.prod(shape) * dtype.itemsize)
