"""Each session in its own process: the worker's loop, and the socket loop's view of its workers.

The server's socket loop (`rbcosim.service.server`) keeps no session itself. `create_session`
starts a worker process (forked from a clean fork server, so it costs milliseconds) that holds
one `Service` with that one session; every later request naming the session goes to that
worker over a private ipc socket, and its replies come back the same way. A model build, a
long step or a file read in one session therefore never delays another session's replies, and
a worker that runs away — a build longer than the build timeout, memory beyond the session's
bound (an address-space limit set in the worker) — is killed or fails alone, its waiting
clients answered with an error.

Frames, socket loop → worker: ``[identity, flags, *body]`` (flags: ``d`` the client sent a
delimiter frame, ``f`` it sent buffer frames). Worker → socket loop: ``[b"ready"]`` once
connected; ``[b"reply", identity, flags, parent_key, *reply frames]``; ``[b"created", session
id]`` before a successful create_session reply; ``[b"closed"]`` before the close reply (or a
failed creation), when the worker exits.

One hop per macro step (protocol 1.3): a worker also binds its own ROUTER socket, the *direct
endpoint* — same transport and interface as the server's bind, an OS-chosen port (tcp) or a
path beside the server's (ipc), the server's CURVE key and client allow-list — and names it in
the ``endpoint`` field of its create_session and attach replies to 1.3 clients. Such a client
then sends the session's requests there, with no socket loop in between; everything else (the
session's limits, the barrier, its isolation) is the worker's own and holds on both paths. A
peer is ``(identity, delimited, use_frames, route)``, route `VIA_SERVER` or `DIRECT`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any

import msgpack
import zmq

from rbcosim.service.core import Service, error_reply
from rbcosim.service.errors import ProtocolError
from rbcosim.service.wire import decode, encode

log = logging.getLogger("rbcosim.service")

_PARENT_CHECK_S = 1.0  # how often an idle worker checks that the server still runs
QUEUED_REQUESTS = 1000  # requests waiting for one session's worker before more are refused
VIA_SERVER, DIRECT = 0, 1  # the route of a worker's peer: through the socket loop, or direct
_IPC_PATH_MAX = 100  # bytes of an ipc path the OS takes (sun_path is 108 with the NUL)


def flags_of(delimited: bool, use_frames: bool) -> bytes:
    return (b"d" if delimited else b"") + (b"f" if use_frames else b"")


def parent_key(msg_id: Any) -> bytes:
    """The bytes a request's msg_id and its reply's parent_id share (msgpack of the id)."""
    return msgpack.packb(msg_id)


# --- the worker process ---------------------------------------------------------------------


def _bound_memory(memory_bytes: int | None) -> None:
    """Cap this process's address space at what it maps now plus ``memory_bytes``, so that a
    runaway build or step raises MemoryError here instead of exhausting the host."""
    if not memory_bytes:
        return
    with open("/proc/self/statm", encoding="ascii") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = mapped + int(memory_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _handle(service: Service, frames: list[bytes], endpoint: str | None = None
            ) -> list[tuple[Any, dict]]:
    """One request from the socket loop: ``[identity, flags, *body]``."""
    identity, flags, *body = frames
    return _serve(service, (identity, b"d" in flags, b"f" in flags, VIA_SERVER), body, endpoint)


def _handle_direct(service: Service, frames: list[bytes], endpoint: str | None
                   ) -> list[tuple[Any, dict]]:
    """One request on the direct endpoint: ``[identity, (empty,) header, *buffers]``; the
    size limit the socket loop applies to its requests applies here too."""
    identity = frames[0]
    delimited = len(frames) > 1 and not frames[1]
    body = frames[2:] if delimited else frames[1:]
    peer = (identity, delimited, len(body) > 1, DIRECT)
    size = sum(len(f) for f in body)
    if size > service.limits.max_message_size:
        return [(peer, error_reply(None, ProtocolError(
            "message_too_large", f"the message is {size} bytes; this server accepts at most "
            f"{service.limits.max_message_size} bytes")))]
    return _serve(service, peer, body, endpoint)


def _serve(service: Service, peer, body: list[bytes], endpoint: str | None
           ) -> list[tuple[Any, dict]]:
    msg = None
    try:
        msg = decode(body, service.limits)
        if peer[3] == DIRECT and msg["msg_type"] == "create_session":
            raise ProtocolError(
                "invalid_argument", "this is a session's direct endpoint; send create_session "
                "to the server's endpoint")
        replies = service.handle(msg, peer)
        if endpoint is not None and msg["msg_type"] in _NAMING_REPLIES \
                and offers_direct(msg["version"]):
            for target, reply in replies:
                if target == peer and reply["status"] == "ok":
                    reply["content"]["endpoint"] = endpoint
        return replies
    except ProtocolError as exc:
        return [(peer, error_reply(msg or exc.envelope, exc))]
    except MemoryError:
        return [(peer, error_reply(msg, ProtocolError(
            "limit_exceeded", "the session ran out of its memory bound (serve --limit "
            "memory_bytes=...) while handling this request; the session is lost")))]
    except Exception as exc:
        log.exception("internal error in a session worker")
        return [(peer, error_reply(msg, ProtocolError("internal_error",
                                                      f"{type(exc).__name__}: {exc}")))]


_NAMING_REPLIES = ("create_session", "attach")


def offers_direct(version: str) -> bool:
    """Whether a request of this protocol version is answered with the direct endpoint (1.3+)."""
    _, _, minor = version.partition(".")
    return minor.isdigit() and int(minor) >= 3


def _send(sock: zmq.Socket, direct: zmq.Socket | None, peer, reply: dict) -> None:
    identity, delimited, use_frames, route = peer
    try:
        frames = encode(reply, use_frames)
    except Exception as exc:  # noqa: BLE001 - an unencodable reply becomes an error reply
        error = {"code": "internal_error", "message": f"cannot encode the reply: {exc}"}
        frames = encode({**reply, "status": "error", "content": {}, "error": error})
    if route == DIRECT:
        try:  # a client over its high-water mark loses the reply (ROUTER drops it)
            direct.send_multipart([identity, b"", *frames] if delimited else [identity, *frames],
                                  zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            log.warning("direct reply dropped: %s", exc)
        return
    sock.send_multipart([b"reply", identity, flags_of(delimited, use_frames),
                         parent_key(reply.get("parent_id")), *frames])


def direct_bind(server_address: str, folder: str, worker_id: bytes) -> str | None:
    """Where a session worker binds its direct endpoint, from the server's bound address:
    tcp on the same interface with an OS-chosen port; ipc beside the server's path (in the
    workers' folder when that path would be too long); None for other transports."""
    scheme, _, rest = server_address.partition("://")
    if scheme == "tcp":
        return f"tcp://{rest.rsplit(':', 1)[0]}:0"
    if scheme == "ipc":
        path = f"{rest}.{worker_id.decode()}"
        if len(path.encode()) > _IPC_PATH_MAX:
            path = f"{folder}/{worker_id.decode()}.sock"
        return f"ipc://{path}"
    return None


