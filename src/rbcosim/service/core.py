"""The transport-free service: decoded request dicts in, reply dicts out.

`Service.handle(message, peer)` takes one decoded request (an envelope dict, see
interfaces/PROTOCOL.md) and returns the replies it causes as ``(peer, reply)`` pairs: usually
one reply to the sender, none while a step waits at a barrier, and one per waiting client when
the last input of a step arrives. `Service.poll_timeouts()` turns clients that vanished during a
barrier into timeout replies to the others. Nothing here knows about sockets; the ZeroMQ loop
(`rbcosim.service.server`) only decodes, calls these two, and encodes.

Sessions are independent: one session's bad input, failure or vanished client never touches
another's numbers.
"""

from __future__ import annotations

import functools
import itertools
import math
import secrets
import time as _time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from rbcosim import PROTOCOL_VERSION, __version__
from rbcosim.errors import LimitError, ScenarioError, SimulationError
from rbcosim.limits import RunLimits
from rbcosim.service import files
from rbcosim.service.errors import ProtocolError
from rbcosim.service.wire import Limits, array_shape, as_array, wire_kind

Peer = Hashable
Replies = list[tuple[Any, dict]]

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
STATE_FILE_FORMAT = "rbcosim-session-state"
DEFAULT_LIMITS = Limits()
_EMPTY_KIN = np.empty((0, 13))
_EMPTY_GAPS = np.empty((0, 4))


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


def _reply(
    msg: dict, status: str, content: dict | None = None, error: tuple[str, str] | None = None
) -> dict:
    reply = {
        "version": PROTOCOL_VERSION,
        "msg_id": f"r-{next(_reply_ids)}",
        "msg_type": f"{msg.get('msg_type', 'error')}_reply",
        "session": msg.get("session"),
        "parent_id": msg.get("msg_id"),
        "status": status,
        "content": content if content is not None else {},
    }
    if error is not None:
        reply["error"] = {"code": error[0], "message": error[1]}
    return reply


_reply_ids = itertools.count(1)


def error_reply(msg: dict | None, exc: ProtocolError) -> dict:
    """An error reply to ``msg`` (or to an undecodable message when ``msg`` is None)."""
    return _reply(msg or {"msg_type": "error"}, "error", error=(exc.code, exc.message))


def ok_reply(msg: dict, content: dict) -> dict:
    return _reply(msg, "ok", content)


# --- content field helpers -------------------------------------------------------------------


