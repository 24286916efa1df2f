"""The rigid side of a co-simulation: a scenario stepped at macro steps.

Inside a macro step the wrench at each interface point is
    W(t) = Σ_k c_k (t − t_n)^k  +  K_x Δx(t)  +  K_v Δv(t),
a polynomial (held for order 0, extrapolated for orders 1–2) plus, for interface-Jacobian
coupling, the flexible side's ∂W/∂x and ∂W/∂v times the point's motion since t_n
(Δx = [position change, small rotation], Δv = [velocity change, angular-velocity change]).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rbcosim import _core
from rbcosim.cosim.continuity import enforce
from rbcosim.cosim.interface_layout import (
    GAP_FIELDS,
    OUTPUT_FIELDS,
    WRENCH_FIELDS,
    InterfacePoints,
)
from rbcosim.diagnostics import checked_diagnostics, state_row
from rbcosim.errors import ScenarioError, SimulationError
from rbcosim.limits import RunLimits
from rbcosim.limits import enforce as enforce_limits
from rbcosim.maximal.kernels.interface_points import MAX_POLY_ORDER
from rbcosim.maximal.simulate import RigidSimulation
from rbcosim.scenario.loader import Scenario, load_scenario, load_scenario_text, scalar_parameters
from rbcosim.serialization.codec import (
    StateFormatError,
    array,
    field,
    pack_state,
    unpack_state,
    write_atomically,
)
from rbcosim.serialization.model_digest import check_digest


def rigid_formulation(scenario: Scenario) -> str:
    """The formulation of a co-simulation's rigid side: "minimal" when solver.formulation says
    so (joint coordinates, trees; Python macro steps), else "maximal" ("auto" included: its
    macro steps run in the C core)."""
    return "minimal" if scenario.solver.formulation == "minimal" else "maximal"


def rigid_simulation(scenario: Scenario):
    """The rigid side's simulation in its formulation (`rigid_formulation`): a
    `rbcosim.run_loop.System` with interface points."""
    if rigid_formulation(scenario) == "minimal":
        from rbcosim.minimal.route import MinimalSimulation  # the minimal route's rigid sides

        return MinimalSimulation(scenario.model, scenario.solver).attach_points()
    return RigidSimulation(scenario.model, scenario.solver)


class RigidSide:
    """One scenario's rigid bodies with interface points; every input and output is inertial."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.sim = rigid_simulation(scenario)
        self.points = InterfacePoints(scenario.model)
        self.couplings = {c.name: c for c in scenario.couplings}
        #: the C core's interface inputs: wrench polynomials, gains, added masses
        self.inputs = self.sim.point_inputs
        self.inputs.flags[:, 0] = [
            any(c.point == n and c.wrench_frame == "body" for c in scenario.couplings)
            for n in self.points.names]
        self.inputs.t0[0] = self.sim.time
        self._flex = {name: None for name in self.couplings}
        self.energy_rigid = {name: 0.0 for name in self.couplings}
        self.energy_flex = {name: 0.0 for name in self.couplings}
        self.last_gaps = {name: np.zeros(4) for name in self.couplings}
        self.gap_max = {name: np.zeros(4) for name in self.couplings}
        self.violations: list[str] = []
        self.violation_counts = {name: 0 for name in self.couplings}
        couplings = self.couplings.values()
        #: each joint's point row, its tolerances (nj, 4) and the points' outputs (k, 13): the
        #: arrays of `gaps` (one C call for every joint)
        self._joint_point = np.array([self.points.index(c.point) for c in couplings],
                                     dtype=np.int64)
        self._tolerances = np.array([c.tolerances for c in couplings],
                                    dtype=np.float64).reshape(-1, 4)
        self._outputs = np.empty((len(self.points.names), 13))
        #: (joint, its point's row) pairs for the interface work of each macro step
        self._work_rows = tuple(zip(self.couplings, self._joint_point.tolist()))
        #: the C macro step gives the points' motions at its end (maximal formulation)
        self._motions_from_step = isinstance(self.sim, RigidSimulation)

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_scenario(cls, path=None, *, text: str | None = None, base_dir=None,
                      overrides: dict[str, str] | None = None,
                      limits: RunLimits | None = None) -> RigidSide:
        """From a scenario file or inline TOML text, with --set-style overrides; with
        `limits`, the scenario's size estimate must pass them before the solver is built
        (LimitError otherwise)."""
        if (path is None) == (text is None):
            raise ScenarioError("give either a scenario path or inline scenario text")
        if text is not None:
            scenario = load_scenario_text(text, base_dir=base_dir or ".", overrides=overrides)
        else:
            scenario = load_scenario(path, overrides)
        if limits is not None:
            enforce_limits(scenario, limits)
        return cls(scenario)

    # --- names and settings ---------------------------------------------------------------
    @property
    def time(self) -> float:
        return self.sim.time

    @property
    def point_names(self) -> tuple[str, ...]:
        return self.points.names

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(self.couplings)

    def joint_point(self, joint: str) -> str:
        """The interface point a rigid–flexible joint couples."""
        return self._coupling(joint).point

    @property
    def macro_step(self) -> float:
        return self.scenario.cosim.macro_step

    def coupling_info(self) -> dict:
        """What a flexible solver joining the session needs to run the scenario's coupling:
        scheme, wrench extrapolation order, micro steps, macro step H (s), t_end (s), the
        number of macro steps to t_end, output_every and whether to hand its added mass over."""
        cosim, solver = self.scenario.cosim, self.scenario.solver
        return {
            "scheme": cosim.scheme,
            "extrapolation": int(cosim.extrapolation),
            "micro_steps": int(cosim.micro_steps),
            "macro_step": float(cosim.macro_step),
            "t_end": float(solver.t_end),
            "n_steps": round(solver.t_end / cosim.macro_step),
            "output_every": int(solver.output_every),
            "added_mass": bool(cosim.added_mass),
        }

    def parameters(self) -> dict[str, float]:
        """Every numeric scalar of the scenario by dotted key."""
        return scalar_parameters(self.scenario.raw)

    def _coupling(self, joint: str):
        if joint not in self.couplings:
            raise KeyError(f"no rigid–flexible joint {joint!r}; valid names: {list(self.couplings)}")
        return self.couplings[joint]

    # --- outputs --------------------------------------------------------------------------
    def point_outputs_array(self) -> np.ndarray:
        """(k, 13) outputs of all points now, in point_names order."""
        out = np.empty((len(self.points.names), 13))
        self.sim.point_outputs(out)
        return out

    def point_outputs(self) -> dict[str, np.ndarray]:
        """point -> (13,) [x y z q0 q1 q2 q3 vx vy vz wx wy wz], inertial."""
        return dict(zip(self.points.names, self.point_outputs_array()))

    def _points_now(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(outputs (k, 13), accelerations (k, 6), total wrenches (k, 6)) now, inertial."""
        out, acc = self.sim.point_state()
        return out[:, :13], acc, out[:, 13:]

    def motions_array(self) -> np.ndarray:
        """(k, 19) outputs and accelerations of all points (what a flexible side needs)."""
        out, acc = self.sim.point_state()
        return np.concatenate((out[:, :13], acc), axis=1)

    def point_accelerations(self) -> np.ndarray:
        """(k, 6) linear and angular accelerations of the points under the current inputs."""
        return self._points_now()[1]

    # --- inputs ---------------------------------------------------------------------------
    @staticmethod
    def _check(values, size: int, owner: str, what: str) -> np.ndarray:
        """`values` as a float64 array of `size` finite numbers; ValueError naming
        "`owner` `what`" otherwise."""
        a = np.ascontiguousarray(values, dtype=np.float64)
        if a.shape != (size,):
            raise ValueError(f"{owner} {what}: expected {size} numbers, got shape {a.shape}")
        if not _core.all_finite(a):
            raise ValueError(f"{owner} {what}: non-finite value {a.tolist()}")
        return a

    def set_wrench(self, point: str, wrench) -> None:
        """Hold the wrench (6,) [fx fy fz mx my mz] N, N·m at `point` over the next step."""
        self.set_wrench_polynomial(point, [wrench])

    def set_wrench_polynomial(self, point: str, coefficients) -> None:
        """W(t) = Σ c_k (t − t_now)^k over the next step; coefficients (order+1, 6)."""
        i = self.points.index(point)
        c = np.ascontiguousarray(coefficients, dtype=np.float64)
        if c.ndim != 2 or c.shape[1] != 6 or not 1 <= c.shape[0] <= MAX_POLY_ORDER + 1:
            raise ValueError(f"{point}: expected 1 to {MAX_POLY_ORDER + 1} rows of 6 coefficients, "
                             f"got shape {c.shape}")
        if not _core.all_finite(c):
            raise ValueError(f"{point}: non-finite wrench {c.tolist()}")
        poly = self.inputs.poly[i]
        poly[c.shape[0]:] = 0.0
        poly[: c.shape[0]] = c
        self.inputs.t0[0] = self.sim.time

    def set_interface_jacobian(self, point: str, d_dx, d_dv) -> None:
        """The flexible side's ∂W/∂x and ∂W/∂v (6, 6) at `point`, used over the next step."""
        i = self.points.index(point)
        kx = self._check(np.ravel(d_dx), 36, point, "dW/dx").reshape(6, 6)
        kv = self._check(np.ravel(d_dv), 36, point, "dW/dv").reshape(6, 6)
        self.inputs.gains[i, 0], self.inputs.gains[i, 1] = kx, kv
        self.inputs.switches[0] = 1

    def set_added_mass(self, point: str, mass, frame: str = "point") -> None:
        """The flexible side's instantaneous added mass M_a (6, 6) at `point` (its wrench
        contains −M_a [a_p; α_p]); the rigid side then treats that part implicitly, and the
        wrench inputs must exclude it. `frame`: "point" (axes of the point frame) or "inertial"."""
        i = self.points.index(point)
        if frame not in ("point", "inertial"):
            raise ValueError(f"frame: expected 'point' or 'inertial', got {frame!r}")
        m = self._check(np.ravel(mass), 36, point, "added mass").reshape(6, 6)
        if not np.allclose(m, m.T, atol=1e-9 * max(1.0, np.abs(m).max())):
            raise ValueError(f"{point} added mass: expected a symmetric 6x6 matrix")
        self.inputs.added[i] = 0.5 * (m + m.T)
        self.inputs.flags[i, 1] = frame == "point"
        self.inputs.switches[1] = int(self.inputs.added.any())

    def set_flex_kinematics(self, joint: str, kinematics) -> None:
        """The flexible side's view of the joint (13,) for the continuity check."""
        if joint not in self._flex:
            self._coupling(joint)
        self._flex[joint] = self._check(kinematics, 13, joint, "kinematics")

    def set_flex_report(self, joint: str, kinematics, energy: float) -> None:
        """The flexible side's joint kinematics (13,) and the energy (J) it has delivered
        through the joint so far, at the current time."""
        self.set_flex_kinematics(joint, kinematics)
        energy = float(energy)
        if not math.isfinite(energy):
            raise ValueError(f"{joint} energy: non-finite value {energy}")
        self.energy_flex[joint] = energy

    def energy_residual(self, joint: str) -> float:
        """Energy the coupling created (> 0) or destroyed (< 0) at `joint` so far, J: the work
        of the wrench on the rigid side minus the work the flexible side reports."""
        return self.energy_rigid[joint] - self.energy_flex[joint]

    def applied_wrenches(self) -> np.ndarray:
        """(k, 6) wrenches at the points at the current time and state, inertial; with an
        added mass, the total wrench −M_a [a_p; α_p] + input."""
        if not self.points.names:
            return np.zeros((0, 6))
        return self._points_now()[2]

    # --- stepping -------------------------------------------------------------------------
    def step(self, H: float, micro_steps: int | None = None) -> np.ndarray | None:
        """Advance by H s in `micro_steps` (default: the scenario's) equal steps. Returns the
        points' motions after it, (k, 19) as `motions_array`, where the C macro step already
        evaluated them under the same inputs (maximal formulation, no interface-Jacobian
        feedback in the step); else None (`motions_array` evaluates them)."""
        if not (isinstance(H, (int, float)) and math.isfinite(H) and H > 0):
            raise ValueError(f"macro step H must be a positive finite number, got {H!r}")
        n = micro_steps or self.scenario.cosim.micro_steps
        feedback = self.inputs.switches[0]
        start, end, energy = self.sim.macro_step(float(H), n)
        self.keep_step_wrenches(start, end)
        for name, point in self._work_rows:
            self.energy_rigid[name] += energy[point]
        if feedback or not self._motions_from_step:
            return None
        acc = self.sim.macro_scratch(n)[3]  # the accelerations at the step's end
        return np.concatenate((end[:, :13], acc), axis=1)

    def keep_step_wrenches(self, start: np.ndarray, end: np.ndarray) -> None:
        """The points' wrenches (k, 6) at the last macro step's start and end, inertial, from
        its rows (k, 19) [outputs (13), wrench (6)] there."""
        self.start_wrenches, self.end_wrenches = start[:, 13:].copy(), end[:, 13:].copy()

    def gaps(self) -> dict[str, np.ndarray]:
        """joint -> (4,) [gap_pos m, gap_rot rad, gap_vel m/s, gap_angvel rad/s]; zeros until
        the flexible side has reported; applies each joint's on_violation action."""
        self.sim.point_outputs(self._outputs)
        rows = np.empty((len(self.couplings), 4))
        over = _core.served_gaps(self._outputs, self._joint_point, tuple(self._flex.values()),
                                 self._tolerances, rows)
        out = {}
        for (name, c), g in zip(self.couplings.items(), rows):
            if over:  # some joint is over its tolerances: its on_violation action
                message = enforce(c, g, self.time, self.violation_counts[name])
                if message:
                    self.violations.append(message)
                    self.violation_counts[name] += 1
            out[name] = g
            self.last_gaps[name] = g
            np.maximum(self.gap_max[name], g, out=self.gap_max[name])
        return out

    # --- the session worker's C step path (rbcosim.service.served_path) --------------------
    def loop_arrays(self) -> tuple | None:
        """What the C step path steps this side with: (handle, state vector, integrator
        stats, the macro step's scratch (times, start, end, acc, energy, failed), each
        joint's point row, tolerances (nj, 4), micro steps, project); None where it does not
        (minimal formulation, an integrator other than RK4)."""
        n = self.scenario.cosim.micro_steps
        arrays = self.sim.step_arrays(n) if self._motions_from_step else None
        if arrays is None:
            return None
        handle, y, stats, scratch, project = arrays
        return handle, y, stats, scratch, self._joint_point, self._tolerances, n, project

    def loop_load(self, flex, energy_rigid, energy_flex, last_gaps, gap_max) -> None:
        """The joints' reports (nj, 13), energies (nj,) J and gaps (nj, 4) into the C path's
        arrays."""
        for j, name in enumerate(self.couplings):
            flex[j] = 0.0 if self._flex[name] is None else self._flex[name]
            energy_rigid[j], energy_flex[j] = self.energy_rigid[name], self.energy_flex[name]
            last_gaps[j], gap_max[j] = self.last_gaps[name], self.gap_max[name]

    def loop_store(self, flex, energy_rigid, energy_flex, last_gaps, gap_max, t: float,
                   micro_steps: int) -> None:
        """After steps of the C path (`loop_load`'s arrays, which it wrote): the reports, the
        energies, the gaps, the time t (s) and the micro steps it took (diagnostics)."""
        for j, name in enumerate(self.couplings):
            self._flex[name] = flex[j].copy()
            self.energy_rigid[name], self.energy_flex[name] = energy_rigid[j], energy_flex[j]
            self.last_gaps[name] = last_gaps[j].copy()
            self.gap_max[name][:] = gap_max[j]
        sim = self.sim
        sim.took_steps(t, micro_steps)
        _, start, end, *_ = sim.macro_scratch(self.scenario.cosim.micro_steps)
        self.keep_step_wrenches(start, end)

    # --- results --------------------------------------------------------------------------
    def results_columns(self) -> list[str]:
        """Rigid-side result columns: the formulation's (t, bodies, energy, drift, ...), points,
        joints."""
        cols = list(self.sim.columns)
        for p in self.point_names:
            cols += [f"{p}.{f}" for f in OUTPUT_FIELDS + WRENCH_FIELDS]
        for j in self.joint_names:
            cols += [f"{j}.{f}" for f in GAP_FIELDS] + [f"{j}.energy_residual"]
        return cols

    def results_row(self) -> np.ndarray:
        """One row of results_columns() at the current time (gaps as last computed)."""
        values = [self.sim.observe()]
        outs = self.point_outputs_array()
        wrenches = self.applied_wrenches()
        values += [np.concatenate([outs[i], wrenches[i]]) for i in range(len(self.point_names))]
        values += [np.append(self.last_gaps[j], self.energy_residual(j)) for j in self.joint_names]
        return np.concatenate(values)

    def diagnostics(self) -> dict:
        """The rigid side's run figures: solver diagnostics, then per joint the largest gaps
        and the energy residual (J), and the count of continuity violations."""
        d = self.sim.diagnostics.as_dict()
        d["joints"] = {
            j: {"max_gap_pos_m": float(g[0]), "max_gap_rot_rad": float(g[1]),
                "max_gap_vel_m_s": float(g[2]), "max_gap_angvel_rad_s": float(g[3]),
                "energy_residual_J": float(self.energy_residual(j))}
            for j, g in self.gap_max.items()
        }
        d["continuity_violations"] = len(self.violations)
        return d

    def body_row(self) -> np.ndarray:
        """Body columns of the current state (see results.body_columns)."""
        return state_row(self.sim.body_state())

    def body_outputs(self) -> dict[str, np.ndarray]:
        """body -> (13,) [x y z q0 q1 q2 q3 vx vy vz wx wy wz], the results file's columns."""
        return dict(zip(self.scenario.model.body_names, self.body_row().reshape(-1, 13)))

    # --- save / restore -------------------------------------------------------------------
    @property
    def digest(self) -> str:
        """The rigid model's digest (its simulation's), carried by every state."""
        return self.sim.digest

    def get_state(self) -> bytes:
        """Everything that determines the next steps, as bytes (exact round trip)."""
        flex = {k: v for k, v in self._flex.items() if v is not None}
        p = self.inputs
        return pack_state({
            "model": self.digest, **self.sim.state_fields(), "poly": p.poly, "t0": p.t0[0],
            "kx": p.gains[:, 0], "kv": p.gains[:, 1], "feedback": bool(p.switches[0]),
            "flex": flex, "added": p.added, "added_point_frame": p.flags[:, 1].astype(float),
            "joints": {name: np.concatenate([[self.energy_rigid[name], self.energy_flex[name]],
                                             self.last_gaps[name], self.gap_max[name]])
                       for name in self.couplings},
            "diagnostics": self.sim.diagnostics.checkpoint(),
        })

    def set_state(self, blob: bytes) -> None:
        """Restore a state from get_state (same scenario); the whole blob is checked first, so
        a refused one leaves the current state as it was."""
        try:
            d = self._checked_state(unpack_state(blob))
        except ValueError as exc:
            raise SimulationError(f"not a saved rigid-side state of this scenario: {exc}") from None
        p = self.inputs
        p.poly[:], p.t0[0] = d["poly"], float(d["t0"])
        p.gains[:, 0], p.gains[:, 1], p.switches[0] = d["kx"], d["kv"], int(bool(d["feedback"]))
        self._flex = {name: None if d["flex"].get(name) is None
                      else np.ascontiguousarray(d["flex"][name], dtype=np.float64)
                      for name in self.couplings}
        for name in self.couplings:
            j = d["joints"][name]
            self.energy_rigid[name], self.energy_flex[name] = float(j[0]), float(j[1])
            self.last_gaps[name], self.gap_max[name] = j[2:6].copy(), j[6:10].copy()
        self.sim.diagnostics.restore(d["diagnostics"])
        self.sim.set_state_fields(d)
        p.added[:] = d["added"]
        p.flags[:, 1] = d["added_point_frame"].astype(bool)
        p.switches[1] = int(p.added.any())

    def _checked_state(self, d: dict) -> dict:
        """`d` if every field has this scenario's type and shape (StateFormatError otherwise)."""
        check_digest(d, self.digest)
        p = self.inputs
        self.sim.check_state_fields(d)
        for key, like in (("poly", p.poly), ("kx", p.gains[:, 0]), ("kv", p.gains[:, 1]),
                          ("added", p.added), ("added_point_frame", p.flags[:, 1])):
            array(d, key, like.shape)
        field(d, "t0")
        field(d, "feedback", bool)
        flex, joints = field(d, "flex", dict), field(d, "joints", dict)
        for name in self.couplings:
            array(joints, name, (10,), "state.joints")
            if name in flex:
                array(flex, name, (13,), "state.flex")
        if set(flex) - set(self.couplings) or set(joints) != set(self.couplings):
            raise StateFormatError(f"joints: {sorted(joints)}, this scenario has "
                                   f"{sorted(self.couplings)}")
        checked_diagnostics(field(d, "diagnostics", dict), observed=False)
        return d

    def save(self, path) -> None:
        write_atomically(path, self.get_state())

    def restore(self, path) -> None:
        self.set_state(Path(path).read_bytes())