def _open_direct(ctx: zmq.Context, bind: str | None, direct: dict) -> tuple[zmq.Socket | None,
                                                                             str | None, Any]:
    """The worker's direct ROUTER socket with the server's limits and CURVE keys (None where
    the server's transport offers none); returns (socket, its endpoint, the authenticator)."""
    if bind is None:
        return None, None, None
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 2000)  # the close reply must get out before the process ends
    sock.setsockopt(zmq.MAXMSGSIZE, direct["hard_limit"])
    sock.setsockopt(zmq.SNDHWM, direct["send_hwm"])
    sock.setsockopt(zmq.RCVHWM, QUEUED_REQUESTS)
    auth = None
    if direct.get("curve") is not None:
        from zmq.auth import load_certificate
        from zmq.auth.thread import ThreadAuthenticator

        secret_file, clients_dir = direct["curve"]
        public, secret = load_certificate(secret_file)
        auth = ThreadAuthenticator(ctx)
        auth.start()
        auth.configure_curve(domain="*", location=clients_dir)
        sock.curve_secretkey = secret
        sock.curve_publickey = public
        sock.curve_server = True
    sock.bind(bind)
    endpoint = sock.getsockopt(zmq.LAST_ENDPOINT).decode()
    if bind.startswith("ipc://"):
        with contextlib.suppress(OSError):
            os.chmod(endpoint[len("ipc://"):], 0o600)
    return sock, endpoint, auth


