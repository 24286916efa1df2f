"""Directional derivatives of an embedded FMU (rigid side, or a flexible body with
``--flex``), for its derivative shim.

What is differentiated: the outputs as read right after the last doStep with respect to the
inputs held over that doStep: the sensitivity ∂y(t_n + H)/∂u over [t_n, t_n + H] that an
interface-Jacobian master (PyFMI's linear_correction) or a loop solver needs.

- rigid side: the point kinematics, body states and point accelerations (under the step's
  wrench polynomial at its end) with respect to the wrench inputs ``P.fx .. P.mz`` and their
  time derivatives ``P.dfx .. P.d3mz``;
- flexible body: its wrench outputs and their derivatives, interface-node kinematics,
  delivered energy, modal coordinates and output nodes with respect to the rigid point's
  motion inputs ``P.x .. P.alz`` (held from t_n over the step).

How: central differences, re-running the doStep from the state saved once its inputs were
handed over, with the input (for the rigid side: its coefficient of the wrench polynomial)
moved by ±δ, δ = RELATIVE_STEP · max(|u|, k!/H^k) in the input's unit (k = 0 for values, 1..3
for the wrench's derivatives, H the doStep's size: e.g. a change of the wrench over the step of
about 1 % of 1 N). The FMU's state is put back afterwards bit for bit.

The shim (``wrapper_shim.c``) asks with SetString(REQUEST_VR, "u <vrs> k <vrs>") and reads
the Jacobian's entries, row-major, as Real variables RESULT_VR0 + m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim.fmu_export.runtime.values import StepOutcome
from rbcosim.fmu_export.table import VariableTable

#: Keep in step with derivative_shim.c; below 2**31, as the wrappers pass references to Python
#: as signed 32-bit integers.
REQUEST_VR = 0x7FFFFF00
RESULT_VR0 = 0x40000000
#: δ relative to the input (or to k!/H^k for the k-th wrench derivative), see the module doc:
#: the rigid step is nearly linear in the wrench; a flexible body's step is not in its
#: motion inputs (orientation, angular velocity), so it takes a smaller step.
RELATIVE_STEP = {"motion": 1e-5}
DEFAULT_RELATIVE_STEP = 1e-2
#: Polynomial order each known's coefficient sits at (its Taylor factor is 1/order!): the
#: rigid side's wrench inputs, and a flexible body's motion inputs (values, order 0).
KNOWN_ORDERS = {"wrench": 0, "wrench_rate": 1, "wrench_rate2": 2, "wrench_rate3": 3,
                "motion": 0}
#: Outputs with derivatives: the rigid side's, and a flexible body's.
UNKNOWN_KINDS = ("point", "body", "acceleration", "flex_wrench", "flex_wrench_rate",
                 "flex_wrench_rate2", "flex_wrench_rate3", "flex_node", "flex_energy",
                 "flex_output")


@dataclass(frozen=True)
class StepRecord:
    """A doStep to differentiate: the core's state once its inputs were handed over (the
    rigid side: bytes of RigidSide.get_state), and the doStep as ``count`` steps of
    ``step_size`` s."""

    solver: object
    step_size: float
    count: int


def parse_request(text: str, table: VariableTable) -> tuple[list, list]:
    """(unknown, known) Variables of a request "u <vr> .. k <vr> ..".

    ValueError naming the references that are not outputs / inputs with derivatives.
    """
    words = text.split()
    if len(words) < 3 or words[0] != "u" or "k" not in words:
        raise ValueError(f"malformed derivative request {text[:80]!r}")
    split = words.index("k")
    by_vr = {v.vr: v for v in table.variables}

    def pick(refs: list[str], kinds, what: str) -> list:
        chosen = [by_vr.get(int(r)) for r in refs]
        bad = [r if v is None else v.name for r, v in zip(refs, chosen)
               if v is None or v.kind not in kinds]
        if bad:
            raise ValueError(f"{', '.join(bad[:10])}: not among the {what}")
        return chosen

    unknowns = pick(words[1:split], UNKNOWN_KINDS, "outputs with derivatives (point "
                    "kinematics, body states, accelerations; a flexible body's outputs)")
    knowns = pick(words[split + 1:], KNOWN_ORDERS, "inputs with derivatives (the wrench "
                  "inputs and their time derivatives; a flexible body's motion inputs)")
    return unknowns, knowns


def _observe(side, unknowns: list) -> np.ndarray:
    """The unknowns' values from the rigid side's current state."""
    points = dict(zip(side.point_names, side.point_outputs_array()))
    bodies = side.body_outputs()
    accelerations = (dict(zip(side.point_names, side.point_accelerations()))
                     if any(v.kind == "acceleration" for v in unknowns) else {})
    tables = {"point": points, "body": bodies, "acceleration": accelerations}
    return np.array([tables[v.kind][v.owner][v.index] for v in unknowns])


def central_differences(record: StepRecord, knowns: list, coefficient, rerun) -> np.ndarray:
    """The columns ∂y/∂known of the recorded doStep by central differences (module doc):
    ``coefficient(known)`` is the known's polynomial coefficient as handed over (read after
    the state was restored), ``rerun(known, value)`` restores the state of ``record``, sets
    that coefficient, re-runs the doStep and returns the unknowns (array)."""
    columns = []
    for known in knowns:
        order = KNOWN_ORDERS[known.kind]
        c = coefficient(known)
        factor = math.factorial(order)
        delta = RELATIVE_STEP.get(known.kind, DEFAULT_RELATIVE_STEP) * max(
            abs(c) * factor, factor / record.step_size**order)
        plus, minus = (rerun(known, c + sign * delta / factor) for sign in (1.0, -1.0))
        columns.append((plus - minus) / (2.0 * delta))
    return np.array(columns).T.reshape(-1, len(knowns))


def jacobian(side, record: StepRecord, unknowns: list, knowns: list) -> np.ndarray:
    """∂unknowns/∂knowns (len(unknowns), len(knowns)) of the rigid side's recorded doStep,
    by central differences (module doc); ``side`` (a RigidSide) is left in the state it was
    in."""
    after = side.get_state()

    def coefficient(known) -> float:
        side.set_state(record.solver)
        point = side.point_names.index(known.owner)
        return float(side.inputs.poly[point, KNOWN_ORDERS[known.kind], known.index])

    def rerun(known, value: float) -> np.ndarray:
        side.set_state(record.solver)
        point = side.point_names.index(known.owner)
        side.inputs.poly[point, KNOWN_ORDERS[known.kind], known.index] = value
        for _ in range(record.count):
            side.step(record.step_size)
        return _observe(side, unknowns)

    try:
        return central_differences(record, knowns, coefficient, rerun)
    finally:
        side.set_state(after)


class DerivativeRequests:
    """The derivative shim's requests on a core (core.FmuCore, flex_core.FlexFmuCore): the
    core records its doStep (``_record_step``) and computes the Jacobian
    (``_jacobian_of``)."""

    derivatives: bool = False
    _step_record: StepRecord | None = None
    _step_start = None
    _jacobian: tuple | list = ()

    def request_jacobian(self, text: str) -> None:
        """Compute ∂unknowns/∂knowns of the last doStep for the request ``text`` (module
        doc); ValueError if there is none or a reference is wrong."""
        if not self.derivatives:
            raise ValueError("this FMU was exported without directional derivatives")
        unknowns, knowns = parse_request(text, self.table)
        if self._step_record is None:
            raise ValueError("no doStep to differentiate: the derivatives are those of the "
                             "last doStep (a restored FMU state or a refused step clears it)")
        self._jacobian = self._jacobian_of(unknowns, knowns).ravel().tolist()

    def jacobian_entries(self, vrs: list[int]) -> list[float]:
        """Entries of the last Jacobian, row-major, as references RESULT_VR0 + m."""
        entries = self._jacobian
        bad = [vr for vr in vrs if not 0 <= vr - RESULT_VR0 < len(entries)]
        if bad:
            raise ValueError(f"derivative entries {bad[:10]} were not computed "
                             f"({len(entries)} entries)")
        return [entries[vr - RESULT_VR0] for vr in vrs]

    def do_step(self, current_time: float, step_size: float, count: int = 1
                ) -> tuple[StepOutcome, str]:
        """TableValues.do_step, keeping what the derivatives re-run (``_step_start``, set by
        the core's ``_step`` when exported with them)."""
        self._step_record = self._step_start = None
        outcome, message = super().do_step(current_time, step_size, count)
        if outcome is StepOutcome.OK and self._step_start is not None:
            self._step_record = StepRecord(self._step_start, step_size, count)
        return outcome, message

    def _jacobian_of(self, unknowns: list, knowns: list) -> np.ndarray:
        raise NotImplementedError
