"""The transport-free service: decoded request dicts in, reply dicts out.

`Service.handle(message, peer)` takes one decoded request (an envelope dict, see
interfaces/PROTOCOL.md) and returns the replies it causes as ``(peer, reply)`` pairs: usually
one reply to the sender, none while a step waits at a barrier, and one per waiting client when
the last input of a step arrives. `Service.poll_timeouts()` turns clients that vanished during a
barrier into timeout replies to the others. Nothing here knows about sockets; the ZeroMQ loop
(`rbcosim.service.server`) only decodes, calls these two, and encodes.

Here: the entry points, sessions' creation, attachment, detachment and close. The step
barrier is in `stepping`, state and results requests in `state_requests`, the bookkeeping of a
session in `session`, replies and content fields in `requests`.

Sessions are independent: one session's bad input, failure or vanished client never touches
another's numbers.
"""

from __future__ import annotations

import functools
import secrets
import time as _time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rbcosim import PROTOCOL_VERSION, __version__
from rbcosim.errors import ScenarioError
from rbcosim.limits import RunLimits
from rbcosim.service import files
from rbcosim.service.creation import SessionCreation
from rbcosim.service.errors import ProtocolError
from rbcosim.service.requests import (
    Peer,
    Replies,
    content_field,
    error_reply,
    name_list,
    ok_reply,
)
from rbcosim.service.session import (
    EMPTY_KINEMATICS,
    AttachedClient,
    Session,
    row_indices,
    select_rows,
)
from rbcosim.service.state_requests import StateRequests
from rbcosim.service.stepping import StepRequests
from rbcosim.service.wire import Limits

#: Message types a client may send, in the order PROTOCOL.md documents them.
MESSAGE_TYPES = (
    "hello",
    "create_session",
    "attach",
    "detach",
    "step",
    "report",
    "set_added_mass",
    "get_state",
    "set_state",
    "save",
    "restore",
    "outputs",
    "results",
    "close",
    "heartbeat",
)
DEFAULT_LIMITS = Limits()


def default_rigid_factory(path=None, *, text=None, base_dir=None, overrides=None,
                          limits: RunLimits | None = None):
    """`RigidSide.from_scenario` from the core, imported when the first session is created;
    the scenario must pass `limits` (default: `rbcosim.limits.RunLimits()`) before the solver
    is built."""
    try:
        from rbcosim.cosim.rigid_side import RigidSide
    except ImportError as exc:
        raise ScenarioError(f"the rigid side is not available in this build ({exc})") from None
    return RigidSide.from_scenario(path, text=text, base_dir=base_dir, overrides=overrides,
                                   limits=limits or RunLimits())


# --- content field helpers -------------------------------------------------------------------


# --- sessions --------------------------------------------------------------------------------


