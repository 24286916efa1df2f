"""Small dense products for the compiled kernels (loops: at a few dozen entries they are
cheaper than a BLAS call)."""

from __future__ import annotations

import numpy as np

from rbcosim.kernels import jit_alloc


@jit_alloc
def matvec(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """m @ x, m (r, c), x (c,) -> (r,)."""
    out = np.zeros(m.shape[0])
    for i in range(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += m[i, j] * x[j]
        out[i] = acc
    return out
