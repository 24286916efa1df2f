"""The C core's handles: a model and its data block as one C struct of array views.

Kernels in C (`rbcosim._core`, built from `src/rbcosim/librbcosim` at install) take their model
and scratch arrays as a *handle*: the fields of Python NamedTuples of numpy arrays, flattened
depth-first, each viewed in place. The C struct of that kind declares its members in the same
order (see `librbcosim/rbc_array.h`). Python keeps the NamedTuples as its readable API; writes
by either side are seen by the other without copies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rbcosim import _core


def _leaves(part: Any, out: list) -> None:
    """Append the arrays of `part` depth-first: NamedTuples and tuples are walked, floats and
    ints become 0-d float64 / int64 arrays (read-only values fixed at handle creation)."""
    if isinstance(part, np.ndarray):
        if part.dtype not in (np.float64, np.int64) or not part.flags.c_contiguous:
            raise TypeError(f"core handle: arrays must be C-contiguous float64 or int64, got "
                            f"{part.dtype} with shape {part.shape}")
        out.append(part)
    elif isinstance(part, tuple):
        for item in part:
            _leaves(item, out)
    elif isinstance(part, (bool, int, np.integer)):
        out.append(np.array(int(part), dtype=np.int64))
    elif isinstance(part, (float, np.floating)):
        out.append(np.array(float(part), dtype=np.float64))
    else:
        raise TypeError(f"core handle: cannot view {type(part).__name__} as an array")


def flatten(*parts: Any) -> tuple[np.ndarray, ...]:
    """The arrays of `parts` in the member order of their C struct."""
    out: list[np.ndarray] = []
    for part in parts:
        _leaves(part, out)
    return tuple(out)


def make_handle(kind: str, *parts: Any) -> _core.Handle:
    """A handle of `kind` (a C struct registered by the core) over the arrays of `parts`."""
    return _core.Handle(kind, flatten(*parts))
