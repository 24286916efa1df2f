"""Saving and restoring a session: `get_state`/`set_state` (a blob on the wire), `save`/
`restore` (a file under the server's root, or a named snapshot), and the `outputs` and
`results` a session has recorded. A refused state changes nothing."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from rbcosim import PROTOCOL_VERSION
from rbcosim.service import files
from rbcosim.service.errors import ProtocolError
from rbcosim.service.requests import content_field, plain, step_index, valid_step
from rbcosim.service.session import Session, Snapshot

STATE_FILE_FORMAT = "rbcosim-session-state"


class StateRequests:
    """The handlers of the state and results requests (mixed into `Service`)."""

    def _restore(self, s: Session, blob: bytes, step: int) -> None:
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
        if s.history.holds(step):
            s.history.truncate(step - s.history.first + 1)
            s.history.set_last_gaps(None)  # the re-run evaluates them afresh
        else:
            s.reset_history()

    def _on_get_state(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        return {"step": s.step, "time": s.rigid.time, "state": bytes(s.rigid.get_state())}

    def _on_set_state(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        blob = content_field(content, "state", bytes)
        step = step_index(content, default=s.step)
        self._require_idle_barrier(s, "set the state")
        self._restore(s, blob, step)
        return {"step": s.step, "time": s.rigid.time}

    def _on_save(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        content = msg["content"]
        name = content_field(content, "name", str, required=False, default="default")
        path_text = content.get("path")
        if s.failed is not None:
            raise ProtocolError("session_failed", f"{s.failed}; there is no valid state to save")
        snap = Snapshot(s.step, s.rigid.time, bytes(s.rigid.get_state()))
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
            ):
                raise ProtocolError(
                    "state_error", f"{str(path)!r} is not an rbcosim session state file"
                )
            step = valid_step(data.get("step"), f"the step index of the state file {str(path)!r}",
                              "state_error")
            if data.get("points") != list(s.points) or data.get("joints") != list(s.joints):
                raise ProtocolError(
                    "state_error",
                    f"{str(path)!r} was saved from a model with points {data.get('points')} and joints "
                    f"{data.get('joints')}; this session has {list(s.points)} and {list(s.joints)}",
                )
            try:
                self._restore(s, data["state"], step)
            except ProtocolError as exc:  # e.g. saved from another model: name the file
                raise ProtocolError(exc.code, f"{str(path)!r}: {exc.message}") from None
            name = None
        else:
            name = content_field(content, "name", str, required=False, default="default")
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
            "gaps": s.history.last_gaps(),
            "parameters": {k: float(v) for k, v in s.rigid.parameters().items()},
        }

    def _on_results(self, msg: dict, peer) -> dict:
        s = self._session(msg)
        time, kinematics, gaps = s.history.rows()
        out = {
            "points": list(s.points),
            "joints": list(s.joints),
            "first_step": s.history.first,
            "time": time,
            "kinematics": kinematics,
            "gaps": gaps,
        }
        if s.records_rows:
            out["columns"] = list(s.rigid.results_columns())
            out["row_steps"] = list(s.row_steps)
            out["rows"] = np.array(s.rows).reshape(len(s.rows), len(out["columns"]))
            if hasattr(s.rigid, "diagnostics"):
                out["diagnostics"] = plain(s.rigid.diagnostics())
        return out
