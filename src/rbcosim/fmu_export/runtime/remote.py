"""Remote mode: the FMU drives a session of a running ``rbcosim serve`` through the client.

:class:`RemoteSide` has the part of the RigidSide interface that :class:`FmuCore` uses, so the
core does not know where the solver runs. The session's step reply carries interface points'
kinematics only: the bodies' outputs come from the FMU's own points at their centres of mass
(body_points.py, appended to the bundled scenario), the joints' coordinates from those and the
scenario's markers (loaded here with the same overrides as the session's).
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from rbcosim.client import Client
from rbcosim.spatial.quaternion import to_matrix


def _check_macro_step(session: str, session_step: float, macro_step: float) -> None:
    """ValueError unless the session's macro step (s) is the FMU's."""
    if not math.isclose(session_step, macro_step, rel_tol=1e-9):
        raise ValueError(
            f"session {session!r} steps {session_step!r} s, but this FMU was exported for the "
            f"macro step {macro_step!r} s (its default experiment's step size): join a session "
            "of the same scenario")


class RemoteSide:
    """The FMU's client: attached to every interface point and joint of one session."""

    def __init__(
        self,
        client: Client,
        owns_session: bool,
        macro_step: float,
        time: float,
        points: tuple[str, ...],
        joint_points: dict[str, str],
        kinematics: np.ndarray,
        body_points: dict[str, str] | None = None,
        scenario: tuple[Path, dict[str, str]] | None = None,
    ) -> None:
        self.client = client
        self.owns_session = owns_session
        self.macro_step = macro_step
        self.time = time
        self.point_names = points
        self.joint_names = tuple(joint_points)
        self._joint_points = dict(joint_points)
        # The server wants every attached joint's node kinematics at each step; until the
        # master sets them, send the rest pose (identity orientation).
        self._flex = np.zeros((len(self.joint_names), 13))
        self._flex[:, 3] = 1.0
        self.body_names = tuple(body_points or {})
        n = len(points) + len(self.body_names)
        self._wrench = np.zeros((n, 6))  # the bodies' points carry none
        self._kinematics = np.asarray(kinematics, dtype=float).reshape(n, 13)
        self._scenario_source = scenario
        self._scenario = None

    @classmethod
    def connect(
        cls,
        settings: dict[str, Any],
        scenario: Path,
        overrides: dict[str, str],
        points: tuple[str, ...],
        joint_points: dict[str, str],
        macro_step: float,
        body_points: dict[str, str] | None = None,
    ) -> RemoteSide:
        """Join ``settings["session"]`` or, if empty, create a session from ``scenario`` (sent
        as text; data files are looked up by the server next to the FMU's copy of it), and
        attach to ``points``, then to ``body_points`` (body -> its point at the centre of
        mass), and to the joints of ``joint_points`` (joint -> its point).

        Raises ValueError if the session's macro step is not ``macro_step`` (s), the FMU's.
        """
        timeout = float(settings["timeout"])
        client = Client(settings["address"], timeout=timeout if timeout > 0 else None)
        try:
            client.hello(client_name="rbcosim FMU")
            session = settings["session"]
            if session:
                client.session = session
                owns = False
                joined = client.outputs()
                _check_macro_step(session, float(joined["parameters"]["cosim.macro_step"]),
                                  macro_step)
                missing = [p for p in (body_points or {}).values() if p not in joined["points"]]
                if missing:
                    raise ValueError(
                        f"session {session!r} has no points at the bodies' centres of mass "
                        f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}), which "
                        "the FMU's body and joint outputs read: join a session another instance "
                        "of this FMU created, or leave server.session empty")
            else:
                client.create_session(
                    text=scenario.read_text("utf-8"),
                    overrides=overrides,
                    base_dir=str(scenario.parent),
                )
                owns = True
            reply = client.attach(points=(*points, *(body_points or {}).values()),
                                  joints=tuple(joint_points), name="rbcosim FMU")
            _check_macro_step(client.session, float(reply["macro_step"]), macro_step)
        except BaseException:
            client.close_socket()
            raise
        return cls(
            client,
            owns,
            float(reply["macro_step"]),
            float(reply["time"]),
            points,
            joint_points,
            reply["kinematics"],
            body_points,
            (scenario, dict(overrides)),
        )

    def joint_point(self, joint: str) -> str:
        """The interface point a rigid–flexible joint couples."""
        return self._joint_points[joint]

    def point_outputs(self) -> dict[str, np.ndarray]:
        return dict(zip(self.point_names, self._kinematics))

    def body_row(self) -> np.ndarray:
        """Body columns [x y z q0..q3 vx vy vz wx wy wz] per body (results.body_columns) from
        the bodies' points: pose and velocity as they are, the inertial angular velocity
        turned into the body frame (R(q)^T w)."""
        rows = self._kinematics[len(self.point_names):].copy()
        rows[:, 10:] = np.einsum("kji,kj->ki", to_matrix(rows[:, 3:7]), rows[:, 10:])
        return rows.ravel()

    def body_outputs(self) -> dict[str, np.ndarray]:
        """body -> (13,) its results-file columns (body_row)."""
        return dict(zip(self.body_names, self.body_row().reshape(-1, 13)))

    @property
    def scenario(self):
        """The FMU's scenario with the session's overrides, loaded here once (its model's
        joints give the joint coordinates)."""
        if self._scenario is None:
            from rbcosim.scenario.loader import load_scenario

            path, overrides = self._scenario_source
            self._scenario = load_scenario(path, overrides)
        return self._scenario

    def set_wrench(self, point: str, wrench: np.ndarray) -> None:
        self._wrench[self.point_names.index(point)] = wrench

    def set_flex_kinematics(self, joint: str, kinematics: np.ndarray) -> None:
        self._flex[self.joint_names.index(joint)] = kinematics

    def step(self, H: float) -> None:
        """One macro step of the session; the session's macro step is fixed by its scenario."""
        if not math.isclose(H, self.macro_step, rel_tol=1e-9, abs_tol=0.0):
            raise ValueError(
                f"remote mode steps the session's fixed macro step {self.macro_step!r} s; "
                f"doStep asked for {H!r} s"
            )
        result = self.client.step(self._wrench, self._flex)
        self.time = float(result.time)
        self._kinematics = np.asarray(result.kinematics, dtype=float)

    def get_state(self) -> bytes:
        """The session's state with its step index and the last kinematics in front (the
        FMU's gaps are its own, from these and its inputs)."""
        reply = self.client.get_state()
        head = struct.pack("<qd", int(reply["step"]), float(reply["time"]))
        return head + self._kinematics.tobytes() + bytes(reply["state"])

    def set_state(self, blob: bytes) -> None:
        step, time = struct.unpack_from("<qd", blob)
        offset = struct.calcsize("<qd")
        n_kin = self._kinematics.size * 8
        kinematics = np.frombuffer(blob, "<f8", self._kinematics.size, offset)
        self.client.set_state(blob[offset + n_kin :], step=step)
        self.time = time
        self._kinematics = kinematics.reshape(self._kinematics.shape).copy()

    def close(self) -> None:
        try:
            self.client.detach()
            if self.owns_session:
                self.client.close()
        finally:
            self.client.close_socket()
