"""Run a rigid scenario in process: fixed-step or adaptive integration, diagnostics, results."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rbcosim.errors import DivergedError, RunFailedError, SimulationError, SingularJacobianError
from rbcosim.maximal.accuracy import ADAPTIVE_ACCURACY, richardson_probe
from rbcosim.maximal.divergence import Bounds, explain
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.integrators import ADAPTIVE, FIXED_STEP
from rbcosim.model import Model
from rbcosim.progress import Progress
from rbcosim.results import Results, body_columns, failure
from rbcosim.serialization.codec import (
    StateFormatError,
    array,
    field,
    pack_state,
    unpack_state,
    write_atomically,
)
from rbcosim.serialization.model_digest import check_digest, model_digest
from rbcosim.settings import SolverSettings, whole_steps
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

#: Largest ‖Φ‖∞ accepted at the start of a run.
INITIAL_CONSISTENCY = 1e-6


def state_row(state: State) -> np.ndarray:
    """Body columns of one state: per body x y z q0..q3 vx vy vz wx wy wz."""
    return np.hstack([state.r, state.q, state.v, state.w]).ravel()


@dataclass
class Diagnostics:
    """Running maxima over a run: constraint drift, energy balance, quaternion norm error.

    The energy balance is E − E0 − W, W the work of loads, dampers, drivers and interface
    wrenches since t = 0 (`librbcosim/rigid/equations.c`, `forces.c`), as of the last observed state; `balanced`:
    W is integrated (False on the minimal route's closed loops, where only a conservative
    model's E − E0 is meaningful)."""

    energy0: float = np.nan
    conservative: bool = False
    balanced: bool = True
    work: float = 0.0
    max_phi: float = 0.0
    max_phidot: float = 0.0
    max_energy_error: float = 0.0
    energy_scale: float = 0.0
    quaternion_error: float = 0.0
    steps: int = 0
    wall_time: float = 0.0

    def update(self, energy: float, phi: float, phidot: float, kinetic_scale: float,
               work: float = 0.0) -> None:
        """Take one observed state: its energy E, drifts, kinetic energy (J) and the work W
        (J) done on the model since t = 0."""
        if np.isnan(self.energy0):
            self.energy0 = energy
        self.work = work
        self.max_phi = max(self.max_phi, phi)
        self.max_phidot = max(self.max_phidot, phidot)
        self.max_energy_error = max(self.max_energy_error, abs(energy - self.energy0 - work))
        self.energy_scale = max(self.energy_scale, abs(self.energy0), kinetic_scale, abs(work))

    @property
    def reported(self) -> bool:
        """True when the balance means something: W integrated, or a conservative model."""
        return self.balanced or self.conservative

    @property
    def energy_drift(self) -> float:
        """max |E − E0 − W| / scale, the scale being the largest of |E0|, the kinetic energy
        and |W| over the run."""
        return self.max_energy_error / self.energy_scale if self.energy_scale else 0.0

    def checkpoint(self) -> dict:
        """The running figures a resumed run needs (energy0 None: not observed yet)."""
        return {"energy0": None if np.isnan(self.energy0) else self.energy0,
                "max_phi": self.max_phi, "max_phidot": self.max_phidot,
                "max_energy_error": self.max_energy_error, "energy_scale": self.energy_scale,
                "quaternion_error": self.quaternion_error, "steps": self.steps}

    def restore(self, d: dict) -> None:
        """Take back the figures of `checkpoint` (checked by checked_diagnostics)."""
        for key, value in d.items():
            setattr(self, key, np.nan if value is None else value)

    def as_dict(self) -> dict:
        """Summary figures."""
        d = {
            "steps": self.steps,
            "wall_time_s": self.wall_time,
            "max_constraint_violation": self.max_phi,
            "max_constraint_velocity_violation": self.max_phidot,
            "energy_initial_J": self.energy0,
            "energy_conservative": self.conservative,
            "work_J": self.work if self.balanced else None,
            "energy_max_relative_drift": self.energy_drift if self.reported else None,
            "max_quaternion_norm_error": self.quaternion_error,
        }
        return d


class RigidSimulation:
    """A model, its state, and a fixed-step integrator; `row()` gives one results row."""

    def __init__(self, model: Model, solver: SolverSettings):
        if solver.integrator not in FIXED_STEP:
            raise ValueError(f"integrator {solver.integrator!r} is not fixed-step; "
                             f"valid names: {list(FIXED_STEP)}")
        self.model = model
        self.solver = solver
        self.system = MaximalSystem(model, baumgarte=solver.baumgarte)
        self.state = State.initial(model)
        if solver.projection:
            self.system.project(self.state)
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
                energy = self.system.energy(state)
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
            d.update(energy, phi, phidot, kinetic, work)
            balance = abs(energy - d.energy0 - work) if d.reported else None
            self.bounds.check(state, phi, balance, work, d.quaternion_error)
        except DivergedError as exc:
            exc.row = row
            raise
        return row

    def summary(self, **figures) -> dict:
        """The diagnostics, the run's settings and `figures` (adaptive runs: rtol, atol, ...)."""
        d = self.diagnostics.as_dict()
        d.update(integrator=self.solver.integrator, dt=self.solver.dt, t_end=self.solver.t_end,
                 formulation="maximal", redundant_constraints=self.system.redundant_rows)
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


def simulate(model: Model, solver: SolverSettings, *, progress: bool = True,
             checkpoint: Path | None = None, checkpoint_every: int = 0,
             resume: Path | None = None) -> Results:
    """Integrate `model` from t = 0 (or a checkpoint) to solver.t_end; returns the results.

    With `checkpoint`, the state, the rows so far and the running diagnostics are saved every
    `checkpoint_every` steps and at the end; `resume` continues such a file (fixed-step only)."""
    if solver.integrator in ADAPTIVE:
        if checkpoint or resume:
            raise SimulationError("checkpoints need a fixed-step integrator (rk4, sdirk2)")
        return _simulate_adaptive(model, solver, progress=progress)
    sim = RigidSimulation(model, solver)
    n_steps = whole_steps(solver.t_end, solver.dt)
    rows, first = [sim.observe()], 1
    if resume is not None:
        rows, first = _load_checkpoint(sim, Path(resume))
    start = time.perf_counter()
    stops = _stops(first - 1, n_steps, solver.output_every,
                   checkpoint_every if checkpoint is not None else 0)
    with Progress(n_steps, enabled=progress, label="run") as bar:
        k = first - 1
        for stop in stops:
            try:
                sim.advance(solver.dt * np.arange(k, stop + 1), solver.dt)
                k = stop
                if k % solver.output_every == 0 or k == n_steps:
                    rows.append(sim.observe())
            except SimulationError as exc:
                sim.diagnostics.wall_time = time.perf_counter() - start
                raise sim.partial(rows, exc) from None
            if checkpoint is not None and checkpoint_every and k % checkpoint_every == 0:
                _save_checkpoint(sim, rows, k, Path(checkpoint))
            bar.update(k)
    if checkpoint is not None:
        _save_checkpoint(sim, rows, n_steps, Path(checkpoint))
    sim.diagnostics.wall_time = time.perf_counter() - start
    accuracy = richardson_probe(model, solver.integrator, solver.dt, solver.t_end,
                                _probe_run(model, solver)).as_dict()
    return Results(sim.columns, np.array(rows), sim.summary(accuracy=accuracy))


def _probe_run(model: Model, solver: SolverSettings):
    """run(h, n) for the accuracy probe: a fresh simulation, n steps of h s from t = 0."""
    def run(h: float, n: int) -> State:
        sim = RigidSimulation(model, replace(solver, dt=h))
        sim.advance(h * np.arange(n + 1), h)
        return sim.state
    return run


def _stops(done: int, n_steps: int, output_every: int, checkpoint_every: int) -> list[int]:
    """Step indices after `done` at which a run writes a row or a checkpoint (and the last),
    at least every 1000 steps so that the progress bar moves."""
    marks = {n_steps}
    for every in (output_every, checkpoint_every, 1000):
        if every:
            marks.update(range(every * (done // every + 1), n_steps, every))
    return sorted(m for m in marks if m > done)


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


def checked_diagnostics(d: dict, *, observed: bool = True) -> dict:
    """`d` if it holds the figures of Diagnostics.checkpoint, each a finite number (steps a
    whole one, energy0 None only when not `observed`); StateFormatError otherwise."""
    expected = Diagnostics().checkpoint()
    if set(d) != set(expected):
        raise StateFormatError(f"state.diagnostics: keys {sorted(d)}, expected {sorted(expected)}")
    for key in expected:
        kind = int if key == "steps" else (int, float)
        if not (key == "energy0" and d[key] is None and not observed):
            field(d, key, kind, "state.diagnostics")
    return d


class ProgressGuard:
    """The right-hand side for solve_ivp, stopping a run that no longer advances: fewer than
    `min_advance` s (1e-6 of the output interval) in `window` evaluations, or no such advance
    for `seconds` s of wall time. scipy itself would shrink the step for ever at a kinematic
    singularity without a message."""

    def __init__(self, derivative, solver: SolverSettings, *, window: int = 20000,
                 seconds: float = 60.0):
        self.derivative, self.name = derivative, solver.integrator
        self.min_advance = 1e-6 * solver.dt * solver.output_every
        self.window, self.seconds = window, seconds
        self._mark, self._calls, self._since = -np.inf, 0, time.perf_counter()

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        if t >= self._mark + self.min_advance:
            self._mark, self._calls, self._since = t, 0, time.perf_counter()
        self._calls += 1
        if self._calls > self.window or time.perf_counter() - self._since > self.seconds:
            raise SimulationError(
                f"{self.name}: no progress at t = {t:.6g} s ({self._calls} evaluations without "
                f"advancing {self.min_advance:.3g} s); the model may be at a kinematic "
                "singularity: use a fixed-step integrator (--integrator rk4 or sdirk2, with "
                "projection) or a looser rtol/atol")
        return self.derivative(t, y)


def _simulate_adaptive(model: Model, solver: SolverSettings, *, progress: bool) -> Results:
    """Reference run with scipy.integrate.solve_ivp (no projection; Baumgarte only); the work
    W is one more state of the ODE, dW/dt = P."""
    sim = RigidSimulation(model, replace(solver, integrator="rk4"))
    n_out = int(round(solver.t_end / (solver.dt * solver.output_every)))
    t_eval = np.linspace(0.0, solver.t_end, n_out + 1)
    start = time.perf_counter()
    with Progress(1, enabled=progress, label=solver.integrator):
        from scipy.integrate import solve_ivp  # adaptive reference runs only

        guard = ProgressGuard(sim.system.derivative_and_power, solver)
        sol = solve_ivp(guard, (0.0, solver.t_end), np.append(sim.state.to_vector(), 0.0),
                        method=solver.integrator, t_eval=t_eval, rtol=solver.rtol,
                        atol=solver.atol)
    sim.diagnostics.steps = int(sol.nfev)
    sim.diagnostics.wall_time = time.perf_counter() - start
    figures = {"integrator": solver.integrator, "rtol": solver.rtol, "atol": solver.atol,
               "function_evaluations": int(sol.nfev), "accuracy": ADAPTIVE_ACCURACY}
    rows = []
    for k, t in enumerate(sol.t):
        state = State.from_vector(t, sol.y[:-1, k])
        sim.diagnostics.quaternion_error = max(
            sim.diagnostics.quaternion_error, float(np.max(np.abs(np.linalg.norm(state.q, axis=1) - 1))))
        state.q = quat.normalize(state.q)
        try:
            rows.append(sim.observe(state, work=float(sol.y[-1, k])))
        except SimulationError as exc:
            raise sim.partial(rows, exc, **figures) from None
    if not sol.success:
        error = SimulationError(f"{solver.integrator}: {sol.message}")
        raise sim.partial(rows, error, **figures)
    return Results(sim.columns, np.array(rows), sim.summary(**figures))
