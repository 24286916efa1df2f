"""The FMI state machine of an exported FMU, shared by the FMI 2 and the FMI 3 slave.

:class:`FmiSession` sits between a slave (which only names FMI calls) and :class:`FmuCore`
(which does the work). Every call is checked against the session's :class:`Mode` first; a call
out of FMI's order, or one the core refuses (:class:`Refused`), changes nothing, puts the session
into ``Mode.ERROR`` and is logged naming the call and the reason.

How a refusal reaches the host is set by pythonfmu's native wrappers (pythonfmu3 0.3.4 ships
their source, ``pythonfmu-export/src/pythonfmu/PySlaveInstance.cpp``; pythonfmu 0.7's binary
behaves the same, see tests/test_fmu_state_machine.py): only doStep has a status of its own
(``Fmi3StepResult.status``; FMI 2's ``False`` is fmi2Discard). Any other call fails only by
raising, which the wrapper turns into fmiFatal, and its exception handler then drops its references to the slave, its class and its
log queue (``cleanPyObject``) while keeping the pointers: the next call would use freed objects
(the SIGSEGV after a failed deserialisation). :func:`raise_to_wrapper` therefore adds one
reference to each of the three before raising, so they stay alive and the wrapper's count stays
balanced, and the session stays in ``Mode.ERROR`` answering every later call itself. The
wrapper shim in front of the wrapper (wrapper_shim.c) turns that Fatal into Error, as FMI means
a refusal: the slave tells it so (:func:`shim_refusal`) right before raising.
Deserialisation runs on the class, not on an instance, so it never raises: a refused blob
becomes a :class:`RefusedState`, which setFMUstate refuses.
"""

from __future__ import annotations

import ctypes
import enum
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rbcosim.fmu_export.runtime.core import StepOutcome
from rbcosim.fmu_export.runtime.derivatives import REQUEST_VR, RESULT_VR0
from rbcosim.fmu_export.runtime.fmustate import decode_state, encode_state
from rbcosim.fmu_export.runtime.values import TableValues

#: Relative tolerance on the step size: a step is k macro steps if |H - k h| <= TOL k h.
STEP_TOLERANCE = 1e-9
#: The most macro steps one doStep may ask for: a larger communication step is refused
#: (Error) before anything runs, so a host cannot make one call run for hours (h = 1e300).
MAX_MACRO_STEPS = 1_000_000


class Mode(enum.Enum):
    INSTANTIATED = "instantiated"
    INITIALIZATION = "initialization mode"
    STEP = "step mode"
    TERMINATED = "terminated"
    ERROR = "error"


_ANY = frozenset(Mode)
#: The modes each call is allowed in (the FMI 2 and FMI 3 co-simulation state machines):
#: getters are allowed everywhere since they change nothing; setFMUstate with a saved state
#: is FMI's way out of the error state.
ALLOWED: dict[str, frozenset[Mode]] = {
    "SetupExperiment": frozenset({Mode.INSTANTIATED}),
    "EnterInitializationMode": frozenset({Mode.INSTANTIATED}),
    "ExitInitializationMode": frozenset({Mode.INITIALIZATION}),
    "DoStep": frozenset({Mode.STEP}),
    "Terminate": frozenset({Mode.STEP, Mode.ERROR}),
    "Get": _ANY,
    "Set": frozenset({Mode.INSTANTIATED, Mode.INITIALIZATION, Mode.STEP}),
    "GetFMUState": _ANY - {Mode.ERROR},
    "SetFMUState": _ANY,
    "GetDirectionalDerivative": frozenset({Mode.STEP}),
}


class Refused(Exception):
    """A call the FMU refuses; nothing was changed."""


