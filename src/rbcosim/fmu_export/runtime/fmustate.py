"""The FMU state: its serialized form and the checks a state passes before anything is restored.

A serialized state is ``RBCFMUS2``, a format version, the lengths of a JSON header and of the
solver's own bytes, both, then a BLAKE2b digest of everything before it. :func:`decode_state`
checks the whole blob (tag, version, lengths, digest, header structure and types) and
:func:`check_state` checks a state against the FMU's variable table (sizes, types, finiteness),
so that a state that is refused has changed nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from typing import Any

from rbcosim.fmu_export.table import VariableTable, value_type

STATE_MAGIC = b"RBCFMUS2"
STATE_VERSION = 3  # 3: joint_angles
_HEAD = struct.Struct("<8sIQQ")  # magic, version, header size, solver size
_DIGEST_SIZE = 32
#: Header keys and their JSON types; "solver" is the size of the solver bytes or None.
_FIELDS = {
    "values": list,
    "overrides": dict,
    "flex_reported": list,
    "wrench_pending": bool,
    "mode": str,
    "solver": (int, type(None)),
    #: the joint angles' memory (joint_outputs.Memory) or None
    "joint_angles": (list, type(None)),
}
#: Modes whose states hold no solver (the model is built at exitInitializationMode).
UNBUILT_MODES = frozenset({"INSTANTIATED", "INITIALIZATION"})
BUILT_MODES = frozenset({"STEP", "TERMINATED"})


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST_SIZE).digest()


def encode_state(state: dict[str, Any]) -> bytes:
    """Serialize an FMU state. JSON keeps floats exactly (shortest repr round-trips), NaN
    inputs included."""
    solver = state["solver"]
    header = {key: state[key] for key in _FIELDS if key != "solver"}
    header["solver"] = None if solver is None else len(solver)
    text = json.dumps(header).encode("utf-8")
    body = _HEAD.pack(STATE_MAGIC, STATE_VERSION, len(text), len(solver or b"")) + text
    body += solver or b""
    return body + _digest(body)


def decode_state(blob: bytes) -> dict[str, Any]:
    """Inverse of :func:`encode_state`; ValueError, naming the defect, for any other bytes."""
    blob = bytes(blob)
    if len(blob) < _HEAD.size + _DIGEST_SIZE:
        raise ValueError(f"serialized FMU state is truncated ({len(blob)} bytes)")
    magic, version, header_size, solver_size = _HEAD.unpack_from(blob)
    if magic != STATE_MAGIC:
        raise ValueError("serialized FMU state does not come from an rbcosim FMU")
    if version != STATE_VERSION:
        raise ValueError(f"serialized FMU state has format version {version}, "
                         f"this FMU reads {STATE_VERSION}")
    if _HEAD.size + header_size + solver_size + _DIGEST_SIZE != len(blob):
        raise ValueError("serialized FMU state is truncated or has trailing bytes")
    body, digest = blob[:-_DIGEST_SIZE], blob[-_DIGEST_SIZE:]
    if _digest(body) != digest:
        raise ValueError("serialized FMU state is corrupted (checksum mismatch)")
    start = _HEAD.size
    try:
        header = json.loads(body[start : start + header_size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"serialized FMU state has an unreadable header: {exc}") from None
    _check_fields(header)
    if (header["solver"] is None) != (solver_size == 0) or (
        header["solver"] is not None and header["solver"] != solver_size
    ):
        raise ValueError("serialized FMU state: solver size does not match its header")
    solver = body[start + header_size :]
    return {**header, "solver": None if header["solver"] is None else solver}


def _check_fields(header: Any) -> None:
    if not isinstance(header, dict) or set(header) != set(_FIELDS):
        raise ValueError("serialized FMU state: header fields are not an rbcosim FMU state's")
    for key, kind in _FIELDS.items():
        if not isinstance(header[key], kind) or (kind is not bool and isinstance(header[key], bool)):
            raise ValueError(f"serialized FMU state: {key} has the wrong type")


def check_state(state: Any, table: VariableTable, parameter_keys: set[str]) -> None:
    """ValueError unless ``state`` can be restored into an FMU with ``table``."""
    if not isinstance(state, dict) or not set(_FIELDS) <= set(state):
        raise ValueError("not an FMU state of this FMU")
    values = state["values"]
    if not isinstance(values, list) or len(values) != max(v.vr for v in table.variables) + 1:
        raise ValueError("the FMU state belongs to an FMU with a different variable table")
    for v in table.variables:
        _check_value(v, values[v.vr])
    overrides = state["overrides"]
    if not isinstance(overrides, dict) or not all(
        key in parameter_keys and isinstance(value, str) for key, value in overrides.items()
    ):
        raise ValueError("the FMU state's parameter overrides are not this FMU's parameters")
    joints = state["flex_reported"]
    if not isinstance(joints, list) or not set(joints) <= set(table.joint_names):
        raise ValueError("the FMU state names joints this FMU does not have")
    mode, solver = state["mode"], state["solver"]
    if not (
        (mode in UNBUILT_MODES and solver is None)
        or (mode in BUILT_MODES and isinstance(solver, bytes) and solver)
    ):
        raise ValueError(f"the FMU state's mode {mode!r} does not match its solver state")


def _check_value(v: Any, value: Any) -> None:
    if not v.is_real:
        if value_type(value) != v.type:
            raise ValueError(f"the FMU state's {v.name} is not a {v.type} value: {value!r}")
        return
    # Inputs may hold what the master set (doStep refuses non-finite ones); the rest not.
    finite = v.causality != "input" and v.kind != "acceleration"
    if not (isinstance(value, float) and (math.isfinite(value) or not finite)):
        kind = "finite float" if finite else "float"
        raise ValueError(f"the FMU state's {v.name} is not a {kind}: {value!r}")
