"""FMI 3.0 co-simulation slave of an exported rbcosim scenario (pythonfmu3).

This file is copied into the FMU's resources and imported by pythonfmu3's native wrapper inside
the importer's Python, which must have rbcosim installed. It only names FMI calls: which are
allowed when is :class:`rbcosim.fmu_export.runtime.lifecycle.FmiSession`'s, the numbers are
:class:`rbcosim.fmu_export.runtime.core.FmuCore`'s. pythonfmu3 finds the class by the literal base
``Fmi3Slave``.
"""

import sys

from pythonfmu3 import (
    Boolean,
    Float64,
    Fmi3Causality,
    Fmi3Initial,
    Fmi3Slave,
    Fmi3Status,
    Fmi3StepResult,
    Fmi3Variability,
    Int32,
    String,
)
from pythonfmu3.default_experiment import DefaultExperiment

try:
    from rbcosim import __version__
    from rbcosim.fmu_export.runtime.core import open_core
    from rbcosim.fmu_export.runtime.lifecycle import FmiSession, state_from_bytes, state_to_bytes
    from rbcosim.fmu_export.runtime.modeldescription import decorate_model_description
except ImportError as exc:  # rbcosim, or a package it needs, is not in the host's Python
    _MISSING: ImportError | None = exc
    __version__ = None
else:
    _MISSING = None


def _missing_package(error: ImportError) -> str:
    """The log message of an FMU whose Python lacks rbcosim or one of its dependencies."""
    return (
        f"rbcosim FMU: the host's Python ({sys.prefix}, Python {sys.version.split()[0]}) "
        f"cannot import {error.name or 'a package'!r}: {error}. Install rbcosim "
        "(pip install 'rbcosim[fmu]', which brings numpy, scipy, pyzmq and msgpack) in that "
        "Python, or point PYTHONPATH at a site-packages that has it (see the FMU's "
        "documentation, fmu/README.md: What the host needs)"
    )

_LOG_STATUS = {
    "info": Fmi3Status.ok,
    "warning": Fmi3Status.warning,
    "discard": Fmi3Status.discard,
    "error": Fmi3Status.error,
}
#: By rbcosim.fmu_export.runtime.values.StepOutcome value.
_STEP_STATUS = {
    "ok": Fmi3Status.ok,
    "discard": Fmi3Status.discard,
    "error": Fmi3Status.error,
}

#: By rbcosim.fmu_export.table.Variable.type (an Integer is Int32: every count's range fits).
_TYPES = {"Real": Float64, "Integer": Int32, "Boolean": Boolean, "String": String}


class RbcosimRigid(Fmi3Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if _MISSING is not None:  # the wrapper logs the exception's text, then fails
            raise RuntimeError(_missing_package(_MISSING))
        self._core = open_core(self.resources, self._log)
        self._fmi = FmiSession(self._core, self, "fmi3")
        config = self._core.config
        self.author = "rbcosim"
        self.version = __version__
        self.description = config["description"]
        self.default_experiment = DefaultExperiment(
            start_time=config["start_time"], stop_time=config["stop_time"],
            step_size=config["macro_step"],
        )
        values = self._core.values
        for v in self._core.table.variables:
            kind = _TYPES[v.type]
            var = kind(
                v.name,
                causality=Fmi3Causality[v.causality],
                variability=Fmi3Variability[v.variability],
                initial=None if v.initial is None else Fmi3Initial[v.initial],
                description=v.description,
                getter=lambda vr=v.vr: values[vr],
            )
            # Value references come from the exported table, not from registration order.
            var.value_reference = v.vr
            self.vars[v.vr] = var

    def _log(self, message, severity):
        self.log(message, _LOG_STATUS[severity])

    def to_xml(self, model_options=None):
        root = super().to_xml(model_options or {})
        decorate_model_description(
            root, self._core.table, fmi_version=3,
            derivatives=bool(self._core.config.get("derivatives", False)),
            macro_step=self._core.config["macro_step"],
        )
        return root

    def enter_initialization_mode(self):
        self._fmi.enter_initialization()

    def exit_initialization_mode(self):
        self._fmi.exit_initialization()

    def do_step(self, current_time, step_size):
        outcome = self._fmi.do_step(current_time, step_size)
        return Fmi3StepResult(status=_STEP_STATUS[outcome.value])

    def terminate(self):
        self._fmi.terminate()

    def get_float64(self, vrs):
        return self._fmi.get_reals("GetFloat64", vrs)

    def get_int32(self, vrs):
        return self._fmi.get_typed("GetInt32", "Integer", vrs)

    def get_boolean(self, vrs):
        return self._fmi.get_typed("GetBoolean", "Boolean", vrs)

    def get_string(self, vrs):
        return self._fmi.get_typed("GetString", "String", vrs)

    def set_float64(self, vrs, values):
        self._fmi.set_reals("SetFloat64", vrs, values)

    def set_int32(self, vrs, values):
        self._fmi.set_typed("SetInt32", "Integer", vrs, values)

    def set_boolean(self, vrs, values):
        self._fmi.set_typed("SetBoolean", "Boolean", vrs, values)

    def set_string(self, vrs, values):
        self._fmi.set_typed("SetString", "String", vrs, values)

    def _get_fmu_state(self):
        return self._fmi.get_state()

    def _set_fmu_state(self, state):
        self._fmi.set_state(state)

    @staticmethod
    def _fmu_state_to_bytes(state):
        return state_to_bytes(state)

    @staticmethod
    def _fmu_state_from_bytes(state):
        return state_from_bytes(state)
