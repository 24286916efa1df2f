"""Wire format: msgpack envelopes and float64 arrays, to and from ZeroMQ frames — the one
codec of the server (`decode`, `as_array`, `encode`) and the Python client (`encode`,
`decode_reply`).

A message is one msgpack map (the header: envelope fields plus ``content``) followed by zero
or more raw buffer frames. An array travels as a descriptor map
``{"dtype": "<f8", "shape": [n, k], "data": <bin>}`` (bytes inline) or
``{"dtype": "<f8", "shape": [n, k], "frame": i}`` (bytes in buffer frame i after the header).
Decoding leaves descriptors as they are: the service turns the fields it expects into arrays
with :func:`as_array`, so nothing walks the content twice on the hot path.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from rbcosim import PROTOCOL_VERSION
from rbcosim.service.errors import ProtocolError

DTYPE = "<f8"
_F8 = np.dtype("<f8")
_ENVELOPE_KEYS = ("version", "msg_id", "msg_type")
_MAX_MSG_ID_LEN = 256


@dataclass(frozen=True)
class Limits:
    """Decoding limits; every one is checked before or while unpacking."""

    max_message_size: int = 64 * 1024 * 1024
    """Largest accepted message, all frames together, bytes; larger ones get an error reply."""
    max_str_len: int = 4 * 1024 * 1024
    max_array_len: int = 1 << 16
    max_map_len: int = 1 << 12

    @property
    def hard_limit(self) -> int:
        """ZMQ_MAXMSGSIZE per frame: ZeroMQ drops the connection beyond it, without a reply."""
        return 2 * self.max_message_size + (1 << 20)


def wire_kind(value: Any) -> str:
    """The msgpack kind of a decoded value, for error messages (never a Python type name)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "a boolean"
    for types, kind in _KINDS:
        if isinstance(value, types):
            return kind
    return "an unsupported value"


_KINDS = (
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    ((bytes, bytearray, memoryview), "bin (raw bytes)"),
    ((list, tuple), "an array"),
    (dict, "a map"),
    (np.ndarray, "an array"),
)


def protocol_major(version: str) -> int:
    """Major number of a ``"MAJOR.MINOR"`` protocol version string."""
    major, _, minor = version.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ValueError(version)
    return int(major)


_OUR_MAJOR = protocol_major(PROTOCOL_VERSION)


def unpack_header(data: bytes, limits: Limits) -> Any:
    """msgpack-decode one header frame with limits and no object hooks."""
    try:
        return msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_bin_len=limits.max_message_size,
            max_str_len=limits.max_str_len,
            max_array_len=limits.max_array_len,
            max_map_len=limits.max_map_len,
            max_ext_len=0,
        )
    except msgpack.ExtraData:
        reason = "bytes follow the first msgpack object"
    except msgpack.StackError:
        reason = "it nests deeper than the decoder allows"
    except msgpack.FormatError:
        reason = "it holds a byte that starts no msgpack object"
    except ValueError as exc:  # truncated data, limits, ext types, non-string map keys
        reason = str(exc) or "it is truncated or breaks a limit"
    except TypeError:
        reason = "a map key is not a string"
    raise ProtocolError("bad_message", f"the header frame is not one valid msgpack map: {reason}")


def _valid_msg_id(msg_id: Any) -> bool:
    """A msg_id is an integer or a string of at most 256 characters."""
    if isinstance(msg_id, str):
        return len(msg_id) <= _MAX_MSG_ID_LEN
    return isinstance(msg_id, int) and not isinstance(msg_id, bool)


def check_envelope(header: Any) -> dict:
    """Validate the envelope of a decoded header; returns it with ``content`` defaulted."""
    if not isinstance(header, dict):
        raise ProtocolError(
            "bad_message", f"the header must be a msgpack map, got {wire_kind(header)}"
        )
    for key in _ENVELOPE_KEYS:
        if key not in header:
            raise ProtocolError("bad_message", f"the envelope lacks the field {key!r}")
    if not _valid_msg_id(header["msg_id"]):
        raise ProtocolError(
            "bad_message",
            f"msg_id must be a string of at most {_MAX_MSG_ID_LEN} characters or an integer",
        )
    if not isinstance(header["msg_type"], str):
        raise ProtocolError("bad_message", "msg_type must be a string")
    version = header["version"]
    if not isinstance(version, str):
        raise ProtocolError("bad_message", 'version must be a string like "1.0"')
    if version != PROTOCOL_VERSION:
        try:
            major = protocol_major(version)
        except ValueError:
            raise ProtocolError(
                "bad_message", f'version {version!r} is not of the form "MAJOR.MINOR"'
            ) from None
        if major != _OUR_MAJOR:
            raise ProtocolError(
                "incompatible_version",
                f"protocol version {version} is not supported: this server speaks "
                f"{PROTOCOL_VERSION} and accepts only {_OUR_MAJOR}.x; "
                "use a client built for that major version",
            )
    session = header.get("session")
    if session is not None and not isinstance(session, str):
        raise ProtocolError("bad_message", "session must be a string or nil")
    content = header.get("content")
    if content is None:
        header["content"] = {}
    elif not isinstance(content, dict):
        raise ProtocolError("bad_message", "content must be a map")
    return header


