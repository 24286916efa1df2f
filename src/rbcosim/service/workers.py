"""Each session in its own process: the worker's loop, and the socket loop's view of its workers.

The server's socket loop (`rbcosim.service.server`) keeps no session itself. `create_session`
starts a worker process (forked from a clean fork server, so it costs milliseconds) that holds
one `Service` with that one session; every later request naming the session goes to that
worker over a private ipc socket, and its replies come back the same way. A model build, a
long step or a file read in one session therefore never delays another session's replies, and
a worker that runs away — a build longer than the build timeout, memory beyond the session's
bound (an address-space limit set in the worker), a request longer than the request timeout —
is killed or fails alone, its waiting clients answered with an error.

Faults around the workers lose no session: a create_session that would leave the server
without file descriptors is refused alone (``resource_exhausted``) before the fork server is
asked; a worker's liveness is its own process (pid and start time), not the fork server's
word, so when the fork server dies its workers keep serving and a new fork server is started
for the next sessions; every worker ends with the server (`worker_process`).

Frames, socket loop → worker: ``[identity, flags, *body]`` (flags: ``d`` the client sent a
delimiter frame, ``f`` it sent buffer frames). Worker → socket loop: ``[b"ready"]`` once
connected; ``[b"reply", identity, flags, parent_key, *reply frames]``; ``[b"created", session
id]`` before a successful create_session reply; ``[b"closed", reason]`` before the close reply
(or a failed creation, or the idle time's end: then the reason), when the worker exits.

One hop per macro step (protocol 1.3): a worker also binds its own ROUTER socket, the *direct
endpoint* — same transport and interface as the server's bind, an OS-chosen port (tcp) or a
path beside the server's (ipc), the server's CURVE key and client allow-list — and names it in
the ``endpoint`` field of its create_session and attach replies to 1.3 clients. Such a client
then sends the session's requests there, with no socket loop in between; everything else (the
session's limits, the barrier, its isolation) is the worker's own and holds on both paths. A
peer is ``(identity, delimited, use_frames, route)``, route `VIA_SERVER` or `DIRECT`.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import zmq

from rbcosim.service import fork_server
from rbcosim.service.core import error_reply, ok_reply
from rbcosim.service.defaults import DEFAULT_SEND_BYTES
from rbcosim.service.errors import ProtocolError
from rbcosim.service.supervision import ProcessIdentity, WorkerStatus, check_fd_headroom
from rbcosim.service.worker_process import (
    QUEUED_REQUESTS,
    QUICK_REQUESTS,
    WorkerSettings,
    direct_bind,
    flags_of,
    offers_direct,
    parent_key,
    run_worker,
)

log = logging.getLogger("rbcosim.service")

_ADOPTED_CHECK_S = 0.2  # how often the liveness of a worker whose fork server died is read
_LAST_WORDS_S = 2.0  # how long a cleanly ended worker's last messages are waited for


# --- the socket loop's side -----------------------------------------------------------------


@dataclass
class Worker:
    """One session's process as the socket loop sees it."""

    id: bytes
    process: Any
    started: float
    identity: ProcessIdentity
    status: WorkerStatus
    session: str | None = None
    outstanding: dict[tuple[bytes, bytes], tuple[Any, dict]] = field(default_factory=dict)
    """(client identity, parent key) -> (peer, request envelope) still to be answered."""
    queue: list[list[bytes]] = field(default_factory=list)
    """Requests that arrived before the worker connected."""
    ready: bool = False
    closed: bool = False
    close_reason: str | None = None
    """Why the worker closed its session itself (idle), or why the socket loop stopped it."""
    adopted: bool = False
    """Its fork server died: its liveness is read from /proc, its exit code is unknown."""
    quick: dict[tuple[bytes, bytes], tuple[Any, dict]] = field(default_factory=dict)
    """The outstanding close and heartbeat requests: answered by the socket loop if the
    worker is busy with a request before them."""
    answered: set[tuple[bytes, bytes]] = field(default_factory=set)
    """Requests the socket loop answered for the busy worker: its own late replies are dropped."""
    ended_at: float | None = None
    """When the socket loop first found the process ended (monotonic s)."""
    notify: dict[bytes, Any] = field(default_factory=dict)
    """Client identity -> peer of the 1.3 clients that reached this session through the
    socket loop: told by a ``session_ended`` notice when the worker ends (their requests on
    the direct endpoint have no one else to answer them)."""

    def alive(self) -> bool:
        if not self.adopted and self.process.is_alive():
            return True
        # the fork server's word "ended" (its pipe closed) may only mean the fork server died
        self.adopted = self.adopted or self.identity.alive()
        return self.adopted and self.identity.alive()


