"""Helpers for tests and benchmarks of the service: a toy scenario, a threaded server, a
deterministic flexible-side stand-in, and request builders."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from toy_side import ToySide

from rbcosim import PROTOCOL_VERSION
from rbcosim.service.core import Service
from rbcosim.service.server import serve_in_thread

TOY_TWO_POINTS = """
[toy]
points = ["a", "b"]
macro_step = 0.01
substeps = 4
mass = 2.0
inertia = 0.5
"""


def toy_service(**kwargs) -> Service:
    """A Service whose sessions run the toy rigid side."""
    return Service(rigid_factory=ToySide.from_scenario, **kwargs)


@contextlib.contextmanager
def running_server(
    service: Service | None = None, bind: str = "tcp://127.0.0.1:0", **kwargs
) -> Iterator:
    """A server on a daemon thread for the duration of a ``with`` block; yields it."""
    server, thread = serve_in_thread(service or toy_service(), bind, **kwargs)
    try:
        yield server
    finally:
        server.stop()
        thread.join(10)
        server.close()


def message(msg_type: str, session: str | None = None, msg_id: str = "m", **content) -> dict:
    """A decoded request as the Service takes it."""
    return {
        "version": PROTOCOL_VERSION,
        "msg_id": msg_id,
        "msg_type": msg_type,
        "session": session,
        "content": content,
    }


def spring_inputs(
    kinematics: np.ndarray, step: int, stiffness: float = 40.0, damping: float = 0.5
) -> tuple:
    """A flexible-side stand-in: a spring-damper to the origin plus a step-dependent push.

    kinematics: (n, 13) interface kinematics. Returns (wrench (n, 6), flex kinematics (n, 13)),
    the latter the rigid kinematics offset by a small step-dependent amount, so gaps are non-zero.
    """
    k = np.asarray(kinematics, dtype=float)
    wrench = np.zeros((k.shape[0], 6))
    wrench[:, 0:3] = -stiffness * k[:, 0:3] - damping * k[:, 7:10]
    wrench[:, 0] += math.sin(0.1 * step)
    wrench[:, 3:6] = -damping * k[:, 10:13]
    flex = k.copy()
    flex[:, 0] += 1e-4 * math.cos(0.1 * step)
    return wrench, flex


def processes_naming(*texts: str) -> list[str]:
    """The command lines of this host's running processes that contain every one of `texts`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if all(text in cmdline for text in texts):
                found.append(cmdline)
    return found
