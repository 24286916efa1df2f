"""ZeroMQ endpoint addresses (light to import: the command line checks them before it loads
anything else)."""

from __future__ import annotations

import ipaddress

_LOOPBACK_NAMES = {"localhost", "lo", "ip6-localhost"}

IPC_PATH_MAX = 100
"""Bytes of an ipc socket path every OS takes (sun_path: 108 on Linux, 104 on BSD and macOS,
with the NUL), less a margin."""


def is_loopback(address: str) -> bool:
    """True for ipc://, inproc:// and tcp:// endpoints on a loopback host or interface."""
    scheme, _, rest = address.partition("://")
    if scheme in ("ipc", "inproc"):
        return True
    if scheme != "tcp":
        return False
    host = rest.rsplit(":", 1)[0].strip("[]")
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
