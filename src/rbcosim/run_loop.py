"""The one run loop, over either formulation: fixed steps with output rows, checkpoints and the
accuracy probe (`run_fixed`), or an adaptive reference run with scipy's solve_ivp
(`run_adaptive`).

A formulation offers the `System` interface: `RigidSimulation` (maximal coordinates,
`rbcosim.maximal.simulate`) and `MinimalSimulation` (joint coordinates, `rbcosim.minimal.route`). The
co-simulation's rigid side (`rbcosim.cosim.rigid_side`) steps either through the same interface.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import numpy as np

from rbcosim.accuracy_probe import ADAPTIVE_ACCURACY, richardson_probe
from rbcosim.diagnostics import Diagnostics
from rbcosim.errors import RunFailedError, SimulationError
from rbcosim.model import Model
from rbcosim.progress import Progress
from rbcosim.results import Results
from rbcosim.settings import SolverSettings, whole_steps
from rbcosim.state import State


class System(Protocol):
    """A model in one formulation with a fixed-step integrator; times in s, energies in J,
    body states (`State`) inertial with body-frame angular velocities."""

    model: Model
    solver: SolverSettings
    diagnostics: Diagnostics
    #: results columns: t, the bodies' columns, energy, constraint_drift, then the formulation's
    columns: list[str]
    #: progress bar label of a fixed-step run
    label: str

    def steps(self, k0: int, k1: int, h: float) -> None:
        """Steps k0 + 1 .. k1 of h s from t = k0 h (SimulationError when one fails)."""

    def body_state(self) -> State:
        """The bodies' current state."""

    def energy(self, state: State) -> float:
        """Kinetic + potential energy of a body state."""

    def project(self) -> None:
        """The current state onto the constraint manifold (no-op where it always lies on it)."""

    def observe(self) -> np.ndarray:
        """Update the diagnostics with the current state and return its results row."""

    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        """ẏ of y = [the formulation's state vector, W]: its rates and the power dW/dt (W)."""

    def initial_vector(self) -> np.ndarray:
        """The current state vector (adaptive runs append W = 0)."""

    def observe_vector(self, t: float, y: np.ndarray, work: float) -> np.ndarray:
        """Observe an adaptive run's state vector y at t (quaternions renormalised here, their
        norm error kept) with the work W (J) done until then; its results row."""

    def summary(self, **figures) -> dict:
        """The diagnostics, the run's settings and `figures`."""

    def partial(self, rows: list, error: SimulationError, **figures) -> RunFailedError:
        """`error` carrying the rows so far (a divergence: its row and its likely cause)."""

    def save_checkpoint(self, rows: list, k: int, path: Path) -> None:
        """The state after step k, the rows so far and the diagnostics, to `path`."""

    def load_checkpoint(self, path: Path) -> tuple[list, int]:
        """Restore from `path`; returns (rows so far, next step index)."""


def run_fixed(make: Callable[[Model, SolverSettings], System], model: Model,
              solver: SolverSettings, *, progress: bool = True, checkpoint: Path | None = None,
              checkpoint_every: int = 0, resume: Path | None = None) -> Results:
    """Integrate the System `make(model, solver)` from t = 0 (or a checkpoint) to
    solver.t_end with rows every solver.output_every steps, then take the accuracy probe.

    With `checkpoint`, the state, the rows so far and the running diagnostics are saved every
    `checkpoint_every` steps and at the end; `resume` continues such a file."""
    sim = make(model, solver)
    n_steps = whole_steps(solver.t_end, solver.dt)
    rows, first = [sim.observe()], 1
    if resume is not None:
        rows, first = sim.load_checkpoint(Path(resume))
    start = time.perf_counter()
    stops = _stops(first - 1, n_steps, solver.output_every,
                   checkpoint_every if checkpoint is not None else 0)
    with Progress(n_steps, enabled=progress, label=sim.label) as bar:
        k = first - 1
        for stop in stops:
            try:
                sim.steps(k, stop, solver.dt)
                k = stop
                if k % solver.output_every == 0 or k == n_steps:
                    rows.append(sim.observe())
            except SimulationError as exc:
                sim.diagnostics.wall_time = time.perf_counter() - start
                raise sim.partial(rows, exc) from None
            if checkpoint is not None and checkpoint_every and k % checkpoint_every == 0:
                sim.save_checkpoint(rows, k, Path(checkpoint))
            bar.update(k)
    if checkpoint is not None:
        sim.save_checkpoint(rows, n_steps, Path(checkpoint))
    sim.diagnostics.wall_time = time.perf_counter() - start
    accuracy = richardson_probe(model, solver.integrator, solver.dt, solver.t_end,
                                probe_run(make, model, solver)).as_dict()
    return Results(sim.columns, np.array(rows), sim.summary(accuracy=accuracy))


def probe_run(make: Callable[[Model, SolverSettings], System], model: Model,
              solver: SolverSettings) -> Callable[[float, int], State]:
    """run(h, n) for the accuracy probe: a fresh System, n steps of h s from t = 0, its body
    state at the end."""
    def run(h: float, n: int) -> State:
        sim = make(model, replace(solver, dt=h))
        sim.steps(0, n, h)
        return sim.body_state()
    return run


def _stops(done: int, n_steps: int, output_every: int, checkpoint_every: int) -> list[int]:
    """Step indices after `done` at which a run writes a row or a checkpoint (and the last),
    at least every 1000 steps so that the progress bar moves."""
    marks = {n_steps}
    for every in (output_every, checkpoint_every, 1000):
        if every:
            marks.update(range(every * (done // every + 1), n_steps, every))
    return sorted(m for m in marks if m > done)


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


def run_adaptive(sim: System, *, progress: bool = True) -> Results:
    """Reference run of `sim`'s ODE with scipy.integrate.solve_ivp (solver.integrator one of
    its methods, no projection); the work W is one more state of the ODE, dW/dt = P."""
    solver = sim.solver
    n_out = round(solver.t_end / (solver.dt * solver.output_every))
    t_eval = np.linspace(0.0, solver.t_end, n_out + 1)
    start = time.perf_counter()
    with Progress(1, enabled=progress, label=solver.integrator):
        from scipy.integrate import solve_ivp  # adaptive reference runs only

        sol = solve_ivp(ProgressGuard(sim.derivative, solver), (0.0, solver.t_end),
                        np.append(sim.initial_vector(), 0.0), method=solver.integrator,
                        t_eval=t_eval, rtol=solver.rtol, atol=solver.atol)
    sim.diagnostics.steps = int(sol.nfev)
    sim.diagnostics.wall_time = time.perf_counter() - start
    figures = {"integrator": solver.integrator, "rtol": solver.rtol, "atol": solver.atol,
               "function_evaluations": int(sol.nfev), "accuracy": ADAPTIVE_ACCURACY}
    rows = []
    for k, t in enumerate(sol.t):
        try:
            rows.append(sim.observe_vector(t, sol.y[:-1, k].copy(), float(sol.y[-1, k])))
        except SimulationError as exc:
            raise sim.partial(rows, exc, **figures) from None
    if not sol.success:
        raise sim.partial(rows, SimulationError(f"{solver.integrator}: {sol.message}"), **figures)
    return Results(sim.columns, np.array(rows), sim.summary(**figures))
