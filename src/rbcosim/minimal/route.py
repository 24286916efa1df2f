"""The minimal-coordinate route: `simulate_minimal(model, solver)` and model queries.

Trees integrate y = [q, v] with the articulated-body algorithm. Models with closed loops or
drivers integrate the same state reduced to independent coordinates by coordinate partitioning
(`rbcosim.minimal.loops`; driven coordinates are prescribed, `rbcosim.minimal.drivers`). Results carry the maximal route's columns (body poses and
velocities reconstructed from q, v; energy; constraint drift measured by the maximal route's
constraint equations) plus `q.<coordinate>` and `qd.<rate>` columns.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from rbcosim.errors import DivergedError, SimulationError, SingularJacobianError
from rbcosim.maximal.accuracy import ADAPTIVE_ACCURACY, richardson_probe
from rbcosim.maximal.divergence import Bounds, explain
from rbcosim.maximal.integrators import ADAPTIVE, FIXED_STEP
from rbcosim.maximal.simulate import Diagnostics, state_row
from rbcosim.minimal.tree import build_tree
from rbcosim.model import Model
from rbcosim.progress import Progress
from rbcosim.results import Results, body_columns, failure
from rbcosim.settings import SolverSettings, whole_steps
from rbcosim.state import State


def is_tree(model: Model) -> bool:
    """True when every joint is a tree joint: no closed loop, no distance or driver joint."""
    return build_tree(model).is_tree


def suits_minimal(model: Model) -> bool:
    """What formulation = "auto" runs in minimal coordinates: trees, not in planar mode."""
    return model.planar_normal is None and is_tree(model)


def coordinate_names(model: Model) -> list[str]:
    """Names of the generalized coordinates q, e.g. `shoulder.angle` (quaternion joints give
    four names `<joint>.q0..q3`; a body joined to nothing gets `<body>.free.x ... .q3`)."""
    return build_tree(model).position_names


def rate_names(model: Model) -> list[str]:
    """Names of the generalized rates v (one per degree of freedom of the tree)."""
    return build_tree(model).rate_names


def degrees_of_freedom(model: Model) -> int:
    """Degrees of freedom: tree rates minus the rank of the loop-closure Jacobian and the
    prescribed rates, less the point masses' constant rotations."""
    tree = build_tree(model)
    if tree.is_tree:
        return tree.nv - model.frozen_rotations
    from rbcosim.minimal.loops import ClosedLoopSystem

    return ClosedLoopSystem(model, tree=tree).n_independent - model.frozen_rotations


def make_system(model: Model, *, solver: str = "aba"):
    """TreeSystem for trees, ClosedLoopSystem otherwise (closed loops or drivers)."""
    from rbcosim.minimal.system import TreeSystem

    if model.planar_normal is not None:
        raise SimulationError("planar mode (world.planar) runs in the maximal formulation; "
                              "use formulation = \"maximal\" or \"auto\"")

    tree = build_tree(model)
    if tree.is_tree:
        return TreeSystem(model, tree=tree, solver=solver)
    from rbcosim.minimal.loops import ClosedLoopSystem

    return ClosedLoopSystem(model, tree=tree)


class MinimalSimulation:
    """A model in joint coordinates, its state y and a fixed-step integrator."""

    def __init__(self, model: Model, solver: SolverSettings):
        self.model = model
        self.solver = solver
        self.system = make_system(model)
        self.y = self.system.initial()
        self.t = 0.0
        name = solver.integrator if solver.integrator in FIXED_STEP else "rk4"
        #: advance(t, y, h): y in place, returns max |‖e‖ − 1| before renormalising (NaN: not
        #: finite); trees: one call of the C core; closed loops and drivers: RK4 / SDIRK2 on
        #: their derivative
        self.advance = self.system.step_function(name)
        #: trees: a run of steps in one call of the C core (`run`)
        self._steps = None if self.system.has_loops else self.system.steps_function(name)
        #: trees integrate the work of loads and dampers; closed loops do not
        self.diagnostics = Diagnostics(conservative=model.is_conservative,
                                       balanced=not self.system.has_loops)
        state = self.system.body_state(0.0, self.system.kinematics(self.y))
        self.bounds = Bounds.of(model, state, solver.t_end, self.system.energy(state),
                                self.system.kinetic_energy(state))
        tree = self.system.tree
        self.columns = ["t", *body_columns(model), "energy", "constraint_drift",
                        *(f"q.{c}" for c in tree.position_names),
                        *(f"qd.{c}" for c in tree.rate_names)]

    def step(self, h: float) -> None:
        err = self.advance(self.t, self.y, h)
        self.t += h
        if math.isnan(err):
            raise DivergedError(f"diverged: non-finite joint coordinates at t = {self.t:.6g} s")
        d = self.diagnostics
        d.quaternion_error = max(d.quaternion_error, err)
        if self.system.has_loops:
            self.y = self.system.settle(self.t, self.y)
            self.system.maybe_repartition(self.t, self.y)
        d.steps += 1

    def run(self, k0: int, n: int, h: float) -> None:
        """Steps k0 + 1 .. k0 + n of h s from t = k0 h (trees: in one call of the C core);
        afterwards t = (k0 + n) h. A loop closure failing at an absurd state is a divergence
        (DivergedError from the bounds), not a singular configuration."""
        if self._steps is None:
            for k in range(k0 + 1, k0 + n + 1):
                try:
                    self.step(h)
                except SingularJacobianError:
                    self.observe()
                    raise
                self.t = k * h
            return
        err, done = self._steps(self.y, 0.0, h, k0, n)
        d = self.diagnostics
        d.steps += done
        if math.isnan(err):
            self.t = (k0 + done) * h + h
            raise DivergedError(f"diverged: non-finite joint coordinates at t = {self.t:.6g} s")
        d.quaternion_error = max(d.quaternion_error, err)
        self.t = (k0 + n) * h

    def observe(self, t: float | None = None, y: np.ndarray | None = None,
                work: float | None = None) -> np.ndarray:
        """Update the diagnostics with (t, y) (default: the current state) and the work W (J)
        done until then (default: the fixed steps' own) and return its results row."""
        t = self.t if t is None else t
        y = self.y if y is None else y
        if work is None:
            work = self.system.work_done if self.diagnostics.balanced else 0.0
        system = self.system
        state = system.body_state(t, system.kinematics(y))
        energy = system.energy(state)
        phi, phidot = system.maximal.drift(state)
        row = np.concatenate([[t], state_row(state), [energy, phi], y])
        d = self.diagnostics
        self.bounds.check_quaternion(state, d.quaternion_error)
        if not np.isfinite(row).all():
            raise DivergedError(f"diverged: non-finite state, energy or constraint drift at "
                                f"t = {t:.6g} s (joint coordinates)")
        d.update(energy, phi, phidot, system.kinetic_energy(state), work)
        balance = abs(energy - d.energy0 - work) if d.reported else None
        try:
            self.bounds.check(state, phi, balance, work, d.quaternion_error)
        except DivergedError as exc:
            exc.row = row
            raise
        return row

    def diagnostics_dict(self) -> dict:
        d = self.diagnostics.as_dict()
        tree = self.system.tree
        d.update(integrator=self.solver.integrator, dt=self.solver.dt, t_end=self.solver.t_end,
                 formulation="minimal", coordinates=tree.position_names,
                 rates=tree.rate_names, degrees_of_freedom=getattr(
                     self.system, "n_independent", tree.nv) - self.model.frozen_rotations)
        if hasattr(self.system, "partition_report"):
            d.update(self.system.partition_report())
        return d


