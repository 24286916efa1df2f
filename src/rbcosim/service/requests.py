"""Reply envelopes, and the checked fields of a request's content (errors as ProtocolError
with the protocol's codes, naming the field)."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import Any

import numpy as np

from rbcosim import PROTOCOL_VERSION, _core
from rbcosim.service.errors import ProtocolError
from rbcosim.service.wire import wire_kind

Peer = Hashable
Replies = list[tuple[Any, dict]]


def _reply(
    msg: dict, status: str, content: dict | None = None, error: tuple[str, str] | None = None
) -> dict:
    reply = {
        "version": PROTOCOL_VERSION,
        "msg_id": f"r-{next(_reply_ids)}",
        "msg_type": f"{msg.get('msg_type', 'error')}_reply",
        "session": msg.get("session"),
        "parent_id": msg.get("msg_id"),
        "status": status,
        "content": content if content is not None else {},
    }
    if error is not None:
        reply["error"] = {"code": error[0], "message": error[1]}
    return reply


_reply_ids = itertools.count(1)


def next_reply_number() -> int:
    """The number N the next reply's msg_id "r-N" takes; the C step path numbers its own
    replies on from it and hands the numbering back (`number_replies_from`)."""
    return next(_reply_ids)


def number_replies_from(n: int) -> None:
    """Number the next replies' msg_ids from "r-n" on."""
    global _reply_ids
    _reply_ids = itertools.count(n)


def error_reply(msg: dict | None, exc: ProtocolError) -> dict:
    """An error reply to ``msg`` (or to an undecodable message when ``msg`` is None)."""
    return _reply(msg or {"msg_type": "error"}, "error", error=(exc.code, exc.message))


def ok_reply(msg: dict, content: dict) -> dict:
    return _reply(msg, "ok", content)


def content_field(content: dict, key: str, types: type | tuple, *, required: bool = True, default=None):
    value = content.get(key)
    if value is None:
        if required:
            raise ProtocolError("invalid_argument", f"the field {key!r} is required")
        return default
    if type(value) is types:  # (a bool only where a boolean is asked for)
        return value
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise ProtocolError("invalid_argument", f"{key!r} must not be a boolean")
    if not isinstance(value, types):
        wanted = types if isinstance(types, tuple) else (types,)
        names = " or ".join(_WANTED_KINDS.get(t, t.__name__) for t in wanted)
        raise ProtocolError("invalid_argument", f"{key!r} must be {names}, got {wire_kind(value)}")
    return value


#: The msgpack kind each Python type of a content field stands for, in error messages.
_WANTED_KINDS = {str: "a string", int: "an integer", float: "a float", bool: "a boolean",
                 dict: "a map", list: "an array", bytes: "bin (raw bytes)"}


#: Step indices are integers in [0, 2**53]: exact as float64 and far beyond any run.
MAX_STEP_INDEX = 2**53


def step_index(content: dict, default: int | None = None) -> int:
    """The request's ``step`` field, an integer in [0, MAX_STEP_INDEX]."""
    step = content_field(content, "step", int, required=default is None, default=default)
    return valid_step(step, "'step'")


def valid_step(step: object, what: str, code: str = "invalid_argument") -> int:
    """`step` if it is an integer in [0, MAX_STEP_INDEX] (a bool is not); ProtocolError `code`
    naming `what` otherwise. Every step index a request or a state file gives passes here."""
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP_INDEX:
        raise ProtocolError(code, f"{what} must be an integer from 0 to 2**53, got {step!r}")
    return step


def name_list(content: dict, key: str) -> tuple[str, ...]:
    value = content_field(content, key, list, required=False, default=[])
    if not all(isinstance(v, str) for v in value):
        raise ProtocolError("invalid_argument", f"{key!r} must be a list of names (strings)")
    if len(set(value)) != len(value):
        raise ProtocolError("invalid_argument", f"{key!r} lists a name twice: {value}")
    return tuple(value)


def check_finite(array: np.ndarray, field_name: str, names: tuple[str, ...]) -> None:
    """ProtocolError non_finite naming the first row of ``array`` (a C-contiguous float64
    array, one row per name along its first axis) with a NaN or infinity; one pass in C
    clears the whole array."""
    if _core.all_finite(array):
        return
    rows = array.reshape(len(names), -1)
    row = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
    raise ProtocolError(
        "non_finite",
        f"{field_name} for {names[row]!r} holds NaN or infinity: {rows[row].tolist()}",
    )


def plain(value: Any) -> Any:
    """Diagnostics as msgpack-ready plain values (numpy scalars to Python numbers)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
