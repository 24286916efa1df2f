"""The step barrier: `step` and `report` requests are checked and held until every attached
client of the session has sent one, then applied to the rigid side together (one macro step,
or reports only) and answered at once. `set_added_mass` changes the coupling between steps."""

from __future__ import annotations

from typing import Any

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.maximal.divergence import as_divergence
from rbcosim.scheme import scheme_named
from rbcosim.service.errors import ProtocolError
from rbcosim.service.requests import (
    Replies,
    check_finite,
    content_field,
    error_reply,
    ok_reply,
    step_index,
)
from rbcosim.service.session import (
    NO_WRENCH,
    AttachedClient,
    PendingRequest,
    Session,
    Snapshot,
    select_rows,
)
from rbcosim.service.wire import array_shape, as_array


class StepRequests:
    """The handlers of `step`, `report` and `set_added_mass` (mixed into `Service`)."""

    def _on_step(self, msg: dict, peer):
        return self._collect(msg, peer, "step")

    def _on_report(self, msg: dict, peer):
        return self._collect(msg, peer, "report")

    def _collect(self, msg: dict, peer, kind: str):
        """Validate a step or report request and hold it at the barrier (release when full)."""
        s = self._session(msg)
        content = msg["content"]
        c = self._client(s, content)
        step = step_index(content)
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
        other = next(iter(s.pending.values())) if s.pending else None
        if other is not None and other.kind != kind:
            raise ProtocolError(
                "invalid_argument",
                f"the barrier of step {step} collects {other.kind!r} requests (client "
                f"{other.client} sent one); send {other.kind!r} too",
            )
        buffers = msg.get("buffers", ())
        wrench = NO_WRENCH
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
                check_finite(flex, "flex_kinematics", c.joints)
            if content.get("flex_energy") is not None:
                energy = as_array(content["flex_energy"], buffers, "flex_energy", (len(c.joints),))
                check_finite(energy, "flex_energy", c.joints)
                if not hasattr(s.rigid, "set_flex_report"):
                    raise ProtocolError(
                        "invalid_argument", "this session's rigid side does not take flex_energy"
                    )
            if already:
                flex = energy = None  # this step index's reports came with a `report` request
        s.pending[c.id] = PendingRequest(
            c.id, peer, msg, wrench, flex, at_end == "end", jacobian, energy, kind
        )
        if s.barrier_opened is None:
            s.barrier_opened = self.clock()
            self._waiting.add(s.id)
        if not s.barrier_full():
            return None
        return self._release(s)

    def _step_inputs(self, s: Session, c: AttachedClient, content: dict, buffers):
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
            check_finite(wrench, "wrench_polynomial", c.points)
        elif c.points:
            if content.get("wrench") is None:
                raise ProtocolError(
                    "invalid_argument",
                    f"the field 'wrench' (or 'wrench_polynomial') is required: client {c.id} "
                    f"drives the points {list(c.points)}",
                )
            wrench = as_array(content["wrench"], buffers, "wrench", (len(c.points), 6))
            check_finite(wrench, "wrench", c.points)
        else:
            wrench = NO_WRENCH
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
            check_finite(jacobian, "interface_jacobian", c.points)
            scheme = (s.coupling or {}).get("scheme")
            if scheme is not None and not scheme_named(scheme).jacobian:
                if np.any(jacobian):
                    raise ProtocolError(
                        "invalid_argument",
                        f"this session's coupling scheme is {scheme!r}, which does not use "
                        "interface_jacobian (only cosim.scheme = \"interface_jacobian\" does); "
                        "leave it out")
                jacobian = None  # all zeros: the same as none
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
        check_finite(mass, "added_mass", c.points)
        frames = content_field(content, "frames", list, required=False, default=["point"] * len(c.points))
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

    def _release(self, s: Session) -> Replies:
        """Apply every client's inputs, take the macro step, reply to everyone who waited.

        The order is the in-process master's: the flexible side's reports at t_k (kinematics
        and energy), the gaps, the result row of t_k; then the new wrenches and Jacobians, the
        step, and the motions at t_k + H. Reports sent at the step's end (the flexible side
        stepped first) are applied after the step, and their gaps evaluated there.
        """
        pending = list(s.pending.values())
        kind = pending[0].kind
        s.pending.clear()
        s.barrier_opened = None
        self._waiting.discard(s.id)
        try:
            if kind == "step":
                self._auto_snapshot(s)
            else:
                for p in pending:
                    self._apply_wrenches(s.rigid, s.clients[p.client], p)
            start_rows = self._start_reports(s, pending, kind)
            if kind == "report":
                outs, end_rows = self._report_outputs(s), s.nan_gaps
            else:
                outs, end_rows = self._macro_step(s, pending)
        except SimulationError as exc:
            s.failed = f"step {s.step} failed: {as_divergence(exc, lambda: s.rigid.sim.observe())}"
            return self._failed(pending, ProtocolError(
                "simulation_error", f"{s.failed}; the session needs a restore"))
        except Exception as exc:  # noqa: BLE001 - the session is marked failed; the server goes on
            s.failed = f"step {s.step} failed with an internal error: {type(exc).__name__}: {exc}"
            return self._failed(pending, ProtocolError(
                "internal_error", f"{s.failed}; the session needs a restore"))
        kin = s.all_kinematics(outs)
        self._record_history(s, kind, kin, start_rows, end_rows)
        return self._answers(s, pending, kin, start_rows, end_rows)

    @staticmethod
    def _failed(pending: list[PendingRequest], err: ProtocolError) -> Replies:
        return [(p.peer, error_reply(p.msg, err)) for p in pending]

    @staticmethod
    def _auto_snapshot(s: Session) -> None:
        """The session's automatic snapshot at every snapshot_every-th step index."""
        if s.snapshot_every and s.step % s.snapshot_every == 0 and hasattr(s.rigid, "get_state"):
            s.snapshots["auto"] = Snapshot(s.step, s.rigid.time, bytes(s.rigid.get_state()))

    def _start_reports(self, s: Session, pending: list[PendingRequest], kind: str):
        """Apply the reports of t_k, evaluate their gaps and record the row of t_k; returns
        the gap rows (n_joints, 4) at t_k (NaN where none were evaluated)."""
        start = [p for p in pending if not p.flex_at_end and p.flex is not None]
        if start:
            for p in start:
                self._apply_reports(s.rigid, s.clients[p.client], p)
            s.reported_step = s.step
            s.reported_gaps = self._gap_rows(s)
            if s.records_rows and (kind == "report" or s.step % s.output_every == 0):
                s.record_row(s.step)
            return s.reported_gaps
        if s.reported_step == s.step and s.reported_gaps is not None:
            return s.reported_gaps
        return s.nan_gaps

    @staticmethod
    def _gap_rows(s: Session) -> np.ndarray:
        """The rigid side's gaps now (applying each joint's on_violation), (n_joints, 4)."""
        if not s.joints:
            return s.nan_gaps
        gaps = s.rigid.gaps()
        return np.array([gaps[j] for j in s.joints])

    @staticmethod
    def _report_outputs(s: Session):
        """The points' outputs after a report (the motions re-evaluated under its wrenches)."""
        if s.motions_array is not None:
            s.motions = None
            s.current_motions()
        return s.outputs_array() if s.outputs_array is not None else s.rigid.point_outputs()

    def _macro_step(self, s: Session, pending: list[PendingRequest]):
        """The new wrenches and Jacobians, the step, the reports of its end; returns the
        points' outputs after it and the gap rows at its end (NaN where none)."""
        rigid = s.rigid
        later = []
        for p in pending:
            c = s.clients[p.client]
            self._apply_wrenches(rigid, c, p)
            if p.jacobian is not None:
                for point, jac in zip(c.points, p.jacobian):
                    rigid.set_interface_jacobian(point, jac[0], jac[1])
            if p.flex_at_end:
                later.append((c, p))
        motions = rigid.step(s.macro_step)  # (n, 19) after the step, where the side gives them
        for c, p in later:
            self._apply_reports(rigid, c, p)
        end_rows = s.nan_gaps
        if s.joints and later:
            end_rows = self._gap_rows(s)
            if s.records_rows and (s.step + 1) % s.output_every == 0:
                s.record_row(s.step + 1)
        s.motions = None
        if s.wants_motions():
            if isinstance(motions, np.ndarray):
                s.motions = motions
            return s.current_motions()[:, :13], end_rows  # the outputs are its first columns
        return (s.outputs_array() if s.outputs_array is not None else rigid.point_outputs(),
                end_rows)

    @staticmethod
    def _record_history(s: Session, kind: str, kin: np.ndarray, start_rows: np.ndarray,
                        end_rows: np.ndarray) -> None:
        """The step's entry in the session's history (time, kinematics, gaps at its end); the
        gaps of t_k, when evaluated, replace the previous entry's."""
        if start_rows is not s.nan_gaps:
            s.history.set_last_gaps(start_rows)
        if kind == "step":
            s.step += 1
            s.history.append(s.rigid.time, kin, end_rows)

    @staticmethod
    def _answers(s: Session, pending: list[PendingRequest], kin: np.ndarray,
                 start_rows: np.ndarray, end_rows: np.ndarray) -> Replies:
        """One reply per waiting client: its points' kinematics, its joints' gaps (at the
        step's end for reports sent there, else at its start), its motions if asked."""
        t = s.rigid.time
        replies = []
        for p in pending:
            c = s.clients[p.client]
            content = {
                "step": s.step,
                "time": t,
                "kinematics": select_rows(kin, c.point_rows),
                "gaps": select_rows(end_rows if p.flex_at_end else start_rows, c.joint_rows),
            }
            if c.motions and s.motions is not None:
                content["motions"] = select_rows(s.motions, c.point_rows)
            replies.append((p.peer, ok_reply(p.msg, content)))
        return replies

    @staticmethod
    def _apply_wrenches(rigid: Any, c: AttachedClient, p: PendingRequest) -> None:
        if p.wrench.ndim == 3:
            for point, coefficients in zip(c.points, p.wrench):
                rigid.set_wrench_polynomial(point, coefficients)
        elif len(p.wrench):
            for point, row in zip(c.points, p.wrench):
                rigid.set_wrench(point, row)

    @staticmethod
    def _apply_reports(rigid: Any, c: AttachedClient, p: PendingRequest) -> None:
        if p.energy is not None:
            for joint, row, energy in zip(c.joints, p.flex, p.energy):
                rigid.set_flex_report(joint, row, float(energy))
        else:
            for joint, row in zip(c.joints, p.flex):
                rigid.set_flex_kinematics(joint, row)