def _field(content: dict, key: str, types: type | tuple, *, required: bool = True, default=None):
    if key not in content or content[key] is None:
        if required:
            raise ProtocolError("invalid_argument", f"the field {key!r} is required")
        return default
    value = content[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise ProtocolError("invalid_argument", f"{key!r} must not be a boolean")
    if not isinstance(value, types):
        wanted = types if isinstance(types, tuple) else (types,)
        names = " or ".join(_WANTED_KINDS.get(t, t.__name__) for t in wanted)
        raise ProtocolError("invalid_argument", f"{key!r} must be {names}, got {wire_kind(value)}")
    return value


#: The msgpack kind each Python type of a content field stands for, in error messages.
_WANTED_KINDS = {str: "a string", int: "an integer", float: "a float", bool: "a boolean",
                 dict: "a map", list: "an array", bytes: "bin (raw bytes)"}


#: Step indices are integers in [0, 2**53]: exact as float64 and far beyond any run.
MAX_STEP_INDEX = 2**53


def _step_index(content: dict, default: int | None = None) -> int:
    """The request's ``step`` field, an integer in [0, MAX_STEP_INDEX]."""
    step = _field(content, "step", int, required=default is None, default=default)
    if not 0 <= step <= MAX_STEP_INDEX:
        raise ProtocolError("invalid_argument",
                            f"'step' must be an integer from 0 to 2**53, got {step}")
    return step


def _names(content: dict, key: str) -> tuple[str, ...]:
    value = _field(content, key, list, required=False, default=[])
    if not all(isinstance(v, str) for v in value):
        raise ProtocolError("invalid_argument", f"{key!r} must be a list of names (strings)")
    if len(set(value)) != len(value):
        raise ProtocolError("invalid_argument", f"{key!r} lists a name twice: {value}")
    return tuple(value)


def _finite(array: np.ndarray, field_name: str, names: tuple[str, ...]) -> None:
    if not np.isfinite(array).all():
        row = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise ProtocolError(
            "non_finite",
            f"{field_name} for {names[row]!r} holds NaN or infinity: {array[row].tolist()}",
        )


def _joint_points(rigid: Any, joints: tuple[str, ...]) -> dict[str, str]:
    """Joint -> the interface point it couples, where the rigid side tells (``couplings``)."""
    couplings = getattr(rigid, "couplings", None)
    if isinstance(couplings, dict):
        return {j: couplings[j].point for j in joints if hasattr(couplings.get(j), "point")}
    if set(joints) <= set(rigid.point_names):
        return {j: j for j in joints}
    return {}


def _rows(names: tuple[str, ...], order: tuple[str, ...]):
    if names == order:
        return None
    return np.array([order.index(n) for n in names], dtype=np.intp)


def _select(table: np.ndarray, rows) -> np.ndarray:
    return table if rows is None else table[rows]


def _scenario_output_every(rigid: Any) -> int:
    """The scenario's solver.output_every where the rigid side has one, else 1."""
    every = getattr(getattr(getattr(rigid, "scenario", None), "solver", None), "output_every", 1)
    return every if isinstance(every, int) and every >= 1 else 1


def _plain(value: Any) -> Any:
    """Diagnostics as msgpack-ready plain values (numpy scalars to Python numbers)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# --- sessions --------------------------------------------------------------------------------


@dataclass
class _Client:
    id: str
    name: str
    points: tuple[str, ...]
    joints: tuple[str, ...]
    last_seen: float
    point_rows: Any = None
    """Row indices of this client's points in the session's point order (None: all, in order)."""
    joint_rows: Any = None
    motions: bool = False
    """The client asked for motions (outputs + accelerations, (n, 19)) in its replies."""


@dataclass
class _Pending:
    client: str
    peer: Any
    msg: dict
    wrench: np.ndarray
    """(n_points, 6) held wrenches, or (n_points, m, 6) polynomial coefficients."""
    flex: np.ndarray | None
    """(n_joints, 13) node kinematics, or None when the reports of this index are already in."""
    flex_at_end: bool
    jacobian: np.ndarray | None = None
    energy: np.ndarray | None = None
    """(n_joints,) energy J each joint's flexible side has delivered so far, or None."""
    kind: str = "step"
    """"step" (take the macro step) or "report" (reports only, no step)."""


@dataclass
class _Snapshot:
    step: int
    time: float
    blob: bytes


@dataclass
class _Session:
    id: str
    rigid: Any
    macro_step: float
    barrier_timeout: float
    points: tuple[str, ...]
    joints: tuple[str, ...]
    step: int = 0
    clients: dict[str, _Client] = field(default_factory=dict)
    point_owner: dict[str, str] = field(default_factory=dict)
    joint_owner: dict[str, str] = field(default_factory=dict)
    orphans: dict[str, str] = field(default_factory=dict)
    pending: dict[str, _Pending] = field(default_factory=dict)
    barrier_opened: float | None = None
    snapshots: dict[str, _Snapshot] = field(default_factory=dict)
    failed: str | None = None
    history_first_step: int = 0
    history_time: list[float] = field(default_factory=list)
    history_kin: list[np.ndarray] = field(default_factory=list)
    history_gaps: list[np.ndarray] = field(default_factory=list)
    outputs_array: Any = None
    """The rigid side's ``point_outputs_array()`` ((n, 13) in point order), if it has one."""
    nan_gaps: np.ndarray = field(default_factory=lambda: _EMPTY_GAPS)
    motions_array: Any = None
    """The rigid side's ``motions_array()`` ((n, 19): outputs + accelerations), if it has one."""
    motions: np.ndarray | None = None
    """Motions as of the last step, report or restore (None: not evaluated since)."""
    reported_step: int | None = None
    """Step index whose flexible-side reports (at the start of the step) are applied."""
    reported_gaps: np.ndarray | None = None
    output_every: int = 1
    snapshot_every: int = 0
    wait_for_joints: bool = False
    """Barriers also wait until every joint has a client (a run that starts its clients apart)."""
    coupling: dict | None = None
    """The rigid side's coupling_info(), sent to every attaching client (protocol 1.2)."""
    row_steps: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    """Result rows (the rigid side's ``results_row()``) and the step index of each."""

    @property
    def records_rows(self) -> bool:
        return hasattr(self.rigid, "results_row")

    def barrier_full(self) -> bool:
        """Every attached client has sent its request (and, if asked, every joint has one)."""
        if not self.pending or len(self.pending) < len(self.clients):
            return False
        if not self.wait_for_joints:
            return True
        return not self.orphans and all(j in self.joint_owner for j in self.joints)

    def wants_motions(self) -> bool:
        return self.motions_array is not None and any(c.motions for c in self.clients.values())

    def current_motions(self) -> np.ndarray:
        """(n_points, 19) as of the last step, report or restore."""
        if self.motions is None:
            self.motions = np.asarray(self.motions_array(), dtype=np.float64)
        return self.motions

    def record_row(self, step: int) -> None:
        """The rigid side's result row at step index ``step`` (replacing one already there)."""
        while self.row_steps and self.row_steps[-1] >= step:
            self.row_steps.pop()
            self.rows.pop()
        self.row_steps.append(step)
        self.rows.append(np.asarray(self.rigid.results_row(), dtype=np.float64))

    def where(self) -> str:
        return f"step {self.step} (t = {self.rigid.time:.9g} s)"

    def all_kinematics(self, outs=None) -> np.ndarray:
        """(n_points, 13) in point order, from the rigid side's array or dict of outputs."""
        if outs is None:
            outs = (
                self.outputs_array()
                if self.outputs_array is not None
                else self.rigid.point_outputs()
            )
        if isinstance(outs, np.ndarray):
            return np.array(outs, dtype=np.float64).reshape(len(self.points), 13)
        return np.array([outs[p] for p in self.points]) if self.points else _EMPTY_KIN

    def last_gaps(self) -> np.ndarray:
        """The most recently evaluated gap rows (NaN before any)."""
        for row in reversed(self.history_gaps):
            if not np.isnan(row).all():
                return row
        return np.full((len(self.joints), 4), np.nan)

    def reset_history(self) -> None:
        self.history_first_step = self.step
        self.history_time = [self.rigid.time]
        self.history_kin = [self.all_kinematics()]
        self.history_gaps = [np.full((len(self.joints), 4), np.nan)]


class Service:
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
        self.sessions: dict[str, _Session] = {}
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

    def _deadline(self, s: _Session) -> float | None:
        if s.barrier_opened is None:
            return None
        missing = [c.last_seen for cid, c in s.clients.items() if cid not in s.pending]
        if not missing:
            return None
        return max(s.barrier_opened, min(missing)) + s.barrier_timeout

    def _session(self, msg: dict) -> _Session:
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

    def _client(self, s: _Session, content: dict) -> _Client:
        cid = _field(content, "client", str)
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

    def _require_idle_barrier(self, s: _Session, action: str) -> None:
        if s.pending:
            raise ProtocolError(
                "barrier_pending",
                f"cannot {action} while clients {sorted(s.pending)} wait at the barrier of step {s.step}",
            )

    def _detach(self, s: _Session, c: _Client, *, orphan: bool) -> None:
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

    def _restore(self, s: _Session, blob: bytes, step: int) -> None:
        try:
            s.rigid.set_state(blob)
        except Exception as exc:  # noqa: BLE001 - any refusal of the blob is a state error
            raise ProtocolError("state_error", f"the rigid side refused the state: {exc}") from None
        s.step = step
        s.failed = None
        s.reported_step = None
        s.reported_gaps = None
        s.motions = None
        if s.motions_array is not None:
            s.current_motions()
        keep_rows = sum(1 for k in s.row_steps if k < step)
        del s.row_steps[keep_rows:], s.rows[keep_rows:]
        if s.history_first_step <= step < s.history_first_step + len(s.history_time):
            keep = step - s.history_first_step + 1
            del s.history_time[keep:], s.history_kin[keep:], s.history_gaps[keep:]
            s.history_gaps[-1] = s.nan_gaps  # the re-run evaluates them afresh
        else:
            s.reset_history()

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

    def _on_create_session(self, msg: dict, peer) -> dict:
        content = msg["content"]
        if len(self.sessions) >= self.max_sessions:
            raise ProtocolError(
                "too_many_sessions",
                f"the server holds its maximum of {self.max_sessions} sessions; close one",
            )
        scenario = _field(content, "scenario", str, required=False)
        text = _field(content, "text", str, required=False)
        if (scenario is None) == (text is None):
            raise ProtocolError(
                "invalid_argument", "give exactly one of 'scenario' (a path) or 'text' (TOML)"
            )
        base_dir = content.get("base_dir")
        base = self._path(base_dir, "base_dir") if base_dir is not None else None
        overrides = _field(content, "overrides", dict, required=False, default={})
        clean: dict[str, str] = {}
        for key, value in overrides.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (int, float)):
                value = repr(value)
            if not isinstance(value, str):
                raise ProtocolError(
                    "invalid_argument",
                    f"override {key!r} must be a string like the CLI's --set KEY=VALUE",
                )
            clean[key] = value
        timeout = _field(
            content, "barrier_timeout", (int, float), required=False, default=self.barrier_timeout
        )
        if not (math.isfinite(timeout) and timeout > 0):
            raise ProtocolError(
                "invalid_argument", "barrier_timeout must be a positive number of seconds"
            )
        output_every = _field(content, "output_every", int, required=False)
        if output_every is not None and output_every < 1:
            raise ProtocolError("invalid_argument", "output_every must be a positive integer")
        snapshot_every = _field(content, "snapshot_every", int, required=False, default=0)
        wait_for_joints = _field(content, "wait_for_joints", bool, required=False, default=False)
        if snapshot_every < 0:
            raise ProtocolError("invalid_argument", "snapshot_every must be 0 (off) or positive")
        if scenario is not None:
            path = self._path(scenario, "scenario", base)
            source = files.read_regular(path, files.MAX_SCENARIO_BYTES, "scenario",
                                        "scenario_error")
            files.check_referenced_files(self.root, source.decode("utf-8", "replace"),
                                         path.parent, str(path))
        else:
            files.check_referenced_files(self.root, text, base or self.root or Path.cwd(),
                                         "the scenario text")
        try:
            if scenario is not None:
                rigid = self.rigid_factory(path, base_dir=base, overrides=clean or None)
            else:
                rigid = self.rigid_factory(text=text, base_dir=base, overrides=clean or None)
        except ProtocolError:
            raise
        except LimitError as exc:
            raise ProtocolError("limit_exceeded", str(exc)) from None
        except (ScenarioError, ValueError, KeyError, TypeError, OSError) as exc:
            raise ProtocolError("scenario_error", str(exc) or type(exc).__name__) from None
        sid = f"s-{secrets.token_hex(6)}"
        s = _Session(
            id=sid,
            rigid=rigid,
            macro_step=float(rigid.macro_step),
            barrier_timeout=float(timeout),
            points=tuple(rigid.point_names),
            joints=tuple(rigid.joint_names),
            outputs_array=getattr(rigid, "point_outputs_array", None),
            motions_array=getattr(rigid, "motions_array", None),
            output_every=output_every or _scenario_output_every(rigid),
            snapshot_every=snapshot_every,
            wait_for_joints=wait_for_joints,
            coupling=_plain(rigid.coupling_info()) if hasattr(rigid, "coupling_info") else None,
        )
        s.nan_gaps = np.full((len(s.joints), 4), np.nan)
        s.nan_gaps.flags.writeable = False
        s.reset_history()
        if s.motions_array is not None:
            s.current_motions()
        self.sessions[sid] = s
        out = {
            "session": sid,
            "points": list(s.points),
            "joints": list(s.joints),
            "joint_points": _joint_points(rigid, s.joints),
            "macro_step": s.macro_step,
            "time": rigid.time,
            "step": s.step,
            "barrier_timeout": s.barrier_timeout,
            "parameters": {k: float(v) for k, v in rigid.parameters().items()},
            "output_every": s.output_every,
            "snapshot_every": s.snapshot_every,
            "wait_for_joints": s.wait_for_joints,
        }
        if s.coupling is not None:
            out["coupling"] = s.coupling
        if s.records_rows:
            out["columns"] = list(rigid.results_columns())
        return out

    def _on_attach(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        points = _names(content, "points")
        joints = _names(content, "joints")
        name = _field(content, "name", str, required=False, default="")
        force = _field(content, "force", bool, required=False, default=False)
        motions = _field(content, "motions", bool, required=False, default=False)
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
            old = s.clients[cid]
            waiting = s.pending.get(cid)
            self._detach(s, old, orphan=False)
            if waiting is not None:
                replies.append(
                    (
                        waiting.peer,
                        error_reply(
                            waiting.msg,
                            ProtocolError(
                                "unknown_client",
                                f"client {cid} was detached: another client took over its points",
                            ),
                        ),
                    )
                )
        cid = f"c-{secrets.token_hex(6)}"
        s.clients[cid] = _Client(
            cid,
            name,
            points,
            joints,
            now,
            _rows(points, s.points),
            _rows(joints, s.joints),
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
            "kinematics": np.array([outs[p] for p in points]) if points else _EMPTY_KIN,
        }
        if s.coupling is not None:
            content_out["coupling"] = s.coupling
        if motions:
            content_out["motions"] = _select(s.current_motions(), _rows(points, s.points))
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

    def _on_step(self, msg: dict, peer):
        return self._collect(msg, peer, "step")

    def _on_report(self, msg: dict, peer):
        return self._collect(msg, peer, "report")

    def _collect(self, msg: dict, peer, kind: str):
        """Validate a step or report request and hold it at the barrier (release when full)."""
        s = self._session(msg)
        content = msg["content"]
        c = self._client(s, content)
        step = _step_index(content)
        if s.failed is not None:
            raise ProtocolError(
                "session_failed", f"{s.failed}; restore a saved state or set a state first"
            )
        if step != s.step:
            if step < s.step:
                raise ProtocolError(
                    "stale_step", f"step {step} was already taken; the session is at {s.where()}"
                )
            raise ProtocolError(
                "step_out_of_order", f"step {step} is ahead of the session, which is at {s.where()}"
            )
        if c.id in s.pending:
            raise ProtocolError(
                "duplicate_step",
                f"client {c.id} already sent inputs for step {step}; its reply comes when "
                f"{sorted(set(s.clients) - set(s.pending))} have sent theirs",
            )
        if s.orphans and not s.wait_for_joints:
            raise ProtocolError(
                "incomplete_session",
                f"points/joints {sorted(s.orphans)} lost their client after a timeout; attach a new "
                "client to them before stepping",
            )
        other = next(iter(s.pending.values()), None)
        if other is not None and other.kind != kind:
            raise ProtocolError(
                "invalid_argument",
                f"the barrier of step {step} collects {other.kind!r} requests (client "
                f"{other.client} sent one); send {other.kind!r} too",
            )
        buffers = msg.get("buffers", ())
        wrench = _EMPTY_GAPS
        jacobian = None
        if kind == "step":
            wrench, jacobian = self._step_inputs(s, c, content, buffers)
        elif content.get("interface_jacobian") is not None:
            raise ProtocolError("invalid_argument", "a report takes no interface_jacobian")
        elif content.get("wrench") is not None or content.get("wrench_polynomial") is not None:
            wrench, _ = self._step_inputs(s, c, content, buffers)
        at_end = content.get("flex_kinematics_at", "start") if kind == "step" else "start"
        if at_end not in ("start", "end"):
            raise ProtocolError("invalid_argument", 'flex_kinematics_at must be "start" or "end"')
        flex = energy = None
        if c.joints:
            already = kind == "step" and at_end == "start" and s.reported_step == s.step
            if content.get("flex_kinematics") is not None or not already:
                flex = as_array(
                    content.get("flex_kinematics"), buffers, "flex_kinematics", (len(c.joints), 13)
                )
                _finite(flex, "flex_kinematics", c.joints)
            if content.get("flex_energy") is not None:
                energy = as_array(content["flex_energy"], buffers, "flex_energy", (len(c.joints),))
                _finite(energy.reshape(-1, 1), "flex_energy", c.joints)
                if not hasattr(s.rigid, "set_flex_report"):
                    raise ProtocolError(
                        "invalid_argument", "this session's rigid side does not take flex_energy"
                    )
            if already:
                flex = energy = None  # this step index's reports came with a `report` request
        s.pending[c.id] = _Pending(
            c.id, peer, msg, wrench, flex, at_end == "end", jacobian, energy, kind
        )
        if s.barrier_opened is None:
            s.barrier_opened = self.clock()
            self._waiting.add(s.id)
        if not s.barrier_full():
            return None
        return self._release(s)

    def _step_inputs(self, s: _Session, c: _Client, content: dict, buffers):
        """A step's wrench ((n, 6) held or (n, m, 6) polynomial) and optional Jacobian."""
        polynomial = content.get("wrench_polynomial")
        if polynomial is not None:
            if content.get("wrench") is not None:
                raise ProtocolError(
                    "invalid_argument", "give either 'wrench' or 'wrench_polynomial', not both"
                )
            if not hasattr(s.rigid, "set_wrench_polynomial"):
                raise ProtocolError(
                    "invalid_argument", "this session's rigid side does not take wrench polynomials"
                )
            shape = array_shape(polynomial)
            order = shape[1] if shape is not None and len(shape) == 3 else 0
            if not 1 <= order <= 3:
                raise ProtocolError(
                    "invalid_array",
                    f"wrench_polynomial: shape must be [{len(c.points)}, m, 6] with m 1 to 3, got {shape}",
                )
            wrench = as_array(polynomial, buffers, "wrench_polynomial", (len(c.points), order, 6))
            _finite(wrench.reshape(len(c.points), -1), "wrench_polynomial", c.points)
        elif c.points:
            if content.get("wrench") is None:
                raise ProtocolError(
                    "invalid_argument",
                    f"the field 'wrench' (or 'wrench_polynomial') is required: client {c.id} "
                    f"drives the points {list(c.points)}",
                )
            wrench = as_array(content["wrench"], buffers, "wrench", (len(c.points), 6))
            _finite(wrench, "wrench", c.points)
        else:
            wrench = _EMPTY_GAPS
        jacobian = None
        if content.get("interface_jacobian") is not None:
            if not hasattr(s.rigid, "set_interface_jacobian"):
                raise ProtocolError(
                    "invalid_argument",
                    "this session's rigid side does not take interface Jacobians",
                )
            jacobian = as_array(
                content["interface_jacobian"],
                buffers,
                "interface_jacobian",
                (len(c.points), 2, 6, 6),
            )
            _finite(jacobian.reshape(len(c.points), -1), "interface_jacobian", c.points)
        return wrench, jacobian

    def _on_set_added_mass(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        c = self._client(s, content)
        if not hasattr(s.rigid, "set_added_mass"):
            raise ProtocolError(
                "invalid_argument", "this session's rigid side does not take an added mass"
            )
        if not c.points:
            raise ProtocolError("invalid_argument", f"client {c.id} is attached to no points")
        if c.id in s.pending:
            raise ProtocolError(
                "barrier_pending",
                f"client {c.id} waits at the barrier of step {s.step}; hand the added mass over "
                "before sending a step or report",
            )
        mass = as_array(content.get("added_mass"), msg.get("buffers", ()), "added_mass",
                        (len(c.points), 6, 6))
        _finite(mass.reshape(len(c.points), -1), "added_mass", c.points)
        frames = _field(content, "frames", list, required=False, default=["point"] * len(c.points))
        if len(frames) != len(c.points) or not all(f in ("point", "inertial") for f in frames):
            raise ProtocolError(
                "invalid_argument",
                f'frames must list "point" or "inertial" for each of {list(c.points)}, got {frames}',
            )
        if s.motions_array is not None:
            s.current_motions()  # attach keeps answering the motions as of the last step
        saved = bytes(s.rigid.get_state())
        try:
            for point, m, frame in zip(c.points, mass, frames):
                s.rigid.set_added_mass(point, m, frame=frame)
        except ValueError as exc:
            s.rigid.set_state(saved)
            raise ProtocolError("invalid_argument", str(exc)) from None
        return {"points": list(c.points), "step": s.step, "time": s.rigid.time}

    def _release(self, s: _Session) -> Replies:
        """Apply every client's inputs, take the macro step, reply to everyone who waited.

        The order is the in-process master's: the flexible side's reports at t_k (kinematics
        and energy), the gaps, the result row of t_k; then the new wrenches and Jacobians, the
        step, and the motions at t_k + H. Reports sent at the step's end (the flexible side
        stepped first) are applied after the step, and their gaps evaluated there.
        """
        rigid = s.rigid
        pending = list(s.pending.values())
        kind = pending[0].kind
        s.pending.clear()
        s.barrier_opened = None
        self._waiting.discard(s.id)
        gaps_start: dict = {}
        gaps_end: dict = {}
        try:
            if (
                kind == "step"
                and s.snapshot_every
                and s.step % s.snapshot_every == 0
                and hasattr(rigid, "get_state")
            ):
                s.snapshots["auto"] = _Snapshot(s.step, rigid.time, bytes(rigid.get_state()))
            if kind == "report":
                for p in pending:
                    self._apply_wrenches(rigid, s.clients[p.client], p)
            start = [p for p in pending if not p.flex_at_end and p.flex is not None]
            if start:
                for p in start:
                    self._apply_reports(rigid, s.clients[p.client], p)
                if s.joints:
                    gaps_start = rigid.gaps()
                s.reported_step = s.step
                s.reported_gaps = (
                    np.array([gaps_start[j] for j in s.joints]) if gaps_start else s.nan_gaps
                )
                if s.records_rows and (kind == "report" or s.step % s.output_every == 0):
                    s.record_row(s.step)
            elif s.reported_step == s.step and s.reported_gaps is not None:
                gaps_start = dict(zip(s.joints, s.reported_gaps))
            if kind == "report":
                if s.motions_array is not None:
                    s.motions = None
                    s.current_motions()
                outs = s.outputs_array() if s.outputs_array is not None else rigid.point_outputs()
            else:
                later = []
                for p in pending:
                    c = s.clients[p.client]
                    self._apply_wrenches(rigid, c, p)
                    if p.jacobian is not None:
                        for point, jac in zip(c.points, p.jacobian):
                            rigid.set_interface_jacobian(point, jac[0], jac[1])
                    if p.flex_at_end:
                        later.append((c, p))
                rigid.step(s.macro_step)
                for c, p in later:
                    self._apply_reports(rigid, c, p)
                if s.joints and later:
                    gaps_end = rigid.gaps()
                    if s.records_rows and (s.step + 1) % s.output_every == 0:
                        s.record_row(s.step + 1)
                outs = s.outputs_array() if s.outputs_array is not None else rigid.point_outputs()
                s.motions = None
                if s.wants_motions():
                    s.current_motions()
        except SimulationError as exc:
            s.failed = f"step {s.step} failed: {exc}"
            err = ProtocolError("simulation_error", f"{s.failed}; the session needs a restore")
            return [(p.peer, error_reply(p.msg, err)) for p in pending]
        except Exception as exc:  # noqa: BLE001 - the session is marked failed; the server goes on
            s.failed = f"step {s.step} failed with an internal error: {type(exc).__name__}: {exc}"
            err = ProtocolError("internal_error", f"{s.failed}; the session needs a restore")
            return [(p.peer, error_reply(p.msg, err)) for p in pending]
        nan_gaps = s.nan_gaps
        start_rows = np.array([gaps_start[j] for j in s.joints]) if gaps_start else nan_gaps
        kin = s.all_kinematics(outs)
        if kind == "step":
            s.step += 1
            end_rows = np.array([gaps_end[j] for j in s.joints]) if gaps_end else nan_gaps
            if gaps_start:
                s.history_gaps[-1] = start_rows
            s.history_time.append(rigid.time)
            s.history_kin.append(kin)
            s.history_gaps.append(end_rows)
        else:
            end_rows = nan_gaps
            if gaps_start:
                s.history_gaps[-1] = start_rows
        t = rigid.time
        replies = []
        for p in pending:
            c = s.clients[p.client]
            content = {
                "step": s.step,
                "time": t,
                "kinematics": _select(kin, c.point_rows),
                "gaps": _select(end_rows if p.flex_at_end else start_rows, c.joint_rows),
            }
            if c.motions and s.motions is not None:
                content["motions"] = _select(s.motions, c.point_rows)
            replies.append((p.peer, ok_reply(p.msg, content)))
        return replies

    @staticmethod
    def _apply_wrenches(rigid: Any, c: _Client, p: _Pending) -> None:
        if p.wrench.ndim == 3:
            for point, coefficients in zip(c.points, p.wrench):
                rigid.set_wrench_polynomial(point, coefficients)
        elif len(p.wrench):
            for point, row in zip(c.points, p.wrench):
                rigid.set_wrench(point, row)

    @staticmethod
    def _apply_reports(rigid: Any, c: _Client, p: _Pending) -> None:
        if p.energy is not None:
            for joint, row, energy in zip(c.joints, p.flex, p.energy):
                rigid.set_flex_report(joint, row, float(energy))
        else:
            for joint, row in zip(c.joints, p.flex):
                rigid.set_flex_kinematics(joint, row)

    def _on_get_state(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        return {"step": s.step, "time": s.rigid.time, "state": bytes(s.rigid.get_state())}

    def _on_set_state(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        blob = _field(content, "state", bytes)
        step = _step_index(content, default=s.step)
        self._require_idle_barrier(s, "set the state")
        self._restore(s, blob, step)
        return {"step": s.step, "time": s.rigid.time}

    def _on_save(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        name = _field(content, "name", str, required=False, default="default")
        path_text = content.get("path")
        if s.failed is not None:
            raise ProtocolError("session_failed", f"{s.failed}; there is no valid state to save")
        snap = _Snapshot(s.step, s.rigid.time, bytes(s.rigid.get_state()))
        out: dict[str, Any] = {
            "name": name,
            "step": snap.step,
            "time": snap.time,
            "size": len(snap.blob),
        }
        if path_text is not None:
            path = self._path(path_text, "path")
            data = msgpack.packb(
                {
                    "format": STATE_FILE_FORMAT,
                    "protocol_version": PROTOCOL_VERSION,
                    "step": snap.step,
                    "time": snap.time,
                    "points": list(s.points),
                    "joints": list(s.joints),
                    "state": snap.blob,
                },
                use_bin_type=True,
            )
            files.write_atomically(path, data, "state file")
            out["path"] = str(path)
        s.snapshots[name] = snap
        return out

    def _on_restore(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        self._require_idle_barrier(s, "restore")
        path_text = content.get("path")
        if path_text is not None:
            path = self._path(path_text, "path")
            raw = files.read_regular(path, self.limits.max_message_size, "state file")
            try:
                data = msgpack.unpackb(raw, raw=False, strict_map_key=True, max_ext_len=0)
            except (ValueError, msgpack.UnpackException):
                data = None
            if not (
                isinstance(data, dict)
                and data.get("format") == STATE_FILE_FORMAT
                and isinstance(data.get("state"), bytes)
                and isinstance(data.get("step"), int)
            ):
                raise ProtocolError(
                    "state_error", f"{str(path)!r} is not an rbcosim session state file"
                )
            if data.get("points") != list(s.points) or data.get("joints") != list(s.joints):
                raise ProtocolError(
                    "state_error",
                    f"{str(path)!r} was saved from a model with points {data.get('points')} and joints "
                    f"{data.get('joints')}; this session has {list(s.points)} and {list(s.joints)}",
                )
            self._restore(s, data["state"], data["step"])
            name = None
        else:
            name = _field(content, "name", str, required=False, default="default")
            snap = s.snapshots.get(name)
            if snap is None:
                raise ProtocolError(
                    "state_error",
                    f"no snapshot named {name!r}; saved snapshots: {sorted(s.snapshots)}",
                )
            self._restore(s, snap.blob, snap.step)
        return {"name": name, "step": s.step, "time": s.rigid.time}

    def _on_outputs(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        return {
            "step": s.step,
            "time": s.rigid.time,
            "points": list(s.points),
            "joints": list(s.joints),
            "kinematics": s.all_kinematics(),
            "gaps": s.last_gaps(),
            "parameters": {k: float(v) for k, v in s.rigid.parameters().items()},
        }

    def _on_results(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        n = len(s.history_time)
        out = {
            "points": list(s.points),
            "joints": list(s.joints),
            "first_step": s.history_first_step,
            "time": np.array(s.history_time),
            "kinematics": np.array(s.history_kin).reshape(n, len(s.points), 13),
            "gaps": np.array(s.history_gaps).reshape(n, len(s.joints), 4),
        }
        if s.records_rows:
            out["columns"] = list(s.rigid.results_columns())
            out["row_steps"] = list(s.row_steps)
            out["rows"] = np.array(s.rows).reshape(len(s.rows), len(out["columns"]))
            if hasattr(s.rigid, "diagnostics"):
                out["diagnostics"] = _plain(s.rigid.diagnostics())
        return out

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
