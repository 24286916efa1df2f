"""The variable values of one FMU instance, read from its resources: what every core shares.

A core (``core.FmuCore`` for the rigid side, ``flex_core.FlexFmuCore`` for a flexible body)
holds one value per value reference, starting from the exported table's start values, and
checks each get and set against the table before anything is stored.
"""

from __future__ import annotations

import enum
import json
import math
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rbcosim.errors import SimulationError
from rbcosim.fmu_export.table import VariableTable

#: Folder inside the FMU's resources with the configuration, table and scenario files.
RESOURCE_DIR = "rbcosim_fmu"
CONFIG_FILE = "fmu.json"
TABLE_FILE = "variables.json"
SCENARIO_DIR = "scenario"


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("a bool is not an Integer value")
    return operator.index(value)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a str")
    return value


#: The non-Real FMI types and how a value the host sets becomes one (fmi2Boolean is an int).
_CONVERT: dict[str, Callable[[Any], Any]] = {"Integer": _integer, "Boolean": bool,
                                             "String": _string}


def toml_literal(value: float | bool | str) -> str:
    """``value`` as a TOML value (a scenario override reads it back as the same value and
    type): JSON's booleans, integers and strings are TOML's, and a float's repr is exact."""
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value)


class StepOutcome(enum.Enum):
    """Result of a doStep: ``ERROR`` for a bad call or bad inputs (nothing was changed),
    ``DISCARD`` for a numerical failure inside the step (restore a saved state to go on)."""

    OK = "ok"
    ERROR = "error"
    DISCARD = "discard"


#: log(message, severity) with severity one of "info", "warning", "error", "discard".
LogFunction = Callable[[str, str], None]


