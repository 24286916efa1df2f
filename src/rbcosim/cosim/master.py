"""In-process co-simulation master: the rigid side and flexible bodies at fixed macro steps.

Each macro step [t_n, t_n + H] exchanges, per rigid–flexible joint, the rigid interface
point's motion (pose, velocities, accelerations) for the flexible side's wrench, in the order
of the scenario's coupling scheme (rbcosim.scheme: jacobi, gauss_seidel_rigid_first,
gauss_seidel_flex_first, iterative, interface_jacobian).
Inputs are held over a step (extrapolation 0) or extrapolated through 1–2 past macro values.
After each step the flexible side reports its node kinematics and delivered energy; the rigid
side computes the continuity gaps and the energy residual from them.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from rbcosim.cosim.coupled import CoupledSteps
from rbcosim.cosim.flex_bodies import build_endpoints
from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.cosim.signals import evaluate
from rbcosim.errors import DivergedError, SimulationError
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.maximal.divergence import as_divergence, explain_cosim
from rbcosim.progress import Progress
from rbcosim.results import Results, failure
from rbcosim.scenario.loader import Scenario
from rbcosim.scheme import scheme_named
from rbcosim.serialization.codec import (
    StateFormatError,
    array,
    field,
    pack_state,
    unpack_state,
    write_atomically,
)
from rbcosim.settings import whole_steps


class CosimMaster:
    """Couples a RigidSide with the scenario's flexible bodies; step() advances one macro step."""

    def __init__(self, scenario: Scenario, *, macro_step: float | None = None):
        self.scenario = scenario
        self.settings = scenario.cosim
        self.scheme = scheme_named(scenario.cosim.scheme)
        self.H = macro_step or scenario.cosim.macro_step
        self.rigid = RigidSide(scenario)
        # One per flexible body with its couplings, keyed by joint (one coupling) or by body
        # (several); see rbcosim.cosim.flex_bodies.
        self.endpoints: dict[str, FlexEndpoint] = build_endpoints(scenario, self.H)
        self._points = {c.name: c.point for g in self.endpoints.values() for c in g.couplings}
        self.iterations: list[int] = []
        self.step_index = 0
        self._coupled: CoupledSteps | None | bool = False  # the C batch, built on first use
        motions = self.motions()
        for group in self.endpoints.values():
            for joint, handover in group.initialize(self.rigid.time, motions).items():
                if handover is not None:
                    self.rigid.set_added_mass(self._points[joint], handover[0],
                                              frame=handover[1])
        # Hold the initial wrenches so that the interface accelerations the first step hands to
        # the flexible side include them (else that step drives it with the rigid side's
        # acceleration without the flexible body: an O(1) error over one step, O(H) globally).
        self._set_polynomials(self.rigid.time)
        self.exchange_reports()

    def motions(self) -> dict[str, InterfaceMotion]:
        """Each joint's rigid point motion at the current time."""
        table = self.rigid.motions_array()
        t = self.rigid.time
        return {j: motion_of(table[self.rigid.points.index(p)], t)
                for j, p in self._points.items()}

    def exchange_reports(self) -> None:
        """Flexible side -> rigid side at the current time: node kinematics and energy, then
        the continuity gaps."""
        for group in self.endpoints.values():
            for joint, report in group.report().items():
                self.rigid.set_flex_report(joint, *report)
        self.rigid.gaps()
        for endpoint in self.endpoints.values():
            for joint in endpoint.joints:
                if self.rigid.violation_counts[joint]:
                    endpoint.note_continuity_lost(joint, self.rigid.time)

    def _set_polynomials(self, t: float) -> None:
        for endpoint in self.endpoints.values():
            self._apply(endpoint, endpoint.polynomial(t))

    def _apply(self, endpoint: FlexEndpoint, polynomial: np.ndarray, jacobian=None) -> None:
        """An endpoint's stacked wrench polynomial (and Jacobian) as its points' inputs."""
        for joint, c in endpoint.per_joint(polynomial).items():
            point = self._points[joint]
            self.rigid.set_wrench_polynomial(point, c)
            if jacobian is not None:
                self.rigid.set_interface_jacobian(point, *jacobian)

    # --- macro steps ---------------------------------------------------------------------------
    def advance(self, count: int) -> None:
        """`count` macro steps: in batches of one C call each where the master's case allows
        (rbcosim.cosim.coupled: the same bits as step()), otherwise, and for the steps a batch
        leaves to Python, one step() each."""
        end = self.step_index + count
        batch = self._coupled
        if batch is False:
            batch = self._coupled = CoupledSteps.for_master(self)
        if type(self).step is not _STEP:  # a subclass's or a patched step(): one call per step
            batch = None
        while self.step_index < end:
            if batch is not None and batch.run(end - self.step_index) and self.step_index >= end:
                break
            self.step()

    def step(self) -> None:
        """Advance both sides by one macro step H with the configured scheme."""
        t = self.rigid.time
        motions = self.motions()
        iterations = 1
        if self.scheme.iterative:
            iterations = self._iterate(t, motions)
            for endpoint in self.endpoints.values():
                endpoint.commit(motions)
        else:
            for endpoint in self.endpoints.values():
                self._apply(endpoint, *endpoint.inputs_for_rigid(t, motions))
            self.rigid.step(self.H)
            ends = self.motions() if self.scheme.rigid_first else None
            for endpoint in self.endpoints.values():
                endpoint.finish(t, motions, ends)
        self.iterations.append(iterations)
        self.step_index += 1
        self.exchange_reports()

    def _iterate(self, t: float, motions: dict[str, InterfaceMotion]) -> int:
        """Fixed-point iteration of the macro step: both sides step, the wrenches at mid-step
        and at the end come back, both sides are restored, and the step is repeated with the
        wrench interpolated cubically through the previous macro value, t, mid-step and end
        (quadratically on the first step), until both wrenches stop changing. The flexible
        side's interface accelerations are quadratic through the rigid motion at t, mid-step
        and end. Fourth order in H, like the RK4 inside."""
        saved_rigid = self.rigid.get_state()
        saved_flex = {key: g.get_state() for key, g in self.endpoints.items()}
        half = 0.5 * self.H
        guess = {}  # per endpoint: (stacked wrench at mid-step, at the end)
        for key, endpoint in self.endpoints.items():
            c = endpoint.polynomial(t)
            guess[key] = (evaluate(c, half), evaluate(c, self.H))
        change = np.inf
        for iteration in range(1, self.settings.max_iterations + 1):
            for key, endpoint in self.endpoints.items():
                self._apply(endpoint, endpoint.iteration_polynomial(t, *guess[key]))
            self.rigid.step(half, max(1, self.settings.micro_steps // 2))
            mids = self.motions()
            self.rigid.step(half, max(1, self.settings.micro_steps - self.settings.micro_steps // 2))
            ends = self.motions()
            change = 0.0
            for key, endpoint in self.endpoints.items():
                new = (endpoint.advance_in_halves(t, motions, mids, ends), endpoint.rigid_input())
                for old, now in zip(guess[key], new):  # per joint: the wrench's relative change
                    for old_w, new_w in zip(endpoint.per_joint(old).values(),
                                            endpoint.per_joint(now).values()):
                        change = max(change, np.linalg.norm(new_w - old_w)
                                     / (1.0 + np.linalg.norm(new_w)))
                guess[key] = new
            if change <= self.settings.tolerance:
                return iteration
            if iteration < self.settings.max_iterations:
                self.rigid.set_state(saved_rigid)
                for j, blob in saved_flex.items():
                    self.endpoints[j].set_state(blob)
        raise SimulationError(f"iterative coupling did not converge in {self.settings.max_iterations}"
                              f" iterations at t = {t:.6g} s (last relative change {change:.3g})")

    # --- results ------------------------------------------------------------------------------
    def columns(self) -> list[str]:
        cols = self.rigid.results_columns()
        for group in self.endpoints.values():
            cols += group.columns()
        return cols

    def row(self) -> np.ndarray:
        return np.concatenate([self.rigid.results_row(),
                               *(g.row() for g in self.endpoints.values())])

    def diagnostics(self) -> dict:
        d = self.rigid.sim.diagnostics.as_dict()
        d.update(formulation=f"{self.rigid.sim.formulation} (rigid side)", scheme=self.settings.scheme,
                 macro_step=self.H, micro_steps=self.settings.micro_steps,
                 extrapolation=self.settings.extrapolation, macro_steps=self.step_index,
                 iterations_total=int(sum(self.iterations)),
                 iterations_max=int(max(self.iterations, default=0)))
        d["joints"] = {
            j: {"max_gap_pos_m": float(g[0]), "max_gap_rot_rad": float(g[1]),
                "max_gap_vel_m_s": float(g[2]), "max_gap_angvel_rad_s": float(g[3]),
                "energy_residual_J": self.rigid.energy_residual(j)}
            for j, g in self.rigid.gap_max.items()
        }
        d["continuity_violations"] = len(self.rigid.violations)
        return d

    # --- save / restore -----------------------------------------------------------------------
    def get_state(self) -> bytes:
        """Both sides and the exchange histories, as bytes."""
        return pack_state({
            "rigid": self.rigid.get_state(),
            "flex": {j: ep.get_state() for j, ep in self.endpoints.items()},
            "iterations": np.array(self.iterations, dtype=float),
            "step_index": self.step_index,
        })

    def set_state(self, blob: bytes) -> None:
        """Restore both sides from get_state; if any part is refused, every side goes back to
        the state it had (SimulationError naming what is wrong)."""
        before = self.get_state()
        try:
            self._apply_state(unpack_state(blob))
        except (SimulationError, ValueError) as exc:
            self._apply_state(unpack_state(before))
            raise SimulationError(f"not a saved co-simulation state of this scenario: {exc}") from None

    def _apply_state(self, d: dict) -> None:
        flex = field(d, "flex", dict)
        if set(flex) != set(self.endpoints):
            raise StateFormatError(f"state.flex: joints {sorted(flex)}, this scenario has "
                                   f"{sorted(self.endpoints)}")
        step = field(d, "step_index", int)
        iterations = array(d, "iterations", (None,))
        if not 0 <= step <= 2**53 or iterations.size > step or (iterations < 0).any():
            raise StateFormatError(f"state.step_index: {step} with {iterations.size} iteration counts")
        self.rigid.set_state(field(d, "rigid", bytes))
        for j, ep in self.endpoints.items():
            ep.set_state(field(flex, j, bytes, "state.flex"))
        self.iterations = [int(x) for x in iterations]
        self.step_index = step


_STEP = CosimMaster.step  # the step() the C batch reproduces

#: most macro steps between two progress updates
_BATCH = 256


def run_cosimulation(scenario: Scenario, *, progress: bool = True, checkpoint: Path | None = None,
                     checkpoint_every: int = 0, resume: Path | None = None) -> Results:
    """Run the scenario's co-simulation from t = 0 (or a checkpoint) to solver.t_end."""
    master = CosimMaster(scenario)
    H = master.H
    n_steps = whole_steps(scenario.solver.t_end, H, "macro steps H")
    rows = _load_checkpoint(master, Path(resume)) if resume is not None else [master.row()]
    start = time.perf_counter()
    every = scenario.solver.output_every
    with Progress(n_steps, enabled=progress, label="cosim") as bar:
        while master.step_index < n_steps:
            # up to the next output row, checkpoint or end, and at most _BATCH steps
            k = master.step_index
            stop = min(n_steps, (k // every + 1) * every, k + _BATCH)
            if checkpoint is not None and checkpoint_every:
                stop = min(stop, (k // checkpoint_every + 1) * checkpoint_every)
            try:
                master.advance(stop - k)
                k = master.step_index
                if k % every == 0 or k == n_steps:
                    rows.append(master.row())
            except SimulationError as exc:
                master.rigid.sim.diagnostics.wall_time = time.perf_counter() - start
                raise failure(master.columns(), rows, master.diagnostics(),
                              _diagnosed(master, exc)) from None
            if checkpoint is not None and checkpoint_every and k % checkpoint_every == 0:
                _save_checkpoint(master, rows, Path(checkpoint))
            bar.update(k)
    if checkpoint is not None:
        _save_checkpoint(master, rows, Path(checkpoint))
    master.rigid.sim.diagnostics.wall_time = time.perf_counter() - start
    return Results(master.columns(), np.array(rows), master.diagnostics())


def _diagnosed(master: CosimMaster, error: SimulationError) -> SimulationError:
    """`error`, or the divergence it is: a lost rank at an absurd rigid state, a non-finite
    or absurd state (DivergedError with the likely cause: the macro step, added mass)."""
    error = as_divergence(error, master.rigid.sim.observe)
    if not isinstance(error, DivergedError):
        return error
    return explain_cosim(error, master.scenario, master.endpoints.values(), master.H)


def _save_checkpoint(master: CosimMaster, rows: list, path: Path) -> None:
    write_atomically(path, pack_state({"master": master.get_state(), "rows": np.array(rows)}))


def _load_checkpoint(master: CosimMaster, path: Path) -> list:
    if not path.is_file():
        raise SimulationError(f"{path}: no such checkpoint file")
    try:
        d = unpack_state(path.read_bytes())
        rows = array(d, "rows", (None, len(master.columns())))
        master.set_state(field(d, "master", bytes))
    except OSError as exc:
        raise SimulationError(f"{path}: cannot read the checkpoint: {exc}") from None
    except (SimulationError, ValueError) as exc:
        raise SimulationError(f"{path}: not a checkpoint of this scenario: {exc}") from None
    return list(rows)