def run_worker(backend: str, worker_id: bytes, config: dict, memory_bytes: int | None,
               server_pid: int, direct: dict | None = None) -> None:
    """A session worker's whole life: serve the requests of one session until it is closed,
    its creation fails, or the server process is gone.

    direct: the direct endpoint's settings (``bind``, ``send_hwm``, ``hard_limit``, ``curve``:
    (server secret file, allowed clients folder) or None); None: no direct endpoint."""
    _bound_memory(memory_bytes)
    service = Service(**config)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, worker_id)
    sock.setsockopt(zmq.LINGER, 2000)
    sock.connect(backend)
    direct_sock, endpoint, auth = _open_direct(ctx, (direct or {}).get("bind"), direct or {})
    sock.send_multipart([b"ready"])
    poller = zmq.Poller()
    if direct_sock is not None:
        poller.register(direct_sock, zmq.POLLIN)  # first: the hot path
    poller.register(sock, zmq.POLLIN)
    try:
        while True:
            deadline = service.next_deadline()
            wait = _PARENT_CHECK_S if deadline is None else min(
                _PARENT_CHECK_S, max(0.0, deadline - service.clock()))
            ready = poller.poll(max(1, int(wait * 1000)))
            if ready:
                which = ready[0][0]
                if which is direct_sock:
                    replies = _handle_direct(service, direct_sock.recv_multipart(), endpoint)
                else:
                    replies = _handle(service, sock.recv_multipart(), endpoint)
            else:
                replies = service.poll_timeouts()
                if not _alive(server_pid):
                    return
            ended = not service.sessions  # closed, or its creation failed
            if ended:  # before the replies: a client told "closed" must not reach this worker
                sock.send_multipart([b"closed"])
            for peer, reply in replies:
                if reply["msg_type"] == "create_session_reply" and reply["status"] == "ok":
                    sock.send_multipart([b"created", reply["content"]["session"].encode()])
                _send(sock, direct_sock, peer, reply)
            if ended:
                return
    finally:
        if direct_sock is not None:
            direct_sock.close()
            if endpoint is not None and endpoint.startswith("ipc://"):
                with contextlib.suppress(OSError):
                    os.unlink(endpoint[len("ipc://"):])
        if auth is not None:
            auth.stop()
        sock.close()
        ctx.term()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- the socket loop's side -----------------------------------------------------------------


@dataclass
class Worker:
    """One session's process as the socket loop sees it."""

    id: bytes
    process: Any
    started: float
    session: str | None = None
    outstanding: dict[tuple[bytes, bytes], tuple[Any, dict]] = field(default_factory=dict)
    """(client identity, parent key) -> (peer, request envelope) still to be answered."""
    queue: list[list[bytes]] = field(default_factory=list)
    """Requests that arrived before the worker connected."""
    ready: bool = False
    closed: bool = False
    notify: dict[bytes, Any] = field(default_factory=dict)
    """Client identity -> peer of the 1.3 clients that reached this session through the
    socket loop: told by a ``session_ended`` notice when the worker ends (their requests on
    the direct endpoint have no one else to answer them)."""


