"""The floating multi-node body's small vector helpers give numpy's own bits: the cross
product (Python floats) as np.cross, the outer product (the ufunc's) as np.outer, over values
from 1e-200 to 1e200, zeros of both signs and non-finite ones included; the frame's lengths
as np.linalg.norm."""

from __future__ import annotations

import numpy as np

from rbcosim.flex.runtime.floating_multi_body import _outer
from rbcosim.flex.runtime.floating_multi_frame import _axes, _cross

rng = np.random.default_rng(2026)


def _vectors(n: int, size: int) -> list[np.ndarray]:
    out = [rng.normal(size=size) * 10.0 ** rng.integers(-200, 200, size=size)
           for _ in range(n)]
    out[0][:] = -0.0
    out[1][0], out[2][-1] = np.inf, np.nan
    return out


def test_the_cross_product_is_numpys():
    with np.errstate(invalid="ignore", over="ignore"):
        for a, b in zip(_vectors(2000, 3), _vectors(2000, 3)[::-1]):
            got = _cross(a, b)
            assert got.dtype == np.float64 and got.shape == (3,)
            assert got.tobytes() == np.cross(a, b).tobytes()


def test_the_outer_product_is_numpys():
    with np.errstate(invalid="ignore", over="ignore"):
        for a, b in zip(_vectors(500, 3), _vectors(500, 9)):
            assert _outer(a, b).tobytes() == np.outer(a, b).tobytes()
            assert _outer(a, a).tobytes() == np.outer(a, a).tobytes()


def test_the_frames_lengths_are_numpys_norms():
    for _ in range(5000):
        scale = 10.0 ** rng.integers(-100, 100)
        d, u = rng.normal(size=3) * scale, rng.normal(size=3)
        _, length, ux, uy = _axes(d, u)
        x = d / np.linalg.norm(d)
        assert length == float(np.linalg.norm(d))
        assert uy == float(np.linalg.norm(u - ux * x))