def readable_envelope(header: Any) -> dict | None:
    """The envelope fields of a refused header that a reply can echo (``msg_id``,
    ``msg_type``, ``session`` where well-typed), so that even an error reply to it carries the
    request's ``parent_id``; None when the header is not a map."""
    if not isinstance(header, dict):
        return None
    out = {}
    if _valid_msg_id(header.get("msg_id")):
        out["msg_id"] = header["msg_id"]
    if isinstance(header.get("msg_type"), str):
        out["msg_type"] = header["msg_type"]
    if isinstance(header.get("session"), str):
        out["session"] = header["session"]
    return out


def decode(frames: list[bytes], limits: Limits) -> dict:
    """Frames after routing (header, buffers...) -> envelope dict with ``buffers`` attached.

    A refused envelope raises ProtocolError with ``envelope`` set to its readable fields."""
    if not frames or not frames[0]:
        raise ProtocolError("bad_message", "the message has no header frame")
    raw = unpack_header(frames[0], limits)
    try:
        header = check_envelope(raw)
    except ProtocolError as exc:
        exc.envelope = readable_envelope(raw)
        raise
    header["buffers"] = frames[1:]
    return header


def as_array(
    value: Any, buffers: list[bytes] | tuple, field: str, shape: tuple[int, ...]
) -> np.ndarray:
    """Turn a content field into a float64 array of exactly ``shape``.

    Accepts an array descriptor (inline ``data`` or ``frame`` index; a read-only view of the
    bytes, no copy), a numpy array (direct callers of the service) or nested lists of numbers.
    Does not check finiteness. A missing field (None) is an ``invalid_argument``, a malformed
    one an ``invalid_array``.
    """
    if value is None:
        raise ProtocolError("invalid_argument", f"the field {field!r} is required")
    if isinstance(value, dict):
        return np.ndarray(shape, _F8, _descriptor_bytes(value, buffers, field, shape))
    return _plain_array(value, field, shape)


def _descriptor_bytes(value: dict, buffers, field: str, shape: tuple[int, ...]):
    """The checked bytes an array descriptor names (inline or in a buffer frame)."""
    dtype = value.get("dtype", DTYPE)
    if dtype != DTYPE:
        raise ProtocolError(
            "invalid_array",
            f'{field}: dtype must be "{DTYPE}" (little-endian float64), got {dtype!r}',
        )
    got_shape = value.get("shape")
    same = isinstance(got_shape, list) and tuple(got_shape) == shape
    if not same and (not isinstance(got_shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in got_shape)):
        raise ProtocolError(
            "invalid_array", f"{field}: shape must be a list of non-negative integers"
        )
    if "data" in value:
        data = value["data"]
    elif "frame" in value:
        index = value["frame"]
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(buffers):
            raise ProtocolError(
                "invalid_array",
                f"{field}: frame {index!r} does not exist; the message has {len(buffers)} "
                "buffer frame(s)",
            )
        data = buffers[index]
    else:
        raise ProtocolError(
            "invalid_array", f'{field}: an array needs "data" (bytes) or "frame" (index)'
        )
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ProtocolError("invalid_array", f"{field}: data must be msgpack bin (raw bytes)")
    if not same:
        raise ProtocolError(
            "invalid_array", f"{field}: shape must be {list(shape)}, got {got_shape}"
        )
    if len(data) != 8 * math.prod(shape):
        raise ProtocolError(
            "invalid_array",
            f"{field}: shape {list(shape)} needs {8 * math.prod(shape)} bytes, got {len(data)} "
            "(truncated?)",
        )
    return data


