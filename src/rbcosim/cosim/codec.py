"""Byte encoding of solver states with msgpack: arrays as raw little-endian float64."""

from __future__ import annotations

import msgpack
import numpy as np

STATE_FORMAT = 1


def pack_array(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a, dtype="<f8")
    return {"shape": list(a.shape), "data": a.tobytes()}


def unpack_array(d: dict) -> np.ndarray:
    return np.frombuffer(d["data"], dtype="<f8").reshape(d["shape"]).copy()


def write_atomically(path, blob: bytes) -> None:
    """Write `blob` to `path` through a temporary file and a rename, so that a crash while
    writing leaves the previous file (a checkpoint, say) whole."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(blob)
    tmp.replace(path)


def pack_state(fields: dict) -> bytes:
    """Serialize a dict of arrays / floats / strings / nested dicts to bytes."""
    def enc(v):
        if isinstance(v, np.ndarray):
            return {"__array__": pack_array(v)}
        if isinstance(v, dict):
            return {k: enc(x) for k, x in v.items()}
        return v

    return msgpack.packb({"format": STATE_FORMAT, "fields": enc(fields)}, use_bin_type=True)


def unpack_state(blob: bytes) -> dict:
    """Inverse of pack_state; raises ValueError on a malformed blob."""
    try:
        data = msgpack.unpackb(blob, raw=False, strict_map_key=True)
    except Exception as exc:
        raise ValueError(f"not a saved rbcosim state: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise ValueError("not a saved rbcosim state (unknown format)")

    def dec(v):
        if isinstance(v, dict):
            if "__array__" in v:
                return unpack_array(v["__array__"])
            return {k: dec(x) for k, x in v.items()}
        return v

    return dec(data["fields"])
