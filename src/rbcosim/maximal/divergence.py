"""When a run has diverged: bounds on its state derived from the model, and the likely cause.

A fixed-step run stops with status "diverged" when an observed state is not finite or leaves
one of these bounds (L the model's length scale, `rbcosim.accuracy_probe.length_scale`; E the
model's energy scale, the largest of |E0|, the initial kinetic energy and Σ m |g| L):

  position     |r_i(t) − r_i(0)| > POSITION_LENGTHS · L + |v(0)|max · t_end + ½ |g| t_end²
  constraint   ‖Φ‖∞ > CONSTRAINT_FRACTION · L (position rows, m; angle rows are sines, so
               for L ≥ 2 m only the position rows can pass it)
  quaternion   |‖q‖ − 1| before renormalisation > QUATERNION_ERROR in any step
  energy       |E − E0 − W| > ENERGY_SCALES · max(E, |W|), where the balance is meaningful

Healthy runs stay many orders of magnitude inside them. The message names the time, the body
and the likely cause: the step against the fastest time scale `rbcosim check` reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim.accuracy_probe import length_scale
from rbcosim.errors import DivergedError, SimulationError, SingularJacobianError
from rbcosim.maximal.accuracy import LINEARIZE_MAX_BODIES, fastest_rate
from rbcosim.model import Model
from rbcosim.state import State

#: Positions may leave the start by this many model lengths (plus the ballistic range).
POSITION_LENGTHS = 1e3
#: ‖Φ‖∞ beyond this fraction of the length scale L is absurd.
CONSTRAINT_FRACTION = 0.5
#: |‖q‖ − 1| of a step beyond this is absurd (healthy steps: 1e-10 and below).
QUATERNION_ERROR = 0.1
#: An energy balance error beyond this many energy scales is absurd.
ENERGY_SCALES = 10.0


@dataclass(frozen=True)
class Bounds:
    """The bounds of the module docstring for one model and run length."""

    names: tuple[str, ...]
    r0: np.ndarray
    position: float
    constraint: float
    energy: float

    @classmethod
    def of(cls, model: Model, state: State, t_end: float, energy0: float,
           kinetic0: float) -> Bounds:
        """Bounds for `model` started from `state` (its energy0 and kinetic0, J) to t_end s."""
        scale = length_scale(model)
        g = float(np.linalg.norm(model.gravity))
        speed = float(np.max(np.linalg.norm(state.v, axis=1), initial=0.0))
        reach = POSITION_LENGTHS * scale + speed * t_end + 0.5 * g * t_end**2
        weight = sum(b.mass for b in model.bodies) * g * scale
        energy = ENERGY_SCALES * max(abs(energy0), kinetic0, weight)
        return cls(model.body_names, state.r.copy(), reach,
                   CONSTRAINT_FRACTION * scale, energy)

    def check(self, state: State, phi: float, balance: float | None, work: float,
              quaternion_error: float) -> None:
        """DivergedError naming time, body and bound when `state` (its ‖Φ‖∞ phi, energy
        balance error |E − E0 − W| in J or None, work W in J, and the run's quaternion norm
        error) is beyond a bound."""
        t = state.t
        distance = np.linalg.norm(state.r - self.r0, axis=1)
        worst = int(np.argmax(distance)) if distance.size else 0
        where = f" in body {self.names[worst]!r}" if self.names else ""
        if distance.size and distance[worst] > self.position:
            raise DivergedError(f"diverged: moved {distance[worst]:.3g} m from the start, "
                                f"beyond {self.position:.3g} m, at t = {t:.6g} s{where}")
        self.check_quaternion(state, quaternion_error)
        if phi > self.constraint:
            raise DivergedError(f"diverged: constraint violation ‖Φ‖∞ = {phi:.3g} > "
                                f"{self.constraint:.3g} at t = {t:.6g} s")
        limit = max(self.energy, ENERGY_SCALES * abs(work))
        if balance is not None and balance > limit:
            raise DivergedError(f"diverged: energy balance error {balance:.3g} J > "
                                f"{limit:.3g} J at t = {t:.6g} s")

    def check_quaternion(self, state: State, error: float) -> None:
        """DivergedError when a step's |‖q‖ − 1| (`error`) is beyond QUATERNION_ERROR, naming
        the fastest-turning body."""
        if not error > QUATERNION_ERROR:
            return
        body = ""
        if self.names:
            with np.errstate(all="ignore"):
                speed = np.nan_to_num(np.linalg.norm(state.w, axis=1), nan=np.inf)
            body = f" in body {self.names[int(np.argmax(speed))]!r}"
        raise DivergedError(f"diverged: quaternion norm error {error:.3g} > "
                            f"{QUATERNION_ERROR:g} in a step, at t = {state.t:.6g} s{body}")


def nice_floor(x: float) -> float:
    """The largest 1, 2 or 5 × 10^k not above x > 0."""
    k = math.floor(math.log10(x))
    for m in (5.0, 2.0, 1.0):
        if m * 10.0**k <= x * (1 + 1e-12):
            return m * 10.0**k
    return 10.0**k


def suggested_step(step: float, scale: float | None) -> float:
    """A step (s) for a run that diverged with `step`: a quarter of the fastest time scale
    (RK4 is stable below 2.8 of it) and below `step`, rounded down to 1, 2 or 5 × 10^k."""
    target = step / 10.0 if scale is None or not math.isfinite(scale) else scale / 4.0
    return nice_floor(min(target, step / 2.0))


def likely_cause(step: float, scale: float | None, *, name: str = "dt") -> str:
    """The cause text: `step` (s, the option `name`) against the fastest time scale (s)."""
    try_step = f"try {name} ≤ {suggested_step(step, scale):.3g} s"
    if scale is None:
        return f"likely cause: {name} = {step:g} s too large; {try_step}"
    if step > scale:
        return (f"likely cause: {name} = {step:g} s is above the fastest time scale "
                f"{scale:.3g} s (`rbcosim check`); {try_step}")
    return (f"likely cause: {name} = {step:g} s is below the fastest time scale {scale:.3g} s "
            f"at the initial state (`rbcosim check`), but the motion became faster; {try_step}")


def as_divergence(error: SimulationError, observe) -> SimulationError:
    """`error`, or the divergence it is: a lost rank (SingularJacobianError) at a state beyond
    the rigid simulation's bounds is a DivergedError, which `observe()` (that simulation's
    RigidSimulation.observe, called only for a lost rank) raises."""
    if isinstance(error, SingularJacobianError):
        try:
            observe()
        except DivergedError as exc:
            return exc
    return error


def with_cause(error: DivergedError, cause: str) -> DivergedError:
    """`error` with `cause` appended to its message (rows and status kept)."""
    out = DivergedError(f"{error}; {cause}")
    out.row = error.row
    return out


def rigid_time_scale(model: Model, baumgarte: tuple[float, float]) -> float | None:
    """s: 1 / the largest |eigenvalue| of the linearized rigid equations (None: not estimated)."""
    if model.n_bodies > LINEARIZE_MAX_BODIES:
        return None
    try:
        rate = fastest_rate(model, baumgarte)
    except SimulationError:
        return None
    return 1.0 / rate if rate > 0 else math.inf


def explain(error: DivergedError, model: Model, solver) -> DivergedError:
    """A rigid run's DivergedError with the likely cause (its dt against the time scale)."""
    return with_cause(error, likely_cause(solver.dt, rigid_time_scale(model, solver.baumgarte)))


