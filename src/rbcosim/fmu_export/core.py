"""FMI-independent runtime of an exported scenario: what both the FMI 2 and the FMI 3 slave run.

The slaves in ``fmi2_slave.py`` and ``fmi3_slave.py`` only translate FMI calls into calls on
:class:`FmuCore` and its outcomes back into FMI statuses, so everything testable lives here.

Contract with the slaves:

1. ``FmuCore(resources, log)`` reads the variable table and configuration from the FMU's
   resources; nothing is built yet and the outputs hold their start values.
2. Inputs and parameters are set with :meth:`FmuCore.set_reals` / :meth:`FmuCore.set_strings`;
   values are stored as given, checks happen at :meth:`FmuCore.do_step`.
3. :meth:`FmuCore.initialize` (end of initialization mode) builds the model, applying the
   parameters that differ from the scenario as overrides.
4. :meth:`FmuCore.do_step` returns ``(StepOutcome, message)`` and never raises.
5. :meth:`FmuCore.get_state` / :meth:`FmuCore.set_state` copy the full solver state plus every
   variable value; :func:`encode_state` / :func:`decode_state` serialize it.
"""

from __future__ import annotations

import enum
import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.fmu_export.table import VariableTable

#: Folder inside the FMU's resources with the configuration, table and scenario files.
RESOURCE_DIR = "rbcosim_fmu"
CONFIG_FILE = "fmu.json"
TABLE_FILE = "variables.json"
SCENARIO_DIR = "scenario"

_STATE_MAGIC = b"RBCFMUS1"
_STATE_HEADER = struct.Struct("<8sQ")


class StepOutcome(enum.Enum):
    """Result of a doStep: ``ERROR`` for a bad call or bad inputs (nothing was changed),
    ``DISCARD`` for a numerical failure inside the step (restore a saved state to go on)."""

    OK = "ok"
    ERROR = "error"
    DISCARD = "discard"


class Backend(Protocol):
    """What the core drives: a RigidSide in process, or a remote session through the client."""

    time: float

    def point_outputs(self) -> dict[str, np.ndarray]: ...
    def gaps(self) -> dict[str, np.ndarray]: ...
    def set_wrench(self, point: str, wrench: np.ndarray) -> None: ...
    def set_flex_kinematics(self, joint: str, kinematics: np.ndarray) -> None: ...
    def step(self, H: float) -> None: ...
    def get_state(self) -> bytes: ...
    def set_state(self, blob: bytes) -> None: ...


#: log(message, severity) with severity one of "info", "warning", "error", "discard".
LogFunction = Callable[[str, str], None]


def build_embedded(scenario: Path, overrides: dict[str, str]) -> Backend:
    """The rigid side of ``scenario`` in this process."""
    from rbcosim.cosim.rigid_side import RigidSide

    return RigidSide.from_scenario(scenario, overrides=overrides)


def build_remote(settings: dict[str, Any], scenario: Path, overrides: dict[str, str],
                 points: tuple[str, ...], joints: tuple[str, ...]) -> Backend:
    """A session on the running ``rbcosim serve`` named by ``settings`` (address, session,
    timeout), driving ``points`` and ``joints``."""
    from rbcosim.fmu_export.remote import RemoteSide

    return RemoteSide.connect(settings, scenario, overrides, points, joints)


