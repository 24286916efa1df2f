"""Compiled kernels of the rigid core (numba, machine code cached on disk).

Each kernel takes the model as a namedtuple of arrays built once on the Python side, so that
one macro step of a small model is a handful of Python-level calls. `jit` is the one place
that sets the compilation options:

- ``cache=True``: machine code is written next to the sources (or under ``NUMBA_CACHE_DIR``)
  on the first run and loaded by later processes;
- ``error_model="numpy"``: division by zero gives inf/nan as in numpy, and the callers check
  the results for finiteness, instead of raising inside compiled code.
"""

from __future__ import annotations

import numba

jit = numba.njit(cache=True, nogil=True, error_model="numpy")
