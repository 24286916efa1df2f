"""CURVE for the server's socket and every session's direct endpoint: the server's key pair,
and the folder of allowed client public keys, read again whenever it changes.

The allow-list is a callback of the ZAP authenticator (`KeyFolder.callback`): at each
handshake it compares the folder's listing (names, sizes, modification times of its ``*.key``
files) with the one it last read, and reads the keys again if they differ, so a key removed
from the folder is refused from the next connection on (connections already made stay).
A folder that is missing or holds no readable client key is refused at start.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import zmq

log = logging.getLogger("rbcosim.service")


class CurveConfig:
    """CURVE for a server bound beyond loopback.

    server_secret_file: the server's ``.key_secret`` certificate (zmq.auth format).
    allowed_clients_dir: folder of client ``.key`` public certificates; only those may connect.
    """

    def __init__(self, server_secret_file: str | Path, allowed_clients_dir: str | Path) -> None:
        self.server_secret_file = Path(server_secret_file)
        self.allowed_clients_dir = Path(allowed_clients_dir)


def generate_keys(
    directory: str | Path, names: tuple[str, ...] = ("server", "client")
) -> dict[str, tuple[Path, Path]]:
    """Create CURVE key pairs ``NAME.key`` (public) and ``NAME.key_secret`` in ``directory``."""
    import zmq.auth

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        public, secret = zmq.auth.create_certificates(str(directory), name)
        Path(secret).chmod(0o600)
        out[name] = (Path(public), Path(secret))
    return out


class KeyFolder:
    """The allowed client public keys (Z85) of a folder, read again when the folder changes."""

    def __init__(self, folder: Path, strict: bool = True) -> None:
        """strict: refuse (ValueError) a missing folder, an unreadable key or no key at all
        (at the server's start); otherwise skip what cannot be read (a session's worker)."""
        self.folder = folder
        self._lock = threading.Lock()
        self._listing: tuple | None = None
        self.keys: frozenset[bytes] = frozenset()
        if strict and not folder.is_dir():
            raise ValueError(f"--curve-clients {folder}: not a folder")
        self._reload(strict=strict)
        if strict and not self.keys:
            raise ValueError(f"--curve-clients {folder}: holds no client public key (*.key)")

    def _list(self) -> tuple:
        try:
            return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                                for p in self.folder.glob("*.key")))
        except OSError:
            return ()

    def _reload(self, strict: bool = False) -> None:
        import zmq.auth

        listing = self._list()
        keys = set()
        for name, _, _ in listing:
            try:
                public, _ = zmq.auth.load_certificate(str(self.folder / name))
            except (OSError, ValueError) as exc:
                if strict:
                    raise ValueError(f"--curve-clients {self.folder}: {name}: not a public key "
                                     f"certificate ({exc})") from None
                log.warning("CURVE client key %s skipped: %s", name, exc)
                continue
            if public:
                keys.add(bytes(public))
        if self._listing is not None:
            log.info("CURVE client keys read again from %s: %d keys", self.folder, len(keys))
        self.keys, self._listing = frozenset(keys), listing

    def callback(self, domain: str, key: bytes) -> bool:
        """ZAP: whether the client with the Z85 public key `key` may connect."""
        with self._lock:
            if self._list() != self._listing:
                self._reload()
            return bytes(key) in self.keys


def secure(context: zmq.Context, socket: zmq.Socket, curve: CurveConfig, strict: bool = True):
    """Make `socket` a CURVE server with the allow-list of `curve`; returns the running
    authenticator (stop it when the socket closes). ValueError names the bad file or folder."""
    import zmq.auth
    from zmq.auth.thread import ThreadAuthenticator

    try:
        public, secret = zmq.auth.load_certificate(str(curve.server_secret_file))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--curve-secret {curve.server_secret_file}: {exc}") from None
    if secret is None:
        raise ValueError(f"{curve.server_secret_file} holds no secret key")
    clients = KeyFolder(curve.allowed_clients_dir, strict)
    auth = ThreadAuthenticator(context)
    auth.start()
    auth.configure_curve_callback(domain="*", credentials_provider=clients)
    socket.curve_secretkey = secret
    socket.curve_publickey = public
    socket.curve_server = True
    return auth