class FmuCore:
    """The numbers behind one FMU instance."""

    def __init__(self, resources: str | Path, log: LogFunction) -> None:
        root = Path(resources) / RESOURCE_DIR
        self.config: dict[str, Any] = json.loads((root / CONFIG_FILE).read_text("utf-8"))
        self.table = VariableTable.from_json((root / TABLE_FILE).read_text("utf-8"))
        self.scenario_path = root / SCENARIO_DIR / self.config["scenario_file"]
        self._log = log

        size = max(v.vr for v in self.table.variables) + 1
        self.values: list[Any] = [0.0] * size
        for v in self.table.variables:
            if v.start is not None:
                self.values[v.vr] = v.start
        self.values[0] = float(self.config["start_time"])

        self._real_vrs = frozenset(v.vr for v in self.table.variables if v.is_real)
        self._string_vrs = frozenset(v.vr for v in self.table.variables if not v.is_real)
        self._input_vrs = frozenset(v.vr for v in self.table.variables if v.causality == "input")
        self._parameter_vrs = frozenset(
            v.vr for v in self.table.variables if v.causality == "parameter"
        )
        self._names = {v.vr: v.name for v in self.table.variables}
        self._wrench_slots = self._slots("wrench", self.table.point_names, 6)
        self._flex_slots = self._slots("flex", self.table.joint_names, 13)
        self._point_slots = self._slots("point", self.table.point_names, 13)
        self._gap_slots = self._slots("gap", self.table.joint_names, 4)
        self._parameters = [
            (v.vr, v.owner, float(v.start)) for v in self.table.by_kind("parameter")
        ]
        self._server = [(v.vr, v.owner) for v in self.table.by_kind("server")]
        self._flex_joint_of = {v.vr: v.owner for v in self.table.by_kind("flex")}
        # Joints whose flexible-node inputs the master has set: only those are passed on, so a
        # joint nobody reports on keeps RigidSide's "not reported yet" (zero gaps).
        self.flex_reported: set[str] = set()
        self._violations_seen = 0

        self.side: Backend | None = None
        self.overrides: dict[str, str] = {}

    def _slots(self, kind: str, owners: tuple[str, ...], width: int) -> list[tuple[str, list[int]]]:
        rows = self.table.by_kind(kind)
        slots = []
        for owner in owners:
            vrs = [0] * width
            for v in rows:
                if v.owner == owner:
                    vrs[v.index] = v.vr
            slots.append((owner, vrs))
        return slots

    @property
    def time(self) -> float:
        return self.values[0]

    # -- variable access -------------------------------------------------------------------

    def get_reals(self, vrs: list[int]) -> list[float]:
        values = self.values
        if not self._real_vrs.issuperset(vrs):
            raise TypeError(f"not Real/Float64 value references: {sorted(set(vrs) - self._real_vrs)}")
        return [values[vr] for vr in vrs]

    def get_strings(self, vrs: list[int]) -> list[str]:
        if not self._string_vrs.issuperset(vrs):
            raise TypeError(f"not String value references: {sorted(set(vrs) - self._string_vrs)}")
        return [self.values[vr] for vr in vrs]

    def set_reals(self, vrs: list[int], values: list[float]) -> None:
        """Store inputs (any time) and parameters (before initialization ends).

        Values are kept as given, NaN included: doStep refuses to run on non-finite inputs,
        naming them, rather than the setter failing (which pythonfmu turns into fmiFatal).
        """
        for vr, value in zip(vrs, values):
            if vr in self._input_vrs:
                self.values[vr] = value
                joint = self._flex_joint_of.get(vr)
                if joint is not None:
                    self.flex_reported.add(joint)
            elif vr in self._parameter_vrs and vr in self._real_vrs:
                self._set_parameter(vr, value)
            else:
                self._log(f"value reference {vr} ({self._names.get(vr, 'unknown')}) "
                          "cannot be set: not a Real input or parameter", "error")

    def set_strings(self, vrs: list[int], values: list[str]) -> None:
        for vr, value in zip(vrs, values):
            if vr in self._parameter_vrs and vr in self._string_vrs:
                self._set_parameter(vr, value)
            else:
                self._log(f"value reference {vr} ({self._names.get(vr, 'unknown')}) "
                          "cannot be set: not a String parameter", "error")

    def _set_parameter(self, vr: int, value: Any) -> None:
        if self.side is not None:
            self._log(f"parameter {self._names[vr]} is fixed once initialization has ended; "
                      "value ignored", "error")
            return
        self.values[vr] = value

    # -- life cycle --------------------------------------------------------------------------

    def initialize(self) -> None:
        """Build the model with the current parameter values (end of initialization mode).

        Raises ScenarioError for a parameter value the scenario rejects.
        """
        overrides = {}
        for vr, key, default in self._parameters:
            value = self.values[vr]
            if value != default:
                overrides[key] = repr(float(value))
        self._build(overrides)

    def _build(self, overrides: dict[str, str]) -> None:
        if self.config["mode"] == "remote":
            settings = {owner: self.values[vr] for vr, owner in self._server}
            self._log(f"connecting to rbcosim serve at {settings['address']}", "info")
            self.side = build_remote(settings, self.scenario_path, overrides,
                                     self.table.point_names, self.table.joint_names)
        else:
            self.side = build_embedded(self.scenario_path, overrides)
        self.overrides = overrides
        self._publish()

    def terminate(self) -> None:
        close = getattr(self.side, "close", None)
        if close is not None:
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - a lost server must not fail terminate
                self._log(f"closing the remote session failed: {exc}", "warning")

    def _publish(self) -> None:
        side = self.side
        values = self.values
        values[0] = side.time
        outputs = side.point_outputs()
        for point, vrs in self._point_slots:
            for vr, x in zip(vrs, outputs[point].tolist()):
                values[vr] = x
        if self._gap_slots:
            gaps = side.gaps()
            for joint, vrs in self._gap_slots:
                for vr, x in zip(vrs, gaps[joint].tolist()):
                    values[vr] = x

    # -- stepping ----------------------------------------------------------------------------

    def do_step(self, current_time: float, step_size: float) -> tuple[StepOutcome, str]:
        side = self.side
        if side is None:
            return StepOutcome.ERROR, "doStep called before initialization ended"
        if not (math.isfinite(step_size) and step_size > 0.0):
            return StepOutcome.ERROR, f"doStep: step size must be positive and finite, got {step_size!r}"
        now = self.values[0]
        if not math.isfinite(current_time) or abs(current_time - now) > 1e-9 * max(1.0, abs(now)):
            return StepOutcome.ERROR, (
                f"doStep: currentCommunicationPoint {current_time!r} s does not match the FMU's "
                f"time {now!r} s (restore a saved FMU state to step from another time)"
            )
        values = self.values
        bad = [self._names[vr] for vr in self._input_vrs if not math.isfinite(values[vr])]
        if bad:
            return StepOutcome.ERROR, f"doStep refused: non-finite inputs {', '.join(sorted(bad))}"
        try:
            for point, vrs in self._wrench_slots:
                side.set_wrench(point, np.array([values[vr] for vr in vrs]))
            for joint, vrs in self._flex_slots:
                if joint in self.flex_reported:
                    side.set_flex_kinematics(joint, np.array([values[vr] for vr in vrs]))
            side.step(step_size)
            self._publish()
            self._log_violations()
        except SimulationError as exc:
            return StepOutcome.DISCARD, f"doStep from t={now!r} s over {step_size!r} s failed: {exc}"
        except Exception as exc:  # noqa: BLE001 - the FMI boundary: report, never crash the host
            return StepOutcome.ERROR, f"doStep failed: {type(exc).__name__}: {exc}"
        return StepOutcome.OK, ""

    def _log_violations(self) -> None:
        """Continuity violations the scenario asks to record or warn about go to the FMU log."""
        violations = getattr(self.side, "violations", ())
        for message in violations[self._violations_seen :]:
            self._log(f"continuity: {message}", "warning")
        self._violations_seen = len(violations)

    # -- FMU state ---------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """Everything needed to come back here: solver state bytes and every variable value."""
        return {
            "values": list(self.values),
            "overrides": dict(self.overrides),
            "flex_reported": sorted(self.flex_reported),
            "solver": self.side.get_state() if self.side is not None else None,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["values"]) != len(self.values):
            raise ValueError("FMU state belongs to an FMU with a different variable table")
        if state["solver"] is not None:
            if self.side is None or state["overrides"] != self.overrides:
                self._build(dict(state["overrides"]))
            self.side.set_state(state["solver"])
        self.values = list(state["values"])
        self.flex_reported = set(state["flex_reported"])


