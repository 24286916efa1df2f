"""Seeded mutations of the files rbcosim reads: scenario TOML, state blobs, .npz and .mtx.

Each generator yields `Case(kind, label, data, must_refuse)`: `data` is the mutated file's
bytes; `must_refuse` says the mutation is corruption by construction (a NaN, a ragged array,
a damaged checksummed blob), so accepting it is a bug. Other mutations (a flipped byte in a
scenario's text, say) may yield another valid file; the test then checks what was accepted.
"""

from __future__ import annotations

import copy
import io
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rbcosim.serialization.codec import STATE_TAG, pack_state, unpack_state


@dataclass
class Case:
    kind: str
    label: str
    data: bytes
    must_refuse: bool


# --- byte-level mutations (any file) -------------------------------------------------------

def byte_mutations(rng: random.Random, blob: bytes) -> tuple[str, bytes]:
    """One of: truncation, a flipped bit, an overwritten run, inserted or appended bytes."""
    n = len(blob)
    choice = rng.randrange(5)
    if choice == 0:
        cut = rng.randrange(n)
        return f"truncate@{cut}", blob[:cut]
    i = rng.randrange(n)
    if choice == 1:
        return f"bitflip@{i}", blob[:i] + bytes([blob[i] ^ (1 << rng.randrange(8))]) + blob[i + 1:]
    if choice == 2:
        run = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        return f"overwrite@{i}", blob[:i] + run + blob[i + len(run):]
    if choice == 3:
        return f"insert@{i}", blob[:i] + bytes([rng.randrange(256)]) + blob[i:]
    return "append", blob + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))


# --- TOML (a tiny writer for the scenario subset: tables, arrays, scalars) -----------------

def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f'"{k}" = {_toml_value(x)}' for k, x in v.items()) + "}"


