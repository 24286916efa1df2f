"""FMI-independent runtime of a flexible-body FMU: the scenario's reference flexible body (its
``FlexEndpoint``, one or several interface nodes) behind the same slave sources as the rigid
side.

A doStep from t_n steps the body over [t_n, t_n + H] from the rigid points' motion inputs at
t_n, as the flexible side of the Jacobi scheme (rbcosim.scheme.JACOBI) does in
``CosimMaster``; a master that steps both FMUs from t_n and then exchanges (a Jacobi master)
runs that scheme. The wrench outputs are the polynomial the rigid side applies over the next
step (extrapolated through the past exchanged wrenches, ``cosim.extrapolation``), so connecting
them to the rigid FMU's wrench and wrench-derivative inputs reproduces ``rbcosim run``.

The core follows ``core.FmuCore``'s contract (inputs stored as given, parameters applied at the
end of initialization, ``do_step`` never raises, states all or nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.fmu_export.flex_table import WRENCH_KINDS
from rbcosim.fmu_export.runtime.derivatives import (
    DerivativeRequests,
    StepRecord,
    central_differences,
)
from rbcosim.fmu_export.runtime.fmustate import check_state
from rbcosim.fmu_export.runtime.values import LogFunction, TableValues
from rbcosim.scheme import JACOBI
from rbcosim.serialization.codec import pack_state, unpack_state

#: The scheme a flexible-body FMU steps by (see the module docstring).
FMU_SCHEME = JACOBI.name
#: Factors from the polynomial's coefficients (τ⁰..τ³) to the value and its derivatives.
_DERIVATIVE_FACTORS = (1.0, 1.0, 2.0, 6.0)


def build_flex_endpoints(scenario_path: Path, body: str, overrides: dict[str, str]):
    """The scenario (scheme forced to Jacobi) and the endpoint of flexible body ``body`` as
    {key: FlexEndpoint} (the master's key; empty when the scenario has no such body), not yet
    initialized."""
    from rbcosim.cosim.flex_bodies import build_endpoints
    from rbcosim.scenario.loader import load_scenario

    scenario = load_scenario(scenario_path, {**overrides, "cosim.scheme": f'"{FMU_SCHEME}"'})
    endpoints = build_endpoints(scenario, scenario.cosim.macro_step)
    return scenario, {key: ep for key, ep in endpoints.items() if ep.flex_body == body}


def wrench_derivatives(endpoint: FlexEndpoint, t: float) -> dict[str, np.ndarray]:
    """{joint: (4, 6)} the wrench the rigid side applies from t and its first three time
    derivatives there (zeros beyond the extrapolation order)."""
    out = {}
    for joint, coefficients in endpoint.per_joint(endpoint.polynomial(t)).items():
        d = out[joint] = np.zeros((4, 6))
        for order in range(min(4, coefficients.shape[0])):
            d[order] = _DERIVATIVE_FACTORS[order] * coefficients[order]
    return out


class FlexFmuCore(DerivativeRequests, TableValues):
    """The numbers behind one flexible-body FMU instance."""

    def __init__(self, resources: str | Path, log: LogFunction) -> None:
        super().__init__(resources, log)
        self.body = self.config["flex_body"]
        self._motion_slots = dict(self._slots("motion", 19))
        self._wrench_slots = [dict(self._slots(kind, 6)) for kind in WRENCH_KINDS]
        self._node_slots = dict(self._slots("flex_node", 13))
        self._energy_vr = {v.owner: v.vr for v in self.table.by_kind("flex_energy")}
        self._added_mass_slots = dict(self._slots("flex_added_mass", 36))
        self._output_vrs = [v.vr for v in sorted(self.table.by_kind("flex_output"),
                                                 key=lambda v: v.index)]
        self.overrides: dict[str, str] = {}
        self.derivatives = bool(self.config.get("derivatives", False))

    # -- variables ---------------------------------------------------------------------------

    def get_reals(self, vrs: list[int]) -> list[float]:
        self._require(vrs, self._real_vrs, "Real/Float64 variables")
        return [self.values[vr] for vr in vrs]

    def set_reals(self, vrs: list[int], values: list[float]) -> None:
        """Store inputs (any time) and parameters (before initialization ends), as given."""
        self._settable(vrs, values, self._real_vrs)
        for vr, value in zip(vrs, values):
            self.values[vr] = value

    # -- life cycle --------------------------------------------------------------------------

    def initialize(self) -> None:
        """Build the body with the parameter values and place it at the motion inputs."""
        bad = self.non_finite_inputs()
        if bad:
            raise ValueError(f"non-finite inputs {', '.join(bad)}")
        overrides = self.parameter_overrides()
        endpoints = self._build(overrides)
        t = self.time
        frames, masses = self.config.get("added_mass_frames", {}), {}
        for endpoint in endpoints.values():
            handovers = endpoint.initialize(t, self._motions(endpoint, t))
            for c in endpoint.couplings:
                handover, joint, point = handovers[c.name], c.name, c.point
                if handover is not None and handover[1] != frames.get(point):
                    raise ValueError(f"couplings.{joint}: the added mass is in {handover[1]!r} "
                                     f"axes, the FMU was exported for {frames.get(point)!r}; "
                                     "export it again with these parameters")
                masses[joint] = np.zeros(36) if handover is None else np.ravel(handover[0])
        self._publish_added_mass(masses)
        self.side, self.overrides = endpoints, overrides
        self._publish()

    def _publish_added_mass(self, masses: dict[str, np.ndarray]) -> None:
        """Each joint's added mass (36,) (kg, kg.m, kg.m2) into its outputs, constant from
        here; a warning when it differs from the exported one, which a package gave the rigid
        FMU as its parameters."""
        exported = {v.vr: float(v.start) for v in self.table.by_kind("flex_added_mass")}
        for joint, mass in masses.items():
            vrs = self._added_mass_slots[joint]
            change = max(abs(x - exported[vr]) for vr, x in zip(vrs, mass.tolist()))
            if change > 1e-12 * max(1.0, float(np.abs(mass).max())):
                self.log(f"couplings.{joint}: the added mass differs from the exported one by up "
                         f"to {change:.3g}: set the rigid FMU's added_mass parameters to this "
                         "FMU's added_mass outputs", "warning")
            for vr, x in zip(vrs, mass.tolist()):
                self.values[vr] = x

    def _build(self, overrides: dict[str, str]) -> dict[str, FlexEndpoint]:
        return build_flex_endpoints(self.scenario_path, self.body, overrides)[1]

    def terminate(self) -> None:
        """Nothing to release: the body lives in this process."""

    def _motions(self, endpoint: FlexEndpoint, t: float) -> dict:
        """{joint: the rigid point's motion inputs} of the endpoint's joints, at t."""
        values = self.values
        return {j: motion_of(np.array([values[vr] for vr in self._motion_slots[j]]), t)
                for j in endpoint.joints}

    def _step(self, step_size: float) -> None:
        t = self.time
        if self.derivatives and self._step_start is None:
            self._step_start = self._snapshot()
        for endpoint in self.side.values():
            if abs(step_size - endpoint.H) > 1e-12 * endpoint.H:
                raise ValueError(f"step size {step_size!r} s is not the macro step {endpoint.H!r} s")
            endpoint.finish(t, self._motions(endpoint, t))
        self._publish()

    def _publish(self) -> None:
        values = self.values
        rows = []
        for endpoint in self.side.values():
            values[0] = endpoint.body.time
            derivatives = wrench_derivatives(endpoint, values[0])
            reports = endpoint.report()
            for joint in endpoint.joints:
                for slots, row in zip(self._wrench_slots, derivatives[joint].tolist()):
                    for vr, x in zip(slots[joint], row):
                        values[vr] = x
                node, energy = reports[joint]
                for vr, x in zip(self._node_slots[joint], node.tolist()):
                    values[vr] = x
                values[self._energy_vr[joint]] = float(energy)
            rows.append(endpoint.row())
        for vr, x in zip(self._output_vrs, np.concatenate(rows).tolist()):
            values[vr] = x

    # -- directional derivatives (rbcosim.fmu_export.runtime.derivatives) -----------------------------

    def _snapshot(self) -> tuple[dict[str, bytes], list]:
        """The endpoints' states and every variable's value, to re-run a step from."""
        return {j: ep.get_state() for j, ep in self.side.items()}, list(self.values)

    def _restore(self, snapshot: tuple[dict[str, bytes], list]) -> None:
        states, values = snapshot
        for joint, endpoint in self.side.items():
            endpoint.set_state(states[joint])
        self.values = list(values)

    def _jacobian_of(self, unknowns: list, knowns: list) -> np.ndarray:
        """∂outputs/∂motion inputs of the recorded doStep; the body is left as it was."""
        record: StepRecord = self._step_record
        after = self._snapshot()
        start = record.solver

        def coefficient(known) -> float:  # a motion input: a value (order 0)
            return float(start[1][known.vr])

        def rerun(known, value: float) -> np.ndarray:
            self._restore(start)
            self.values[known.vr] = value
            for _ in range(record.count):
                self._step(record.step_size)
            return np.array([self.values[v.vr] for v in unknowns])

        try:
            return central_differences(record, knowns, coefficient, rerun)
        finally:
            self._restore(after)

    # -- FMU state ---------------------------------------------------------------------------

    def get_state(self, mode: str) -> dict[str, Any]:
        solver = None
        if self.side is not None:
            solver = pack_state({j: ep.get_state() for j, ep in self.side.items()})
        return {"values": list(self.values), "overrides": dict(self.overrides),
                "flex_reported": [], "wrench_pending": False, "mode": mode, "solver": solver,
                "joint_angles": None}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a state of :meth:`get_state`, all or nothing."""
        check_state(state, self.table, self.parameter_keys)
        side = None
        if state["solver"] is not None:
            blobs = unpack_state(state["solver"])
            overrides = dict(state["overrides"])
            side = self.side if overrides == self.overrides and self.side else self._build(overrides)
            if set(blobs) != set(side):
                raise ValueError(f"the FMU state holds flexible bodies {sorted(blobs)}, this "
                                 f"FMU {sorted(side)}")
            previous = {j: ep.get_state() for j, ep in side.items()} if side is self.side else {}
            try:
                for joint, endpoint in side.items():
                    endpoint.set_state(blobs[joint])
            except BaseException:
                for joint, blob in previous.items():
                    side[joint].set_state(blob)
                raise
        self.side = side
        self.overrides = dict(state["overrides"]) if side is not None else {}
        self.values = list(state["values"])
        self._step_record = None  # the derivatives are those of a doStep of this instance
