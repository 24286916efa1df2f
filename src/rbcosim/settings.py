"""Run settings read from a scenario: solver, co-simulation, rigid–flexible couplings."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.scheme import SCHEMES as _COUPLING_SCHEMES

FORMULATIONS = ("maximal", "minimal", "auto")
#: the names cosim.scheme takes (rbcosim.scheme owns what each does)
SCHEMES = tuple(_COUPLING_SCHEMES)
VIOLATION_ACTIONS = ("record", "warn", "stop")


@dataclass(frozen=True)
class SolverSettings:
    """How to integrate: step dt s, end time s, integrator name, output every k steps;
    reactions: add joint reaction and driver columns (`rbcosim.reactions`); joint_coordinates,
    accelerations: add joint coordinate and body acceleration columns (`rbcosim.derived`)."""

    formulation: str = "maximal"
    integrator: str = "rk4"
    dt: float = 1e-3
    t_end: float = 1.0
    output_every: int = 1
    projection: bool = True
    baumgarte: tuple[float, float] = (10.0, 10.0)
    rtol: float = 1e-10
    atol: float = 1e-12
    reactions: bool = False
    joint_coordinates: bool = False
    accelerations: bool = False


@dataclass(frozen=True)
class Coupling:
    """A rigid–flexible joint: interface point <-> flexible body's interface node.

    tolerances: (position m, rotation rad, velocity m/s, angular velocity rad/s).
    grounded_reference: for a grounded structure, the inertial position (3,) m of the
    interface point at which the structure is unstressed (default: its initial position).
    type: "clamp", "pin" or "ball"; axis: a pin's released structure axis (0, 1, 2); node:
    the flexible body's node ("end", index, coordinate m), see rbcosim.scenario.couplings.
    """

    name: str
    point: str
    flex_body: str
    tolerances: np.ndarray
    on_violation: str = "record"
    wrench_frame: str = "inertial"
    grounded_reference: np.ndarray | None = None
    type: str = "clamp"
    axis: int | None = None
    node: int | float | str = 0


@dataclass(frozen=True)
class CosimSettings:
    """Macro step H s, micro steps per macro step, scheme, input extrapolation order 0–2,
    iteration tolerance (on the interface wrench, relative) and limit; added_mass: hand the
    flexible side's instantaneous added mass to the rigid side (implicit), see cosim.master."""

    macro_step: float = 1e-3
    micro_steps: int = 1
    scheme: str = "jacobi"
    extrapolation: int = 0
    tolerance: float = 1e-10
    max_iterations: int = 20
    added_mass: bool = True


def whole_steps(t_end: float, step: float, name: str = "steps dt") -> int:
    """Number of steps of `step` s from 0 to `t_end` s; SimulationError unless it is whole
    (to 1e-9 relative). `name` says which step, e.g. "macro steps H"."""
    n = round(t_end / step)
    if not math.isclose(n * step, t_end, rel_tol=1e-9, abs_tol=0.0):
        raise SimulationError(f"t_end = {t_end} s is not a whole number of {name} = {step} s")
    return n
