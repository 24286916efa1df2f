"""The maximal formulation as a `rbcosim.run_loop.System`: `RigidSimulation` (a model, its state
and a fixed-step integrator) and `simulate`, a rigid scenario run in process."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import numpy as np

from rbcosim.diagnostics import Diagnostics, checked_diagnostics, state_row
from rbcosim.errors import DivergedError, RunFailedError, SimulationError, SingularJacobianError
from rbcosim.maximal.divergence import Bounds, explain
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.integrators import ADAPTIVE, FIXED_STEP
from rbcosim.maximal.kernels import handle as kernel
from rbcosim.maximal.kernels.interface_points import PointInputs
from rbcosim.model import Model
from rbcosim.results import Results, body_columns, failure
from rbcosim.run_loop import run_adaptive, run_fixed
from rbcosim.serialization.codec import (
    StateFormatError,
    array,
    field,
    pack_state,
    unpack_state,
    write_atomically,
)
from rbcosim.serialization.model_digest import check_digest, model_digest
from rbcosim.settings import SolverSettings
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

#: where a C macro step stopped (librbcosim/rigid/macro.h)
MACRO_START, MACRO_STEPS, MACRO_END = 0, 1, 2
#: Largest ‖Φ‖∞ accepted at the start of a run.
INITIAL_CONSISTENCY = 1e-6


class RigidSimulation:
    """A model in maximal coordinates, its state and a fixed-step integrator: the maximal
    formulation's `rbcosim.run_loop.System`."""

    label = "run"
    formulation = "maximal"

    def __init__(self, model: Model, solver: SolverSettings):
        if solver.integrator not in FIXED_STEP:
            raise ValueError(f"integrator {solver.integrator!r} is not fixed-step; "
                             f"valid names: {list(FIXED_STEP)}")
        self.model = model
        self.solver = solver
        self.system = MaximalSystem(model, baumgarte=solver.baumgarte)
        self.state = State.initial(model)
        if solver.projection:
            self.project()
        phi, _ = self.system.drift(self.state)
        if phi > INITIAL_CONSISTENCY:
            raise SimulationError(
                f"the initial state violates the joints (‖Φ‖∞ = {phi:.3g} over all constraint "
                f"rows{' after projection' if solver.projection else ''}); "
                "`rbcosim check --assemble` shows a consistent one")
        self.integrator = FIXED_STEP[solver.integrator](self.system, project=solver.projection)
        self.diagnostics = Diagnostics(conservative=model.is_conservative and not model.points)
        self.bounds = Bounds.of(model, self.state, solver.t_end, self.system.energy(self.state),
                                self.system.kinetic_energy(self.state))
        self._macro_scratch: dict = {}

    @property
    def columns(self) -> list[str]:
        return ["t", *body_columns(self.model), "energy", "constraint_drift"]

    @functools.cached_property
    def digest(self) -> str:
        """The model's digest (rbcosim.serialization.model_digest), carried by every saved state;
        computed once (a 10,000-link chain takes most of a second)."""
        return model_digest(self.model)

    def observe(self, state: State | None = None, work: float | None = None) -> np.ndarray:
        """Update the diagnostics with `state` (default: the current one) and the work W (J)
        done until then (default: the integrator's) and return its results row."""
        state = self.state if state is None else state
        work = self.integrator.work if work is None else work
        d, row = self.diagnostics, None
        if state.is_finite():
            with np.errstate(all="ignore"):
                energy = self.energy(state)
                phi, phidot = self.system.drift(state)
                kinetic = self.system.kinetic_energy(state)
            row = np.concatenate([[state.t], state_row(state), [energy, phi]])
            if not np.isfinite([energy, phi, phidot, kinetic]).all():
                row = None
        try:
            self.bounds.check_quaternion(state, d.quaternion_error)
            self.system.check_finite(state)
            if row is None:
                raise DivergedError(f"diverged: non-finite energy or constraint drift at t = "
                                    f"{state.t:.6g} s (energy {energy:.3g} J, ‖Φ‖∞ {phi:.3g})")
            d.take(self.bounds, state, row, energy, phi, phidot, kinetic, work)
        except DivergedError as exc:
            exc.row = row
            raise
        return row

    def summary(self, **figures) -> dict:
        """The diagnostics, the run's settings and `figures` (adaptive runs: rtol, atol, ...)."""
        d = self.diagnostics.as_dict()
        d.update(integrator=self.solver.integrator, dt=self.solver.dt, t_end=self.solver.t_end,
                 formulation=self.formulation, redundant_constraints=self.system.redundant_rows)
        d.update(figures)
        return d

    def partial(self, rows: list, error: SimulationError, **figures) -> RunFailedError:
        """`error` with the rows so far attached (the CLI writes them before it stops); a
        divergence with its absurd row and its likely cause."""
        if isinstance(error, DivergedError):
            if error.row is not None and (not rows or error.row[0] > rows[-1][0]):
                rows = [*rows, error.row]
            error = explain(error, self.model, self.solver)
        return failure(self.columns, rows, self.summary(**figures), error)

    def step(self, h: float) -> None:
        self._guarded(self.integrator.step, h, self.state, h)

    def steps(self, k0: int, k1: int, h: float) -> None:
        """Steps k0 + 1 .. k1 of h s from t = k0 h, one call into the C core."""
        self.advance(h * np.arange(k0, k1 + 1), h)

    def advance(self, times: np.ndarray, h: float) -> None:
        """Steps of h s through every entry of `times` (times[0] = now), one call into the C core."""
        self._guarded(self.integrator.advance, h, self.state, times, h)

    def _guarded(self, run, h: float, *args) -> None:
        """run(*args) from the current state; a lost rank at an absurd state is a divergence
        (DivergedError from the bounds), not a singularity."""
        t0 = self.state.t
        try:
            run(*args)
        except SingularJacobianError:
            self._count(t0, h)
            self.observe()
            raise
        except SimulationError:
            self._count(t0, h)
            raise
        self._count(t0, h)

    def _count(self, t0: float, h: float) -> None:
        self.diagnostics.steps += round((self.state.t - t0) / h)
        self.diagnostics.quaternion_error = self.integrator.quaternion_error

    def body_state(self) -> State:
        return self.state

    def energy(self, state: State) -> float:
        return self.system.energy(state)

    def project(self) -> None:
        self.system.project(self.state)

    # --- adaptive runs: y = [r, q, v, w, W] -------------------------------------------------
    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        return self.system.derivative_and_power(t, y)

    def initial_vector(self) -> np.ndarray:
        return self.state.to_vector()

    def observe_vector(self, t: float, y: np.ndarray, work: float) -> np.ndarray:
        state = State.from_vector(t, y)
        d = self.diagnostics
        d.quaternion_error = max(d.quaternion_error,
                                 float(np.max(np.abs(np.linalg.norm(state.q, axis=1) - 1))))
        state.q = quat.normalize(state.q)
        return self.observe(state, work=work)

    # --- interface points of a co-simulation (rbcosim.cosim.rigid_side) ----------------------
    @property
    def time(self) -> float:
        return self.state.t

    @property
    def point_inputs(self) -> PointInputs:
        """The inputs at the interface points the C core reads at every stage."""
        return self.system.points

    def point_outputs(self, out: np.ndarray) -> None:
        """(k, 13) outputs of the points now into out (MaximalSystem.point_outputs)."""
        self.system.point_outputs(self.state, out)

    def point_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, 19) outputs and total wrenches, (k, 6) accelerations of the points now."""
        return self.system.point_state(self.state)

    def macro_scratch(self, n: int) -> tuple:
        """Arrays of a C macro step of n micro steps: times (n+1,), the points' state at its
        start and end (k, 19), accelerations (k, 6), interface work (k,), a failed state."""
        k = len(self.model.points)
        scratch = self._macro_scratch.get(n)
        if scratch is None:
            scratch = self._macro_scratch[n] = (
                np.empty(n + 1), np.empty((k, 19)), np.empty((k, 19)), np.empty((k, 6)),
                np.empty(k), np.empty_like(self.state.vector))
        return scratch

    def took_steps(self, t: float, micro_steps: int) -> None:
        """After a C loop's macro steps on step_arrays: the time t (s) they reached and the
        micro steps they took (as `macro_step` counts them)."""
        self.state.t = t
        self.diagnostics.steps += micro_steps
        self.diagnostics.quaternion_error = self.integrator.quaternion_error

    def step_arrays(self, n: int) -> tuple | None:
        """What a C loop of macro steps of n micro steps needs (the session worker's step path,
        rbcosim.service.served_path): (core handle, state vector, integrator stats,
        macro_scratch(n), project); None unless the integrator is RK4."""
        integrator = self.integrator
        if integrator.name != "rk4":
            return None
        return (self.system.handle, self.state.vector, integrator._stats, self.macro_scratch(n),
                bool(integrator.project))

    def macro_step(self, H: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One macro step of H s in n micro steps, in one call of the C core
        (kernels.handle.macro_step): the points' outputs at its start become the feedback
        reference, the feedback gains are reset at its end. Returns the points' (k, 19) state
        at the start and at the end and the interface work H/2 (W·V start + W·V end) (k,), J."""
        times, start, end, acc, energy, failed = self.macro_scratch(n)
        state, integrator = self.state, self.integrator
        t = state.t
        status, phase, done = kernel.macro_step(
            self.system.handle, state.vector, t, float(H), n, integrator.stepper(), times,
            start, end, acc, energy, integrator._stats, failed)
        if phase == MACRO_START:
            self.system.check_status(status, t)
        elif phase == MACRO_STEPS:
            try:
                integrator.finish_advance(state, times, status, done, failed)
            finally:
                self._count(times[0], H / n)
        else:
            state.t = float(times[n])
            self._count(times[0], H / n)
            if phase == MACRO_END:
                self.system.check_status(status, state.t)
        return start, end, energy

    def state_fields(self) -> dict:
        """What determines the next steps besides the point inputs: t, r, q, v, w, the
        integrator's quaternion error and work."""
        s = self.state
        return {"t": s.t, "r": s.r, "q": s.q, "v": s.v, "w": s.w,
                "quaternion_error": self.integrator.quaternion_error,
                "work": self.integrator.work}

    def check_state_fields(self, d: dict) -> None:
        """StateFormatError unless `d` holds state_fields of this model."""
        n = self.state.r.shape[0]
        for key, width in (("r", 3), ("q", 4), ("v", 3), ("w", 3)):
            array(d, key, (n, width))
        for key in ("t", "quaternion_error", "work"):
            field(d, key)

    def set_state_fields(self, d: dict) -> None:
        """Take back checked state_fields (after the diagnostics are restored)."""
        self.state = State(d["t"], d["r"], d["q"], d["v"], d["w"])
        self.integrator.work = self.diagnostics.work = float(d["work"])
        self.integrator.quaternion_error = float(d["quaternion_error"])

    # --- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self, rows: list, k: int, path: Path) -> None:
        _save_checkpoint(self, rows, k, path)

    def load_checkpoint(self, path: Path) -> tuple[list, int]:
        return _load_checkpoint(self, path)


