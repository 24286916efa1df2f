"""Compiled kernels of the rigid core (numba, machine code cached on disk).

Each kernel takes the model as a namedtuple of arrays built once on the Python side, so that
one macro step of a small model is a handful of Python-level calls. `jit` is the one place
that sets the compilation options:

- ``cache=True``: machine code is written on the first run and loaded by later processes,
  under ``$NUMBA_CACHE_DIR`` (default ``~/.cache/rbcosim/numba``) in a folder named by a hash
  of the package's sources. numba checks only each function's own file, so a change to a
  kernel called from another file could otherwise load stale machine code;
- ``error_model="numpy"``: division by zero gives inf/nan as in numpy, and the callers check
  the results for finiteness, instead of raising inside compiled code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba


def _cache_dir() -> str:
    """Folder of this version's compiled code: the user's choice or ~/.cache, then a hash of
    every source file of the package."""
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "rbcosim", "numba")
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha1()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return os.path.join(base, digest.hexdigest()[:16])


numba.config.CACHE_DIR = _cache_dir()
jit = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
#: for functions that allocate arrays or hold the handle (numba's reference counting on)
jit_alloc = numba.njit(cache=True, nogil=True, error_model="numpy")
