"""Model files: the arrays of a C core handle, written for C programs that run without Python.

The layout is ``librbcosim/model_file.h``'s (host byte order): an 8-byte tag, u32 the number of
arrays, a header of fixed size per tag, then one record per array: u8 type ``d`` (float64) or
``l`` (int64), u8 ndim, 6 zero bytes, i64 shape[ndim], the elements in C order.  Readers:
``rbc_model_file_open`` / ``rbc_model_file_arrays`` (the self-contained FMU's
``resources/model.bin``, a flexible body's file of :mod:`rbcosim.flex.io.body_file`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import numpy as np


def array_records(arrays: Iterable) -> bytes:
    """The records of ``arrays`` (numbers become 0-d arrays; float kinds float64, integer and
    bool kinds int64), in order."""
    out = []
    for leaf in arrays:
        a = np.ascontiguousarray(leaf)
        if a.dtype.kind == "b":
            a = a.astype(np.int64)
        kind = {"f": b"d", "i": b"l", "u": b"l"}[a.dtype.kind]
        if a.ndim > 4:
            raise ValueError(f"model file: at most 4 dimensions, got shape {a.shape}")
        a = a.astype("=f8" if kind == b"d" else "=i8", copy=False)
        out.append(kind + struct.pack("=B6x", a.ndim) + struct.pack(f"={a.ndim}q", *a.shape))
        out.append(a.tobytes())
    return b"".join(out)
