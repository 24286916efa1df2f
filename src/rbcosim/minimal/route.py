"""The minimal-coordinate route: `simulate_minimal(model, solver)` and model queries.

Trees integrate y = [q, v] with the articulated-body algorithm. Models with closed loops or
drivers integrate the same state reduced to independent coordinates by coordinate partitioning
(`rbcosim.minimal.loops`; driven coordinates are prescribed, `rbcosim.minimal.drivers`). Results carry the maximal route's columns (body poses and
velocities reconstructed from q, v; energy; constraint drift measured by the maximal route's
constraint equations) plus `q.<coordinate>` and `qd.<rate>` columns.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from rbcosim.diagnostics import Diagnostics, state_row
from rbcosim.errors import DivergedError, RunFailedError, SimulationError, SingularJacobianError
from rbcosim.maximal.divergence import Bounds, explain
from rbcosim.maximal.integrators import ADAPTIVE, FIXED_STEP
from rbcosim.maximal.kernels.interface_points import PointInputs
from rbcosim.minimal.points import TreePoints
from rbcosim.minimal.steps import SDIRK2, rk4
from rbcosim.minimal.tree import build_tree
from rbcosim.model import Model
from rbcosim.results import Results, body_columns, failure
from rbcosim.run_loop import run_adaptive, run_fixed
from rbcosim.serialization.codec import array, field
from rbcosim.serialization.model_digest import model_digest
from rbcosim.settings import SolverSettings
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
    """A model in joint coordinates, its state y and a fixed-step integrator: the minimal
    formulation's `rbcosim.run_loop.System`."""

    label = "run (minimal)"
    formulation = "minimal"

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
        #: a step of the interface points' Python derivative (macro_step)
        self._point_step = rk4 if name == "rk4" else SDIRK2().step
        self._points: TreePoints | None = None
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
        energy = self.energy(state)
        phi, phidot = system.maximal.drift(state)
        row = np.concatenate([[t], state_row(state), [energy, phi], y])
        d = self.diagnostics
        self.bounds.check_quaternion(state, d.quaternion_error)
        if not np.isfinite(row).all():
            raise DivergedError(f"diverged: non-finite state, energy or constraint drift at "
                                f"t = {t:.6g} s (joint coordinates)")
        d.take(self.bounds, state, row, energy, phi, phidot, system.kinetic_energy(state), work)
        return row

    def summary(self, **figures) -> dict:
        """The diagnostics, the run's settings, the coordinates and `figures`."""
        d = self.diagnostics.as_dict()
        tree = self.system.tree
        d.update(integrator=self.solver.integrator, dt=self.solver.dt, t_end=self.solver.t_end,
                 formulation=self.formulation, coordinates=tree.position_names,
                 rates=tree.rate_names, degrees_of_freedom=getattr(
                     self.system, "n_independent", tree.nv) - self.model.frozen_rotations)
        if hasattr(self.system, "partition_report"):
            d.update(self.system.partition_report())
        d.update(figures)
        return d

    def partial(self, rows: list, error: SimulationError, **figures) -> RunFailedError:
        """`error` with the rows so far attached; a divergence with its absurd row and its
        likely cause."""
        if isinstance(error, DivergedError):
            if error.row is not None and (not rows or error.row[0] > rows[-1][0]):
                rows = [*rows, error.row]
            error = explain(error, self.model, self.solver)
        return failure(self.columns, rows, self.summary(**figures), error)

    def steps(self, k0: int, k1: int, h: float) -> None:
        self.run(k0, k1 - k0, h)

    def body_state(self) -> State:
        return self.system.body_state(self.t, self.system.kinematics(self.y))

    def energy(self, state: State) -> float:
        return self.system.energy(state)

    def project(self) -> None:
        """Nothing to do: joint coordinates satisfy the tree joints exactly, and closed loops
        are settled after every step."""

    # --- adaptive runs: y = [q, v, W] -------------------------------------------------------
    def derivative(self, t: float, y: np.ndarray) -> np.ndarray:
        system = self.system
        return np.append(system.derivative(t, y[:-1]), system.power(t, y[:-1]))

    def initial_vector(self) -> np.ndarray:
        return self.y.copy()

    def observe_vector(self, t: float, y: np.ndarray, work: float) -> np.ndarray:
        err = self.system.normalize(y)
        self.diagnostics.quaternion_error = max(self.diagnostics.quaternion_error, err)
        return self.observe(t, y, work=work)

    # --- interface points of a co-simulation (rbcosim.cosim.rigid_side; trees only) --------
    @property
    def time(self) -> float:
        return self.t

    @functools.cached_property
    def digest(self) -> str:
        """The model's digest (rbcosim.serialization.model_digest), carried by every saved state."""
        return model_digest(self.model)

    def attach_points(self) -> MinimalSimulation:
        """Make the interface points steppable (a co-simulation's rigid side); SimulationError
        for a model with closed loops or drivers."""
        self._points = TreePoints(self.system)
        return self

    @property
    def point_inputs(self) -> PointInputs:
        """The inputs at the interface points (those of the maximal route's table)."""
        return self._points.inputs

    def point_outputs(self, out: np.ndarray) -> None:
        """(k, 13) outputs of the points now into out."""
        self._points.outputs(self.t, self.y, out)

    def point_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, 19) outputs and total wrenches, (k, 6) accelerations of the points now."""
        return self._points.state(self.t, self.y)

    def macro_step(self, H: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One macro step of H s in n micro steps, as RigidSimulation.macro_step (feedback
        reference at its start, gains reset at its end); the steps in Python on
        TreePoints.derivative, which carries the work W."""
        pts, d = self._points, self.diagnostics
        pts.outputs(self.t, self.y, pts.inputs.reference)
        start, _ = pts.state(self.t, self.y)
        t0, h = self.t, H / n
        x = np.append(self.y, self.system.work.done[0])
        for i in range(n):
            x = self._point_step(pts.derivative, t0 + H * i / n, x, h)
            err = self.system.normalize(x[:-1])
            if math.isnan(err):
                raise DivergedError(f"diverged: non-finite joint coordinates at "
                                    f"t = {t0 + H * (i + 1) / n:.6g} s")
            self.y[:], self.system.work.done[0] = x[:-1], x[-1]
            self.t = t0 + H * (i + 1) / n
            d.quaternion_error = max(d.quaternion_error, err)
            d.steps += 1
        end, _ = pts.state(self.t, self.y)
        energy = 0.5 * H * (np.sum(start[:, 13:] * start[:, 7:13], axis=1)
                            + np.sum(end[:, 13:] * end[:, 7:13], axis=1))
        pts.inputs.switches[0] = 0
        pts.inputs.gains[:] = 0.0
        return start, end, energy

    def state_fields(self) -> dict:
        """What determines the next steps besides the point inputs: t, y = [q, v], the
        quaternion error and the work W (J)."""
        return {"t": self.t, "y": self.y, "quaternion_error": self.diagnostics.quaternion_error,
                "work": float(self.system.work.done[0])}

    def check_state_fields(self, d: dict) -> None:
        """StateFormatError unless `d` holds state_fields of this model."""
        array(d, "y", self.y.shape)
        for key in ("t", "quaternion_error", "work"):
            field(d, key)

    def set_state_fields(self, d: dict) -> None:
        """Take back checked state_fields (after the diagnostics are restored)."""
        self.t, self.y[:] = float(d["t"]), d["y"]
        self.system.work.done[0] = self.diagnostics.work = float(d["work"])
        self.diagnostics.quaternion_error = float(d["quaternion_error"])

    def save_checkpoint(self, rows: list, k: int, path: Path) -> None:
        raise SimulationError(NO_CHECKPOINTS)

    def load_checkpoint(self, path: Path) -> tuple[list, int]:
        raise SimulationError(NO_CHECKPOINTS)


NO_CHECKPOINTS = "--checkpoint/--resume work with the maximal formulation and co-simulations"


def simulate_minimal(model: Model, solver: SolverSettings, *, progress: bool = True) -> Results:
    """Integrate `model` in joint coordinates from t = 0 to solver.t_end (`rbcosim.run_loop`).
    Adaptive integrators: trees without drivers only."""
    if solver.integrator not in ADAPTIVE:
        return run_fixed(MinimalSimulation, model, solver, progress=progress)
    sim = MinimalSimulation(model, solver)
    if sim.system.has_loops:
        raise SimulationError("adaptive integrators run trees without drivers only in the "
                              "minimal route; use rk4 or sdirk2 for closed loops and drivers")
    return run_adaptive(sim, progress=progress)
