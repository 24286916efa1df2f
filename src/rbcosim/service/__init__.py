"""The ZeroMQ co-simulation service: a transport-free `Service` and the socket `Server` around it.

The wire protocol is documented in interfaces/PROTOCOL.md; `rbcosim.PROTOCOL_VERSION` is its
version. The names below load on first use, so that the client (which shares
`rbcosim.service.wire`) does not import the server.
"""

from __future__ import annotations

import importlib

_HOMES = {
    "MESSAGE_TYPES": "core",
    "Service": "core",
    "ERROR_CODES": "errors",
    "ProtocolError": "errors",
    "DEFAULT_BIND": "server",
    "CurveConfig": "server",
    "Server": "server",
    "generate_keys": "server",
    "serve_in_thread": "server",
    "Limits": "wire",
}

__all__ = [
    "DEFAULT_BIND",
    "ERROR_CODES",
    "MESSAGE_TYPES",
    "CurveConfig",
    "Limits",
    "ProtocolError",
    "Server",
    "Service",
    "generate_keys",
    "serve_in_thread",
]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'rbcosim.service' has no attribute {name!r}")
    return getattr(importlib.import_module(f"rbcosim.service.{_HOMES[name]}"), name)
