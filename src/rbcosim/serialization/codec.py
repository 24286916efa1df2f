"""Byte encoding of solver states with msgpack: arrays as raw little-endian float64.

A blob is ``TAG | version (1 byte) | BLAKE2b-256 of the payload (32 bytes) | payload``; the
payload is msgpack of the fields. `unpack_state` checks the whole blob (tag, version, checksum,
array shapes and sizes, finiteness of every number) before it hands anything back, so a caller
that validates the fields' shapes before applying them never applies a corrupt state.
"""

from __future__ import annotations

import glob
import hashlib
import math
import os
from pathlib import Path

import msgpack
import numpy as np

STATE_TAG = b"RBCOSIM-STATE\0"
STATE_FORMAT = 2
_DIGEST = 32
_HEADER = len(STATE_TAG) + 1 + _DIGEST
#: Largest array a state may hold (elements); a bigger shape is corruption, not a model.
MAX_ARRAY_SIZE = 1 << 31


class StateFormatError(ValueError):
    """A state blob is damaged or not an rbcosim state; the message says what is wrong."""


def pack_array(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a, dtype="<f8")
    return {"shape": list(a.shape), "data": a.tobytes()}


def unpack_array(d: dict, key: str = "array") -> np.ndarray:
    shape, data = d.get("shape"), d.get("data")
    if (set(d) != {"shape", "data"} or not isinstance(shape, list) or not isinstance(data, bytes)
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n for n in shape)):
        raise StateFormatError(f"{key}: malformed array")
    size = math.prod(shape)
    if size > MAX_ARRAY_SIZE or size * 8 != len(data):
        raise StateFormatError(f"{key}: shape {shape} does not match {len(data)} bytes of data")
    a = np.frombuffer(data, dtype="<f8").reshape(shape).copy()
    if not np.isfinite(a).all():
        raise StateFormatError(f"{key}: non-finite values")
    return a


def write_atomically(path, blob: bytes) -> None:
    """Write `blob` to `path` through a temporary file and a rename, so that a crash while
    writing leaves the previous file (a checkpoint, say) whole; the temporary file of an earlier
    writer of `path` that was killed while writing is removed."""
    path = Path(path)
    remove_stale_temporaries(path.parent, glob.escape(path.name))
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_stale_temporaries(directory, pattern: str = "*") -> list[Path]:
    """Remove the temporary files `write_atomically` leaves behind when its process is killed
    mid-write (NAME.PID.tmp, NAME matching `pattern`, in `directory`) whose process no longer
    runs; a live process's file is left alone. Returns the paths removed."""
    removed = []
    for tmp in Path(directory).glob(f"{pattern}.*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not _running(int(pid)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or a number no process has): left alone
    return True


def _encode(v):
    if isinstance(v, np.ndarray):
        return {"__array__": pack_array(v)}
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def pack_state(fields: dict) -> bytes:
    """Serialize a dict of arrays / floats / strings / nested dicts to a checked blob."""
    payload = msgpack.packb(_encode(fields), use_bin_type=True)
    digest = hashlib.blake2b(payload, digest_size=_DIGEST).digest()
    return STATE_TAG + bytes([STATE_FORMAT]) + digest + payload


def _decode(v, key: str):
    if isinstance(v, dict):
        if "__array__" in v:
            if len(v) != 1 or not isinstance(v["__array__"], dict):
                raise StateFormatError(f"{key}: malformed array")
            return unpack_array(v["__array__"], key)
        return {k: _decode(x, f"{key}.{k}") for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x, f"{key}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, float) and not math.isfinite(v):
        raise StateFormatError(f"{key}: non-finite value {v}")
    return v


def unpack_state(blob: bytes) -> dict:
    """Inverse of pack_state; StateFormatError (a ValueError) names what is wrong."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise StateFormatError(f"not a saved rbcosim state (got {type(blob).__name__})")
    blob = bytes(blob)
    if not blob.startswith(STATE_TAG):
        raise StateFormatError("not a saved rbcosim state (no rbcosim state tag)")
    if len(blob) < _HEADER:
        raise StateFormatError(f"truncated state ({len(blob)} bytes)")
    version = blob[len(STATE_TAG)]
    if version != STATE_FORMAT:
        raise StateFormatError(f"state format version {version}, this rbcosim reads {STATE_FORMAT}")
    digest, payload = blob[len(STATE_TAG) + 1:_HEADER], blob[_HEADER:]
    if hashlib.blake2b(payload, digest_size=_DIGEST).digest() != digest:
        raise StateFormatError("checksum mismatch (the state is damaged or truncated)")
    try:
        data = msgpack.unpackb(payload, raw=False, strict_map_key=True, max_ext_len=0)
    except Exception as exc:  # noqa: BLE001 - a checksummed payload that msgpack refuses
        raise StateFormatError(f"undecodable state: {exc}") from None
    if not isinstance(data, dict):
        raise StateFormatError("not a saved rbcosim state (no field table)")
    return _decode(data, "state")


def field(d: dict, key: str, kind: type | tuple = (int, float), where: str = "state"):
    """d[key] if it is of `kind` (a bool is not a number); StateFormatError otherwise."""
    if not isinstance(d, dict) or key not in d:
        raise StateFormatError(f"{where}.{key}: missing")
    v = d[key]
    if isinstance(v, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise StateFormatError(f"{where}.{key}: expected {kind}, got a boolean")
    if not isinstance(v, kind):
        raise StateFormatError(f"{where}.{key}: expected {kind}, got {type(v).__name__}")
    return v


def array(d: dict, key: str, shape: tuple, where: str = "state") -> np.ndarray:
    """d[key] as an array of `shape` (None in it: any length)."""
    a = field(d, key, np.ndarray, where)
    if a.ndim != len(shape) or any(s is not None and n != s for n, s in zip(a.shape, shape)):
        raise StateFormatError(f"{where}.{key}: expected shape {shape}, got {a.shape}")
    return a