class SessionWorkers:
    """Start, route to, and reap the session workers of one server.

    config: keyword arguments of the `Service` each worker builds (picklable).
    build_timeout: seconds a create_session may take before its worker is killed.
    memory_bytes: per-session address-space bound (None: unbounded).
    """

    def __init__(self, context: zmq.Context, config: dict, *, max_sessions: int,
                 build_timeout: float, memory_bytes: int | None,
                 direct: dict | None = None) -> None:
        self._folder = tempfile.mkdtemp(prefix="rbcosim-workers-")
        self.socket = context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.socket.setsockopt(zmq.SNDHWM, QUEUED_REQUESTS)
        self.socket.bind(f"ipc://{self._folder}/backend")
        self.address = self.socket.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.config = config
        self.max_sessions = max_sessions
        self.build_timeout = build_timeout
        self.memory_bytes = memory_bytes
        self.direct = direct
        """The direct endpoints' settings (`run_worker`), with ``address`` the server's bound
        address; None: sessions get no direct endpoint."""
        self._mp = multiprocessing.get_context("forkserver")
        # One fork server per process, started here on a thread so that the server answers at
        # once and the first session does not wait for it longer than it must; it preloads
        # the compiled core (rbcosim.service.preload). create_session requests that come
        # before it is ready wait in `deferred`.
        self._mp.set_forkserver_preload(["rbcosim.service.preload"])
        self._fork_ready = threading.Event()
        self._fork_error: str | None = None
        self.deferred: list[tuple[Any, dict, list[bytes]]] = []
        threading.Thread(target=self._start_fork_server, name="rbcosim fork server",
                         daemon=True).start()
        self._ids = itertools.count(1)
        self.workers: dict[bytes, Worker] = {}
        self.by_session: dict[str, Worker] = {}
        self.lost: dict[str, str] = {}
        """Session id -> why its worker ended, for requests that still name it."""
        self.forwarded = 0
        """Requests handed to workers by the socket loop (the direct endpoints' are not)."""

    def _start_fork_server(self) -> None:
        try:
            self._wait_for_fork_server()
        except BaseException as exc:  # noqa: BLE001 - reported to every create_session
            self._fork_error = f"{type(exc).__name__}: {exc}"
            log.error("the session workers' fork server did not start: %s", self._fork_error)
        finally:
            self._fork_ready.set()

    @property
    def fork_error(self) -> str | None:
        """Why the fork server did not start (None: it did, or is still starting)."""
        return self._fork_error

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the fork server has loaded the core (True) or `timeout` s passed."""
        return self._fork_ready.wait(timeout)

    def start_deferred(self) -> list[tuple[Any, dict]]:
        """Start the workers of create_session requests that came before the fork server was
        ready; error replies to those that cannot start."""
        if not self.deferred or not self._fork_ready.is_set():
            return []
        items, self.deferred = self.deferred, []
        replies = []
        for peer, msg, body in items:
            try:
                self.create(peer, msg, body)
            except ProtocolError as exc:
                replies.append((peer, error_reply(msg, exc)))
        return replies

    def _wait_for_fork_server(self) -> None:
        """Start the fork server and wait until it has loaded the core (about a second
        of imports once per process), so that no create_session waits for it."""
        with _without_main_module():
            probe = self._mp.Process(target=int, daemon=True)
            probe.start()
        probe.join()

    def close(self) -> None:
        for w in self.workers.values():
            if w.process.is_alive():
                w.process.kill()
        for w in self.workers.values():
            w.process.join(5)
        self.socket.close(0)
        shutil.rmtree(self._folder, ignore_errors=True)

    # --- requests in ----------------------------------------------------------------------
    def create(self, peer, msg: dict, body: list[bytes]) -> None:
        """Start a worker for a create_session request and hand the request to it (once the
        fork server is ready: until then the request waits in `deferred`)."""
        if len(self.workers) + len(self.deferred) >= self.max_sessions:
            raise ProtocolError(
                "too_many_sessions",
                f"the server holds its maximum of {self.max_sessions} sessions; close one",
            )
        if not self._fork_ready.is_set():
            self.deferred.append((peer, msg, body))
            return
        if self._fork_error is not None:
            raise ProtocolError("internal_error", "the server cannot start session workers: "
                                f"{self._fork_error}")
        worker_id = f"w{next(self._ids)}".encode()
        direct = None
        if self.direct is not None:
            direct = {**self.direct, "bind": direct_bind(self.direct["address"], self._folder,
                                                         worker_id)}
        process = self._mp.Process(
            target=run_worker, name=f"rbcosim session worker {worker_id.decode()}",
            args=(self.address, worker_id, self.config, self.memory_bytes, os.getpid(), direct),
            daemon=True)
        with _without_main_module():
            process.start()
        w = Worker(worker_id, process, time.monotonic())
        self.workers[worker_id] = w
        self.forward(w, peer, msg, body)

    def route(self, session: str) -> Worker | None:
        w = self.by_session.get(session)
        if w is None and session in self.lost:
            raise ProtocolError("unknown_session", f"session {session} {self.lost[session]}")
        return w

    def forward(self, w: Worker, peer, msg: dict, body: list[bytes]) -> None:
        identity, delimited, use_frames = peer
        self.forwarded += 1
        w.outstanding[(identity, parent_key(msg["msg_id"]))] = (peer, _envelope(msg))
        if self.direct is not None and identity not in w.notify and offers_direct(msg["version"]):
            w.notify[identity] = peer
        frames = [w.id, identity, flags_of(delimited, use_frames), *body]
        if not w.ready:  # it connects a moment after it starts
            if len(w.queue) >= QUEUED_REQUESTS:
                self._refuse_busy(w, identity, msg)
            w.queue.append(frames)
            return
        try:
            # Never block the loop on one session: a worker whose queue is full refuses.
            self.socket.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            self._refuse_busy(w, identity, msg)
        except zmq.ZMQError:  # it is gone; reap() answers the request
            log.warning("a request to the ended worker %s waits for its reaping", w.id)

    def _refuse_busy(self, w: Worker, identity: bytes, msg: dict) -> None:
        w.outstanding.pop((identity, parent_key(msg["msg_id"])), None)
        raise ProtocolError(
            "limit_exceeded",
            f"session {w.session or '(being created)'} has {QUEUED_REQUESTS} requests waiting "
            "for it; this one is refused: wait for replies before sending more")

    # --- replies out ----------------------------------------------------------------------
    def receive(self) -> list[list[bytes]] | None:
        """One message from a worker: the client frames to send, or None for a control one."""
        worker_id, kind, *rest = self.socket.recv_multipart()
        w = self.workers.get(worker_id)
        if w is None:
            return None
        if kind == b"ready":
            w.ready = True
            for frames in w.queue:
                self.socket.send_multipart(frames)
            w.queue.clear()
            return None
        if kind == b"created":
            w.session = rest[0].decode()
            self.by_session[w.session] = w
            return None
        if kind == b"closed":  # later requests naming it get unknown_session here
            w.closed = True
            if w.session is not None:
                self.by_session.pop(w.session, None)
            return None
        identity, flags, key, *frames = rest
        w.outstanding.pop((identity, key), None)
        return [identity, b"", *frames] if b"d" in flags else [identity, *frames]

    def any_ended(self) -> bool:
        """Whether a worker process has ended and waits to be reaped."""
        return any(not w.process.is_alive() for w in self.workers.values())

    def reap(self) -> list[tuple[Any, dict]]:
        """Forget workers that ended; kill builds past the timeout; error replies to the
        requests each left unanswered, and a ``session_ended`` notice (parent_id nil) to each
        1.3 client of a created session, whose direct requests the worker can no longer
        answer."""
        replies: list[tuple[Any, dict]] = []
        now = time.monotonic()
        for wid, w in list(self.workers.items()):
            if w.session is None and w.process.is_alive() and now - w.started > self.build_timeout:
                w.process.kill()
                w.process.join(5)
                replies += self._answer(w, ProtocolError(
                    "limit_exceeded",
                    f"building the session's model took longer than {self.build_timeout:g} s "
                    "(serve --build-timeout); the build was stopped"))
            elif not w.process.is_alive():
                w.process.join()
                reason = "was closed" if w.closed else (
                    f"was lost: its worker process "
                    f"{_exit_reason(w.process.exitcode, self.memory_bytes)}")
                replies += self._answer(w, ProtocolError("session_closed", f"the session {reason}"))
                if w.session is not None and not w.closed:
                    self.lost[w.session] = reason
                if w.session is not None:
                    replies += _notices(w, f"the session {w.session} {reason}")
            else:
                continue
            del self.workers[wid]
            if w.session is not None:
                self.by_session.pop(w.session, None)
        return replies

    @staticmethod
    def _answer(w: Worker, exc: ProtocolError) -> list[tuple[Any, dict]]:
        out = [(peer, error_reply(envelope, exc)) for peer, envelope in w.outstanding.values()]
        w.outstanding.clear()
        return out


@contextlib.contextmanager
def _without_main_module():
    """Start a worker without multiprocessing's re-import of the parent's ``__main__`` (a
    worker needs nothing from it, and a script read from stdin cannot be re-imported)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _notices(w: Worker, sentence: str) -> list[tuple[Any, dict]]:
    """``session_ended`` notices to the 1.3 clients of an ended session (PROTOCOL.md §3):
    parent_id nil; every request of theirs still in flight on that session failed with it."""
    out = []
    for peer in w.notify.values():
        notice = error_reply({"msg_type": "session_ended", "session": w.session},
                             ProtocolError("session_closed", sentence))
        notice["msg_type"] = "session_ended"
        out.append((peer, notice))
    return out


def _envelope(msg: dict) -> dict:
    return {k: msg.get(k) for k in ("msg_id", "msg_type", "session")}


def _exit_reason(code: int | None, memory_bytes: int | None) -> str:
    if code is not None and code < 0:
        bound = f"; memory bound {memory_bytes} bytes" if memory_bytes else ""
        return f"was killed by signal {-code}{bound}"
    return f"ended unexpectedly (exit code {code})"