def flex_time_scale(groups) -> float | None:
    """s: 1 / (2π f) of the highest fixed-interface frequency f of the flexible bodies of
    `groups` (the flexible endpoints, rbcosim.cosim.flex_bodies; None when none is known)."""
    f = max((max(g.body.model.frequencies_hz, default=0.0) for g in groups), default=0.0)
    return 1.0 / (2.0 * math.pi * f) if f > 0 else None


def fastest_time_scale(*scales: float | None) -> float | None:
    """The smallest of the known time scales (s); None when none is known."""
    known = [s for s in scales if s is not None]
    return min(known) if known else None


def explain_cosim(error: DivergedError, scenario, groups, H: float) -> DivergedError:
    """A co-simulation's DivergedError with the likely cause of `cosim_cause`."""
    return with_cause(error, cosim_cause(scenario, groups, H))


def cosim_cause(scenario, groups, H: float) -> str:
    """The likely cause of a co-simulation's divergence: its macro step H (s) against the
    fastest time scale of the rigid side and the flexible modes of `groups`; without added
    mass, the remedy names it too."""
    scale = fastest_time_scale(rigid_time_scale(scenario.model, scenario.solver.baumgarte),
                               flex_time_scale(groups))
    if scenario.cosim.added_mass:
        return likely_cause(H, scale, name="cosim.macro_step")
    known = "" if scale is None else f" (fastest time scale {scale:.3g} s, `rbcosim check`)"
    return (f"likely cause: the coupling without added mass is unstable at "
            f"cosim.macro_step = {H:g} s{known}; set cosim.added_mass = true "
            f"or try cosim.macro_step ≤ {suggested_step(H, scale):.3g} s")