def encode_state(state: dict[str, Any]) -> bytes:
    """Serialize an FMU state: magic, header length, JSON header, then the solver's own bytes.

    JSON keeps floats exactly (shortest repr round-trips) and NaN inputs as NaN.
    """
    solver = state["solver"]
    header = json.dumps(
        {
            "values": state["values"],
            "overrides": state["overrides"],
            "flex_reported": state["flex_reported"],
            "solver_size": None if solver is None else len(solver),
        }
    ).encode("utf-8")
    return _STATE_HEADER.pack(_STATE_MAGIC, len(header)) + header + (solver or b"")


def decode_state(blob: bytes) -> dict[str, Any]:
    """Inverse of :func:`encode_state`; ValueError on bytes that are not an rbcosim FMU state."""
    blob = bytes(blob)
    if len(blob) < _STATE_HEADER.size:
        raise ValueError("serialized FMU state is truncated")
    magic, header_size = _STATE_HEADER.unpack_from(blob)
    if magic != _STATE_MAGIC:
        raise ValueError("serialized FMU state does not come from an rbcosim FMU")
    start = _STATE_HEADER.size
    header = json.loads(blob[start : start + header_size].decode("utf-8"))
    solver = blob[start + header_size :]
    size = header["solver_size"]
    if (size is None and solver) or (size is not None and len(solver) != size):
        raise ValueError("serialized FMU state is truncated")
    return {
        "values": header["values"],
        "overrides": header["overrides"],
        "flex_reported": header["flex_reported"],
        "solver": None if size is None else solver,
    }
