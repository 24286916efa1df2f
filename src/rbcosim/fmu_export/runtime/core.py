"""FMI-independent runtime of an exported scenario: what both the FMI 2 and the FMI 3 slave run.

The slaves in ``fmi2_slave.py`` and ``fmi3_slave.py`` only translate FMI calls into calls on
:class:`FmuCore` and its outcomes back into FMI statuses, so everything testable lives here.

Contract with the slaves:

1. ``FmuCore(resources, log)`` reads the variable table and configuration from the FMU's
   resources; nothing is built yet and the outputs hold their start values.
2. Inputs and parameters are set with :meth:`FmuCore.set_reals` / :meth:`FmuCore.set_typed`
   (Integer, Boolean, String);
   values are stored as given, checks happen at :meth:`FmuCore.do_step`.
3. :meth:`FmuCore.initialize` (end of initialization mode) builds the model, applying the
   parameters that differ from the scenario as overrides, then the added-mass parameters.
4. :meth:`FmuCore.do_step` returns ``(StepOutcome, message)`` and never raises.
5. :meth:`FmuCore.get_reals` returns current outputs: the accelerations (embedded mode) are
   the last step's, evaluated when first read; the continuity gaps (both modes) and energy
   residuals (embedded) are re-evaluated against the flexible side's latest inputs (their only
   direct feedthrough), when first read.
6. :meth:`FmuCore.get_state` / :meth:`FmuCore.set_state` copy the full solver state plus every
   variable value (``fmustate.py`` serializes and checks it; a refused state changes nothing).
7. Which calls are allowed when is :mod:`rbcosim.fmu_export.runtime.lifecycle`'s business.

Embedded mode follows ``CosimMaster``'s exchange. Wrench inputs set at t_n take effect at the
doStep from t_n, as ``RigidSide.set_wrench_polynomial``: over it the point carries
W + Ẇ τ + ½ Ẅ τ² + ⅙ W⃛ τ³ (τ from t_n). No output depends on the inputs set since the last
doStep (the accelerations are those under the last step's polynomial at its end), so a master
may set inputs and read outputs in either order; only the continuity gaps and energy
residuals, which nothing is connected to, compare with the latest flexible-side inputs. A
doStep from t_n hands the joints' flexible-side report for t_n (node kinematics, delivered
energy) to the rigid side, runs its continuity check at t_n, then steps.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rbcosim.cosim.continuity import MAX_WARNINGS
from rbcosim.fmu_export.runtime import actuators
from rbcosim.fmu_export.runtime.derivatives import DerivativeRequests, jacobian
from rbcosim.fmu_export.runtime.fmustate import check_state
from rbcosim.fmu_export.runtime.joint_outputs import JointCoordinates, Memory
from rbcosim.fmu_export.runtime.values import (  # noqa: F401 - the resources' layout, re-exported
    CONFIG_FILE,
    RESOURCE_DIR,
    SCENARIO_DIR,
    TABLE_FILE,
    LogFunction,
    StepOutcome,
    TableValues,
)
from rbcosim.fmu_export.table import ADDED_MASS_FRAMES


class Backend(Protocol):
    """What the core drives: a RigidSide in process, or a remote session through the client.

    In embedded mode the core also uses RigidSide's exchange methods: set_wrench_polynomial,
    set_added_mass, set_flex_report, point_accelerations, gaps (its continuity check),
    energy_rigid and body_outputs.
    """

    time: float

    def point_outputs(self) -> dict[str, np.ndarray]: ...
    def joint_point(self, joint: str) -> str: ...
    def set_wrench(self, point: str, wrench: np.ndarray) -> None: ...
    def set_flex_kinematics(self, joint: str, kinematics: np.ndarray) -> None: ...
    def step(self, H: float) -> None: ...
    def get_state(self) -> bytes: ...
    def set_state(self, blob: bytes) -> None: ...




def build_embedded(
    scenario: Path, overrides: dict[str, str], specs: list[dict[str, Any]] = ()
) -> Backend:
    """The rigid side of ``scenario`` in this process, with the points of the actuators
    ``specs`` (rbcosim.fmu_export.runtime.actuators) added."""
    from rbcosim.cosim.rigid_side import RigidSide
    from rbcosim.scenario.loader import load_scenario

    side = RigidSide(actuators.actuated(load_scenario(scenario, overrides), list(specs)))
    actuators.hold_frames(side, specs)
    return side


def build_remote(
    settings: dict[str, Any],
    scenario: Path,
    overrides: dict[str, str],
    config: dict[str, Any],
    points: tuple[str, ...],
) -> Backend:
    """A session on the running ``rbcosim serve`` named by ``settings`` (address, session,
    timeout), driving ``points`` and the joints of ``config["joint_points"]`` (joint -> its
    point), whose macro step must be ``config["macro_step"]``."""
    from rbcosim.fmu_export.runtime.remote import RemoteSide

    return RemoteSide.connect(settings, scenario, overrides, points, config["joint_points"],
                              float(config["macro_step"]), config.get("body_points", {}))


class FmuCore(DerivativeRequests, TableValues):
    """The numbers behind one rigid-side FMU instance."""

    def __init__(self, resources: str | Path, log: LogFunction) -> None:
        super().__init__(resources, log)
        self.embedded = self.config["mode"] != "remote"
        self._wrench_slots = self._slots("wrench", 6)
        self._wrench_rate_slots = dict(self._slots("wrench_rate", 6))
        self._wrench_rate2_slots = dict(self._slots("wrench_rate2", 6))
        self._wrench_rate3_slots = dict(self._slots("wrench_rate3", 6))
        self._flex_slots = self._slots("flex", 13)
        self._point_slots = self._slots("point", 13)
        # (body, component index, value reference) of the body outputs kept (--outputs)
        self._body_outputs = [(v.owner, v.index, v.vr) for v in self.table.by_kind("body")]
        self._coordinate_vrs = {v.owner: v.vr for v in self.table.by_kind("joint_coordinate")}
        self._coordinates: JointCoordinates | None = None  # built with the model
        self._angle_memory: Memory | None = None
        self._acceleration_slots = self._slots("acceleration", 6)
        self._gap_slots = self._slots("gap", 4)
        self._added_mass_slots = self._slots("added_mass", 36)
        self._added_mass_frame_vr = {v.owner: v.vr for v in self.table.by_kind("added_mass_frame")}
        self._flex_energy_vr = {v.owner: v.vr for v in self.table.by_kind("flex_energy")}
        self._energy_residual_vr = {v.owner: v.vr for v in self.table.by_kind("energy_residual")}
        # Outputs evaluated when read (embedded mode): the accelerations once per step, the gaps
        # and energy residuals whenever the flexible side's inputs changed.
        self._acceleration_vrs = frozenset(vr for _, vrs in self._acceleration_slots for vr in vrs)
        self._joint_output_vrs = frozenset(
            [vr for _, vrs in self._gap_slots for vr in vrs]
            + list(self._energy_residual_vr.values())
        )
        self._joint_input_vrs = frozenset(
            [vr for _, vrs in self._flex_slots for vr in vrs] + list(self._flex_energy_vr.values())
        )
        # --inputs: (actuator spec, value reference of its input)
        by_joint = {spec["joint"]: spec for spec in self.config.get("actuators", ())}
        self._actuators = [(by_joint[v.owner], v.vr) for v in self.table.by_kind("actuator")]
        targets: dict[str, list[int]] = {}
        for v in self.table.by_kind("driver_target"):
            targets.setdefault(v.owner, [0, 0, 0])[v.index] = v.vr
        self._drivers = [(by_joint[joint], vrs) for joint, vrs in targets.items()]
        self._driver_vrs = frozenset(vr for _, vrs in self._drivers for vr in vrs)
        # drivers whose targets were set since they were last handed over (until the master
        # sets them, a driver follows the scenario's motion)
        self._drivers_pending = False
        self._wrench_vrs = frozenset(
            v.vr
            for v in self.table.variables
            if v.kind in ("wrench", "wrench_rate", "wrench_rate2", "wrench_rate3", "actuator")
        )
        self._stale_accelerations = False
        self._stale_joints = False
        # Wrench inputs set since they were last handed to the rigid side (embedded mode).
        self._wrench_pending = False
        self._server = [(v.vr, v.owner) for v in self.table.by_kind("server")]
        self._flex_joint_of = {v.vr: v.owner for v in self.table.by_kind("flex")}
        # Joints whose flexible-node inputs the master has set: only those are passed on, so a
        # joint nobody reports on keeps RigidSide's "not reported yet" (zero gaps).
        self.flex_reported: set[str] = set()
        self._violations_seen = 0
        # Directional derivatives (exported with them, embedded mode): the last doStep, the
        # rigid side's state once its inputs were handed over, and the last Jacobian asked for.
        self.derivatives = bool(self.config.get("derivatives", False))
        self._step_record = None
        self._step_start: bytes | None = None
        self._jacobian: list[float] = []

        self.overrides: dict[str, str] = {}

    # -- variable access -------------------------------------------------------------------

    def get_reals(self, vrs: list[int]) -> list[float]:
        """Current values; ValueError naming them for references that are not Real."""
        self._require(vrs, self._real_vrs, "Real/Float64 variables")
        if self._stale_accelerations and not self._acceleration_vrs.isdisjoint(vrs):
            self._evaluate_accelerations()
        if self._stale_joints and not self._joint_output_vrs.isdisjoint(vrs):
            self._evaluate_joints()
        values = self.values
        return [values[vr] for vr in vrs]

    def set_reals(self, vrs: list[int], values: list[float]) -> None:
        """Store inputs (any time) and parameters (before initialization ends).

        Values are kept as given, NaN included: doStep refuses to run on non-finite inputs,
        naming them. Any other reference refuses the whole call (ValueError, nothing stored).
        """
        self._settable(vrs, values, self._real_vrs)
        for vr, value in zip(vrs, values):
            if vr in self._input_vrs:
                self.values[vr] = value
                joint = self._flex_joint_of.get(vr)
                if joint is not None:
                    self.flex_reported.add(joint)
                if vr in self._driver_vrs:
                    self._drivers_pending = True  # anchored at the next doStep or the build
                elif self.side is not None:
                    if vr in self._joint_input_vrs:
                        self._stale_joints = True
                    elif self.embedded and vr in self._wrench_vrs:
                        self._wrench_pending = True  # for the next doStep: no output changes
            else:
                self.values[vr] = value

    # -- life cycle --------------------------------------------------------------------------

    def initialize(self) -> None:
        """Build the model with the current parameter values (end of initialization mode).

        Raises ScenarioError for a parameter value the scenario rejects.
        """
        self._build(self.parameter_overrides())

    def _build(self, overrides: dict[str, str]) -> None:
        """Build the model, all or nothing (an exception leaves the core uninitialized)."""
        side = self._make_side(overrides)
        if self.embedded:
            self._apply_added_mass(side)
        self.side = side
        if self.embedded:
            # The inputs' values (set in initialization or not) at t0: the accelerations after
            # initialization see them, as CosimMaster's first step hands them over. Non-finite
            # ones stay pending: the first doStep refuses them, naming them.
            self._wrench_pending = True
            if not self.non_finite_inputs():
                self._apply_wrench()
                self._apply_drivers()
        self.overrides = overrides
        if self._coordinate_vrs:
            self._coordinates = JointCoordinates(side.scenario.model)
        self._angle_memory = None
        self._publish()

    def _make_side(self, overrides: dict[str, str]) -> Backend:
        if not self.embedded:
            settings = {owner: self.values[vr] for vr, owner in self._server}
            self.log(f"connecting to rbcosim serve at {settings['address']}", "info")
            return build_remote(
                settings, self.scenario_path, overrides, self.config, self.table.point_names
            )
        return build_embedded(self.scenario_path, overrides, [s for s, _ in self._actuators])

    def _apply_added_mass(self, side: Backend) -> None:
        """Hand each point's added-mass parameters, if not all zero, to the rigid side.

        Raises ValueError naming the point for a matrix or frame the rigid side rejects.
        """
        values = self.values
        for point, vrs in self._added_mass_slots:
            mass = np.array([values[vr] for vr in vrs]).reshape(6, 6)
            if not mass.any():
                continue
            frame = values[self._added_mass_frame_vr[point]]
            if frame not in ADDED_MASS_FRAMES:
                raise ValueError(
                    f"{point}.added_mass_frame: expected one of "
                    f"{list(ADDED_MASS_FRAMES)}, got {frame!r}"
                )
            side.set_added_mass(point, mass, frame=frame)

    def terminate(self) -> None:
        close = getattr(self.side, "close", None)
        if close is not None:
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - a lost server must not fail terminate
                self.log(f"closing the remote session failed: {exc}", "warning")

    def _publish(self) -> None:
        side = self.side
        values = self.values
        values[0] = side.time
        outputs = side.point_outputs()
        for point, vrs in self._point_slots:
            for vr, x in zip(vrs, outputs[point].tolist()):
                values[vr] = x
        if self._body_outputs:
            bodies = side.body_outputs()
            for body, index, vr in self._body_outputs:
                values[vr] = float(bodies[body][index])
        if self._coordinate_vrs:
            coordinates, self._angle_memory = self._coordinates.advance(
                self._angle_memory, side.time, side.body_row())
            for column, vr in self._coordinate_vrs.items():
                values[vr] = coordinates[column]
        self._stale_accelerations = bool(self._acceleration_slots)
        self._stale_joints = bool(self._joint_output_vrs)

    def _evaluate_accelerations(self) -> None:
        """The points' accelerations now, under the wrench polynomial of the last step
        evaluated at its end (RigidSide.point_accelerations, as CosimMaster hands over; after
        initialization: the wrench inputs of initialization mode). Wrench inputs set since
        take effect at the next doStep and change no output: any transfer order of a master
        gives the same values."""
        self._stale_accelerations = False
        values = self.values
        try:
            table = dict(zip(self.side.point_names, self.side.point_accelerations().tolist()))
        except Exception as exc:  # noqa: BLE001 - a getter must not fail the host
            self.log(f"evaluating the point accelerations failed: {exc}", "error")
            table = {point: [math.nan] * 6 for point, _ in self._acceleration_slots}
        for point, vrs in self._acceleration_slots:
            for vr, x in zip(vrs, table[point]):
                values[vr] = x

    def _evaluate_joints(self) -> None:
        """Gaps between each rigid point and the flexible side's latest node kinematics (zeros
        until those are set), and the energy residual against its latest reported energy."""
        from rbcosim.cosim.continuity import joint_gaps

        self._stale_joints = False
        side, values = self.side, self.values
        outputs = side.point_outputs()
        flex = dict(self._flex_slots)
        for joint, vrs in self._gap_slots:
            if joint in self.flex_reported:
                kinematics = np.array([values[vr] for vr in flex[joint]])
                gaps = joint_gaps(outputs[side.joint_point(joint)], kinematics).tolist()
            else:
                gaps = [0.0] * 4
            for vr, x in zip(vrs, gaps):
                values[vr] = x
        for joint, vr in self._energy_residual_vr.items():
            values[vr] = side.energy_rigid[joint] - values[self._flex_energy_vr[joint]]

    # -- directional derivatives -------------------------------------------------------------

    def _jacobian_of(self, unknowns: list, knowns: list) -> np.ndarray:
        return jacobian(self.side, self._step_record, unknowns, knowns)

    # -- stepping ----------------------------------------------------------------------------

    def _step(self, step_size: float) -> None:
        side, values = self.side, self.values
        if self.embedded:
            self._hand_over_embedded()
            if self.derivatives and self._step_start is None:
                self._step_start = side.get_state()
        else:
            for point, vrs in self._wrench_slots:
                side.set_wrench(point, np.array([values[vr] for vr in vrs]))
            for joint, vrs in self._flex_slots:
                if joint in self.flex_reported:
                    side.set_flex_kinematics(joint, np.array([values[vr] for vr in vrs]))
        side.step(step_size)
        self._publish()

    def _hand_over_embedded(self) -> None:
        """The inputs at t_n to the RigidSide, in CosimMaster's order: the flexible side's
        report, the continuity check at t_n (SimulationError for on_violation = "stop"), then
        each point's wrench polynomial for the step."""
        side, values = self.side, self.values
        for joint, vrs in self._flex_slots:
            if joint not in self.flex_reported:
                continue
            kinematics = np.array([values[vr] for vr in vrs])
            energy_vr = self._flex_energy_vr.get(joint)
            if energy_vr is None:
                side.set_flex_kinematics(joint, kinematics)
            else:
                side.set_flex_report(joint, kinematics, values[energy_vr])
        if self._flex_slots:
            side.gaps()
            self._log_violations()
        self._apply_wrench()
        self._apply_drivers()

    def _apply_drivers(self) -> None:
        """Anchor the drivers' targets set since the last time at the current time."""
        if self._drivers_pending:
            for spec, vrs in self._drivers:
                actuators.apply_driver(self.side, spec, *(self.values[vr] for vr in vrs))
            self._drivers_pending = False

    def _apply_wrench(self) -> None:
        """Hand wrench inputs set since the last time to the rigid side, anchored now.

        Raises ValueError (from RigidSide) for non-finite inputs; they then stay pending.
        """
        if not self._wrench_pending:
            return
        side, values = self.side, self.values
        for point, vrs in self._wrench_slots:
            wrench = np.array([values[vr] for vr in vrs])
            rate = self._wrench_rate_slots.get(point)
            if rate is None:
                side.set_wrench(point, wrench)
                continue
            rate2, rate3 = self._wrench_rate2_slots[point], self._wrench_rate3_slots[point]
            side.set_wrench_polynomial(
                point,
                np.array(
                    [
                        wrench,
                        [values[vr] for vr in rate],
                        [0.5 * values[vr] for vr in rate2],  # Taylor coefficients of τ², τ³
                        [values[vr] / 6.0 for vr in rate3],
                    ]
                ),
            )
        for spec, vr in self._actuators:
            actuators.apply(side, spec, values[vr])
        self._wrench_pending = False

    def _log_violations(self) -> None:
        """Continuity violations go to the FMU log: the first MAX_WARNINGS of the run, then a
        count every 1000 (a master that never sends the flexible kinematics would otherwise
        log one line per step)."""
        violations = getattr(self.side, "violations", ())
        for k in range(self._violations_seen, len(violations)):
            if k < MAX_WARNINGS:
                self.log(f"continuity: {violations[k]}", "warning")
            elif (k + 1) % 1000 == 0:
                self.log(f"continuity: {k + 1} violations so far; latest: {violations[k]}",
                          "warning")
        self._violations_seen = len(violations)

    # -- FMU state ---------------------------------------------------------------------------

    def get_state(self, mode: str) -> dict[str, Any]:
        """Everything needed to come back here: solver state bytes and every variable value,
        with the FMI ``mode`` (a :class:`rbcosim.fmu_export.runtime.lifecycle.Mode` name) it was in."""
        return {
            "values": list(self.values),
            "overrides": dict(self.overrides),
            "flex_reported": sorted(self.flex_reported),
            "wrench_pending": self._wrench_pending,
            "mode": mode,
            "solver": self.side.get_state() if self.side is not None else None,
            "joint_angles": self._angle_memory,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a state of :meth:`get_state`, all or nothing: ValueError (or the solver's
        error) leaves this instance as it was."""
        check_state(state, self.table, self.parameter_keys)
        if self._coordinates is not None:
            self._coordinates.check_memory(state["joint_angles"])
        side = self._restored_side(state)
        if side is not self.side:
            self.terminate()
        self.side = side
        self.overrides = dict(state["overrides"]) if side is not None else {}
        self.values = list(state["values"])
        self.flex_reported = set(state["flex_reported"])
        self._angle_memory = state["joint_angles"] if side is not None else None
        if side is not None and self._coordinate_vrs and self._coordinates is None:
            self._coordinates = JointCoordinates(side.scenario.model)
        self._step_record = None
        # The solver holds the wrench polynomial as handed over; inputs set after that are
        # handed over anew, anchored at the restored time.
        self._wrench_pending = bool(state["wrench_pending"]) and side is not None
        self._stale_accelerations = side is not None and bool(self._acceleration_slots)
        self._stale_joints = side is not None and bool(self._joint_output_vrs)

    def _restored_side(self, state: dict[str, Any]) -> Backend | None:
        """The backend holding ``state``'s solver state: this one when the overrides are the
        same (rolled back if the solver refuses the bytes), else a new one."""
        if state["solver"] is None:
            return None
        overrides = dict(state["overrides"])
        if self.side is None or overrides != self.overrides:
            side = self._make_side(overrides)
            side.set_state(state["solver"])
            return side
        previous = self.side.get_state()
        try:
            self.side.set_state(state["solver"])
        except BaseException:
            self.side.set_state(previous)
            raise
        return self.side


def open_core(resources: str | Path, log: LogFunction) -> TableValues:
    """The core an FMU's configuration names: its rigid side (``FmuCore``) or, for
    ``export-fmu --flex BODY``, a flexible body (``flex_core.FlexFmuCore``)."""
    if json.loads((Path(resources) / RESOURCE_DIR / CONFIG_FILE).read_text("utf-8")).get(
        "kind"
    ) == "flex":
        from rbcosim.fmu_export.runtime.flex_core import FlexFmuCore

        return FlexFmuCore(resources, log)
    return FmuCore(resources, log)
