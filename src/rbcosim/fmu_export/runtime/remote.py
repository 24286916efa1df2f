"""Remote mode: the FMU drives a session of a running ``rbcosim serve`` through the client.

:class:`RemoteSide` has the part of the RigidSide interface that :class:`FmuCore` uses, so the
core does not know where the solver runs.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from rbcosim.client import Client


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
    ) -> None:
        self.client = client
        self.owns_session = owns_session
        self.macro_step = macro_step
        self.time = time
        self.point_names = points
        self.joint_names = tuple(joint_points)
        self._joint_points = dict(joint_points)
        self._wrench = np.zeros((len(points), 6))
        # The server wants every attached joint's node kinematics at each step; until the
        # master sets them, send the rest pose (identity orientation).
        self._flex = np.zeros((len(self.joint_names), 13))
        self._flex[:, 3] = 1.0
        self._kinematics = np.asarray(kinematics, dtype=float).reshape(len(points), 13)

    @classmethod
    def connect(
        cls,
        settings: dict[str, Any],
        scenario: Path,
        overrides: dict[str, str],
        points: tuple[str, ...],
        joint_points: dict[str, str],
        macro_step: float,
    ) -> RemoteSide:
        """Join ``settings["session"]`` or, if empty, create a session from ``scenario`` (sent
        as text; data files are looked up by the server next to the FMU's copy of it), and
        attach to ``points`` and the joints of ``joint_points`` (joint -> its point).

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
            else:
                client.create_session(
                    text=scenario.read_text("utf-8"),
                    overrides=overrides,
                    base_dir=str(scenario.parent),
                )
                owns = True
            reply = client.attach(points=points, joints=tuple(joint_points), name="rbcosim FMU")
            if not math.isclose(float(reply["macro_step"]), macro_step, rel_tol=1e-9):
                raise ValueError(
                    f"session {client.session!r} steps {float(reply['macro_step'])!r} s, but "
                    f"this FMU was exported for the macro step {macro_step!r} s (its default "
                    "experiment's step size): join a session of the same scenario"
                )
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
        )

    def joint_point(self, joint: str) -> str:
        """The interface point a rigid–flexible joint couples."""
        return self._joint_points[joint]

    def point_outputs(self) -> dict[str, np.ndarray]:
        return dict(zip(self.point_names, self._kinematics))

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