class Service(SessionCreation, StepRequests, StateRequests):
    """Sessions of rigid sides behind the protocol's request/reply messages.

    rigid_factory: ``f(path=None, *, text=None, base_dir=None, overrides=None)`` returning an
        object with the RigidSide interface; defaults to the core's ``RigidSide.from_scenario``.
    barrier_timeout: default seconds a step barrier waits for a missing client (a session may
        set its own).
    root: directory that scenario paths and state files must lie in (None: any path).
    run_limits: model and run sizes a session may have (the default factory enforces them).
    clock: monotonic seconds; tests pass a fake to make timeouts deterministic.
    """

    def __init__(
        self,
        *,
        rigid_factory: Callable[..., Any] | None = None,
        barrier_timeout: float = 30.0,
        root: str | Path | None = None,
        max_sessions: int = 256,
        limits: Limits = DEFAULT_LIMITS,
        run_limits: RunLimits | None = None,
        clock: Callable[[], float] = _time.monotonic,
    ) -> None:
        self.run_limits = run_limits or RunLimits()
        self.rigid_factory = rigid_factory or functools.partial(default_rigid_factory,
                                                                limits=self.run_limits)
        self.barrier_timeout = float(barrier_timeout)
        self.root = Path(root).resolve() if root is not None else None
        self.max_sessions = max_sessions
        self.limits = limits
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self._waiting: set[str] = set()  # ids of sessions whose barrier is half full
        self.announced_limits: dict[str, Any] = {}
        """Limits the socket layer enforces (build timeout, memory, queues), for `hello`."""
        self._handlers: dict[str, Callable[[dict, Any], Any]] = {
            name: getattr(self, f"_on_{name}") for name in MESSAGE_TYPES
        }

    def worker_config(self) -> dict:
        """The keyword arguments a session worker builds its own one-session Service from
        (`rbcosim.service.workers`); a worker runs on the real clock."""
        return {"rigid_factory": self.rigid_factory, "barrier_timeout": self.barrier_timeout,
                "root": self.root, "max_sessions": 1, "limits": self.limits,
                "run_limits": self.run_limits}

    # --- entry points ------------------------------------------------------------------------

    def handle(self, msg: dict, peer: Peer = None) -> Replies:
        """Dispatch one decoded request; returns the replies it causes, each with its peer."""
        try:
            handler = self._handlers.get(msg["msg_type"])
            if handler is None:
                raise ProtocolError(
                    "unknown_msg_type",
                    f"unknown msg_type {msg['msg_type']!r}; valid types: {list(MESSAGE_TYPES)}",
                )
            result = handler(msg, peer)
        except ProtocolError as exc:
            return [(peer, error_reply(msg, exc))]
        if result is None:
            return []
        if isinstance(result, list):
            return result
        return [(peer, ok_reply(msg, result))]

    def request(self, msg: dict, peer: Peer = None) -> dict:
        """`handle` for requests answered at once; returns the sender's reply."""
        replies = [r for p, r in self.handle(msg, peer) if p == peer]
        if len(replies) != 1:
            raise RuntimeError(f"{msg['msg_type']} produced {len(replies)} replies to its sender")
        return replies[0]

    def next_deadline(self) -> float | None:
        """The earliest clock time at which `poll_timeouts` may have something to report."""
        if not self._waiting:
            return None
        deadlines = [
            d for sid in self._waiting if (d := self._deadline(self.sessions[sid])) is not None
        ]
        return min(deadlines, default=None)

    def poll_timeouts(self, now: float | None = None) -> Replies:
        """Detach clients that missed a barrier deadline; timeout replies to those who wait."""
        now = self.clock() if now is None else now
        replies: Replies = []
        for sid in list(self._waiting):
            s = self.sessions[sid]
            missing = [c for cid, c in s.clients.items() if cid not in s.pending]
            gone = [
                c for c in missing if max(s.barrier_opened, c.last_seen) + s.barrier_timeout <= now
            ]
            if not gone:
                continue
            for c in gone:
                self._detach(s, c, orphan=True)
            names = "; ".join(
                f"client {c.id} ({c.name!r}, points {list(c.points)}, joints {list(c.joints)})"
                for c in gone
            )
            exc = ProtocolError(
                "timeout",
                f"{names} sent no inputs for step {s.step} within {s.barrier_timeout:g} s and "
                f"{'was' if len(gone) == 1 else 'were'} detached; the session stays at {s.where()} "
                "with no inputs applied: attach a new client to the orphaned points and joints, "
                "then resend this step (or restore a saved state first)",
            )
            replies += [(p.peer, error_reply(p.msg, exc)) for p in s.pending.values()]
            s.pending.clear()
            s.barrier_opened = None
            self._waiting.discard(sid)
        return replies

    # --- helpers -----------------------------------------------------------------------------

    def _deadline(self, s: Session) -> float | None:
        if s.barrier_opened is None:
            return None
        missing = [c.last_seen for cid, c in s.clients.items() if cid not in s.pending]
        if not missing:
            return None
        return max(s.barrier_opened, min(missing)) + s.barrier_timeout

    def _session(self, msg: dict) -> Session:
        sid = msg.get("session")
        if not sid:
            raise ProtocolError(
                "unknown_session", f"{msg['msg_type']} needs the envelope's session id"
            )
        try:
            return self.sessions[sid]
        except KeyError:
            raise ProtocolError(
                "unknown_session",
                f"no open session {sid!r} (closed, or never created on this server)",
            ) from None

    def _client(self, s: Session, content: dict) -> AttachedClient:
        cid = content_field(content, "client", str)
        try:
            c = s.clients[cid]
        except KeyError:
            raise ProtocolError(
                "unknown_client",
                f"client {cid!r} is not attached to session {s.id} (never attached, detached, or "
                "detached after a barrier timeout); attach again",
            ) from None
        c.last_seen = self.clock()
        return c

    def _path(self, text: Any, key: str, base: Path | None = None) -> Path:
        return files.confined(self.root, text, key, base)

    def _require_idle_barrier(self, s: Session, action: str) -> None:
        if s.pending:
            raise ProtocolError(
                "barrier_pending",
                f"cannot {action} while clients {sorted(s.pending)} wait at the barrier of step {s.step}",
            )

    def _detach(self, s: Session, c: AttachedClient, *, orphan: bool) -> None:
        s.clients.pop(c.id, None)
        s.pending.pop(c.id, None)
        for p in c.points:
            s.point_owner.pop(p, None)
            if orphan:
                s.orphans[p] = c.id
        for j in c.joints:
            s.joint_owner.pop(j, None)
            if orphan:
                s.orphans[j] = c.id
        if not s.pending:
            s.barrier_opened = None
            self._waiting.discard(s.id)


    def _take_over(self, s: Session, old: AttachedClient, points: tuple[str, ...],
                   joints: tuple[str, ...]) -> Replies:
        """Take `points` and `joints` from `old` (a forced attach): it keeps the rest of its
        names (detached when none is left); a step of its waiting at the barrier fails."""
        keep_points = tuple(p for p in old.points if p not in points)
        keep_joints = tuple(j for j in old.joints if j not in joints)
        waiting = s.pending.pop(old.id, None)
        if not keep_points and not keep_joints:
            self._detach(s, old, orphan=False)
            code, why = "unknown_client", (f"client {old.id} was detached: another client "
                                           "took over all its points")
        else:
            for p in old.points:
                if p in points:
                    s.point_owner.pop(p, None)
            for j in old.joints:
                if j in joints:
                    s.joint_owner.pop(j, None)
            old.points, old.joints = keep_points, keep_joints
            old.point_rows = row_indices(keep_points, s.points)
            old.joint_rows = row_indices(keep_joints, s.joints)
            code, why = "invalid_array", (f"another client took over {[*points, *joints]} from client {old.id}; it "
                   f"keeps points {list(keep_points)} and joints {list(keep_joints)}: resend "
                   "this step with those rows")
            if not s.pending:
                s.barrier_opened = None
                self._waiting.discard(s.id)
        if waiting is None:
            return []
        return [(waiting.peer, error_reply(waiting.msg, ProtocolError(code, why)))]

    # --- handlers ----------------------------------------------------------------------------

    def _on_hello(self, msg: dict, peer) -> dict:
        content = msg["content"]
        return {
            "protocol_version": PROTOCOL_VERSION,
            "server": f"rbcosim {__version__}",
            "client_name": content.get("client_name")
            if isinstance(content.get("client_name"), str)
            else None,
            "message_types": list(MESSAGE_TYPES),
            "capabilities": [
                "inline_arrays",
                "frame_arrays",
                "barrier",
                "save_to_file",
                "results",
                "motions",
                "reports",
                "added_mass",
                "result_rows",
                "auto_snapshots",
                "coupling_info",
                "direct_endpoint",
                "interface_jacobian",
            ],
            "max_message_size": self.limits.max_message_size,
            "barrier_timeout": self.barrier_timeout,
            "limits": {
                "max_sessions": self.max_sessions,
                "max_message_size": self.limits.max_message_size,
                **self.announced_limits,
                **self.run_limits.as_dict(),
            },
            "root": str(self.root) if self.root is not None else None,
        }

    def _on_attach(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        points = name_list(content, "points")
        joints = name_list(content, "joints")
        name = content_field(content, "name", str, required=False, default="")
        force = content_field(content, "force", bool, required=False, default=False)
        motions = content_field(content, "motions", bool, required=False, default=False)
        if motions and s.motions_array is None:
            raise ProtocolError(
                "invalid_argument", "this session's rigid side does not provide motions"
            )
        for kind, names, valid in (("point", points, s.points), ("joint", joints, s.joints)):
            for n in names:
                if n not in valid:
                    raise ProtocolError(
                        "unknown_name", f"Invalid {kind} name {n!r}. Valid names: {list(valid)}"
                    )
        now = self.clock()
        owners = {s.point_owner.get(p) for p in points} | {s.joint_owner.get(j) for j in joints}
        owners.discard(None)
        replies: Replies = []
        for cid in owners:
            old = s.clients[cid]
            if not force and now - old.last_seen < s.barrier_timeout:
                raise ProtocolError(
                    "already_attached",
                    f"client {cid} ({old.name!r}) holds points {list(old.points)} and joints "
                    f"{list(old.joints)} and was heard from {now - old.last_seen:.3g} s ago; "
                    "set force=true to take over from a client that has died",
                )
        for cid in owners:
            replies += self._take_over(s, s.clients[cid], points, joints)
        cid = f"c-{secrets.token_hex(6)}"
        s.clients[cid] = AttachedClient(
            cid,
            name,
            points,
            joints,
            now,
            row_indices(points, s.points),
            row_indices(joints, s.joints),
            motions,
        )
        for p in points:
            s.point_owner[p] = cid
            s.orphans.pop(p, None)
        for j in joints:
            s.joint_owner[j] = cid
            s.orphans.pop(j, None)
        outs = s.rigid.point_outputs()
        content_out = {
            "client": cid,
            "points": list(points),
            "joints": list(joints),
            "step": s.step,
            "time": s.rigid.time,
            "macro_step": s.macro_step,
            "kinematics": np.array([outs[p] for p in points]) if points else EMPTY_KINEMATICS,
        }
        if s.coupling is not None:
            content_out["coupling"] = s.coupling
        if motions:
            content_out["motions"] = select_rows(s.current_motions(), row_indices(points, s.points))
        if replies:
            return [*replies, (peer, ok_reply(msg, content_out))]
        return content_out

    def _on_detach(self, msg: dict, peer):
        s = self._session(msg)
        c = self._client(s, msg["content"])
        self._detach(s, c, orphan=False)
        own = (peer, ok_reply(msg, {"client": c.id, "step": s.step}))
        if s.barrier_full():
            return [own, *self._release(s)]
        return [own]


    def _on_close(self, msg: dict, peer):
        s = self._session(msg)
        del self.sessions[s.id]
        self._waiting.discard(s.id)
        err = ProtocolError("session_closed", f"session {s.id} was closed while this step waited")
        replies = [(p.peer, error_reply(p.msg, err)) for p in s.pending.values()]
        return [
            *replies,
            (peer, ok_reply(msg, {"session": s.id, "step": s.step, "time": s.rigid.time})),
        ]

    def _on_heartbeat(self, msg: dict, peer) -> dict:
        content = msg["content"]
        out: dict[str, Any] = {"server_time": self.clock()}
        if msg.get("session"):
            s = self._session(msg)
            if content.get("client") is not None:
                self._client(s, content)
            out.update(
                step=s.step,
                time=s.rigid.time,
                clients=sorted(s.clients),
                waiting=sorted(s.pending),
                orphans=sorted(s.orphans),
                failed=s.failed,
                reported_step=s.reported_step,
                last_row_step=s.row_steps[-1] if s.row_steps else None,
            )
        return out
