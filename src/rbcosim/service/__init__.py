"""The ZeroMQ co-simulation service: a transport-free `Service` and the socket `Server` around it.

The wire protocol is documented in interfaces/PROTOCOL.md; `rbcosim.PROTOCOL_VERSION` is its
version.
"""

from rbcosim.service.core import MESSAGE_TYPES, Service
from rbcosim.service.errors import ERROR_CODES, ProtocolError
from rbcosim.service.server import DEFAULT_BIND, CurveConfig, Server, generate_keys, serve_in_thread
from rbcosim.service.wire import Limits

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
