"""In-process co-simulation master: the rigid side and flexible bodies at fixed macro steps.

Each macro step [t_n, t_n + H] exchanges, per rigid–flexible joint, the rigid interface
point's motion (pose, velocities, accelerations) for the flexible side's wrench, by one of:
  jacobi                    both sides step from the values at t_n (inputs extrapolated);
  gauss_seidel_rigid_first  the rigid side steps, the flexible side then follows its motion
                            interpolated between t_n and t_n + H;
  gauss_seidel_flex_first   the flexible side steps, the rigid side then uses its wrench
                            interpolated between t_n and t_n + H;
  iterative                 both step, exchange the end values, restore and repeat until the
                            interface wrench converges (interpolated inputs, rollback);
  interface_jacobian        Jacobi, plus the flexible side's ∂W/∂x, ∂W/∂v so the rigid side
                            updates the wrench from its own motion inside the step.
Inputs held over a step (extrapolation 0) or extrapolated through 1–2 past macro values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rbcosim import quaternion as quat
from rbcosim.cosim.codec import pack_state, unpack_state
from rbcosim.cosim.interface import GAP_FIELDS, OUTPUT_FIELDS, WRENCH_FIELDS
from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.cosim.signals import evaluate, polynomial_through
from rbcosim.errors import ScenarioError, SimulationError
from rbcosim.flex.body import FlexBody
from rbcosim.flex.config import flex_model_from_config
from rbcosim.flex.kinematics import InterfaceMotion
from rbcosim.progress import Progress
from rbcosim.results import Results, body_columns
from rbcosim.scenario import Scenario
from rbcosim.settings import Coupling


def build_flex_bodies(scenario: Scenario) -> dict[str, FlexBody]:
    """One FlexBody per [flex_bodies.NAME], from the scenario's raw tables."""
    bodies = {}
    for name, cfg in scenario.flex_bodies.items():
        model = flex_model_from_config(cfg, scenario.base_dir, f"{scenario.source}: flex_bodies.{name}")
        bodies[name] = FlexBody(model, gravity=scenario.model.gravity,
                                micro_steps=scenario.cosim.micro_steps)
    used = {}
    for c in scenario.couplings:
        if c.flex_body in used:
            raise ScenarioError(f"{scenario.source}: couplings.{c.name}.flex_body: "
                                f"{c.flex_body!r} is already coupled by {used[c.flex_body]!r}; "
                                "a flexible body has one interface node")
        used[c.flex_body] = c.name
    unused = sorted(set(bodies) - set(used))
    if unused:
        raise ScenarioError(f"{scenario.source}: flex_bodies.{unused[0]}: no coupling uses it; "
                            "add a [couplings.NAME] with flex_body = " + repr(unused[0]))
    return bodies


def _start_unstressed_interior(body: FlexBody) -> None:
    """Choose η so that a grounded structure's output nodes start at their reference
    positions, at rest, although the boundary starts displaced (a prescribed initial offset of
    the interface, as in the two-mass benchmark: x1(0) ≠ 0, x2(0) = 0)."""
    rows = body.model.output_rows.reshape(-1, body.model.mass.shape[0])
    if rows.size == 0 or body.model.n_modes == 0:
        return
    nb = body.model.n_boundary
    boundary = body._boundary_state()[0]
    eta = np.linalg.lstsq(rows[:, nb:], -rows[:, :nb] @ boundary, rcond=None)[0]
    body.set_modal_state(eta, np.zeros_like(eta))


def motion_of(outputs: np.ndarray, accelerations: np.ndarray, t: float) -> InterfaceMotion:
    """InterfaceMotion from a point's outputs (13,) and accelerations (6,) at time t."""
    return InterfaceMotion(outputs[:3], outputs[3:7], outputs[7:10], outputs[10:13],
                           accelerations[:3], accelerations[3:], time=t)


