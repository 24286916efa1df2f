"""The session workers' fork server (multiprocessing's "forkserver"), light to import.

`rbcosim serve` starts it first thing (`start`), before it imports the service: the fork
server then loads the core (`rbcosim.service.preload`, about 0.25 s of CPU, most of it numpy
and scipy) while the server imports and binds; the server says its address once it is ready,
so that no create_session waits for it. `rbcosim.service.workers` starts it itself when it is
not running yet.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import sys
import tempfile
import types

PRELOAD = ["rbcosim.service.preload"]

#: Room left in a socket path (sun_path, 107 bytes) for the names made in the workers' folder.
_NAME_ROOM = 40
_IPC_PATH_MAX_LEN = 107  # zmq.IPC_PATH_MAX_LEN on Linux (sun_path), without importing zmq


def short_tempdir() -> None:
    """Make /tmp this process's temporary folder when the one it has (TMPDIR) is too long for
    socket paths (sun_path, 107 bytes): the workers' ipc sockets and the fork server's own
    socket (multiprocessing) go there, and would not bind otherwise."""
    if len(tempfile.gettempdir().encode()) + _NAME_ROOM > _IPC_PATH_MAX_LEN:
        tempfile.tempdir = "/tmp"


def context() -> multiprocessing.context.BaseContext:
    """The forkserver context, its fork server preloading `PRELOAD`."""
    mp = multiprocessing.get_context("forkserver")
    mp.set_forkserver_preload(PRELOAD)
    return mp


def start() -> None:
    """Start the fork server now, without waiting for it to load the core."""
    short_tempdir()
    context()
    with without_main_module():
        multiprocessing.forkserver.ensure_running()


@contextlib.contextmanager
def without_main_module():
    """Start a fork server or worker without multiprocessing's re-import of the parent's
    ``__main__`` (a worker needs nothing from it, and a script read from stdin cannot be
    re-imported)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main
