"""Directional derivatives of an embedded rigid-side FMU, for its derivative shim.

What is differentiated: the outputs as read right after the last doStep (point kinematics,
body states, point accelerations under the step's wrench polynomial at its end) with respect
to the wrench inputs held over that doStep (``P.fx .. P.mz`` and their time derivatives
``P.dfx .. P.d3mz``): the sensitivity ∂y(t_n + H)/∂u over [t_n, t_n + H] that an
interface-Jacobian master (PyFMI's linear_correction) needs.

How: central differences, re-running the doStep from the rigid side's state saved after its
inputs were handed over, with the input's coefficient of the wrench polynomial moved by ±δ,
δ = RELATIVE_STEP · max(|u|, k!/H^k) in the input's unit (k = 0 for the wrench, 1..3 for its
derivatives, H the doStep's size: a change of the wrench over the step of about 1 % of 1 N).
The rigid side's state is put back afterwards bit for bit.

The shim (``derivative_shim.c``) asks with SetString(REQUEST_VR, "u <vrs> k <vrs>") and reads
the Jacobian's entries, row-major, as Real variables RESULT_VR0 + m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim.fmu_export.table import VariableTable

#: Keep in step with derivative_shim.c; below 2**31, as the wrappers pass references to Python
#: as signed 32-bit integers.
REQUEST_VR = 0x7FFFFF00
RESULT_VR0 = 0x40000000
#: δ relative to the input (or to k!/H^k for the k-th wrench derivative), see the module doc.
RELATIVE_STEP = 1e-2
#: Polynomial order each known's coefficient sits at (its Taylor factor is 1/order!).
KNOWN_ORDERS = {"wrench": 0, "wrench_rate": 1, "wrench_rate2": 2, "wrench_rate3": 3}
UNKNOWN_KINDS = ("point", "body", "acceleration")


@dataclass(frozen=True)
class StepRecord:
    """A doStep to differentiate: the rigid side's state once its inputs were handed over
    (bytes of RigidSide.get_state), and the doStep as ``count`` steps of ``step_size`` s."""

    solver: bytes
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

    unknowns = pick(words[1:split], UNKNOWN_KINDS,
                    "outputs with derivatives (point kinematics, body states, accelerations)")
    knowns = pick(words[split + 1:], KNOWN_ORDERS,
                  "inputs with derivatives (the wrench inputs and their time derivatives)")
    return unknowns, knowns


def _observe(side, unknowns: list) -> np.ndarray:
    """The unknowns' values from the rigid side's current state."""
    points = dict(zip(side.point_names, side.point_outputs_array()))
    bodies = side.body_outputs()
    accelerations = (dict(zip(side.point_names, side.point_accelerations()))
                     if any(v.kind == "acceleration" for v in unknowns) else {})
    tables = {"point": points, "body": bodies, "acceleration": accelerations}
    return np.array([tables[v.kind][v.owner][v.index] for v in unknowns])


def jacobian(side, record: StepRecord, unknowns: list, knowns: list) -> np.ndarray:
    """∂unknowns/∂knowns (len(unknowns), len(knowns)) of the recorded doStep, by central
    differences (module doc); ``side`` (a RigidSide) is left in the state it was in."""
    after = side.get_state()
    result = np.empty((len(unknowns), len(knowns)))
    try:
        for j, known in enumerate(knowns):
            order = KNOWN_ORDERS[known.kind]
            point = side.point_names.index(known.owner)
            side.set_state(record.solver)
            coefficient = float(side.inputs.poly[point, order, known.index])
            factor = math.factorial(order)
            delta = RELATIVE_STEP * max(abs(coefficient) * factor,
                                        factor / record.step_size**order)
            values = []
            for sign in (1.0, -1.0):
                side.set_state(record.solver)
                side.inputs.poly[point, order, known.index] = coefficient + sign * delta / factor
                for _ in range(record.count):
                    side.step(record.step_size)
                values.append(_observe(side, unknowns))
            result[:, j] = (values[0] - values[1]) / (2.0 * delta)
    finally:
        side.set_state(after)
    return result
