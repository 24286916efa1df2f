"""Interface points of a co-simulation: names and the layout of their outputs and inputs.

Point outputs (inertial frame), 13 numbers: position (3) m, quaternion (4) point frame ->
inertial, velocity (3) m/s, angular velocity (3) rad/s. Accelerations (6): linear m/s² and
angular rad/s², inertial. Wrench inputs, 6 numbers: force (3) N and moment (3) N·m about the
point; they enter the body as F and τ = M + (r_p − r_c) × F. The numbers are computed by the
C core (`librbcosim/rigid/interface.c`).
"""

from __future__ import annotations

from rbcosim.model import Model

OUTPUT_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
WRENCH_FIELDS = ("fx", "fy", "fz", "mx", "my", "mz")
GAP_FIELDS = ("gap_pos", "gap_rot", "gap_vel", "gap_angvel")


class InterfacePoints:
    """The names of a model's interface points, in model order."""

    def __init__(self, model: Model):
        self.names = tuple(p.name for p in model.points)
        self._rows = {name: i for i, name in enumerate(self.names)}

    def index(self, name: str) -> int:
        """The point's row (model order); KeyError naming the valid names."""
        try:
            return self._rows[name]
        except (KeyError, TypeError):
            raise KeyError(f"no interface point {name!r}; valid names: {list(self.names)}") from None
