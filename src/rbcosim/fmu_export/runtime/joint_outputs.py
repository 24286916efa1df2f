"""Joint coordinates as outputs of the embedded FMU: `rbcosim run`'s `JOINT.<field>` columns
(rbcosim.joint_coordinates), from the rigid bodies' state at each communication point.

Angles are continued across communication points as `rbcosim run` continues them over its
rows (joint_coordinates.unwrap: the branch nearest to the previous angle advanced by the mean
of the two rates). The previous point's (time, angle, rate) of every angle is the memory this
takes: part of the FMU state, so a restored state continues from where it was saved.
"""

from __future__ import annotations

import numpy as np

from rbcosim.columns import RELATIVE_KINDS
from rbcosim.joint_coordinates import ANGLES, FIELDS, coordinate_columns, joint_values, unwrap
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Model
from rbcosim.reactions import state_of_body_row

#: Memory of the angles: per angle column, in coordinate_columns order, [t (s), angle, rate].
Memory = list[list[float]]


def coordinate_info(column: str) -> tuple[str, str]:
    """(unit, description) of the output ``JOINT.<field>``."""
    joint, _, field = column.rpartition(".")
    quantity, unit = RELATIVE_KINDS[field]
    return unit, f"joint {joint}: {quantity} ({field}, as rbcosim run's column {column})"


class JointCoordinates:
    """Every joint coordinate of ``model`` from a body row, angles continued."""

    def __init__(self, model: Model) -> None:
        self.joints = [j for j in model.joints if j.kind in FIELDS]
        self.columns = coordinate_columns(model)
        self._angles = [(k, self.columns.index(f"{c.rpartition('.')[0]}.{ANGLES[f]}"))
                        for k, c in enumerate(self.columns)
                        if (f := c.rpartition(".")[2]) in ANGLES]

    def raw(self, t: float, body_row: np.ndarray) -> list[float]:
        """The coordinates at time t (s) of the bodies' row (angles in (−π, π])."""
        kin = Kinematics.of(state_of_body_row(t, body_row))
        return [x for j in self.joints for x in joint_values(j, kin)]

    def advance(self, memory: Memory | None, t: float, body_row: np.ndarray
                ) -> tuple[dict[str, float], Memory]:
        """(column -> value, the new memory) at time t (s): the angles continued from
        ``memory`` (None: the first point, the angles as they are)."""
        values = self.raw(t, body_row)
        new_memory = []
        for m, (k, rate) in enumerate(self._angles):
            if memory is not None:
                t0, angle0, rate0 = memory[m]
                values[k] = float(unwrap(np.array([angle0, values[k]]),
                                         np.array([rate0, values[rate]]), np.array([t0, t]))[1])
            new_memory.append([float(t), values[k], values[rate]])
        return dict(zip(self.columns, values)), new_memory

    def check_memory(self, memory) -> None:
        """ValueError unless ``memory`` (from an FMU state) is None or fits these angles."""
        if memory is None:
            return
        if not (isinstance(memory, list) and len(memory) == len(self._angles) and all(
                isinstance(row, list) and len(row) == 3
                and all(isinstance(x, float) and np.isfinite(x) for x in row)
                for row in memory)):
            raise ValueError("the FMU state's joint-angle memory is not this FMU's")
