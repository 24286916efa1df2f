"""A session worker's process: serve one session's requests, from the socket loop and on the
session's direct endpoint, until it is closed, its creation fails, it idles past the session
idle time, or the server is gone (`rbcosim.service.workers` is the socket loop's side).

Bounds that hold on both paths live here: the memory bound (an address-space limit), the time
bound of one request (``request_timeout``: an interval timer whose SIGALRM ends the process),
the idle time after which the session closes itself, and the reply bytes queued per direct
client (`rbcosim.service.outbox`). The worker ends with the server (SIGIO on the closing of a
pipe only the server writes, `rbcosim.service.supervision.arm_server_death`), even mid-step.
While it handles a request it shows so in its status file, where the socket loop reads it to
answer `close` and `heartbeat` for a busy session.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import signal
import time
from dataclasses import dataclass
from typing import Any

import msgpack
import zmq

from rbcosim.endpoints import IPC_PATH_MAX
from rbcosim.service.core import Service, error_reply
from rbcosim.service.curve import CurveConfig, secure
from rbcosim.service.errors import ProtocolError
from rbcosim.service.outbox import Outbox
from rbcosim.service.served_path import HANDOVER, OTHER, UNSENT, ServedPath
from rbcosim.service.supervision import WorkerStatus, arm_server_death
from rbcosim.service.wire import decode, encode

log = logging.getLogger("rbcosim.service")

QUICK_REQUESTS = ("close", "heartbeat")  # answered by the socket loop while the worker is busy
QUEUED_REQUESTS = 1000  # requests waiting for one session's worker before more are refused
VIA_SERVER, DIRECT = 0, 1  # the route of a worker's peer: through the socket loop, or direct
C_STEP_PATH = os.environ.get("RBCOSIM_C_STEP_PATH", "1") != "0"
"""Ordinary step requests on the direct endpoint go through the C path (`ServedPath`);
RBCOSIM_C_STEP_PATH=0 turns it off (the same replies, by Python alone: a check of the C path)."""


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


def _handle(service: Service, frames: list[bytes], endpoint: str | None = None,
            status: WorkerStatus | None = None) -> list[tuple[Any, dict]]:
    """One request from the socket loop: ``[identity, flags, *body]``."""
    identity, flags, *body = frames
    return _serve(service, (identity, b"d" in flags, b"f" in flags, VIA_SERVER), body, endpoint,
                  status)


def _handle_direct(service: Service, frames: list[bytes], endpoint: str | None,
                   status: WorkerStatus | None = None) -> list[tuple[Any, dict]]:
    """One request on the direct endpoint: ``[identity, (empty,) header, *buffers]``; the
    size limit the socket loop applies to its requests applies here too."""
    identity = frames[0]
    delimited = len(frames) > 1 and not frames[1]
    body = frames[2:] if delimited else frames[1:]
    peer = (identity, delimited, len(body) > 1, DIRECT)
    size = sum(map(len, body))
    if size > service.limits.max_message_size:
        return [(peer, error_reply(None, ProtocolError(
            "message_too_large", f"the message is {size} bytes; this server accepts at most "
            f"{service.limits.max_message_size} bytes")))]
    return _serve(service, peer, body, endpoint, status)


def _serve(service: Service, peer, body: list[bytes], endpoint: str | None,
           status: WorkerStatus | None = None) -> list[tuple[Any, dict]]:
    """Decode and handle one request; `status` shows the worker busy meanwhile (except for
    the quick `close` and `heartbeat`, which the socket loop answers for a busy worker)."""
    msg = None
    try:
        msg = decode(body, service.limits)
        if status is not None and msg["msg_type"] not in QUICK_REQUESTS:
            status.busy(time.monotonic())
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
            "limit_exceeded", "the session ran out of its memory bound (serve "
            "--session-memory BYTES) while handling this request; the session is lost")))]
    except Exception as exc:
        log.exception("internal error in a session worker")
        return [(peer, error_reply(msg, ProtocolError("internal_error",
                                                      f"{type(exc).__name__}: {exc}")))]


_NAMING_REPLIES = ("create_session", "attach")


def offers_direct(version: str) -> bool:
    """Whether a request of this protocol version is answered with the direct endpoint (1.3+)."""
    _, _, minor = version.partition(".")
    return minor.isdigit() and int(minor) >= 3


def _send(sock: zmq.Socket, direct: Outbox | None, peer, reply: dict) -> None:
    identity, delimited, use_frames, route = peer
    try:
        frames = encode(reply, use_frames)
    except Exception as exc:  # noqa: BLE001 - an unencodable reply becomes an error reply
        error = {"code": "internal_error", "message": f"cannot encode the reply: {exc}"}
        frames = encode({**reply, "status": "error", "content": {}, "error": error})
    if route == DIRECT:  # bounded per client like the socket loop's replies (outbox)
        direct.send([identity, b"", *frames] if delimited else [identity, *frames])
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
        if len(path.encode()) > IPC_PATH_MAX:
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
    sock.setsockopt(zmq.RCVHWM, QUEUED_REQUESTS)
    auth = None
    if direct.get("curve") is not None:
        auth = secure(ctx, sock, CurveConfig(*direct["curve"]), strict=False)
    sock.bind(bind)
    endpoint = sock.getsockopt(zmq.LAST_ENDPOINT).decode()
    if bind.startswith("ipc://"):
        with contextlib.suppress(OSError):
            os.chmod(endpoint[len("ipc://"):], 0o600)
    return sock, endpoint, auth


@dataclass
class WorkerSettings:
    """What a worker needs from the server (picklable). direct: the direct endpoint's settings
    (``bind``, ``send_hwm``, ``hard_limit``, ``curve``: (server secret file, allowed clients
    folder) or None), None for no direct endpoint; session_idle, request_timeout: s or None."""

    backend: str
    worker_id: bytes
    config: dict
    memory_bytes: int | None
    status_path: str
    direct: dict | None = None
    session_idle: float | None = None
    request_timeout: float | None = None
    send_bytes: int = 32 * 1024 * 1024
    announced: dict | None = None
    """The limits the server announces in `hello` (a hello on the direct endpoint says the same)."""


def run_worker(settings: WorkerSettings, server_pipe: Any) -> None:
    """A session worker's whole life. server_pipe: a `multiprocessing.connection.Connection`
    on the read end of the pipe whose closing means the server is gone."""
    arm_server_death(server_pipe.fileno())
    server_pipe.close()
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # request_timeout: SIGALRM ends the process
    _bound_memory(settings.memory_bytes)
    status = WorkerStatus(settings.status_path)
    status.create()
    service = Service(**settings.config)
    service.announced_limits.update(settings.announced or {})
    status.set(0.0, *_where(service))  # `busy` changes only the first field
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, settings.worker_id)
    sock.setsockopt(zmq.LINGER, 2000)
    sock.connect(settings.backend)
    direct = settings.direct or {}
    direct_sock, endpoint, auth = _open_direct(ctx, direct.get("bind"), direct)
    outbox = None if direct_sock is None else Outbox(direct_sock, settings.send_bytes,
                                                     direct["send_hwm"])
    sock.send_multipart([b"ready"])
    poller = zmq.Poller()
    if direct_sock is not None:
        poller.register(direct_sock, zmq.POLLIN)  # first: the hot path
    poller.register(sock, zmq.POLLIN)
    wait = _Wait(poller, direct_sock, sock, settings, status, outbox, service)
    last = time.monotonic()
    try:
        while True:
            source, frames, last = wait.next(last)
            closing = b""
            if source is REPLIED:  # the C path took steps; its last reply waits in the outbox
                replies = []
            elif source is not None:
                timer = settings.request_timeout if service.sessions else None  # not a build
                if timer is not None:  # request_timeout: SIGALRM ends the process
                    signal.setitimer(signal.ITIMER_REAL, timer)
                try:
                    if source is direct_sock:
                        replies = _handle_direct(service, frames or direct_sock.recv_multipart(),
                                                 endpoint, status)
                    else:
                        replies = _handle(service, sock.recv_multipart(), endpoint, status)
                finally:
                    if timer is not None:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                status.set(0.0, *_where(service))
                last = time.monotonic()  # idle from the end of the request on
            else:
                replies = service.poll_timeouts()
                idle = settings.session_idle
                if idle is not None and service.sessions and time.monotonic() - last >= idle:
                    service.sessions.clear()
                    closing = (f"was closed after {idle:g} s without a request "
                               "(serve --session-idle)").encode()
            ended = not service.sessions  # closed, idle, or its creation failed
            if ended:  # before the replies: a client told "closed" must not reach this worker
                sock.send_multipart([b"closed", closing])
            for peer, reply in replies:
                if reply["msg_type"] == "create_session_reply" and reply["status"] == "ok":
                    sock.send_multipart([b"created", reply["content"]["session"].encode()])
                _send(sock, outbox, peer, reply)
            if outbox is not None and outbox.pending:
                outbox.flush()
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
        status.remove()


REPLIED = "replied"  # _Wait.next: the C path answered (its last reply queued in the outbox)


class _Wait:
    """Where the worker's next request comes from: the C step path (`ServedPath`) while the
    session qualifies and its requests come on the direct socket (a 1.2 client's, through the
    server, would only pass through it), else a poll of both sockets."""

    def __init__(self, poller, direct_sock, sock, settings: WorkerSettings, status, outbox,
                 service: Service) -> None:
        self.poller, self.direct_sock, self.sock = poller, direct_sock, sock
        self.settings, self.outbox, self.service = settings, outbox, service
        self.fast = ServedPath() if direct_sock is not None and C_STEP_PATH else None
        self.status = status.doubles()
        self.limit = service.limits.max_message_size
        self.direct_turn = True  # the last request came on the direct socket

    def next(self, last: float) -> tuple[Any, list | None, float]:
        """(the socket with a request, REPLIED, or None after a wait with none; the request's
        frames if the C path received them; when the last request ended (monotonic s))."""
        if self.fast is not None and self.direct_turn and self.service.sessions:
            idle = self.settings.session_idle
            timer = self.settings.request_timeout
            ran = self.fast.run(self.service, (self.direct_sock, self.sock),
                                (-1.0 if idle is None else idle, timer or 0.0, self.limit),
                                self.status, self.outbox, last)
            if ran is not None:
                code, frames, end = ran
                last = last if end is None else end
                if code == HANDOVER:
                    return self.direct_sock, frames, last
                if code == OTHER:
                    self.direct_turn = False
                    return self.sock, None, last
                return (REPLIED if code == UNSENT else None), None, last
        ready = self.poller.poll(_wait_ms(self.service, last, self.settings.session_idle,
                                          self.outbox))
        source = ready[0][0] if ready else None
        if source is not None:
            self.direct_turn = source is self.direct_sock
        return source, None, last


def _wait_ms(service: Service, last: float, idle: float | None, outbox: Outbox | None) -> int:
    """How long the worker may wait for a request: until a barrier deadline, the idle time,
    or (replies queued for a slow direct client) a moment; -1: until one comes."""
    deadline = service.next_deadline()
    if idle is not None:
        deadline = last + idle if deadline is None else min(deadline, last + idle)
    now = time.monotonic()
    if outbox is not None and outbox.pending:
        deadline = now + 0.002 if deadline is None else min(deadline, now + 0.002)
    if deadline is None:
        return -1
    return max(1, int((deadline - now) * 1000.0) + 1)


def _where(service: Service) -> tuple[float, float]:
    """(step, time) of the worker's session, (-1, nan) before it has one."""
    for s in service.sessions.values():
        return float(s.step), float(s.rigid.time)
    return -1.0, float("nan")
