"""The `create_session` request: its checked settings, the rigid side built from a scenario
path or inline TOML (files checked against the server's root), and the new session's reply."""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rbcosim.errors import LimitError, ScenarioError
from rbcosim.service import files
from rbcosim.service.errors import ProtocolError
from rbcosim.service.requests import content_field, plain
from rbcosim.service.session import Session, joint_points, scenario_output_every


@dataclass(frozen=True)
class SessionSettings:
    """A create_session request's settings: barrier_timeout (s), output_every (None: the
    scenario's), snapshot_every (0: off), wait_for_joints."""

    barrier_timeout: float
    output_every: int | None
    snapshot_every: int
    wait_for_joints: bool


def clean_overrides(overrides: dict) -> dict[str, str]:
    """--set-style overrides as strings (booleans and numbers written as TOML would)."""
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
    return clean


def session_settings(content: dict, barrier_timeout: float) -> SessionSettings:
    """The checked settings of a create_session request (server default barrier_timeout)."""
    timeout = content_field(
        content, "barrier_timeout", (int, float), required=False, default=barrier_timeout
    )
    if not (math.isfinite(timeout) and timeout > 0):
        raise ProtocolError(
            "invalid_argument", "barrier_timeout must be a positive number of seconds"
        )
    output_every = content_field(content, "output_every", int, required=False)
    if output_every is not None and output_every < 1:
        raise ProtocolError("invalid_argument", "output_every must be a positive integer")
    snapshot_every = content_field(content, "snapshot_every", int, required=False, default=0)
    wait_for_joints = content_field(content, "wait_for_joints", bool, required=False,
                                    default=False)
    if snapshot_every < 0:
        raise ProtocolError("invalid_argument", "snapshot_every must be 0 (off) or positive")
    return SessionSettings(float(timeout), output_every, snapshot_every, wait_for_joints)


class SessionCreation:
    """The handler of `create_session` (mixed into `Service`)."""

    def _on_create_session(self, msg: dict, peer) -> dict:
        content = msg["content"]
        if len(self.sessions) >= self.max_sessions:
            raise ProtocolError(
                "too_many_sessions",
                f"the server holds its maximum of {self.max_sessions} sessions; close one",
            )
        scenario = content_field(content, "scenario", str, required=False)
        text = content_field(content, "text", str, required=False)
        if (scenario is None) == (text is None):
            raise ProtocolError(
                "invalid_argument", "give exactly one of 'scenario' (a path) or 'text' (TOML)"
            )
        base_dir = content.get("base_dir")
        base = self._path(base_dir, "base_dir") if base_dir is not None else None
        overrides = clean_overrides(
            content_field(content, "overrides", dict, required=False, default={}))
        settings = session_settings(content, self.barrier_timeout)
        rigid = self._build_rigid(scenario, text, base, overrides)
        s = self._new_session(rigid, settings)
        self.sessions[s.id] = s
        return self._created(s)

    def _build_rigid(self, scenario: str | None, text: str | None, base: Path | None,
                     overrides: dict[str, str]):
        """The rigid side from a scenario path or inline text, its files checked first."""
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
                return self.rigid_factory(path, base_dir=base, overrides=overrides or None)
            return self.rigid_factory(text=text, base_dir=base, overrides=overrides or None)
        except ProtocolError:
            raise
        except LimitError as exc:
            raise ProtocolError("limit_exceeded", str(exc)) from None
        except (ScenarioError, ValueError, KeyError, TypeError, OSError) as exc:
            raise ProtocolError("scenario_error", str(exc) or type(exc).__name__) from None

    @staticmethod
    def _new_session(rigid, settings: SessionSettings) -> Session:
        s = Session(
            id=f"s-{secrets.token_hex(6)}",
            rigid=rigid,
            macro_step=float(rigid.macro_step),
            barrier_timeout=settings.barrier_timeout,
            points=tuple(rigid.point_names),
            joints=tuple(rigid.joint_names),
            outputs_array=getattr(rigid, "point_outputs_array", None),
            motions_array=getattr(rigid, "motions_array", None),
            output_every=settings.output_every or scenario_output_every(rigid),
            snapshot_every=settings.snapshot_every,
            wait_for_joints=settings.wait_for_joints,
            coupling=plain(rigid.coupling_info()) if hasattr(rigid, "coupling_info") else None,
        )
        s.nan_gaps = np.full((len(s.joints), 4), np.nan)
        s.nan_gaps.flags.writeable = False
        s.reset_history()
        if s.motions_array is not None:
            s.current_motions()
        return s

    @staticmethod
    def _created(s: Session) -> dict:
        """The create_session reply's content."""
        rigid = s.rigid
        out = {
            "session": s.id,
            "points": list(s.points),
            "joints": list(s.joints),
            "joint_points": joint_points(rigid, s.joints),
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