def dump_toml(data: dict, prefix: str = "") -> str:
    lines = [f'"{k}" = {_toml_value(v)}' for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            name = f'{prefix}."{k}"' if prefix else f'"{k}"'
            lines.append(f"\n[{name}]")
            lines.append(dump_toml(v, name))
    return "\n".join(lines)


def _leaves(data, path=()) -> list[tuple[tuple, object]]:
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _leaves(v, (*path, k))
    else:
        out.append((path, data))
    return out


def _is_numeric(v) -> bool:
    if isinstance(v, list):
        return bool(v) and all(_is_numeric(x) for x in v)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


BAD_NUMBERS = (math.nan, math.inf, -math.inf, 1e300, -1e300, 1e101)


def _corrupt_value(rng: random.Random, value) -> tuple[str, object, bool]:
    """(label, replacement, must_refuse) for one numeric leaf or vector."""
    choice = rng.randrange(6)
    if choice == 0:  # non-finite or absurd magnitude
        bad = rng.choice(BAD_NUMBERS)
        if isinstance(value, list):
            v = copy.deepcopy(value)
            flat = v if not isinstance(v[0], list) else v[rng.randrange(len(v))]
            flat[rng.randrange(len(flat))] = bad
            return f"huge-in-vector {bad}", v, True
        return f"huge {bad}", bad, True
    if choice == 1 and isinstance(value, list) and not isinstance(value[0], list) and len(value) > 1:
        k = rng.randrange(1, len(value))
        return "ragged", [value[:k], value[k:]], True
    if choice == 2 and isinstance(value, int):
        return "int-as-float", float(value) + rng.choice((0.0, 0.5, 1e9)), False
    if choice == 3:
        return "type-swap", rng.choice(["text", True, {"a": 1}, [], [[1.0], ["x"]]]), False
    if choice == 4 and isinstance(value, list):
        return "wrong-length", value + [1.0] if rng.random() < 0.5 else value[:-1], False
    return "negate", (-value if not isinstance(value, list) else value), False


def scenario_cases(rng: random.Random, name: str, text: str, raw: dict, n: int) -> Iterator[Case]:
    """`n` mutations of one scenario: half structural (on the parsed data), half bytes."""
    numeric = [(p, v) for p, v in _leaves(raw) if _is_numeric(v)]
    leaves = _leaves(raw)
    for i in range(n):
        if i % 2 == 0 and numeric:
            path, value = rng.choice(numeric) if rng.random() < 0.8 else rng.choice(leaves)
            if not _is_numeric(value):
                label, new, refuse = "type-swap", rng.choice([1.5, [1.0, 2.0], nan_list()]), False
            else:
                label, new, refuse = _corrupt_value(rng, value)
            data = copy.deepcopy(raw)
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = new
            yield Case("scenario", f"{name}:{'.'.join(path)}:{label}",
                       dump_toml(data).encode(), refuse)
        else:
            label, blob = byte_mutations(rng, text.encode())
            yield Case("scenario", f"{name}:{label}", blob, False)


def nan_list() -> list:
    return [math.nan, 0.0, 0.0]


# --- state blobs (checksummed: every change must be refused) -------------------------------

def _walk_arrays(d: dict, path=()) -> list[tuple]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += _walk_arrays(v, (*path, k))
        else:
            out.append(((*path, k), v))
    return out


def _set(d: dict, path: tuple, value) -> None:
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def _delete(d: dict, path: tuple) -> None:
    for k in path[:-1]:
        d = d[k]
    del d[path[-1]]


def _bad_field(rng: random.Random, value):
    """A replacement for one field that no saved state of the same model holds."""
    if isinstance(value, np.ndarray):
        choice = rng.randrange(4)
        if choice == 0 and value.size:
            v = value.copy()
            v.flat[rng.randrange(v.size)] = rng.choice((np.nan, np.inf, -np.inf))
            return "nan-in-array", v
        if choice == 1:
            return "wrong-shape", np.zeros(tuple(s + 1 for s in value.shape) or (2,))
        if choice == 2:
            return "flattened", np.zeros(value.size + 1)
        return "type-swap", rng.choice(["x", 1.0, b"\0" * 8, True])
    if isinstance(value, bool):
        return "type-swap", "yes"
    if isinstance(value, (int, float)):
        return "nan-scalar", rng.choice((math.nan, math.inf, "1.0", None, [1.0]))
    if isinstance(value, bytes):
        label, blob = byte_mutations(rng, value) if value else ("empty", b"x")
        return f"inner-{label}", blob
    return "type-swap", "text" if value is None else 3.5


def state_cases(rng: random.Random, kind: str, blob: bytes, n: int, nested=(),
                optional=()) -> Iterator[Case]:
    """`n` corruptions of a valid state blob: byte damage, or a field replaced and the blob
    re-packed with a valid checksum (which the shape/type/finiteness checks must catch).
    `nested`: field paths holding inner blobs, mutated inside and re-packed; `optional`: the
    first keys of fields a valid state may lack (never deleted)."""
    fields = unpack_state(blob)
    paths = _walk_arrays(fields)
    for i in range(n):
        if i % 2 == 0:
            label, data = byte_mutations(rng, blob)
            if data == blob:
                data = blob[:-1]
            yield Case(kind, label, data, True)
            continue
        d = copy.deepcopy(fields)
        path, value = rng.choice(paths)
        refuse = True
        if path in nested and rng.random() < 0.5:
            inner = list(state_cases(rng, kind, value, 2, optional=optional))[1]
            _set(d, path, inner.data)
            label, refuse = f"nested {inner.label}", inner.must_refuse
        elif path[0] not in optional and rng.random() < 0.15:
            _delete(d, path)
            label = "missing"
        else:
            label, new = _bad_field(rng, value)
            _set(d, path, new)
            # Raw float bytes with finite values in place of others are a plausible state.
            refuse = not (isinstance(value, bytes) and not value.startswith(STATE_TAG)
                          and len(new) == len(value))
        yield Case(kind, f"{'.'.join(path)}:{label}", pack_state(d), refuse)


# --- structure files ----------------------------------------------------------------------

def _npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def npz_cases(rng: random.Random, blob: bytes, n: int) -> Iterator[Case]:
    """Byte damage of an .npz (may be accepted only if it loads the same matrices) and
    re-saved archives with one array corrupted (always refused)."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    matrices = [k for k in ("M", "K", "C") if k in arrays]
    for i in range(n):
        if i % 2 == 0:
            label, data = byte_mutations(rng, blob)
            yield Case("npz", label, data, False)
            continue
        a = dict(arrays)
        key = rng.choice(matrices)
        m = a[key].astype(float).copy()
        choice = rng.randrange(6)
        if choice == 0:
            m.flat[rng.randrange(m.size)] = rng.choice((np.nan, np.inf, 1e300))
            label = "nan"
        elif choice == 1:
            m = m[:, :-1]
            label = "non-square"
        elif choice == 2:
            m = np.zeros((m.shape[0] + 1, m.shape[0] + 1))
            label = "wrong-size"
        elif choice == 3:
            m = m.copy()
            m[0, -1] += 1.0 + abs(m).max()
            label = "asymmetric"
        elif choice == 4:
            m = np.array(["x"] * m.size).reshape(m.shape)
            label = "strings"
        else:
            m = m.ravel()
            label = "flat"
        a[key] = m
        yield Case("npz", f"{key}:{label}", _npz_bytes(a), True)


def mtx_cases(rng: random.Random, text: bytes, n: int) -> Iterator[Case]:
    """Byte damage of a Matrix Market file (may be accepted if it still reads as a valid
    matrix), and entries replaced by NaN or huge values (always refused)."""
    lines = text.decode().splitlines()
    data_rows = [i for i, line in enumerate(lines) if line and not line.startswith("%")][1:]
    for i in range(n):
        if i % 2 == 0:
            label, data = byte_mutations(rng, text)
            yield Case("mtx", label, data, False)
            continue
        row = rng.choice(data_rows)
        parts = lines[row].split()
        parts[-1] = rng.choice(("nan", "inf", "-inf", "1e300"))
        out = list(lines)
        out[row] = " ".join(parts)
        yield Case("mtx", f"line{row}:{parts[-1]}", ("\n".join(out) + "\n").encode(), True)
