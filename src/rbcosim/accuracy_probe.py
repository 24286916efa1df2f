"""A Richardson probe of a fixed-step run's accuracy, taken at the start of the run (by the
run loop, `rbcosim.run_loop`, for either formulation).

From the run's consistent initial state the model is integrated over a probe window of
N = min(steps of the run, PROBE_STEPS) steps once with the run's step h and once with h/2
(fresh simulations: the run itself is unchanged). For an integrator of order p the global
error of the h-run at the end of the window is estimated by Richardson extrapolation,
e ≈ (y_h − y_{h/2}) · 2^p / (2^p − 1), and scaled to the whole run assuming linear growth
(× t_end / window; chaotic motion grows faster, so this is a lower bound there). Errors are
measured on the bodies' centres of mass (m, reported relative to the model's length scale)
and attitudes (rad, the angle of the relative rotation). A run is flagged when either exceeds
its tolerance: POSITION_TOLERANCE × length scale or ANGLE_TOLERANCE rad. When the step is so
coarse that the probe itself fails (a singular or non-finite state), that is the warning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.model import Model
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

#: Most steps of the run's dt the probe takes (the probe costs 3× that many steps).
PROBE_STEPS = 100
#: Flag when the estimated position error exceeds this fraction of the model's length scale.
POSITION_TOLERANCE = 1e-3
#: Flag when the estimated attitude error exceeds this many rad.
ANGLE_TOLERANCE = 1e-3
#: Order of the fixed-step integrators.
ORDER = {"rk4": 4, "sdirk2": 2}


def length_scale(model: Model) -> float:
    """m: the largest of the spread of the initial centres of mass and joint points about
    their mean and the bodies' largest radius of gyration (sqrt(I_max / m))."""
    points = [b.position for b in model.bodies]
    for joint in model.joints:
        for marker in (joint.marker1, joint.marker2):
            if marker.body:
                body = model.bodies[marker.body - 1]
                points.append(body.position + quat.to_matrix(body.quaternion) @ marker.position)
    points = np.array(points)
    spread = float(np.max(np.linalg.norm(points - points.mean(axis=0), axis=1)))
    gyration = max(float(np.sqrt(np.max(np.linalg.eigvalsh(b.inertia)) / b.mass))
                   for b in model.bodies)
    return max(spread, gyration)


def state_difference(a: State, b: State) -> tuple[float, float]:
    """(largest centre-of-mass distance m, largest relative rotation angle rad) between two
    states of the same model."""
    position = float(np.max(np.linalg.norm(a.r - b.r, axis=1)))
    angle = max(quat.rotation_angle(p, q) for p, q in zip(a.q, b.q))
    return position, angle


@dataclass(frozen=True)
class Accuracy:
    """The probe's figures: estimated run errors (m, rad), the tolerances, and the warning."""

    position_error: float | None
    angle_error: float | None
    length_scale: float
    method: str
    warning: str | None

    def as_dict(self) -> dict:
        return {"estimate": {"position_m": self.position_error, "angle_rad": self.angle_error},
                "length_scale_m": self.length_scale,
                "tolerance": {"position_m": POSITION_TOLERANCE * self.length_scale,
                              "angle_rad": ANGLE_TOLERANCE},
                "method": self.method, "warning": self.warning}


def richardson_probe(model: Model, integrator: str, dt: float, t_end: float,
                     run: Callable[[float, int], State]) -> Accuracy:
    """Estimate the run's error; `run(h, n)` integrates a fresh simulation n steps of h s from
    the initial state and returns the body State at the end."""
    n = max(1, min(PROBE_STEPS, round(t_end / dt)))
    order = ORDER[integrator]
    window = n * dt
    method = (f"Richardson: {n} steps of dt against {2 * n} of dt/2 from t = 0, order {order}, "
              f"scaled to t_end by linear growth")
    scale = length_scale(model)
    try:
        coarse, fine = run(dt, n), run(dt / 2, 2 * n)
    except SimulationError as exc:
        return Accuracy(None, None, scale, method,
                        f"dt = {dt:g} s is far too coarse: the accuracy probe failed ({exc})")
    factor = 2**order / (2**order - 1) * t_end / window
    position, angle = (factor * e for e in state_difference(coarse, fine))
    warning = None
    if not (position <= POSITION_TOLERANCE * scale and angle <= ANGLE_TOLERANCE):
        warning = (f"dt = {dt:g} s is too coarse: estimated error over the run "
                   f"{position:.3g} m ({position / scale:.3g} of the model's size "
                   f"{scale:.3g} m), {angle:.3g} rad (tolerances {POSITION_TOLERANCE:g} of the "
                   f"size, {ANGLE_TOLERANCE:g} rad); try dt ≤ "
                   f"{_suggested(dt, order, position / scale, angle):.3g} s")
    return Accuracy(position, angle, scale, method, warning)


def _suggested(dt: float, order: int, position: float, angle: float) -> float:
    """A step that the h^order error law puts 10× inside the tolerances."""
    worst = max(position / POSITION_TOLERANCE, angle / ANGLE_TOLERANCE, 1.0)
    return dt * (10.0 * worst) ** (-1.0 / order)


ADAPTIVE_ACCURACY = {"estimate": None, "method": "adaptive: solve_ivp's error control to "
                     "rtol/atol", "warning": None}
