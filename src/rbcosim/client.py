"""Python client of the rbcosim service (protocol in interfaces/PROTOCOL.md).

One `Client` talks to one server over a DEALER socket; it remembers the session it created or
joined and the client id it got from `attach`, so a flexible solver's loop reads::

    with Client("tcp://127.0.0.1:5555") as c:
        c.hello()
        c.create_session("scenarios/rigid_flex_pendulum.toml")
        c.attach(points=["tip"], joints=["tip"])
        for _ in range(n):
            r = c.step(wrench, flex_kinematics)     # r.kinematics (1, 13) at r.time
        c.close()

Errors come back as `ServiceError` with the protocol's error code; no reply within ``timeout``
seconds raises `ServiceTimeout` (the client stays usable: a late reply is recognised by its
parent id and dropped).

One hop per macro step (protocol 1.3): when a create_session or attach reply names the
session's direct ``endpoint``, the client opens a second DEALER socket to it (same CURVE keys)
and sends that session's requests there; `hello`, `create_session`, requests for other
sessions, and everything after a ``session_ended`` notice go through the server's endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np
import zmq

from rbcosim import PROTOCOL_VERSION
from rbcosim.errors import RbcosimError
from rbcosim.service.wire import RequestEncoder, decode_reply

_F8 = np.dtype("<f8")


class ServiceError(RbcosimError):
    """An error reply: ``code`` from the protocol's list, ``message`` a sentence."""

    def __init__(self, code: str, message: str, reply: dict | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply


class ServiceTimeout(RbcosimError, TimeoutError):
    """No reply from the server within the client's timeout (or a request that could not
    even be handed to ZeroMQ within it)."""


@dataclass(frozen=True)
class StepResult:
    """The reply to one macro step, for this client's points and joints."""

    step: int
    """Step index the session is at after the step (the next one to send)."""
    time: float
    """Session time after the step, s."""
    kinematics: np.ndarray
    """Interface kinematics at ``time``, shape (n_points, 13): x y z, q0..q3, v, ω, inertial."""
    gaps: np.ndarray
    """Continuity gaps per joint, shape (n_joints, 4): position m, rotation rad, velocity m/s,
    angular velocity rad/s."""
    motions: np.ndarray | None = None
    """Kinematics and accelerations at ``time``, shape (n_points, 19): the 13 of ``kinematics``
    then ax ay az (m/s²) and αx αy αz (rad/s²), inertial; only for clients attached with
    ``motions=True``."""


def _rows(values, names: tuple[str, ...], width: int, what: str) -> np.ndarray:
    if not isinstance(values, np.ndarray) and isinstance(values, Mapping):
        missing = [n for n in names if n not in values]
        if missing:
            raise ValueError(
                f"{what}: no value for {missing}; this client is attached to {list(names)}"
            )
        values = [values[n] for n in names]
    array = np.asarray(values, dtype=_F8)
    if array.shape == (width,) and len(names) == 1:
        array = array.reshape(1, width)
    if array.shape != (len(names), width):
        raise ValueError(f"{what}: shape must be ({len(names)}, {width}), got {array.shape}")
    return array


class Client:
    """A connection to an rbcosim server.

    address: ZeroMQ endpoint, e.g. ``tcp://127.0.0.1:5555`` or ``ipc:///tmp/rbcosim.sock``.
    timeout: seconds to wait for each reply (None waits forever). A step that waits at a
        barrier for other clients needs a timeout longer than theirs.
    curve_server_key: the server's public key (z85 bytes or a ``.key`` file) to use CURVE.
    curve_client_secret_file: this client's ``.key_secret`` file (listed on the server's
        allow-list); a fresh key pair is generated when only the server key is given.
    direct: use a session's direct endpoint when the server names one (protocol 1.3); False
        keeps every request on the server's endpoint (e.g. when only its port is reachable).
    """

    def __init__(
        self,
        address: str,
        *,
        timeout: float | None = 60.0,
        curve_server_key: bytes | str | Path | None = None,
        curve_client_secret_file: str | Path | None = None,
        context: zmq.Context | None = None,
        direct: bool = True,
    ) -> None:
        self.address = address
        self.use_direct = direct
        self.timeout = timeout
        self.context = context or zmq.Context.instance()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if curve_server_key is not None:
            self._setup_curve(curve_server_key, curve_client_secret_file)
        self.socket.connect(address)
        self._curve = (curve_server_key, curve_client_secret_file)
        self.direct: zmq.Socket | None = None
        """The DEALER socket to the session's direct endpoint, once a reply named one."""
        self.direct_endpoint: str | None = None
        self._direct_session: str | None = None
        self._poller: zmq.Poller | None = None
        self.next_id = 1
        """The counter of the next request's msg_id (the C core's loop sends some: `step_wire`)."""
        self._encoder = RequestEncoder(PROTOCOL_VERSION)
        self._prefix = f"py{os.getpid()}-{id(self) & 0xFFFF:x}-"
        self.session: str | None = None
        self.client_id: str | None = None
        self.points: tuple[str, ...] = ()
        self.joints: tuple[str, ...] = ()
        self.step_index = 0

    def _setup_curve(self, server_key, secret_file, socket: zmq.Socket | None = None) -> None:
        import zmq.auth

        socket = socket or self.socket
        if isinstance(server_key, (str, Path)) and Path(server_key).is_file():
            server_key, _ = zmq.auth.load_certificate(str(server_key))
        if secret_file is not None:
            public, secret = zmq.auth.load_certificate(str(secret_file))
        elif getattr(self, "_pair", None) is not None:
            public, secret = self._pair  # the direct socket presents the same identity
        else:
            public, secret = zmq.curve_keypair()
        self._pair = (public, secret)
        socket.curve_serverkey = server_key.encode() if isinstance(server_key, str) else server_key
        socket.curve_publickey = public
        socket.curve_secretkey = secret

    def _use_direct(self, endpoint: str | None, session: str | None) -> None:
        """Send `session`'s requests to its direct endpoint from now on (tcp: the host this
        client reaches the server by, at the endpoint's port)."""
        if not endpoint or not session or not self.use_direct:
            return
        if endpoint.startswith("tcp://") and self.address.startswith("tcp://"):
            host = self.address[len("tcp://"):].rsplit(":", 1)[0]
            endpoint = f"tcp://{host}:{endpoint.rsplit(':', 1)[1]}"
        if self.direct is not None and self.direct_endpoint == endpoint:
            self._direct_session = session
            return
        self._drop_direct()
        sock = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if self._curve[0] is not None:
            self._setup_curve(*self._curve, socket=sock)
        sock.connect(endpoint)
        self.direct, self.direct_endpoint, self._direct_session = sock, endpoint, session
        self._poller = zmq.Poller()
        self._poller.register(sock, zmq.POLLIN)
        self._poller.register(self.socket, zmq.POLLIN)

    def _drop_direct(self) -> None:
        if self.direct is not None:
            self.direct.close(0)
        self.direct = self.direct_endpoint = self._direct_session = self._poller = None

    # --- plumbing ----------------------------------------------------------------------------

    def close_socket(self) -> None:
        self._drop_direct()
        self.socket.close(0)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close_socket()

    def send(
        self, msg_type: str, content: dict | None = None, *, session: str | None = None
    ) -> str:
        """Send one request without waiting; returns its msg_id (see `receive`)."""
        msg_id = self.msg_id(self.next_id)
        self.next_id += 1
        session = session if session is not None else self.session
        frames = self._encoder.encode(msg_id, msg_type, session, content or {})
        self.send_frames(msg_type, frames, session)
        return msg_id

    def msg_id(self, number: int) -> str:
        """The msg_id of this client's request `number`."""
        return f"{self._prefix}{number}"

    def _socket_for(self, msg_type: str, session: str | None) -> zmq.Socket:
        direct = self.direct is not None and session == self._direct_session \
            and msg_type != "create_session"
        return self.direct if direct else self.socket

    def send_frames(self, msg_type: str, frames: list, session: str | None) -> None:
        """Send a request's encoded frames to `session`'s socket; ServiceTimeout when ZeroMQ
        takes them nowhere within the timeout."""
        sock = self._socket_for(msg_type, session)
        try:
            sock.send_multipart([b"", *frames], flags=zmq.NOBLOCK)
        except zmq.Again:  # no peer to queue for (e.g. a refused CURVE handshake) or queue full
            wait = None if self.timeout is None else self.timeout * 1000.0
            if not sock.poll(wait, zmq.POLLOUT):
                raise ServiceTimeout(
                    f"cannot send {msg_type} to {self.address} within {self.timeout} s: no "
                    "connection takes it (no server, a refused CURVE key, or "
                    f"{sock.getsockopt(zmq.SNDHWM)} requests unread)") from None
            sock.send_multipart([b"", *frames])

    def step_wire(self, n_joints: int) -> tuple[int, int, float, tuple[bytes, ...]]:
        """What the C core's flexible-solver loop (rbcosim._core.flex_loop) needs to send this
        client's step requests and read their replies itself: the libzmq socket the requests
        go to, the other socket a reply is looked for on (0: none), the timeout s (-1: none),
        the requests' constant pieces for `n_joints` joints (RequestEncoder.step_pieces)."""
        sock = self._socket_for("step", self.session)
        other = 0 if self._poller is None else (self.socket if sock is self.direct
                                                else self.direct).underlying
        return (sock.underlying, other, -1.0 if self.timeout is None else float(self.timeout),
                self._encoder.step_pieces(self._prefix, self.session, self.client_id, n_joints))

    def no_reply(self, msg_id: str, timeout: float | None) -> ServiceTimeout:
        """The error of a request left without reply for `timeout` s."""
        return ServiceTimeout(f"no reply to {msg_id} from {self.address} within {timeout} s")

    def receive(self, msg_id: str, timeout: float | None = ..., frames: list | None = None) -> dict:
        """The reply to ``msg_id`` (arrays decoded); raises ServiceError on an error reply.
        frames: a message already read from the socket (routing frames included), taken first."""
        timeout = self.timeout if timeout is ... else timeout
        wait = None if timeout is None else timeout * 1000.0
        while True:
            if frames is None:
                if self._poller is None:
                    sock = self.socket if self.socket.poll(wait) else None
                else:
                    ready = self._poller.poll(wait)
                    sock = ready[0][0] if ready else None
                if sock is None:
                    raise self.no_reply(msg_id, timeout)
                frames = sock.recv_multipart()
            reply, frames = self._reply_to(msg_id, frames), None
            if reply is not None:
                return reply

    def _reply_to(self, msg_id: str, frames: list) -> dict | None:
        """A message's reply map if it answers `msg_id` (ServiceError if it is an error, or a
        notice that the session's worker ended), None for a late reply to another request."""
        if frames and not frames[0]:
            frames = frames[1:]
        reply = decode_reply(frames)
        if reply.get("parent_id") != msg_id:
            if reply.get("parent_id") is None and reply.get("msg_type") == "session_ended" \
                    and reply.get("session") == self._direct_session is not None:
                # The session's worker ended: no reply will come on the direct endpoint.
                self._drop_direct()
                error = reply.get("error") or {}
                raise ServiceError(error.get("code", "session_closed"),
                                   error.get("message", ""), reply)
            return None  # a late reply to a request that already timed out
        if reply.get("status") != "ok":
            error = reply.get("error") or {}
            raise ServiceError(error.get("code", "unknown"), error.get("message", ""), reply)
        return reply

    def request(
        self, msg_type: str, content: dict | None = None, *, session: str | None = None
    ) -> dict:
        """Send a request and return its reply's content."""
        return self.receive(self.send(msg_type, content, session=session))["content"]

    # --- protocol messages -------------------------------------------------------------------

    def hello(self, client_name: str = "rbcosim.client") -> dict:
        """Handshake; returns the server's protocol version, capabilities and limits."""
        return self.request(
            "hello", {"protocol_version": PROTOCOL_VERSION, "client_name": client_name}
        )

    def create_session(
        self,
        scenario: str | Path | None = None,
        *,
        text: str | None = None,
        overrides: Mapping[str, str] | None = None,
        base_dir: str | Path | None = None,
        barrier_timeout: float | None = None,
        output_every: int | None = None,
        snapshot_every: int | None = None,
        wait_for_joints: bool = False,
    ) -> dict:
        """Create a session from a scenario path (as the server sees it) or inline TOML text."""
        content: dict[str, Any] = {}
        if scenario is not None:
            content["scenario"] = str(scenario)
        if text is not None:
            content["text"] = text
        if overrides:
            content["overrides"] = dict(overrides)
        if base_dir is not None:
            content["base_dir"] = str(base_dir)
        if barrier_timeout is not None:
            content["barrier_timeout"] = float(barrier_timeout)
        if output_every is not None:
            content["output_every"] = int(output_every)
        if snapshot_every is not None:
            content["snapshot_every"] = int(snapshot_every)
        if wait_for_joints:
            content["wait_for_joints"] = True
        reply = self.request("create_session", content)
        self.session = reply["session"]
        self.step_index = reply["step"]
        self._use_direct(reply.get("endpoint"), self.session)
        return reply

    def attach(
        self,
        points: Sequence[str] = (),
        joints: Sequence[str] = (),
        *,
        session: str | None = None,
        name: str = "",
        force: bool = False,
        motions: bool = False,
    ) -> dict:
        """Attach to interface points (this client sends their wrenches) and joints (their
        flexible-side kinematics); returns the client id, the step index and the kinematics
        (with ``motions=True`` also the motions (n_points, 19), here and in every step reply)."""
        if session is not None:
            self.session = session
        content: dict[str, Any] = {
            "points": list(points),
            "joints": list(joints),
            "name": name,
            "force": force,
        }
        if motions:
            content["motions"] = True
        reply = self.request("attach", content)
        self._use_direct(reply.get("endpoint"), self.session)
        self.client_id = reply["client"]
        self.points = tuple(points)
        self.joints = tuple(joints)
        self.step_index = reply["step"]
        return reply

    def detach(self) -> dict:
        reply = self.request("detach", {"client": self.client_id})
        self.client_id = None
        return reply

    def step(
        self,
        wrench=None,
        flex_kinematics=None,
        *,
        step: int | None = None,
        wrench_polynomial=None,
        flex_energy=None,
        interface_jacobian=None,
        flex_kinematics_at: str | None = None,
    ) -> StepResult:
        """One macro step: this client's inputs, then wait (barrier) for the new kinematics.

        wrench: (n_points, 6) force N and moment N·m, inertial, held over the step, or a
            mapping point -> (6,); or wrench_polynomial: (n_points, m, 6) coefficients of
            W(τ) = Σ c_j τ^j, τ = t − t_k s, m = 1 to 3.
        flex_kinematics: (n_joints, 13) or joint -> (13,); may be None after a `report` at
            this step index. flex_energy: (n_joints,) energy J delivered so far at each joint.
        interface_jacobian: (n_points, 2, 6, 6) ∂W/∂x and ∂W/∂v for interface-Jacobian coupling.
        """
        return self.finish_step(
            self.start_step(
                wrench,
                flex_kinematics,
                step=step,
                wrench_polynomial=wrench_polynomial,
                flex_energy=flex_energy,
                interface_jacobian=interface_jacobian,
                flex_kinematics_at=flex_kinematics_at,
            )
        )

    def start_step(
        self,
        wrench=None,
        flex_kinematics=None,
        *,
        step: int | None = None,
        wrench_polynomial=None,
        flex_energy=None,
        interface_jacobian=None,
        flex_kinematics_at: str | None = None,
    ) -> str:
        """Send a `step` (arguments as for `step`) without waiting; returns its msg_id for
        `finish_step`. A flexible solver computes its own macro step in between."""
        content = self._report_content(flex_kinematics, flex_energy, step)
        if wrench_polynomial is not None:
            poly = np.asarray(wrench_polynomial, dtype=_F8)
            if poly.ndim == 2 and len(self.points) == 1:
                poly = poly.reshape(1, *poly.shape)
            content["wrench_polynomial"] = poly
        elif self.points:
            content["wrench"] = _rows(wrench, self.points, 6, "wrench")
        if interface_jacobian is not None:
            jac = np.asarray(interface_jacobian, dtype=_F8).reshape(len(self.points), 2, 6, 6)
            content["interface_jacobian"] = jac
        if flex_kinematics_at is not None:
            content["flex_kinematics_at"] = flex_kinematics_at
        return self.send("step", content)

    def finish_step(self, msg_id: str, frames: list | None = None) -> StepResult:
        """Wait for the reply to a step sent with `start_step` (frames: a message already read,
        taken first, see `receive`)."""
        return self._step_result(self.receive(msg_id, frames=frames)["content"])

    def report(
        self,
        flex_kinematics=None,
        flex_energy=None,
        *,
        step: int | None = None,
        wrench=None,
        wrench_polynomial=None,
    ) -> StepResult:
        """The flexible side's reports at the current step index, without stepping (barrier
        like `step`): the server evaluates the gaps and records a result row. Used before the
        first step (after the added-mass handover) and after the last. wrench or
        wrench_polynomial (optional): the input to hold from now on, applied before the row."""
        content = self._report_content(flex_kinematics, flex_energy, step)
        if wrench_polynomial is not None:
            poly = np.asarray(wrench_polynomial, dtype=_F8)
            content["wrench_polynomial"] = poly.reshape(len(self.points), -1, 6)
        elif wrench is not None:
            content["wrench"] = _rows(wrench, self.points, 6, "wrench")
        return self._step_result(self.request("report", content))

    def _report_content(self, flex_kinematics, flex_energy, step: int | None) -> dict[str, Any]:
        content: dict[str, Any] = {
            "client": self.client_id,
            "step": self.step_index if step is None else step,
        }
        if self.joints and flex_kinematics is not None:
            content["flex_kinematics"] = _rows(flex_kinematics, self.joints, 13,
                                               "flex_kinematics")
        if self.joints and flex_energy is not None:
            content["flex_energy"] = np.asarray(flex_energy, dtype=_F8).reshape(len(self.joints))
        return content

    def _step_result(self, c: dict) -> StepResult:
        self.step_index = c["step"]
        return StepResult(c["step"], c["time"], c["kinematics"], c["gaps"], c.get("motions"))

    def set_added_mass(self, added_mass, frames: Sequence[str] | None = None) -> dict:
        """Hand the flexible side's added mass M_a (n_points, 6, 6) to the rigid side once, so
        that it treats it implicitly (the wrenches sent then exclude −M_a·a). frames: per point
        "point" (point-frame axes, the default) or "inertial"."""
        mass = np.asarray(added_mass, dtype=_F8).reshape(len(self.points), 6, 6)
        content: dict[str, Any] = {"client": self.client_id, "added_mass": mass}
        if frames is not None:
            content["frames"] = list(frames)
        return self.request("set_added_mass", content)

    def get_state(self) -> dict:
        """``{"step", "time", "state": bytes}``: the rigid side's full state, opaque."""
        return self.request("get_state")

    def set_state(self, state: bytes, step: int | None = None) -> dict:
        content: dict[str, Any] = {"state": bytes(state)}
        if step is not None:
            content["step"] = step
        reply = self.request("set_state", content)
        self.step_index = reply["step"]
        return reply

    def save(self, name: str = "default", path: str | Path | None = None) -> dict:
        """Snapshot the session under ``name``; with ``path`` also to that file (server side)."""
        content: dict[str, Any] = {"name": name}
        if path is not None:
            content["path"] = str(path)
        return self.request("save", content)

    def restore(self, name: str = "default", path: str | Path | None = None) -> dict:
        """Roll the session back to a snapshot (or a state file); the step index follows."""
        content: dict[str, Any] = {"path": str(path)} if path is not None else {"name": name}
        reply = self.request("restore", content)
        self.step_index = reply["step"]
        return reply

    def outputs(self) -> dict:
        """Current kinematics of every point, last gaps, parameters."""
        return self.request("outputs")

    def results(self) -> dict:
        """History: time (N,), kinematics (N, n_points, 13), gaps (N, n_joints, 4); for a
        rigid side with result rows also columns, row_steps, rows (M, n_columns) and
        diagnostics."""
        return self.request("results")

    def heartbeat(self) -> dict:
        content = {"client": self.client_id} if self.client_id and self.session else {}
        return self.request("heartbeat", content)

    def close(self) -> dict:
        """Close the session on the server (the socket stays open; see `close_socket`)."""
        reply = self.request("close")
        if self._direct_session == self.session:
            self._drop_direct()
        self.session = None
        self.client_id = None
        return reply