def workers_folder() -> str:
    """A new private folder for the workers' ipc sockets and status files, in the temporary
    folder (/tmp when TMPDIR is too long for socket paths: `fork_server.short_tempdir`)."""
    fork_server.short_tempdir()
    return tempfile.mkdtemp(prefix="rbcosim-workers-")


class SessionWorkers:
    """Start, route to, and reap the session workers of one server.

    config: keyword arguments of the `Service` each worker builds (picklable).
    build_timeout: seconds a create_session may take before its worker is killed.
    memory_bytes: per-session address-space bound (None: unbounded).
    session_idle, request_timeout: seconds (None: unbounded), see `worker_process`.
    send_bytes: reply bytes queued per direct client.
    """

    def __init__(self, context: zmq.Context, config: dict, *, max_sessions: int,
                 build_timeout: float, memory_bytes: int | None,
                 direct: dict | None = None, session_idle: float | None = None,
                 request_timeout: float | None = None,
                 send_bytes: int = DEFAULT_SEND_BYTES) -> None:
        self._folder = workers_folder()
        self.socket = context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.socket.setsockopt(zmq.SNDHWM, QUEUED_REQUESTS)
        try:
            self.socket.bind(f"ipc://{self._folder}/backend")
        except zmq.ZMQError:
            self.socket.close(0)
            shutil.rmtree(self._folder, ignore_errors=True)
            raise
        self.address = self.socket.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.config = config
        self.max_sessions = max_sessions
        self.build_timeout = build_timeout
        self.memory_bytes = memory_bytes
        self.session_idle = session_idle
        self.request_timeout = request_timeout
        self.send_bytes = send_bytes
        self.announced: dict = {}
        """The limits `hello` reports, for the workers' own `hello` replies."""
        self.direct = direct
        """The direct endpoints' settings (`run_worker`), with ``address`` the server's bound
        address; None: sessions get no direct endpoint."""
        # Every worker holds the read end of this pipe, only this process its write end:
        # when this process ends, however, every worker ends (worker_process).
        read_end, self._alive_w = os.pipe()
        self._alive_r = multiprocessing.connection.Connection(read_end, writable=False)
        # One fork server per process (`rbcosim serve` starts it before it imports this),
        # awaited here on a thread so that the server answers at once and the first session
        # does not wait for it longer than it must; it preloads the compiled core
        # (rbcosim.service.preload). create_session requests that come before it is ready
        # wait in `deferred`; so do those while a fork server that died is replaced, and
        # those short of file descriptors while a closed session's worker is still ending.
        self._mp = fork_server.context()
        self._fork_ready = threading.Event()
        self._fork_error: str | None = None
        self.deferred: list[tuple[Any, dict, list[bytes]]] = []
        self.fork_restarts = 0
        """Fork servers started after the first one died."""
        self._restart_fork_server(first=True)
        self._ids = itertools.count(1)
        self.workers: dict[bytes, Worker] = {}
        self.by_session: dict[str, Worker] = {}
        self.lost: dict[str, str] = {}
        """Session id -> why its worker ended, for requests that still name it."""
        self.forwarded = 0
        """Requests handed to workers by the socket loop (the direct endpoints' are not)."""
        self._adopted_checked = 0.0

    def _restart_fork_server(self, first: bool = False) -> None:
        """(Re)start the fork server on a thread; creations wait in `deferred` meanwhile."""
        if not first:
            if not self._fork_ready.is_set():
                return  # already under way
            self.fork_restarts += 1
            log.warning("the session workers' fork server ended; starting a new one")
        self._fork_ready.clear()
        threading.Thread(target=self._start_fork_server, name="rbcosim fork server",
                         daemon=True).start()

    def _start_fork_server(self) -> None:
        try:
            self._wait_for_fork_server()
            self._fork_error = None
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
        """Start the fork server (multiprocessing starts a new one when the last one died)
        and wait until it has loaded the core (about a second of imports), so that no
        create_session waits for it."""
        with fork_server.without_main_module():
            probe = self._mp.Process(target=int, daemon=True)
            probe.start()
        probe.join()

    def close(self) -> None:
        for w in self.workers.values():
            w.identity.kill()
        for w in self.workers.values():
            if not w.adopted:
                w.process.join(5)
            w.status.remove()
        self.socket.close(0)
        os.close(self._alive_w)
        self._alive_r.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    # --- requests in ----------------------------------------------------------------------
    def create(self, peer, msg: dict, body: list[bytes]) -> None:
        """Start a worker for a create_session request and hand the request to it (once the
        fork server is ready, and, when file descriptors are short, once the workers of
        closed sessions have ended: until then the request waits in `deferred`)."""
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
        try:
            check_fd_headroom()
        except ProtocolError:
            if not any(w.closed for w in self.workers.values()):
                raise
            # a closed session's worker is still ending: its descriptors come free when it
            # is reaped, so the request waits for that rather than being refused now
            self.deferred.append((peer, msg, body))
            return
        worker_id = f"w{next(self._ids)}".encode()
        process = self._mp.Process(
            target=run_worker, name=f"rbcosim session worker {worker_id.decode()}",
            args=(self._settings(worker_id), self._alive_r), daemon=True)
        try:
            with fork_server.without_main_module():
                process.start()
        except (OSError, EOFError) as exc:  # fds or processes ran out, or the fork server died
            self._restart_fork_server()
            raise ProtocolError("resource_exhausted", "the server could not start a session "
                                f"process ({exc}); try again later") from None
        w = Worker(worker_id, process, time.monotonic(), ProcessIdentity(process.pid),
                   WorkerStatus(self._status_path(worker_id)))
        self.workers[worker_id] = w
        self.forward(w, peer, msg, body)

    def _status_path(self, worker_id: bytes) -> str:
        return f"{self._folder}/{worker_id.decode()}.status"

    def _settings(self, worker_id: bytes) -> WorkerSettings:
        direct = None
        if self.direct is not None:
            direct = {**self.direct, "bind": direct_bind(self.direct["address"], self._folder,
                                                         worker_id)}
        return WorkerSettings(self.address, worker_id, self.config, self.memory_bytes,
                              self._status_path(worker_id), direct, self.session_idle,
                              self.request_timeout, self.send_bytes, self.announced)

    def route(self, session: str) -> Worker | None:
        w = self.by_session.get(session)
        if w is None and session in self.lost:
            raise ProtocolError("unknown_session", f"session {session} {self.lost[session]}")
        return w

    def answer_busy(self) -> list[tuple[Any, dict]]:
        """Answer the close and heartbeat requests waiting for a worker busy with an earlier
        request, from its status: a heartbeat gets step, time and ``busy`` (s the request
        has run); a close stops the worker (its waiting clients are answered when it is
        reaped) and gets ``stopped``."""
        replies = []
        for w in list(self.workers.values()):
            status = w.status.read() if w.quick else None
            if status is None or status[0] == 0.0:
                continue
            busy, step, at = time.monotonic() - status[0], int(status[1]), status[2]
            for key, (peer, envelope) in w.quick.items():
                w.outstanding.pop(key, None)
                w.answered.add(key)
                if envelope["msg_type"] == "heartbeat":
                    replies.append((peer, ok_reply(envelope, {
                        "server_time": time.monotonic(), "step": step, "time": at,
                        "busy": busy})))
                    continue
                replies.append((peer, ok_reply(envelope, {
                    "session": w.session, "step": step, "time": at, "stopped": True})))
                w.closed, w.close_reason = True, "was closed while a request ran (it was stopped)"
                if w.session is not None:
                    self.by_session.pop(w.session, None)
                w.identity.kill()
            w.quick.clear()
        return replies

    def forward(self, w: Worker, peer, msg: dict, body: list[bytes]) -> None:
        identity, delimited, use_frames = peer
        self.forwarded += 1
        key = (identity, parent_key(msg["msg_id"]))
        w.outstanding[key] = (peer, _envelope(msg))
        if msg["msg_type"] in QUICK_REQUESTS:
            w.quick[key] = w.outstanding[key]
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
            w.close_reason = w.close_reason or (rest[0].decode() if rest and rest[0] else None)
            if w.session is not None:
                self.by_session.pop(w.session, None)
            return None
        identity, flags, key, *frames = rest
        w.outstanding.pop((identity, key), None)
        w.quick.pop((identity, key), None)
        if (identity, key) in w.answered:  # the socket loop answered it while w was busy
            w.answered.discard((identity, key))
            return None
        return [identity, b"", *frames] if b"d" in flags else [identity, *frames]

    def any_ended(self) -> bool:
        """Whether a worker process has ended and waits to be reaped (adopted workers, whose
        liveness costs a /proc read, are looked at every `_ADOPTED_CHECK_S`)."""
        now = time.monotonic()
        check_adopted = now - self._adopted_checked >= _ADOPTED_CHECK_S
        if check_adopted:
            self._adopted_checked = now
        return any((check_adopted or not w.adopted) and not w.alive()
                   for w in self.workers.values())

    def reap(self) -> list[tuple[Any, dict]]:
        """Forget workers that ended; kill builds past the timeout; error replies to the
        requests each left unanswered, and a ``session_ended`` notice (parent_id nil) to each
        1.3 client of a created session, whose direct requests the worker can no longer
        answer. A worker outliving its fork server is kept, and the fork server replaced."""
        replies: list[tuple[Any, dict]] = []
        now = time.monotonic()
        for wid, w in list(self.workers.items()):
            was_adopted = w.adopted
            alive = w.alive()
            if w.adopted and not was_adopted:
                self._restart_fork_server()
            if w.session is None and alive and now - w.started > self.build_timeout:
                w.identity.kill()
                if not w.adopted:
                    w.process.join(5)
                replies += self._answer(w, ProtocolError(
                    "limit_exceeded",
                    f"building the session's model took longer than {self.build_timeout:g} s "
                    "(serve --build-timeout); the build was stopped"))
            elif not alive:
                if self._last_words_due(w, now):
                    continue
                replies += self._ended(w)
            else:
                continue
            w.status.remove()
            del self.workers[wid]
            if w.session is not None:
                self.by_session.pop(w.session, None)
        return replies

    @staticmethod
    def _last_words_due(w: Worker, now: float) -> bool:
        """Whether an ended worker's last messages may still be on their way: it ended
        cleanly (exit code 0, or not yet known), which it does only after its "closed"
        message and replies, but "closed" has not come (the process's end can be seen before
        the messages it sent are read here). Waited for at most _LAST_WORDS_S."""
        if w.closed or w.adopted or w.process.exitcode not in (0, None):
            return False
        if w.ended_at is None:
            w.ended_at = now
        return now - w.ended_at < _LAST_WORDS_S

    def _ended(self, w: Worker) -> list[tuple[Any, dict]]:
        if not w.adopted:
            w.process.join()
        code = None if w.adopted else w.process.exitcode
        reason = (w.close_reason or "was closed") if w.closed else (
            f"was lost: its worker process "
            f"{_exit_reason(code, self.memory_bytes, self.request_timeout)}")
        replies = self._answer(w, ProtocolError("session_closed", f"the session {reason}"))
        if w.session is not None and (not w.closed or w.close_reason):
            self.lost[w.session] = reason
        if w.session is not None:
            replies += _notices(w, f"the session {w.session} {reason}")
        return replies

    @staticmethod
    def _answer(w: Worker, exc: ProtocolError) -> list[tuple[Any, dict]]:
        out = [(peer, error_reply(envelope, exc)) for peer, envelope in w.outstanding.values()]
        w.outstanding.clear()
        return out


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


def _exit_reason(code: int | None, memory_bytes: int | None,
                 request_timeout: float | None) -> str:
    if code is None:
        return "ended (its exit status is unknown: the fork server that started it had died)"
    if code == -signal.SIGALRM and request_timeout is not None:
        return (f"was stopped: a request ran longer than {request_timeout:g} s "
                "(serve --request-timeout)")
    if code < 0:
        bound = f"; memory bound {memory_bytes} bytes" if memory_bytes else ""
        return f"was killed by signal {-code}{bound}"
    return f"ended unexpectedly (exit code {code})"