class RefusedState:
    """What deserialising a refused blob gives: setFMUstate refuses it, naming ``reason``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def state_from_bytes(blob: bytes) -> dict[str, Any] | RefusedState:
    """The FMU state in ``blob``, or a RefusedState: never raises (see the module doc)."""
    try:
        return decode_state(blob)
    except Exception as exc:  # noqa: BLE001 - the wrapper cannot survive an exception here
        return RefusedState(str(exc))


def state_to_bytes(state: Any) -> bytes:
    """The serialized form of ``state``; for a RefusedState (or anything that is not a state)
    empty bytes, which deserialise to a RefusedState again. Never raises."""
    try:
        return encode_state(state)
    except Exception:  # noqa: BLE001 - see state_from_bytes
        return b""


def _incref() -> Callable[[object], None]:
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]
    incref.restype = None
    return incref


_INCREF = _incref()


#: The binaries' folder of the Linux x86-64 binary, by FMI version ("fmi2" / "fmi3").
_LINUX_BINARIES = {"fmi2": "linux64", "fmi3": "x86_64-linux"}


def shim_refusal(slave: Any, prefix: str) -> Callable[[], None]:
    """The wrapper shim's ``rbc_shim_refusal`` of this FMU's binary (``wrapper_shim.c``),
    which makes the refusal that follows Error rather than Fatal; a no-op where the binary
    is pythonfmu's own (Windows) or not found."""
    binary = (Path(slave.resources).parent / "binaries" / _LINUX_BINARIES[prefix]
              / f"{type(slave).__name__}.so")
    try:
        function = ctypes.CDLL(str(binary)).rbc_shim_refusal
    except (OSError, AttributeError):
        return lambda: None
    function.argtypes, function.restype = [], None
    return function


def raise_to_wrapper(slave: Any, exc: Exception, refusal: Callable[[], None]) -> None:
    """Raise ``exc`` through pythonfmu's wrapper without it freeing ``slave``; ``refusal``
    tells the wrapper shim that this is a refusal (Error), not a corrupt instance."""
    for obj in (type(slave), slave, slave._get_log_queue()):
        _INCREF(obj)
    refusal()
    raise exc


