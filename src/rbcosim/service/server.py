"""The ZeroMQ loop: a ROUTER socket that checks envelopes and routes them to session workers.

Sessions live in worker processes (`rbcosim.service.workers`), one each; this loop answers only
what needs no session (`hello`, a sessionless `heartbeat`, refusals of the envelope, unknown
sessions), starts a worker per `create_session`, and forwards requests and replies, so one
session's build, steps or files never delay another's replies. Each client's unread replies
are bounded in count and bytes (`rbcosim.service.outbox`): a client that stops reading loses
replies beyond them instead of growing the server. `close` and `heartbeat` for a session whose
worker is busy with a long request are answered here, from the worker's status: `close` then
ends the worker.

It never dies on input: a frame that does not decode, an exception inside a handler, a reply
that cannot be sent, each becomes an error reply or is dropped, and the loop goes on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

import zmq

from rbcosim.endpoints import is_loopback
from rbcosim.service.core import Service, error_reply
from rbcosim.service.curve import CurveConfig, generate_keys, secure
from rbcosim.service.defaults import (
    DEFAULT_BIND,
    DEFAULT_BUILD_TIMEOUT,
    DEFAULT_SEND_BYTES,
    DEFAULT_SEND_HWM,
    DEFAULT_SESSION_IDLE,
)
from rbcosim.service.errors import ProtocolError
from rbcosim.service.outbox import Outbox
from rbcosim.service.wire import Limits, decode, encode
from rbcosim.service.workers import QUEUED_REQUESTS, SessionWorkers

__all__ = ["DEFAULT_BIND", "DEFAULT_BUILD_TIMEOUT", "DEFAULT_SEND_HWM", "DEFAULT_SESSION_IDLE",
           "CurveConfig", "Server", "generate_keys", "is_loopback", "serve_in_thread"]

log = logging.getLogger("rbcosim.service")

_BATCH = 64  # messages taken from one socket before the loop looks at the other


class Server:
    """A ROUTER socket serving the sessions `service` describes, each in its own worker.

    service: the settings (rigid factory, barrier timeout, root, limits, session limit); it
        answers the sessionless requests here, and each worker builds its own from it.
    bind: a ZeroMQ endpoint; ``tcp://HOST:0`` picks a free port (see `address`).
    allow_remote: must be true to bind anything but loopback, ipc or inproc.
    curve: CURVE keys and client allow-list; required beyond loopback unless insecure=True.
    send_hwm, send_bytes: unread replies, and their bytes, kept per client.
    build_timeout: s a model build may take. request_timeout: s any later request may take
    (None: unbounded; beyond it the session's worker is stopped). session_idle: s a session
    may go without a request before it is closed (None: forever).
    session_memory: bytes of address space a session's worker may add (None: unbounded).
    """

    def __init__(
        self,
        service: Service,
        bind: str = DEFAULT_BIND,
        *,
        allow_remote: bool = False,
        curve: CurveConfig | None = None,
        insecure: bool = False,
        context: zmq.Context | None = None,
        send_hwm: int = DEFAULT_SEND_HWM,
        send_bytes: int = DEFAULT_SEND_BYTES,
        build_timeout: float = DEFAULT_BUILD_TIMEOUT,
        session_memory: int | None = None,
        request_timeout: float | None = None,
        session_idle: float | None = DEFAULT_SESSION_IDLE,
    ) -> None:
        if not is_loopback(bind):
            if not allow_remote:
                raise ValueError(
                    f"{bind} is not a loopback address; binding beyond loopback needs allow_remote "
                    "(CLI: --allow-remote) and CURVE keys or an explicit --insecure"
                )
            if curve is None and not insecure:
                raise ValueError(
                    f"binding {bind} beyond loopback without CURVE needs insecure=True "
                    "(CLI: --insecure); prefer --curve-secret and --curve-clients"
                )
        self.service = service
        self.limits: Limits = service.limits
        self._own_context = context is None
        self.context = context or zmq.Context()
        self._auth = None
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.MAXMSGSIZE, self.limits.hard_limit)
        self.socket.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.outbox = Outbox(self.socket, send_bytes, send_hwm)
        if curve is not None:
            try:
                self._auth = secure(self.context, self.socket, curve)
            except ValueError:
                self.socket.close(0)
                raise
        self.socket.bind(bind)
        self.address: str = self.socket.getsockopt(zmq.LAST_ENDPOINT).decode()
        service.announced_limits.update(
            build_timeout=build_timeout, session_memory=session_memory, send_hwm=send_hwm,
            send_bytes=send_bytes, request_timeout=request_timeout, session_idle=session_idle,
            queued_requests=QUEUED_REQUESTS)
        direct = None
        if self.address.startswith(("tcp://", "ipc://")):
            direct = {"address": self.address, "send_hwm": send_hwm,
                      "hard_limit": self.limits.hard_limit,
                      "curve": None if curve is None else (str(curve.server_secret_file),
                                                           str(curve.allowed_clients_dir))}
        self.workers = SessionWorkers(
            self.context, service.worker_config(), max_sessions=service.max_sessions,
            build_timeout=build_timeout, memory_bytes=session_memory, direct=direct,
            session_idle=session_idle, request_timeout=request_timeout, send_bytes=send_bytes)
        self.workers.announced = service.announced_limits
        self._stopping = False  # set by `stop` (no lock: a signal handler may call it)
        self._wake_r, self._wake_w = os.pipe()  # `stop` wakes the loop's poll at once
        os.set_blocking(self._wake_w, False)

    def stop(self) -> None:
        """Ask `serve_forever` to return (thread-safe, and safe in a signal handler, also one
        that interrupts another: a flag and a byte on a pipe, no lock)."""
        self._stopping = True
        if self._wake_w >= 0:  # -1 once closed
            with contextlib.suppress(BlockingIOError):  # a full pipe wakes it already
                os.write(self._wake_w, b"!")

    def close(self) -> None:
        self.workers.close()
        wake, self._wake_w = self._wake_w, -1
        os.close(wake)
        os.close(self._wake_r)
        self.socket.close(0)
        if self._auth is not None:
            self._auth.stop()
        if self._own_context:
            self.context.term()

    def serve_forever(self, poll_interval: float = 0.1) -> None:
        """Serve until `stop` (noticed at once); poll_interval (s) bounds how late a build
        timeout or an ended worker is noticed."""
        front, back = self.socket, self.workers.socket
        poller = zmq.Poller()
        poller.register(front, zmq.POLLIN)
        poller.register(back, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        wait_ms = max(1, int(poll_interval * 1000.0))
        while not self._stopping:
            # create_session requests wait for the fork server: look for it often meanwhile
            # (and replies wait for a slow client's queue to take them)
            soon = self.workers.deferred or self.outbox.pending
            events = dict(poller.poll(min(wait_ms, 2) if soon else wait_ms))
            # Bounded batches in turn, so that a flood on one side cannot starve the other
            # (ZeroMQ already queues fairly between the clients of each socket).
            if back in events:
                self._forward_worker_messages(_BATCH)
            if front in events:
                for _ in range(_BATCH):
                    if not front.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                        break
                    self._handle_frames(front.recv_multipart())
            if self.workers.any_ended():
                # An ended worker's last replies are already queued here (its socket lingers
                # until they are delivered): forward them before its leftovers are answered.
                self._forward_worker_messages(None)
            for peer, reply in self.workers.answer_busy():
                self._send(peer, reply)
            for peer, reply in self.workers.reap():
                self._send(peer, reply)
            for peer, reply in self.workers.start_deferred():
                self._send(peer, reply)
            self.outbox.flush()

    def _forward_worker_messages(self, limit: int | None) -> None:
        """Forward up to `limit` (None: all queued) worker messages to their clients."""
        back = self.workers.socket
        n = 0
        while (limit is None or n < limit) and back.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            frames = self.workers.receive()
            if frames is not None:
                self._send_frames(frames)
            n += 1

    def _handle_frames(self, frames: list[bytes]) -> None:
        identity = frames[0]
        # A REQ client (or a DEALER that imitates one) puts an empty delimiter frame first.
        delimited = len(frames) > 1 and not frames[1]
        body = frames[2:] if delimited else frames[1:]
        use_frames = len(body) > 1
        peer = (identity, delimited, use_frames)
        msg = None
        try:
            size = sum(len(f) for f in body)
            if size > self.limits.max_message_size:
                raise ProtocolError(
                    "message_too_large",
                    f"the message is {size} bytes; this server accepts at most "
                    f"{self.limits.max_message_size} bytes",
                )
            msg = decode(body, self.limits)
            replies = self._dispatch(msg, peer, body)
        except ProtocolError as exc:
            replies = [(peer, error_reply(msg or exc.envelope, exc))]
        except Exception as exc:
            log.exception("internal error while handling a request")
            replies = [
                (
                    peer,
                    error_reply(
                        msg, ProtocolError("internal_error", f"{type(exc).__name__}: {exc}")
                    ),
                )
            ]
        for target, reply in replies:
            self._send(target, reply)

    def _dispatch(self, msg: dict, peer, body: list[bytes]) -> list:
        """Hand a request to its session's worker (no replies here) or answer it at once."""
        if msg["msg_type"] == "create_session":
            self.workers.create(peer, msg, body)
            return []
        session = msg.get("session")
        worker = self.workers.route(session) if session else None
        if worker is not None:
            self.workers.forward(worker, peer, msg, body)
            return []
        return self.service.handle(msg, peer)  # hello, heartbeat, unknown sessions

    def _send_frames(self, frames: list[bytes]) -> None:
        self.outbox.send(frames)  # queued within the client's bounds, else dropped

    def _send(self, peer, reply: dict) -> None:
        identity, delimited, use_frames = peer
        try:
            frames = encode(reply, use_frames)
        except Exception as exc:
            log.exception("cannot encode a reply")
            error = {"code": "internal_error", "message": f"cannot encode the reply: {exc}"}
            frames = encode({**reply, "status": "error", "content": {}, "error": error})
        self._send_frames([identity, b"", *frames] if delimited else [identity, *frames])


def serve_in_thread(
    service: Service, bind: str = "tcp://127.0.0.1:0", **kwargs
) -> tuple[Server, threading.Thread]:
    """Start a server on a daemon thread; returns it (``server.address``) and the thread.

    Stop with ``server.stop(); thread.join(); server.close()``.
    """
    server = Server(service, bind, **kwargs)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    return server, thread
