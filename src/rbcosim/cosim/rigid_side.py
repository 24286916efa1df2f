"""The rigid side of a co-simulation: a scenario stepped at macro steps.

Inside a macro step the wrench at each interface point is
    W(t) = Σ_k c_k (t − t_n)^k  +  K_x Δx(t)  +  K_v Δv(t),
a polynomial (held for order 0, extrapolated for orders 1–2) plus, for interface-Jacobian
coupling, the flexible side's ∂W/∂x and ∂W/∂v times the point's motion since t_n
(Δx = [position change, small rotation], Δv = [velocity change, angular-velocity change]).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.cosim.codec import pack_state, unpack_state
from rbcosim.cosim.continuity import enforce, joint_gaps
from rbcosim.cosim.interface import (
    GAP_FIELDS,
    OUTPUT_FIELDS,
    WRENCH_FIELDS,
    InterfacePoints,
    added_mass_blocks,
    inertial_added_mass,
    rotation_difference,
)
from rbcosim.errors import ScenarioError, SimulationError
from rbcosim.kinematics import Kinematics
from rbcosim.results import body_columns
from rbcosim.scenario import Scenario, load_scenario, load_scenario_text, scalar_parameters
from rbcosim.simulate import RigidSimulation, state_row
from rbcosim.state import State

MAX_POLY_ORDER = 3


class RigidSide:
    """One scenario's rigid bodies with interface points; every input and output is inertial."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.sim = RigidSimulation(scenario.model, scenario.solver)
        self.points = InterfacePoints(scenario.model)
        self.couplings = {c.name: c for c in scenario.couplings}
        k = len(self.points.names)
        self._poly = np.zeros((k, MAX_POLY_ORDER + 1, 6))
        self._t0 = self.sim.state.t
        self._kx = np.zeros((k, 6, 6))
        self._kv = np.zeros((k, 6, 6))
        self._feedback = False
        self._added = np.zeros((k, 6, 6))
        self._added_in_point_frame = np.ones(k, dtype=bool)
        self._reference = self.point_outputs_array()
        self._body_frame = np.array(
            [any(c.point == n and c.wrench_frame == "body" for c in scenario.couplings)
             for n in self.points.names], dtype=bool)
        self._flex = {name: None for name in self.couplings}
        self.energy_rigid = {name: 0.0 for name in self.couplings}
        self.energy_flex = {name: 0.0 for name in self.couplings}
        self.last_gaps = {name: np.zeros(4) for name in self.couplings}
        self.gap_max = {name: np.zeros(4) for name in self.couplings}
        self.violations: list[str] = []
        self.violation_counts = {name: 0 for name in self.couplings}
        self.sim.system.external = self._loads if k else None

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_scenario(cls, path=None, *, text: str | None = None, base_dir=None,
                      overrides: dict[str, str] | None = None) -> RigidSide:
        """From a scenario file or inline TOML text, with --set-style overrides."""
        if (path is None) == (text is None):
            raise ScenarioError("give either a scenario path or inline scenario text")
        if text is not None:
            scenario = load_scenario_text(text, base_dir=base_dir or ".", overrides=overrides)
        else:
            scenario = load_scenario(path, overrides)
        return cls(scenario)

    # --- names and settings ---------------------------------------------------------------
    @property
    def time(self) -> float:
        return self.sim.state.t

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

    def parameters(self) -> dict[str, float]:
        """Every numeric scalar of the scenario by dotted key."""
        return scalar_parameters(self.scenario.raw)

    def _coupling(self, joint: str):
        if joint not in self.couplings:
            raise KeyError(f"no rigid–flexible joint {joint!r}; valid names: {list(self.couplings)}")
        return self.couplings[joint]

    # --- outputs --------------------------------------------------------------------------
    def point_outputs_array(self, state: State | None = None) -> np.ndarray:
        """(k, 13) outputs of all points, in point_names order."""
        state = self.sim.state if state is None else state
        return self.points.outputs(Kinematics.of(state))

    def point_outputs(self) -> dict[str, np.ndarray]:
        """point -> (13,) [x y z q0 q1 q2 q3 vx vy vz wx wy wz], inertial."""
        return dict(zip(self.points.names, self.point_outputs_array()))

    def motions_array(self) -> np.ndarray:
        """(k, 19) outputs and accelerations of all points (what a flexible side needs)."""
        return np.hstack([self.point_outputs_array(), self.point_accelerations()])

    def point_accelerations(self) -> np.ndarray:
        """(k, 6) linear and angular accelerations of the points under the current inputs."""
        state = self.sim.state
        vdot, wdot, _ = self.sim.system.accelerations(state)
        return self.points.accelerations(Kinematics.of(state), vdot, wdot)

    # --- inputs ---------------------------------------------------------------------------
    def _check(self, name: str, values, size: int) -> np.ndarray:
        a = np.asarray(values, dtype=float)
        if a.shape != (size,):
            raise ValueError(f"{name}: expected {size} numbers, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{name}: non-finite value {a.tolist()}")
        return a

    def set_wrench(self, point: str, wrench) -> None:
        """Hold the wrench (6,) [fx fy fz mx my mz] N, N·m at `point` over the next step."""
        self.set_wrench_polynomial(point, [wrench])

    def set_wrench_polynomial(self, point: str, coefficients) -> None:
        """W(t) = Σ c_k (t − t_now)^k over the next step; coefficients (order+1, 6)."""
        i = self.points.index(point)
        c = np.asarray(coefficients, dtype=float)
        if c.ndim != 2 or c.shape[1] != 6 or not 1 <= c.shape[0] <= MAX_POLY_ORDER + 1:
            raise ValueError(f"{point}: expected 1 to {MAX_POLY_ORDER + 1} rows of 6 coefficients, "
                             f"got shape {c.shape}")
        if not np.isfinite(c).all():
            raise ValueError(f"{point}: non-finite wrench {c.tolist()}")
        self._poly[i] = 0.0
        self._poly[i, : c.shape[0]] = c
        self._t0 = self.time
        self.sim.system.inputs_changed()

    def set_interface_jacobian(self, point: str, d_dx, d_dv) -> None:
        """The flexible side's ∂W/∂x and ∂W/∂v (6, 6) at `point`, used over the next step."""
        i = self.points.index(point)
        self._kx[i] = self._check(f"{point} dW/dx", np.ravel(d_dx), 36).reshape(6, 6)
        self._kv[i] = self._check(f"{point} dW/dv", np.ravel(d_dv), 36).reshape(6, 6)
        self._feedback = True
        self.sim.system.inputs_changed()

    def set_added_mass(self, point: str, mass, frame: str = "point") -> None:
        """The flexible side's instantaneous added mass M_a (6, 6) at `point` (its wrench
        contains −M_a [a_p; α_p]); the rigid side then treats that part implicitly, and the
        wrench inputs must exclude it. `frame`: "point" (axes of the point frame) or "inertial"."""
        i = self.points.index(point)
        if frame not in ("point", "inertial"):
            raise ValueError(f"frame: expected 'point' or 'inertial', got {frame!r}")
        m = self._check(f"{point} added mass", np.ravel(mass), 36).reshape(6, 6)
        if not np.allclose(m, m.T, atol=1e-9 * max(1.0, np.abs(m).max())):
            raise ValueError(f"{point} added mass: expected a symmetric 6x6 matrix")
        self._added[i] = 0.5 * (m + m.T)
        self._added_in_point_frame[i] = frame == "point"
        self.sim.system.added_mass = self._added_mass if self._added.any() else None
        self.sim.system.inputs_changed()

    def _added_mass(self, kin: Kinematics):
        return added_mass_blocks(self.points, kin, self._added, self._added_in_point_frame)

    def set_flex_kinematics(self, joint: str, kinematics) -> None:
        """The flexible side's view of the joint (13,) for the continuity check."""
        self._coupling(joint)
        self._flex[joint] = self._check(f"{joint} kinematics", kinematics, 13)

    def set_flex_report(self, joint: str, kinematics, energy: float) -> None:
        """The flexible side's joint kinematics (13,) and the energy (J) it has delivered
        through the joint so far, at the current time."""
        self.set_flex_kinematics(joint, kinematics)
        if not np.isfinite(energy):
            raise ValueError(f"{joint} energy: non-finite value {energy}")
        self.energy_flex[joint] = float(energy)

    def energy_residual(self, joint: str) -> float:
        """Energy the coupling created (> 0) or destroyed (< 0) at `joint` so far, J: the work
        of the wrench on the rigid side minus the work the flexible side reports."""
        return self.energy_rigid[joint] - self.energy_flex[joint]

    def _loads(self, t: float, kin: Kinematics):
        tau = t - self._t0
        wrench = self._poly[:, -1]
        for k in range(MAX_POLY_ORDER - 1, -1, -1):
            wrench = self._poly[:, k] + tau * wrench
        if self._feedback:
            now = self.points.outputs(kin)
            ref = self._reference
            dx = np.hstack([now[:, :3] - ref[:, :3],
                            np.array([rotation_difference(a, b) for a, b in zip(now[:, 3:7], ref[:, 3:7])])])
            dv = now[:, 7:] - ref[:, 7:]
            wrench = wrench + np.einsum("kij,kj->ki", self._kx, dx) + np.einsum("kij,kj->ki", self._kv, dv)
        if self._body_frame.any():
            R = kin.R[self.points.body]
            rotated = np.hstack([np.einsum("kij,kj->ki", R, wrench[:, :3]),
                                 np.einsum("kij,kj->ki", R, wrench[:, 3:])])
            wrench = np.where(self._body_frame[:, None], rotated, wrench)
        self._last_wrench = wrench
        return self.points.body_loads(kin, wrench)

    def applied_wrenches(self) -> np.ndarray:
        """(k, 6) wrenches at the points at the current time and state, inertial; with an
        added mass, the total wrench −M_a [a_p; α_p] + input."""
        if not self.points.names:
            return np.zeros((0, 6))
        kin = Kinematics.of(self.sim.state)
        self._loads(self.time, kin)
        wrench = self._last_wrench.copy()
        if self.sim.system.added_mass is not None:
            mass = inertial_added_mass(self.points, kin, self._added, self._added_in_point_frame)
            wrench -= np.einsum("kij,kj->ki", mass, self.point_accelerations())
        return wrench

    # --- stepping -------------------------------------------------------------------------
    def step(self, H: float, micro_steps: int | None = None) -> None:
        """Advance by H s in `micro_steps` (default: the scenario's) equal steps."""
        if not (isinstance(H, (int, float)) and np.isfinite(H) and H > 0):
            raise ValueError(f"macro step H must be a positive finite number, got {H!r}")
        n = micro_steps or self.scenario.cosim.micro_steps
        t_start = self.time
        self._reference = self.point_outputs_array()
        self.sim.system.inputs_changed()
        self.start_wrenches = self.applied_wrenches().copy()
        for k in range(1, n + 1):
            self.sim.step(H / n)
            self.sim.state.t = t_start + H * k / n
        self.end_wrenches = self.applied_wrenches().copy()
        end = self.point_outputs_array()
        for name, c in self.couplings.items():
            i = self.points.index(c.point)
            self.energy_rigid[name] += 0.5 * H * (self.start_wrenches[i] @ self._reference[i, 7:13]
                                                  + self.end_wrenches[i] @ end[i, 7:13])
        self._feedback = False
        self._kx[:] = 0.0
        self._kv[:] = 0.0
        self.sim.system.inputs_changed()

    def gaps(self) -> dict[str, np.ndarray]:
        """joint -> (4,) [gap_pos m, gap_rot rad, gap_vel m/s, gap_angvel rad/s]; zeros until
        the flexible side has reported; applies each joint's on_violation action."""
        outputs = self.point_outputs()
        out = {}
        for name, c in self.couplings.items():
            flex = self._flex[name]
            g = np.zeros(4) if flex is None else joint_gaps(outputs[c.point], flex)
            message = enforce(c, g, self.time, self.violation_counts[name])
            if message:
                self.violations.append(message)
                self.violation_counts[name] += 1
            out[name] = g
            self.last_gaps[name] = g
            np.maximum(self.gap_max[name], g, out=self.gap_max[name])
        return out

    # --- results --------------------------------------------------------------------------
    def results_columns(self) -> list[str]:
        """Rigid-side result columns: t, bodies, energy, drift, points, joints."""
        cols = ["t", *body_columns(self.scenario.model), "energy", "constraint_drift"]
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
        return state_row(self.sim.state)

    # --- save / restore -------------------------------------------------------------------
    def get_state(self) -> bytes:
        """Everything that determines the next steps, as bytes (exact round trip)."""
        s = self.sim.state
        flex = {k: v for k, v in self._flex.items() if v is not None}
        return pack_state({
            "t": s.t, "r": s.r, "q": s.q, "v": s.v, "w": s.w, "poly": self._poly, "t0": self._t0,
            "kx": self._kx, "kv": self._kv, "feedback": self._feedback, "flex": flex,
            "added": self._added, "added_point_frame": self._added_in_point_frame.astype(float),
            "joints": {name: np.concatenate([[self.energy_rigid[name], self.energy_flex[name]],
                                             self.last_gaps[name], self.gap_max[name]])
                       for name in self.couplings},
            "diagnostics": self.sim.diagnostics.as_dict(private=True),
            "quaternion_error": self.sim.integrator.quaternion_error,
        })

    def set_state(self, blob: bytes) -> None:
        """Restore a state from get_state (same scenario)."""
        try:
            d = unpack_state(blob)
            state = State(float(d["t"]), d["r"], d["q"], d["v"], d["w"])
            if state.r.shape != self.sim.state.r.shape or d["poly"].shape != self._poly.shape:
                raise ValueError("the saved state belongs to a different scenario")
        except (KeyError, TypeError, AttributeError) as exc:
            raise SimulationError(f"not a saved rigid-side state: {exc}") from None
        except ValueError as exc:
            raise SimulationError(str(exc)) from None
        self.sim.state = state
        self._poly, self._t0 = d["poly"], float(d["t0"])
        self._kx, self._kv, self._feedback = d["kx"], d["kv"], bool(d["feedback"])
        self._flex = {name: d["flex"].get(name) for name in self.couplings}
        for name in self.couplings:
            j = d["joints"][name]
            self.energy_rigid[name], self.energy_flex[name] = float(j[0]), float(j[1])
            self.last_gaps[name], self.gap_max[name] = j[2:6].copy(), j[6:10].copy()
        self.sim.diagnostics.restore(d["diagnostics"])
        self._added = d["added"]
        self._added_in_point_frame = d["added_point_frame"].astype(bool)
        self.sim.system.added_mass = self._added_mass if self._added.any() else None
        self.sim.system.inputs_changed()
        self.sim.integrator.quaternion_error = float(d["quaternion_error"])

    def save(self, path) -> None:
        Path(path).write_bytes(self.get_state())

    def restore(self, path) -> None:
        self.set_state(Path(path).read_bytes())

