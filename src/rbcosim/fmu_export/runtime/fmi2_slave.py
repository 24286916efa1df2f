"""FMI 2.0 co-simulation slave of an exported rbcosim scenario (pythonfmu).

This file is copied into the FMU's resources and imported by pythonfmu's native wrapper inside
the importer's Python, which must have rbcosim installed. It only names FMI calls: which are
allowed when is :class:`rbcosim.fmu_export.runtime.lifecycle.FmiSession`'s, the numbers are
:class:`rbcosim.fmu_export.runtime.core.FmuCore`'s. pythonfmu finds the class by the literal base
``Fmi2Slave``.
"""

import sys

from pythonfmu import (
    Boolean,
    Fmi2Causality,
    Fmi2Initial,
    Fmi2Slave,
    Fmi2Variability,
    Integer,
    Real,
    String,
)
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Status

try:
    from rbcosim import __version__
    from rbcosim.fmu_export.runtime.core import StepOutcome, open_core
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
    "info": Fmi2Status.ok,
    "warning": Fmi2Status.warning,
    "discard": Fmi2Status.discard,
    "error": Fmi2Status.error,
}

#: By rbcosim.fmu_export.table.Variable.type.
_TYPES = {"Real": Real, "Integer": Integer, "Boolean": Boolean, "String": String}


class RbcosimRigid(Fmi2Slave):
    author = "rbcosim"
    version = __version__

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if _MISSING is not None:  # the wrapper logs the exception's text, then fails
            raise RuntimeError(_missing_package(_MISSING))
        self._core = open_core(self.resources, self._log)
        self._fmi = FmiSession(self._core, self, "fmi2")
        config = self._core.config
        self.description = config["description"]
        self.default_experiment = DefaultExperiment(
            start_time=config["start_time"], stop_time=config["stop_time"],
            step_size=config["macro_step"],
        )
        values = self._core.values
        for v in self._core.table.variables[1:]:
            kind = _TYPES[v.type]
            var = kind(
                v.name,
                causality=Fmi2Causality[v.causality],
                variability=Fmi2Variability[v.variability],
                initial=None if v.initial is None else Fmi2Initial[v.initial],
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
            root, self._core.table, fmi_version=2,
            derivatives=bool(self._core.config.get("derivatives", False)),
            macro_step=self._core.config["macro_step"],
        )
        return root

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        self._fmi.setup_experiment()

    def enter_initialization_mode(self):
        self._fmi.enter_initialization()

    def exit_initialization_mode(self):
        self._fmi.exit_initialization()

    def do_step(self, current_time, step_size):
        outcome = self._fmi.do_step(current_time, step_size)
        # pythonfmu 0.7 maps False to fmi2Discard, the only non-fatal failure it can return.
        return outcome is StepOutcome.OK

    def terminate(self):
        self._fmi.terminate()

    def get_real(self, vrs):
        return self._fmi.get_reals("GetReal", vrs)

    def get_integer(self, vrs):
        return self._fmi.get_typed("GetInteger", "Integer", vrs)

    def get_boolean(self, vrs):
        return self._fmi.get_typed("GetBoolean", "Boolean", vrs)

    def get_string(self, vrs):
        return self._fmi.get_typed("GetString", "String", vrs)

    def set_real(self, vrs, values):
        self._fmi.set_reals("SetReal", vrs, values)

    def set_integer(self, vrs, values):
        self._fmi.set_typed("SetInteger", "Integer", vrs, values)

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