def _plain_array(value: Any, field: str, shape: tuple[int, ...]) -> np.ndarray:
    """A numpy array or nested lists of numbers as a float64 array of exactly ``shape``."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiu":
            raise ProtocolError(
                "invalid_array", f"{field}: dtype must be float64, got {value.dtype}"
            )
        array = np.ascontiguousarray(value, dtype=np.float64)
    elif isinstance(value, list):
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ProtocolError("invalid_array", f"{field}: lists must hold numbers only") from None
    else:
        raise ProtocolError(
            "invalid_array",
            f"{field}: expected an array descriptor map, got {wire_kind(value)}",
        )
    if array.shape != shape:
        raise ProtocolError(
            "invalid_array", f"{field}: shape must be {list(shape)}, got {list(array.shape)}"
        )
    return array


def array_shape(value: Any) -> list | None:
    """The shape an input array declares (descriptor, numpy array or nested lists), or None."""
    if isinstance(value, dict):
        shape = value.get("shape")
        return shape if isinstance(shape, list) else None
    if isinstance(value, np.ndarray):
        return list(value.shape)
    if isinstance(value, list):
        try:
            return list(np.shape(value))
        except ValueError:
            return None
    return None


def array_descriptor(array: np.ndarray, buffers: list | None) -> dict:
    """An outgoing array: its bytes inline (``data``), or appended to ``buffers`` as a buffer
    frame (``frame``) when that list is given. The bytes are a view of the array (no copy
    here; ZeroMQ or msgpack copies them once when sending), so the array must not change
    until the message is sent."""
    array = np.ascontiguousarray(array, dtype=_F8)
    data = memoryview(array)
    if buffers is None:
        return {"dtype": DTYPE, "shape": list(array.shape), "data": data}
    buffers.append(data)
    return {"dtype": DTYPE, "shape": list(array.shape), "frame": len(buffers) - 1}


def _to_wire(value: Any, buffers: list | None) -> Any:
    if isinstance(value, (str, int, float, bytes)) or value is None:
        return value
    if isinstance(value, np.ndarray):
        return array_descriptor(value, buffers)
    if isinstance(value, dict):
        return {k: _to_wire(v, buffers) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_wire(v, buffers) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


#: Arrays of a message together at least this large go as buffer frames (`frames_pay`):
#: below it, inline ``data`` costs less (measured: three macro-step arrays as frames took
#: 10-20 µs more CPU per round trip on each side than inline, one ZeroMQ part each).
FRAME_MIN_BYTES = 64 * 1024


def frames_pay(content: dict) -> bool:
    """Whether the arrays among ``content``'s values are large enough, together, to send as
    buffer frames rather than inline (`FRAME_MIN_BYTES`)."""
    size = 0
    for value in content.values():
        if isinstance(value, np.ndarray):
            size += value.nbytes
    return size >= FRAME_MIN_BYTES


class _PieceEncoder:
    """msgpack bytes joined from pieces packed once and kept: ("key", name) a map key,
    ("data" | "frame", name, shape) an array's key and descriptor up to its bytes (inline:
    with their bin header) or its frame index; subclasses add their own kinds."""

    _KEPT = 512  # pieces kept (a few per message type, field and shape in practice)

    def __init__(self) -> None:
        self._pack = msgpack.Packer(use_bin_type=True).pack
        self._pieces: dict[tuple, bytes] = {}

    def _piece(self, key: tuple) -> bytes:
        pack = self._pack
        if key[0] == "key":
            return self._keep(key, pack(key[1]))
        where, name, shape = key
        piece = (pack(name) + b"\x83" + pack("dtype") + pack(DTYPE) + pack("shape")
                 + pack(list(shape)) + pack(where))
        if where == "data":
            piece += _bin_header(8 * math.prod(shape))
        return self._keep(key, piece)

    def _keep(self, key: tuple, piece: bytes) -> bytes:
        if len(self._pieces) >= self._KEPT:
            self._pieces.clear()
        self._pieces[key] = piece
        return piece

    def _content(self, content: dict, buffers: list | None, parts: list) -> int:
        """Appends the pieces of a content map's fields to ``parts`` (arrays inline, or as
        buffer frames appended to ``buffers``); returns the bytes of its arrays."""
        pieces, pack = self._pieces, self._pack
        size = 0
        for name, value in content.items():
            if isinstance(value, np.ndarray):
                size += value.nbytes
                array = np.ascontiguousarray(value, dtype=_F8)
                if buffers is None:
                    key = ("data", name, array.shape)
                    parts += (pieces.get(key) or self._piece(key), array)
                else:
                    key = ("frame", name, array.shape)
                    parts += (pieces.get(key) or self._piece(key), pack(len(buffers)))
                    buffers.append(memoryview(array))
            else:
                key = ("key", name)
                parts += (pieces.get(key) or self._piece(key), pack(_to_wire(value, buffers)))
        return size


class MessageEncoder(_PieceEncoder):
    """Envelope dicts as frames ``[header, buffers...]``: the bytes msgpack gives for the
    whole map (arrays as descriptors), joined from pieces: what repeats from one message to
    the next (a map header, an envelope field with its value, a content key, an array's key
    and descriptor of a shape up to its bytes) is packed once and kept."""

    _VARYING = ("msg_id", "parent_id")  # envelope fields whose values are not kept as pieces

    def _piece(self, key: tuple) -> bytes:
        """Also ("map", n): a map header; ("field", name, value): a key with its value."""
        if key[0] == "map":
            return self._keep(key, msgpack.Packer().pack_map_header(key[1]))
        if key[0] == "field":
            return self._keep(key, self._pack(key[1]) + self._pack(key[2]))
        return super()._piece(key)

    def step_reply_pieces(self, session: str, n_points: int, n_joints: int,
                          motions: bool) -> tuple[bytes, ...]:
        """The constant pieces of an ok step reply {step, time, kinematics (n_points, 13),
        gaps (n_joints, 4), motions (n_points, 19) if asked} (arrays inline) for the C core's
        step path (librbcosim/cosim/served_loop.h), which writes the msg_id, parent_id, step,
        time and the arrays' bytes between them: the bytes `encode` gives for that reply, cut
        there (the head up to the msg_id's value, the rest up to the parent_id's, up to the
        step's, the time's key, each array's key and descriptor up to its bytes)."""
        piece, pack = self._piece, self._pack
        head = piece(("map", 7)) + piece(("field", "version", PROTOCOL_VERSION)) + pack("msg_id")
        mid = (piece(("field", "msg_type", "step_reply")) + piece(("field", "session", session))
               + pack("parent_id"))
        tail = (piece(("field", "status", "ok")) + pack("content") + piece(("map", 4 + motions))
                + pack("step"))
        arrays = [piece(("data", "kinematics", (n_points, 13))),
                  piece(("data", "gaps", (n_joints, 4))),
                  piece(("data", "motions", (n_points, 19))) if motions else b""]
        return head, mid, tail, pack("time"), *arrays

    def encode(self, message: dict, use_frames: bool = False) -> list:
        """The frames of ``message`` (numpy arrays anywhere in its ``content``; a
        ``buffers`` entry is left out); use_frames: arrays as buffer frames after the header
        rather than inline."""
        pieces, pack = self._pieces, self._pack
        buffers: list | None = [] if use_frames else None
        bare = "content" not in message  # (encoded with an empty content, as the protocol has it)
        key = ("map", len(message) - ("buffers" in message) + bare)
        parts = [pieces.get(key) or self._piece(key)]
        for name, value in message.items():
            if name == "content":
                key = ("map", len(value))
                parts += (pieces.get(("key", name)) or self._piece(("key", name)),
                          pieces.get(key) or self._piece(key))
                self._content(value, buffers, parts)
            elif name == "buffers":
                continue
            elif name in self._VARYING or not (value is None or type(value) is str):
                key = ("key", name)
                parts += (pieces.get(key) or self._piece(key), pack(value))
            else:
                key = ("field", name, value)
                parts.append(pieces.get(key) or self._piece(key))
        if bare:
            parts += (pack("content"), pack({}))
        return [b"".join(parts), *(buffers or ())]


def encode(message: dict, use_frames: bool = False) -> list:
    """Envelope dict (numpy arrays anywhere in ``content``) -> [header, buffers...]; the same
    for requests (the client) and replies (the server). use_frames: arrays as buffer frames
    after the header rather than inline."""
    encoder = getattr(_ENCODERS, "encoder", None)
    if encoder is None:
        encoder = _ENCODERS.encoder = MessageEncoder()
    return encoder.encode(message, use_frames)


_ENCODERS = threading.local()  # one per thread: a Packer's buffer is not to be shared


#: what a client accepts in a reply: the server's limits are for untrusted input, a client
#: trusts its server's replies (a results reply may be large)
REPLY_LIMITS = Limits(max_message_size=1 << 40, max_str_len=1 << 31, max_array_len=1 << 31,
                      max_map_len=1 << 31)


def decode_reply(frames: list[bytes]) -> dict:
    """A reply's frames ``[header, buffers...]`` -> its header map, with every array
    descriptor in ``content`` turned into a read-only float64 array over the received bytes
    (no copy). The envelope is returned as sent (the client checks ``parent_id``, ``status``)."""
    header = unpack_header(frames[0], REPLY_LIMITS)
    if not isinstance(header, dict):
        raise ProtocolError("bad_message", f"the reply header is {wire_kind(header)}, not a map")
    header["content"] = arrays_of(header.get("content") or {}, frames[1:])
    return header


def arrays_of(value: Any, buffers) -> Any:
    """``value`` with every array descriptor (inline or frame) replaced by its array."""
    if type(value) is dict:
        if "dtype" in value and "shape" in value and ("data" in value or "frame" in value):
            return _array_of(value, buffers)
        return {k: arrays_of(v, buffers) if type(v) is dict or type(v) is list else v
                for k, v in value.items()}
    if type(value) is list:
        return [arrays_of(v, buffers) if type(v) is dict or type(v) is list else v
                for v in value]
    return value


def _array_of(descriptor: dict, buffers) -> np.ndarray:
    """The read-only float64 array over the bytes a reply's descriptor names (no copy)."""
    data = descriptor["data"] if "data" in descriptor else buffers[descriptor["frame"]]
    shape = descriptor["shape"]
    try:
        array = np.ndarray(shape, _F8, data)
        if array.nbytes == len(data):
            return array
    except (TypeError, ValueError):
        pass
    return np.frombuffer(data, dtype=_F8).reshape(shape)  # (numpy's error, or that array)


def _bin_header(size: int) -> bytes:
    """msgpack's bin header for ``size`` bytes (bin 8, 16 or 32, as msgpack packs bytes)."""
    if size < 0x100:
        return b"\xc4" + size.to_bytes(1, "big")
    if size < 0x10000:
        return b"\xc5" + size.to_bytes(2, "big")
    return b"\xc6" + size.to_bytes(4, "big")


class RequestEncoder(_PieceEncoder):
    """A client's requests as frames ``[header, buffers...]``: the bytes `encode` gives for the
    envelope {version, msg_id, msg_type, session, content} (arrays as descriptors, as buffer
    frames when `frames_pay`), built by joining msgpack pieces: what repeats from one request
    to the next (the envelope of a message type and session, a key, an array's descriptor of a
    shape) is packed once and kept."""

    def __init__(self, version: str = PROTOCOL_VERSION) -> None:
        super().__init__()
        pack = self._pack
        self._head = b"\x85" + pack("version") + pack(version) + pack("msg_id")

    def _piece(self, key: tuple) -> bytes:
        """Also ("envelope", msg_type, session, n_fields): the envelope up to the content
        map's header."""
        if key[0] != "envelope":
            return super()._piece(key)
        pack = self._pack
        _, msg_type, session, n = key
        return self._keep(key, pack("msg_type") + pack(msg_type) + pack("session")
                          + pack(session) + pack("content") + msgpack.Packer().pack_map_header(n))

    def step_pieces(self, msg_id_prefix: str, session: str | None, client: str,
                    n_joints: int) -> tuple[bytes, ...]:
        """The constant pieces of a flexible solver's step request {client, step,
        flex_kinematics (n, 13), flex_energy (n,), wrench_polynomial (n, m, 6)} (arrays inline)
        for the C core's loop (librbcosim/cosim/flex_loop.h), which writes the msg_id's counter,
        the step and the arrays' bytes between them: the head up to the msg_id, its prefix, the
        envelope and content up to the step's value, each array's key and descriptor up to its
        bytes (the polynomial's for m = 1 to 4)."""
        pieces, pack = self._pieces, self._pack

        def piece(key: tuple) -> bytes:
            return pieces.get(key) or self._piece(key)

        n = n_joints
        return (self._head, msg_id_prefix.encode(),
                piece(("envelope", "step", session, 5)) + piece(("key", "client"))
                + pack(client) + piece(("key", "step")),
                piece(("data", "flex_kinematics", (n, 13))),
                piece(("data", "flex_energy", (n,))),
                *(piece(("data", "wrench_polynomial", (n, m, 6))) for m in range(1, 5)))

    def encode(self, msg_id: str, msg_type: str, session: str | None, content: dict) -> list:
        """The frames of one request (numpy arrays anywhere in ``content``)."""
        header, size = self._header(msg_id, msg_type, session, content, None)
        if size < FRAME_MIN_BYTES:  # (`frames_pay`, counted on the way)
            return [header]
        buffers: list = []
        header, _ = self._header(msg_id, msg_type, session, content, buffers)
        return [header, *buffers]

    def _header(self, msg_id, msg_type, session, content: dict,
                buffers: list | None) -> tuple[bytes, int]:
        """The header frame (arrays inline, or appended to ``buffers``) and the bytes of the
        arrays among content's values."""
        pieces, pack = self._pieces, self._pack
        key = ("envelope", msg_type, session, len(content))
        parts = [self._head, pack(msg_id), pieces.get(key) or self._piece(key)]
        size = self._content(content, buffers, parts)
        return b"".join(parts), size