def _save_checkpoint(sim: RigidSimulation, rows: list, k: int, path: Path) -> None:
    s = sim.state
    blob = pack_state({"model": sim.digest,
                       "t": s.t, "r": s.r, "q": s.q, "v": s.v, "w": s.w, "step": k,
                       "rows": np.array(rows), "diagnostics": sim.diagnostics.checkpoint(),
                       "work": sim.integrator.work, "columns": ",".join(sim.columns)})
    write_atomically(path, blob)


def _load_checkpoint(sim: RigidSimulation, path: Path) -> tuple[list, int]:
    """Restore `sim` from a checkpoint, all checked before anything changes; returns (rows so
    far, next step index)."""
    if not path.is_file():
        raise SimulationError(f"{path}: no such checkpoint file")
    try:
        d = unpack_state(path.read_bytes())
        check_digest(d, sim.digest)
        if field(d, "columns", str) != ",".join(sim.columns):
            raise StateFormatError("columns: it belongs to another model")
        n = sim.state.r.shape[0]
        parts = [array(d, k, (n, w)) for k, w in (("r", 3), ("q", 4), ("v", 3), ("w", 3))]
        step = field(d, "step", int)
        rows = array(d, "rows", (None, len(sim.columns)))
        if not 0 < step <= _MAX_STEP or not 0 < len(rows) <= step + 1:
            raise StateFormatError(f"step: {step} does not fit the {len(rows)} rows")
        state = State(field(d, "t", (int, float)), *parts)
        diagnostics = checked_diagnostics(field(d, "diagnostics", dict))
        work = field(d, "work", (int, float))
    except OSError as exc:
        raise SimulationError(f"{path}: cannot read the checkpoint: {exc}") from None
    except ValueError as exc:
        raise SimulationError(f"{path}: not a checkpoint of this scenario: {exc}") from None
    sim.state = state
    sim.diagnostics.restore(diagnostics)
    sim.integrator.work = sim.diagnostics.work = work
    return list(rows), step + 1


#: Largest step index a checkpoint may hold (2**53: beyond it float times lose steps).
_MAX_STEP = 2**53


def simulate(model: Model, solver: SolverSettings, *, progress: bool = True,
             checkpoint: Path | None = None, checkpoint_every: int = 0,
             resume: Path | None = None) -> Results:
    """Integrate `model` in maximal coordinates from t = 0 (or a checkpoint) to solver.t_end
    (`rbcosim.run_loop`); returns the results. Adaptive integrators: a reference run without
    projection (Baumgarte only) and without checkpoints."""
    if solver.integrator in ADAPTIVE:
        if checkpoint or resume:
            raise SimulationError("checkpoints need a fixed-step integrator (rk4, sdirk2)")
        sim = RigidSimulation(model, replace(solver, integrator="rk4"))
        sim.solver = solver
        return run_adaptive(sim, progress=progress)
    return run_fixed(RigidSimulation, model, solver, progress=progress, checkpoint=checkpoint,
                     checkpoint_every=checkpoint_every, resume=resume)