class TableValues:
    """Configuration, variable table and current values of one FMU instance. ``side`` is the
    built model (None until initialization ends): parameters are settable only before."""

    def __init__(self, resources: str | Path, log: LogFunction) -> None:
        root = Path(resources) / RESOURCE_DIR
        self.config: dict[str, Any] = json.loads((root / CONFIG_FILE).read_text("utf-8"))
        self.table = VariableTable.from_json((root / TABLE_FILE).read_text("utf-8"))
        self.scenario_path = root / SCENARIO_DIR / self.config["scenario_file"]
        self.log = log
        self.side: Any = None

        size = max(v.vr for v in self.table.variables) + 1
        self.values: list[Any] = [0.0] * size
        for v in self.table.variables:
            if v.start is not None:
                self.values[v.vr] = v.start
        self.values[0] = float(self.config["start_time"])

        self._real_vrs = frozenset(v.vr for v in self.table.variables if v.is_real)
        #: Value references of the Integer, Boolean and String variables, by type.
        self._typed_vrs = {
            kind: frozenset(v.vr for v in self.table.variables if v.type == kind)
            for kind in _CONVERT
        }
        self._input_vrs = frozenset(v.vr for v in self.table.variables if v.causality == "input")
        self._parameter_vrs = frozenset(
            v.vr for v in self.table.variables if v.causality == "parameter"
        )
        self._names = {v.vr: v.name for v in self.table.variables}
        self._parameters = [(v.vr, v.owner, v.start) for v in self.table.by_kind("parameter")]
        # 3-vectors of the scenario (initial states) by key: (value reference, default) each.
        self._vector_parameters: dict[str, list[tuple[int, float]]] = {}
        for v in self.table.by_kind("vector_parameter"):
            self._vector_parameters.setdefault(v.owner, []).append((v.vr, float(v.start)))

    def _slots(self, kind: str, width: int) -> list[tuple[str, list[int]]]:
        """(owner, value references by component index) for each owner with ``kind`` rows."""
        slots: dict[str, list[int]] = {}
        for v in self.table.by_kind(kind):
            slots.setdefault(v.owner, [0] * width)[v.index] = v.vr
        return list(slots.items())

    @property
    def time(self) -> float:
        return self.values[0]

    def parameter_overrides(self) -> dict[str, str]:
        """Scenario overrides ``{key: TOML literal}`` for the parameters set away from their
        default (``--set KEY=VALUE`` gives the same scenario); a 3-vector (``KEY[1]`` ..
        ``KEY[3]``) with any component changed as ``[x, y, z]``."""
        overrides = {
            key: toml_literal(self.values[vr])
            for vr, key, default in self._parameters
            if self.values[vr] != default
        }
        for key, components in self._vector_parameters.items():
            if any(self.values[vr] != default for vr, default in components):
                overrides[key] = repr([float(self.values[vr]) for vr, _ in components])
        return overrides

    @property
    def parameter_keys(self) -> set[str]:
        """The scenario keys an override may name."""
        return {key for _, key, _ in self._parameters} | set(self._vector_parameters)

    def get_typed(self, kind: str, vrs: list[int]) -> list[int | bool | str]:
        """Values of Integer, Boolean or String (``kind``) variables; ValueError naming the
        references of another type."""
        self._require(vrs, self._typed_vrs[kind], f"{kind} variables")
        return [self.values[vr] for vr in vrs]

    def set_typed(self, kind: str, vrs: list[int], values: list[Any]) -> None:
        """Store Integer, Boolean or String (``kind``) parameters (before initialization ends)
        or inputs; a reference of another type, or a value that is not of the type, refuses
        the whole call (ValueError, nothing stored). Their ranges and choices are checked when
        the model is built (the scenario format's checks, naming the key)."""
        self._settable(vrs, values, self._typed_vrs[kind], kind)
        converted = []
        for vr, value in zip(vrs, values):
            try:
                converted.append(_CONVERT[kind](value))
            except (TypeError, ValueError):
                raise ValueError(f"{self._names[vr]}: expected a {kind} value, got "
                                 f"{value!r}") from None
        for vr, value in zip(vrs, converted):
            self.values[vr] = value

    def _require(self, vrs: list[int], allowed: frozenset[int], what: str) -> None:
        bad = [vr for vr in vrs if vr not in allowed]
        if bad:
            named = ", ".join(f"{vr} ({self._names.get(vr, 'unknown')})" for vr in bad[:10])
            raise ValueError(f"value references not among the {what}: {named}")

    def _settable(self, vrs: list[int], values: list[Any], kinds: frozenset[int],
                  kind: str = "Real") -> None:
        """ValueError, before anything is stored, unless every reference can be set now:
        inputs of the type (``kinds``, named ``kind``) at any time, parameters of the type
        until initialization ends."""
        if len(vrs) != len(values):
            raise ValueError(f"{len(vrs)} value references but {len(values)} values")
        writable = self._input_vrs if self.side is not None else self._input_vrs | self._parameter_vrs
        self._require(vrs, kinds & writable, f"{kind} inputs" + (
            " (parameters are fixed once initialization has ended)" if self.side is not None
            else f" and {kind} parameters"
        ))

    def non_finite_inputs(self) -> list[str]:
        """Names of the inputs that hold NaN or ±inf (doStep refuses to run on them)."""
        return sorted(
            self._names[vr] for vr in self._input_vrs if not math.isfinite(self.values[vr])
        )

    def do_step(
        self, current_time: float, step_size: float, count: int = 1
    ) -> tuple[StepOutcome, str]:
        """``count`` steps of ``step_size`` (> 0, checked by the caller) from ``current_time``,
        the inputs held (``_step`` of the core); only once initialization has ended."""
        now = self.values[0]
        if not math.isfinite(current_time) or abs(current_time - now) > 1e-9 * max(1.0, abs(now)):
            return StepOutcome.ERROR, (
                f"doStep: currentCommunicationPoint {current_time!r} s does not match the FMU's "
                f"time {now!r} s (restore a saved FMU state to step from another time)"
            )
        bad = self.non_finite_inputs()
        if bad:
            return StepOutcome.ERROR, f"doStep refused: non-finite inputs {', '.join(sorted(bad))}"
        try:
            for _ in range(count):
                self._step(step_size)
        except SimulationError as exc:
            return (
                StepOutcome.DISCARD,
                f"doStep from t={now!r} s over {count} x {step_size!r} s failed: {exc}",
            )
        except Exception as exc:  # noqa: BLE001 - the FMI boundary: report, never crash the host
            return StepOutcome.ERROR, f"doStep failed: {type(exc).__name__}: {exc}"
        return StepOutcome.OK, ""