class FmiSession:
    """One FMU instance's mode and calls. ``prefix`` ("fmi2" / "fmi3") names calls in logs.
    Whole multiples of the macro step are taken where the FMU's configuration says the
    modelDescription declares canHandleVariableCommunicationStepSize."""

    def __init__(self, core: TableValues, slave: Any, prefix: str) -> None:
        self.core = core
        self.mode = Mode.INSTANTIATED
        self._slave = slave
        self._prefix = prefix
        self._refusal_mark = shim_refusal(slave, prefix)
        self._variable_steps = bool(core.config.get("variable_steps", False))
        # The iterative scheme's half steps need the solver in the FMU: a remote session steps
        # its own macro step only.
        self._half_steps = core.config.get("mode") != "remote"

    # -- the gate ----------------------------------------------------------------------------

    def _refusal(self, call: str, reason: str, severity: str = "error") -> str:
        """Log the refusal of ``call`` and enter the error state; the message."""
        if self._prefix == "fmi2":
            call = call.replace("FMUState", "FMUstate")
        message = f"{self._prefix}{call} refused: {reason}"
        self.core.log(message, severity)
        if self.mode is not Mode.ERROR:
            self.core.log(f"{self._prefix}: the instance is now in the error state; "
                           "only getters, setFMUstate (a saved state), reset, terminate "
                           "and freeInstance are allowed", "error")
        self.mode = Mode.ERROR
        return message

    def _check(self, call: str, group: str | None = None) -> None:
        if self.mode not in ALLOWED[group or call]:
            raise Refused(f"not allowed in {self.mode.value}")

    def call(self, call: str, action: Callable[[], Any], group: str | None = None) -> Any:
        """Run ``action`` if ``call`` is allowed now; else refuse (fmiError to the host)."""
        try:
            self._check(call, group)
            return action()
        except Refused as exc:
            raise_to_wrapper(self._slave, RuntimeError(self._refusal(call, str(exc))),
                             self._refusal_mark)
        except Exception as exc:  # noqa: BLE001 - anything else is refused the same way
            reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            raise_to_wrapper(self._slave, RuntimeError(self._refusal(call, reason)),
                             self._refusal_mark)

    # -- life cycle --------------------------------------------------------------------------

    def setup_experiment(self) -> None:
        self.call("SetupExperiment", lambda: None)

    def enter_initialization(self) -> None:
        def run() -> None:
            self.mode = Mode.INITIALIZATION

        self.call("EnterInitializationMode", run)

    def exit_initialization(self) -> None:
        def run() -> None:
            try:
                self.core.initialize()
            except Exception as exc:  # noqa: BLE001 - a rejected parameter, a lost server
                raise Refused(f"initialization failed: {exc}") from None
            self.mode = Mode.STEP

        self.call("ExitInitializationMode", run)

    def terminate(self) -> None:
        def run() -> None:
            self.core.terminate()
            self.mode = Mode.TERMINATED

        self.call("Terminate", run)

    # -- variables ---------------------------------------------------------------------------

    def get_reals(self, call: str, vrs: list[int]) -> list[float]:
        if vrs and min(vrs) >= RESULT_VR0:  # the derivative shim reading the Jacobian
            return self.call("GetDirectionalDerivative",
                             lambda: self.core.jacobian_entries(vrs))
        return self.call(call, lambda: self.core.get_reals(vrs), "Get")

    def get_typed(self, call: str, kind: str, vrs: list[int]) -> list[Any]:
        """Values of the Integer, Boolean or String (``kind``) variables ``vrs``."""
        return self.call(call, lambda: self.core.get_typed(kind, vrs), "Get")

    def set_reals(self, call: str, vrs: list[int], values: list[float]) -> None:
        self.call(call, lambda: self.core.set_reals(vrs, values), "Set")

    def set_typed(self, call: str, kind: str, vrs: list[int], values: list[Any]) -> None:
        """Set the Integer, Boolean or String (``kind``) variables ``vrs``."""
        if kind == "String" and list(vrs) == [REQUEST_VR]:  # the derivative shim's request
            self.call("GetDirectionalDerivative", lambda: self.core.request_jacobian(values[0]))
            return
        self.call(call, lambda: self.core.set_typed(kind, vrs, values), "Set")

    # -- stepping ----------------------------------------------------------------------------

    def do_step(self, current_time: float, step_size: float) -> StepOutcome:
        """doStep's outcome, logged unless OK. Anything but OK moves to the error state: a
        refused call (``ERROR``) changed nothing, a numerical failure (``DISCARD``) leaves a
        partial step; either way restore a saved FMU state (or reset) to go on."""
        try:
            self._check("DoStep")
            count, own = self._macro_steps(step_size)
        except Refused as exc:
            self._refusal("DoStep", str(exc))
            self._refusal_mark()  # Error, also in FMI 2 (where pythonfmu says Discard)
            return StepOutcome.ERROR
        # The FMU's own step, not the host's: a host that accumulates its time (t += H, or
        # H = t_end - t) passes a size off h by round-off; the steps stay the native FMU's.
        outcome, message = self.core.do_step(current_time, own, count)
        if outcome is not StepOutcome.OK:
            self._refusal("DoStep", message, outcome.value)
        if outcome is StepOutcome.ERROR:
            self._refusal_mark()
        return outcome

    def _macro_steps(self, step_size: float) -> tuple[int, float]:
        """(count, size) of a doStep of ``step_size``: the FMU's own step ``size`` (the
        scenario's macro step h, or, embedded, h / 2, the iterative scheme's half step) done
        ``count`` times: 1 for h or h / 2, k for k h (k <= MAX_MACRO_STEPS) where whole
        multiples are taken, each within STEP_TOLERANCE; Refused for anything else."""
        h = float(self.core.config["macro_step"])
        if not (isinstance(step_size, float) and math.isfinite(step_size) and step_size > 0.0):
            raise Refused(f"step size must be positive and finite, got {step_size!r}")
        for allowed in (h, 0.5 * h) if self._half_steps else (h,):
            if abs(step_size - allowed) <= STEP_TOLERANCE * allowed:
                return 1, allowed
        if self._variable_steps and step_size > MAX_MACRO_STEPS * h * (1.0 + STEP_TOLERANCE):
            raise Refused(f"communicationStepSize {step_size!r} s is more than "
                          f"{MAX_MACRO_STEPS} macro steps of {h!r} s (the most one doStep "
                          "takes); step in smaller communication steps")
        count = round(step_size / h)
        if self._variable_steps and count >= 1 and abs(step_size - count * h) <= (
            STEP_TOLERANCE * count * h
        ):
            return count, h
        raise Refused(
            f"communicationStepSize {step_size!r} s is not the FMU's macro step {h!r} s"
            + (" or a whole multiple of it" if self._variable_steps else "")
            + (" (nor its half, for the iterative scheme)" if self._half_steps
               else " (remote mode: no half steps, the session steps its macro step)")
        )

    # -- FMU state ---------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        return self.call("GetFMUState", lambda: self.core.get_state(self.mode.name))

    def set_state(self, state: Any) -> None:
        def run() -> None:
            if isinstance(state, RefusedState):
                raise Refused(f"the state was refused when deserialized: {state.reason}")
            self.core.set_state(state)
            self.mode = Mode[state["mode"]]

        self.call("SetFMUState", run)
