"""A short digest of a model, carried by every saved state so that a state (a checkpoint, a
session's state file, a flexible solver's checkpoint) is refused by another model.

The digest is BLAKE2b (8 bytes, 16 hex digits) over a canonical walk of the model: dataclass
name and fields in order, arrays by dtype, shape and bytes, numbers by their exact repr. Two
loads of one scenario give the same digest; any changed mass, inertia, joint, force, gravity,
stiffness or mode gives another.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import PurePath

import numpy as np

from rbcosim.cosim.codec import StateFormatError, field

_SCALARS = (bool, int, float, str, type(None))


def model_digest(*parts: object) -> str:
    """16 hex digits identifying `parts` (dataclasses, arrays, tuples, dicts, numbers, text)."""
    h = hashlib.blake2b(digest_size=8)
    _feed(h, parts)
    return h.hexdigest()


def check_digest(d: dict, digest: str, what: str = "model") -> None:
    """StateFormatError when the state `d` was saved from another `what` than the one whose
    digest is `digest` (its field "model")."""
    saved = field(d, "model", str)
    if saved != digest:
        raise StateFormatError(f"state.model: saved from another {what} (digest {saved}; this "
                               f"{what} has {digest})")


def _feed(h, value: object) -> None:
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"a{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"d{type(value).__qualname__}".encode())
        for f in dataclasses.fields(value):
            h.update(f"f{f.name}".encode())
            _feed(h, getattr(value, f.name))
    elif isinstance(value, (tuple, list)):
        h.update(f"l{len(value)}".encode())
        for item in value:
            _feed(h, item)
    elif isinstance(value, dict):
        h.update(f"m{len(value)}".encode())
        for key in sorted(value, key=repr):
            _feed(h, key)
            _feed(h, value[key])
    elif isinstance(value, np.generic):
        _feed(h, value.item())
    elif isinstance(value, PurePath):
        _feed(h, str(value))
    elif isinstance(value, _SCALARS):
        h.update(f"s{type(value).__name__}:{value!r};".encode())
    else:
        raise TypeError(f"model_digest: cannot digest a {type(value).__name__}")