def simulate_minimal(model: Model, solver: SolverSettings, *, progress: bool = True) -> Results:
    """Integrate `model` in joint coordinates from t = 0 to solver.t_end."""
    sim = MinimalSimulation(model, solver)
    if solver.integrator in ADAPTIVE:
        return _simulate_adaptive(sim, progress=progress)
    n_steps = whole_steps(solver.t_end, solver.dt)
    rows = [sim.observe()]
    start = time.perf_counter()
    with Progress(n_steps, enabled=progress, label="run (minimal)") as bar:
        k = 0
        while k < n_steps:  # the steps up to the next output row in one call
            n = min(solver.output_every - k % solver.output_every, n_steps - k)
            try:
                sim.run(k, n, solver.dt)
                k += n
                rows.append(sim.observe())
            except SimulationError as exc:
                sim.diagnostics.wall_time = time.perf_counter() - start
                if isinstance(exc, DivergedError):
                    if exc.row is not None:
                        rows.append(exc.row)
                    exc = explain(exc, model, solver)
                raise failure(sim.columns, rows, sim.diagnostics_dict(), exc) from None
            bar.update(k)
    sim.diagnostics.wall_time = time.perf_counter() - start
    diag = sim.diagnostics_dict()
    diag["accuracy"] = richardson_probe(model, solver.integrator, solver.dt, solver.t_end,
                                        _probe_run(model, solver)).as_dict()
    return Results(sim.columns, np.array(rows), diag)


def _probe_run(model: Model, solver: SolverSettings):
    """run(h, n) for the accuracy probe: a fresh simulation, n steps of h s from t = 0."""
    def run(h: float, n: int) -> State:
        sim = MinimalSimulation(model, replace(solver, dt=h))
        sim.run(0, n, h)
        return sim.system.body_state(sim.t, sim.system.kinematics(sim.y))
    return run


def _simulate_adaptive(sim: MinimalSimulation, *, progress: bool) -> Results:
    """Reference run with scipy.integrate.solve_ivp on the joint-coordinate ODE."""
    solver = sim.solver
    system = sim.system
    if system.has_loops:
        raise SimulationError("adaptive integrators run trees without drivers only in the "
                              "minimal route; use rk4 or sdirk2 for closed loops and drivers")
    n_out = round(solver.t_end / (solver.dt * solver.output_every))
    t_eval = np.linspace(0.0, solver.t_end, n_out + 1)
    start = time.perf_counter()
    with Progress(1, enabled=progress, label=solver.integrator):
        from scipy.integrate import solve_ivp  # adaptive reference runs only

        def with_work(t, y):  # W as one more state: dW/dt = P
            return np.append(system.derivative(t, y[:-1]), system.power(t, y[:-1]))

        sol = solve_ivp(with_work, (0.0, solver.t_end), np.append(sim.y, 0.0),
                        method=solver.integrator, t_eval=t_eval, rtol=solver.rtol,
                        atol=solver.atol)
    if not sol.success:
        raise SimulationError(f"{solver.integrator}: {sol.message}")
    rows = []
    for k, t in enumerate(sol.t):
        y = sol.y[:-1, k].copy()
        err = system.normalize(y)
        sim.diagnostics.quaternion_error = max(sim.diagnostics.quaternion_error, err)
        rows.append(sim.observe(t, y, work=float(sol.y[-1, k])))
    sim.diagnostics.steps = int(sol.nfev)
    sim.diagnostics.wall_time = time.perf_counter() - start
    d = sim.diagnostics_dict()
    d.update(function_evaluations=int(sol.nfev), rtol=solver.rtol, atol=solver.atol,
             accuracy=ADAPTIVE_ACCURACY)
    return Results(sim.columns, np.array(rows), d)
