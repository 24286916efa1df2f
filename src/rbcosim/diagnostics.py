"""What a run keeps besides its rows, whatever the formulation: the running diagnostics (constraint
drift, energy balance, quaternion norm error) and the body columns of a state."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.errors import DivergedError
from rbcosim.serialization.codec import StateFormatError, field
from rbcosim.state import State


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

    def take(self, bounds, state: State, row: np.ndarray, energy: float, phi: float,
             phidot: float, kinetic_scale: float, work: float) -> None:
        """:meth:`update` with one observed state's figures, then its divergence check by
        `bounds` (a :class:`rbcosim.maximal.divergence.Bounds`); a DivergedError carries `row`,
        the state's results row, so that a failed run keeps it."""
        self.update(energy, phi, phidot, kinetic_scale, work)
        balance = abs(energy - self.energy0 - work) if self.reported else None
        try:
            bounds.check(state, phi, balance, work, self.quaternion_error)
        except DivergedError as exc:
            exc.row = row
            raise

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
