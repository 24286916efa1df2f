"""The compilation options of the minimal route's kernels.

`kernel` is `rbcosim.kernels.jit` (numba, machine code cached on disk, NumPy's error model)
without numba's reference-counting runtime. With it, a compiled function increments and
decrements the reference count of every array it is passed, namedtuple members included, on
each call: two atomic operations per array, which took half the time of a double-pendulum
step (a tree's tables hold 19 arrays). A kernel therefore allocates nothing: its callers
(`jit` functions) hand it every array it writes.
"""

from __future__ import annotations

import numba

kernel = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
