"""Files a session touches, confined to the server's root and typed.

Every path a client names (a scenario, its base folder, a state file, the structure files a
scenario refers to) must resolve — symbolic links followed — inside the root; the check comes
before any file-system access, so a refusal says nothing about what exists outside. Reads open
without blocking (a FIFO cannot stall the worker), accept regular files only and stop at a
size bound; writes go to a temporary file in the same folder and replace the target
atomically, and never replace anything but a regular file.
"""

from __future__ import annotations

import os
import stat
import tempfile
import tomllib
from pathlib import Path

from rbcosim.service.errors import ProtocolError

#: Largest scenario file a session reads, bytes.
MAX_SCENARIO_BYTES = 16 * 1024 * 1024


def confined(root: Path | None, text: object, key: str, base: Path | None = None) -> Path:
    """The path ``text`` names (relative to ``base``, else to the root), inside ``root``;
    ``forbidden_path`` otherwise. With no root, any path (library use)."""
    if not isinstance(text, str) or not text or "\0" in text:
        raise ProtocolError("invalid_argument", f"{key!r} must be a non-empty path string")
    path = Path(text)
    if root is None:
        return base / path if base is not None and not path.is_absolute() else path
    resolved = ((base or root) / path).resolve()
    if not resolved.is_relative_to(root):
        raise ProtocolError(
            "forbidden_path", f"{key} {text!r} lies outside the server's root directory {root}"
        )
    return resolved


def read_regular(path: Path, limit: int, what: str, code: str = "io_error") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (error ``code`` otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ProtocolError(code, f"cannot read the {what} {str(path)!r}: "
                                  f"{exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ProtocolError(code, f"the {what} {str(path)!r} is not a regular file")
        if info.st_size > limit:
            raise ProtocolError(code, f"the {what} {str(path)!r} has {info.st_size} bytes; "
                                      f"the server reads at most {limit}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ProtocolError(code, f"the {what} {str(path)!r} grew beyond {limit} bytes")
    return data


def write_atomically(path: Path, data: bytes, what: str) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ProtocolError("io_error", f"cannot write the {what} {str(path)!r}: "
                                        f"{exc.strerror}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ProtocolError("io_error", f"the {what} {str(path)!r} exists and is not a regular "
                                        "file; it is left alone")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise ProtocolError("io_error", f"cannot write the {what} {str(path)!r}: "
                                        f"{exc.strerror}") from None


def check_referenced_files(root: Path | None, text: str, base: Path, where: str) -> None:
    """Refuse a scenario whose structure files (``flex_bodies.NAME.file`` / ``files``) lie
    outside the root, before the scenario reader opens them."""
    if root is None:
        return
    try:
        table = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return  # the scenario reader reports it (with its line, or as nested too deep)
    bodies = table.get("flex_bodies")
    if not isinstance(bodies, dict):
        return
    for name, body in bodies.items():
        if not isinstance(body, dict):
            continue
        refs = {"file": body.get("file")}
        if isinstance(body.get("files"), dict):
            refs.update({f"files.{k}": v for k, v in body["files"].items()})
        for key, ref in refs.items():
            if isinstance(ref, str):
                confined(root, ref, f"{where}: flex_bodies.{name}.{key}", base)