@dataclass
class JointLedger:
    """Per joint: the last exchanged values and the coupling energy bookkeeping (J)."""

    wrench_history: list = field(default_factory=list)   # [(t, W (6,))], newest first
    motion_history: list = field(default_factory=list)   # [InterfaceMotion], newest first
    energy_rigid: float = 0.0
    energy_flex: float = 0.0

    @property
    def residual(self) -> float:
        """Energy the coupling created (> 0) or destroyed (< 0) so far, J."""
        return self.energy_rigid - self.energy_flex


class CosimMaster:
    """Couples a RigidSide with the scenario's flexible bodies; step() advances one macro step."""

    def __init__(self, scenario: Scenario, *, macro_step: float | None = None):
        self.scenario = scenario
        self.settings = scenario.cosim
        self.H = macro_step or scenario.cosim.macro_step
        self.rigid = RigidSide(scenario)
        self.flex = build_flex_bodies(scenario)
        self.couplings: tuple[Coupling, ...] = scenario.couplings
        self.ledger = {c.name: JointLedger() for c in self.couplings}
        self.iterations: list[int] = []
        self.step_index = 0
        self.last_gaps = {c.name: np.zeros(4) for c in self.couplings}
        self.gap_max = {c.name: np.zeros(4) for c in self.couplings}
        self._implicit_mass: set[str] = set()
        self._initialize_flex()

    def _point_index(self, c: Coupling) -> int:
        return self.rigid.points.index(c.point)

    def _motions(self) -> dict[str, InterfaceMotion]:
        outs = self.rigid.point_outputs_array()
        accs = self.rigid.point_accelerations()
        return {c.name: motion_of(outs[self._point_index(c)], accs[self._point_index(c)],
                                  self.rigid.time) for c in self.couplings}

    def _initialize_flex(self) -> None:
        motions = self._motions()
        for c in self.couplings:
            body = self.flex[c.flex_body]
            motion = motions[c.name]
            if c.grounded_reference is not None:
                body.initialize(self.rigid.time, InterfaceMotion.at_rest(
                    c.grounded_reference, motion.quaternion))
                body.set_motion(motion)
                _start_unstressed_interior(body)
            else:
                body.initialize(self.rigid.time, motion)
            if self.settings.added_mass:
                self._hand_over_added_mass(c, body, motion)
        for c in self.couplings:
            self.ledger[c.name].wrench_history = [(self.rigid.time, self._flex_input(c))]

    def _hand_over_added_mass(self, c: Coupling, body: FlexBody, motion: InterfaceMotion) -> None:
        """Give the flexible body's instantaneous added mass to the rigid side (in the point
        frame for a floating body, inertial for a grounded one), so that the acceleration
        dependence of the wrench is implicit: explicit force coupling of a body heavier than
        what it is attached to is unstable at any macro step (the added-mass instability)."""
        mass = body.added_mass()
        if not np.any(np.abs(mass) > 1e-12 * max(1.0, np.abs(mass).max())):
            return
        if body.model.attachment == "floating":
            T = np.kron(np.eye(2), quat.to_matrix(motion.quaternion))
            self.rigid.set_added_mass(c.point, T.T @ mass @ T, frame="point")
        else:
            self.rigid.set_added_mass(c.point, mass, frame="inertial")
        self._implicit_mass.add(c.name)

    def _flex_input(self, c: Coupling) -> np.ndarray:
        """The wrench the rigid side takes from the flexible side: the whole wrench, or, with
        the added mass handed over, the part without the interface accelerations."""
        body = self.flex[c.flex_body]
        return body.wrench_at_rest_frame() if c.name in self._implicit_mass else body.wrench()

    # --- inputs for one macro step ------------------------------------------------------------
    def _rigid_inputs(self, c: Coupling, t: float, end: np.ndarray | None = None) -> np.ndarray:
        """Wrench polynomial over [t, t + H]: through past values (extrapolation order), or
        through the past values and an end value (interpolation, when `end` is given)."""
        history = self.ledger[c.name].wrench_history
        order = self.settings.extrapolation
        points = [(tn - t, w) for tn, w in history[: order + 1]]
        if end is not None:
            points = [(self.H, end)] + [(tn - t, w) for tn, w in history[: max(order, 1)]]
        taus, values = zip(*points)
        coefficients = polynomial_through(taus, np.array(values))
        self.rigid.set_wrench_polynomial(c.point, coefficients)
        return coefficients

    def _flex_step(self, c: Coupling, t: float, motion: InterfaceMotion,
                   future: InterfaceMotion | None = None) -> None:
        past = self.ledger[c.name].motion_history[: self.settings.extrapolation]
        if future is not None:
            past = [future] + past[:1]
        self.flex[c.flex_body].step(t, self.H, motion, extrapolation=past)

    # --- one macro step -----------------------------------------------------------------------
    def step(self) -> None:
        """Advance both sides by one macro step H with the configured scheme."""
        t = self.rigid.time
        scheme = self.settings.scheme
        motions = self._motions()
        start = self._exchange_start(motions)
        iterations = 1
        if scheme in ("jacobi", "interface_jacobian"):
            for c in self.couplings:
                self._rigid_inputs(c, t)
                if scheme == "interface_jacobian":
                    self.rigid.set_interface_jacobian(c.point, *self.flex[c.flex_body].interface_jacobian())
                self._flex_step(c, t, motions[c.name])
            self.rigid.step(self.H)
        elif scheme == "gauss_seidel_rigid_first":
            for c in self.couplings:
                self._rigid_inputs(c, t)
            self.rigid.step(self.H)
            ends = self._motions()
            for c in self.couplings:
                self._flex_step(c, t, motions[c.name], future=ends[c.name])
        elif scheme == "gauss_seidel_flex_first":
            for c in self.couplings:
                self._flex_step(c, t, motions[c.name])
            for c in self.couplings:
                self._rigid_inputs(c, t, end=self._flex_input(c))
            self.rigid.step(self.H)
        else:
            iterations = self._iterate(t, motions)
        self.iterations.append(iterations)
        self._exchange_end(motions, start)
        self.step_index += 1

    def _iterate(self, t: float, motions: dict[str, InterfaceMotion]) -> int:
        """Fixed-point iteration on the end-of-step wrenches, restoring both sides each time."""
        saved_rigid = self.rigid.get_state()
        saved_flex = {name: body.get_state() for name, body in self.flex.items()}
        guess = {c.name: evaluate(self._rigid_inputs(c, t), self.H) for c in self.couplings}
        for iteration in range(1, self.settings.max_iterations + 1):
            for c in self.couplings:
                self._rigid_inputs(c, t, end=guess[c.name])
            self.rigid.step(self.H)
            ends = self._motions()
            change = 0.0
            for c in self.couplings:
                self._flex_step(c, t, motions[c.name], future=ends[c.name])
                new = self._flex_input(c)
                scale = 1.0 + np.linalg.norm(new)
                change = max(change, np.linalg.norm(new - guess[c.name]) / scale)
                guess[c.name] = new
            if change <= self.settings.tolerance:
                return iteration
            if iteration < self.settings.max_iterations:
                self.rigid.set_state(saved_rigid)
                for name, blob in saved_flex.items():
                    self.flex[name].set_state(blob)
        raise SimulationError(f"iterative coupling did not converge in {self.settings.max_iterations}"
                              f" iterations at t = {t:.6g} s (last relative change {change:.3g})")

    # --- bookkeeping around a step ------------------------------------------------------------
    def _exchange_start(self, motions) -> dict[str, tuple[np.ndarray, float]]:
        """Per joint at the start of the step: the rigid point's velocities (6,) and the power
        the flexible side sees, W_flex · (its node's velocities), W."""
        out = {}
        for c in self.couplings:
            body = self.flex[c.flex_body]
            m = motions[c.name]
            out[c.name] = (np.concatenate([m.velocity, m.angular_velocity]),
                           float(body.wrench() @ body.node_kinematics()[7:13]))
        return out

    def _exchange_end(self, motions, start) -> None:
        """Update histories and integrate the exchanged power over the step (trapezoid)."""
        outs = self.rigid.point_outputs_array()
        for c in self.couplings:
            ledger = self.ledger[c.name]
            i = self._point_index(c)
            body = self.flex[c.flex_body]
            w_flex = body.wrench()
            node = body.node_kinematics()
            p_rigid_start = self.rigid.start_wrenches[i] @ start[c.name][0]
            p_rigid_end = self.rigid.end_wrenches[i] @ outs[i, 7:13]
            ledger.energy_rigid += 0.5 * self.H * (p_rigid_start + p_rigid_end)
            ledger.energy_flex += 0.5 * self.H * (start[c.name][1] + w_flex @ node[7:13])
            ledger.wrench_history = [(self.rigid.time, self._flex_input(c))] + ledger.wrench_history[:3]
            ledger.motion_history = [motions[c.name]] + ledger.motion_history[:1]
            self.rigid.set_flex_kinematics(c.name, node)
        self.last_gaps = self.rigid.gaps()
        for name, g in self.last_gaps.items():
            np.maximum(self.gap_max[name], g, out=self.gap_max[name])

    # --- results ------------------------------------------------------------------------------
    def columns(self) -> list[str]:
        cols = ["t", *body_columns(self.scenario.model), "energy", "constraint_drift"]
        for p in self.rigid.point_names:
            cols += [f"{p}.{f}" for f in OUTPUT_FIELDS + WRENCH_FIELDS]
        for c in self.couplings:
            cols += [f"{c.name}.{f}" for f in GAP_FIELDS] + [f"{c.name}.energy_residual",
                                                             f"{c.name}.iterations"]
        for name, body in self.flex.items():
            cols += [f"{name}.eta{k + 1}" for k in range(body.modal_coordinates.size)]
            for node in body.output_nodes():
                cols += [f"{name}.{node}.{axis}" for axis in "xyz"]
        return cols

    def row(self) -> np.ndarray:
        values = [self.rigid.sim.observe()]
        outs = self.rigid.point_outputs_array()
        wrenches = self.rigid.applied_wrenches()
        for i in range(len(self.rigid.point_names)):
            values.append(np.concatenate([outs[i], wrenches[i]]))
        gaps = self.last_gaps
        for c in self.couplings:
            last = self.iterations[-1] if self.iterations else 0
            values.append(np.concatenate([gaps[c.name], [self.ledger[c.name].residual, last]]))
        for body in self.flex.values():
            values.append(body.modal_coordinates)
            for pos in body.output_nodes().values():
                values.append(pos)
        return np.concatenate(values)

    def diagnostics(self) -> dict:
        d = self.rigid.sim.diagnostics.as_dict()
        d.update(formulation="maximal (rigid side)", scheme=self.settings.scheme,
                 macro_step=self.H, micro_steps=self.settings.micro_steps,
                 extrapolation=self.settings.extrapolation, macro_steps=self.step_index,
                 iterations_total=int(sum(self.iterations)),
                 iterations_max=int(max(self.iterations, default=0)))
        joints = {}
        for c in self.couplings:
            col = self.gap_max[c.name]
            joints[c.name] = {
                "max_gap_pos_m": float(col[0]), "max_gap_rot_rad": float(col[1]),
                "max_gap_vel_m_s": float(col[2]), "max_gap_angvel_rad_s": float(col[3]),
                "energy_residual_J": float(self.ledger[c.name].residual),
            }
        d["joints"] = joints
        d["continuity_violations"] = len(self.rigid.violations)
        return d

    # --- save / restore -----------------------------------------------------------------------
    def get_state(self) -> bytes:
        """Both sides, the exchange histories and the energy ledgers, as bytes."""
        ledgers = {}
        for name, led in self.ledger.items():
            ledgers[name] = {
                "wt": np.array([t for t, _ in led.wrench_history]),
                "w": np.array([w for _, w in led.wrench_history]).reshape(-1, 6),
                "m": np.array([np.append(m.as_array(), m.time) for m in led.motion_history]).reshape(-1, 20),
                "er": led.energy_rigid, "ef": led.energy_flex,
            }
        return pack_state({
            "rigid": self.rigid.get_state(),
            "flex": {name: body.get_state() for name, body in self.flex.items()},
            "ledgers": ledgers, "iterations": np.array(self.iterations, dtype=float),
            "step_index": self.step_index,
            "gaps": {name: np.concatenate([self.last_gaps[name], self.gap_max[name]])
                     for name in self.ledger},
        })

    def set_state(self, blob: bytes) -> None:
        try:
            d = unpack_state(blob)
            self.rigid.set_state(d["rigid"])
            for name, body in self.flex.items():
                body.set_state(d["flex"][name])
            for name, led in self.ledger.items():
                s = d["ledgers"][name]
                led.wrench_history = list(zip(s["wt"].tolist(), list(s["w"])))
                led.motion_history = [
                    InterfaceMotion(m[:3], m[3:7], m[7:10], m[10:13], m[13:16], m[16:19], time=m[19])
                    for m in s["m"]]
                led.energy_rigid, led.energy_flex = float(s["er"]), float(s["ef"])
            self.iterations = [int(x) for x in d["iterations"]]
            self.step_index = int(d["step_index"])
            for name in self.ledger:
                self.last_gaps[name] = d["gaps"][name][:4].copy()
                self.gap_max[name] = d["gaps"][name][4:].copy()
        except (KeyError, TypeError, ValueError) as exc:
            raise SimulationError(f"not a saved co-simulation state of this scenario: {exc}") from None


