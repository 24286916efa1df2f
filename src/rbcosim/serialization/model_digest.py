"""A short digest of a model, carried by every saved state so that a state (a checkpoint, a
session's state file, a flexible solver's checkpoint) is refused by another model.

The digest is BLAKE2b (8 bytes, 16 hex digits) over a canonical walk of the model: dataclass
name and fields in order, arrays by dtype, shape and bytes, numbers by their exact repr. Two
loads of one scenario give the same digest; any changed mass, inertia, joint, force, gravity,
stiffness or mode gives another.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from pathlib import PurePath

import numpy as np

from rbcosim.serialization.codec import StateFormatError, field

_SCALARS = (bool, int, float, str, type(None))


def model_digest(*parts: object) -> str:
    """16 hex digits identifying `parts` (dataclasses, arrays, tuples, dicts, numbers, text)."""
    chunks: list[bytes] = []
    _walk(chunks, parts)
    return hashlib.blake2b(b"".join(chunks), digest_size=8).hexdigest()


def check_digest(d: dict, digest: str, what: str = "model") -> None:
    """StateFormatError when the state `d` was saved from another `what` than the one whose
    digest is `digest` (its field "model")."""
    saved = field(d, "model", str)
    if saved != digest:
        raise StateFormatError(f"state.model: saved from another {what} (digest {saved}; this "
                               f"{what} has {digest})")


def _walk(out: list[bytes], value: object) -> None:
    """Append the canonical bytes of `value` to `out`."""
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        out.append(f"a{a.dtype.str}{a.shape}".encode())
        out.append(a.tobytes())
    elif isinstance(value, (tuple, list)):
        out.append(f"l{len(value)}".encode())
        for item in value:
            _walk(out, item)
    elif isinstance(value, dict):
        out.append(f"m{len(value)}".encode())
        for key in sorted(value, key=repr):
            _walk(out, key)
            _walk(out, value[key])
    elif isinstance(value, np.generic):
        _walk(out, value.item())
    elif isinstance(value, PurePath):
        _walk(out, str(value))
    elif isinstance(value, _SCALARS):
        out.append(f"s{type(value).__name__}:{value!r};".encode())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.append(f"d{type(value).__qualname__}".encode())
        for name in _field_names(type(value)):
            out.append(f"f{name}".encode())
            _walk(out, getattr(value, name))
    else:
        raise TypeError(f"model_digest: cannot digest a {type(value).__name__}")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))