def run_cosimulation(scenario: Scenario, *, progress: bool = True, checkpoint: Path | None = None,
                     checkpoint_every: int = 0, resume: Path | None = None) -> Results:
    """Run the scenario's co-simulation from t = 0 (or a checkpoint) to solver.t_end."""
    master = CosimMaster(scenario)
    H = master.H
    n_steps = int(round(scenario.solver.t_end / H))
    if not np.isclose(n_steps * H, scenario.solver.t_end, rtol=1e-9, atol=0):
        raise SimulationError(f"t_end = {scenario.solver.t_end} s is not a whole number of "
                              f"macro steps H = {H} s")
    rows = []
    if resume is not None:
        rows = _load_checkpoint(master, Path(resume))
    else:
        rows.append(master.row())
    start = time.perf_counter()
    every = scenario.solver.output_every
    with Progress(n_steps, enabled=progress, label="cosim") as bar:
        while master.step_index < n_steps:
            master.step()
            k = master.step_index
            if k % every == 0 or k == n_steps:
                rows.append(master.row())
            if checkpoint is not None and checkpoint_every and k % checkpoint_every == 0:
                _save_checkpoint(master, rows, Path(checkpoint))
            bar.update(k)
    if checkpoint is not None:
        _save_checkpoint(master, rows, Path(checkpoint))
    master.rigid.sim.diagnostics.wall_time = time.perf_counter() - start
    return Results(master.columns(), np.array(rows), master.diagnostics())


def _save_checkpoint(master: CosimMaster, rows: list, path: Path) -> None:
    blob = pack_state({"master": master.get_state(), "rows": np.array(rows)})
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(blob)
    tmp.replace(path)


def _load_checkpoint(master: CosimMaster, path: Path) -> list:
    if not path.is_file():
        raise SimulationError(f"{path}: no such checkpoint file")
    try:
        d = unpack_state(path.read_bytes())
        master.set_state(d["master"])
        return list(d["rows"])
    except (KeyError, ValueError) as exc:
        raise SimulationError(f"{path}: not a checkpoint of this scenario: {exc}") from None
