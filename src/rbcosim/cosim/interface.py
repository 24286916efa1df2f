"""Interface points of a co-simulation: names and the layout of their outputs and inputs.

Point outputs (inertial frame), 13 numbers: position (3) m, quaternion (4) point frame ->
inertial, velocity (3) m/s, angular velocity (3) rad/s. Accelerations (6): linear m/s² and
angular rad/s², inertial. Wrench inputs, 6 numbers: force (3) N and moment (3) N·m about the
point; they enter the body as F and τ = M + (r_p − r_c) × F. The numbers are computed by the
compiled core (`rbcosim.kernels.interface`).
"""

from __future__ import annotations

import numpy as np

from rbcosim import quaternion as quat
from rbcosim.model import Model

OUTPUT_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
WRENCH_FIELDS = ("fx", "fy", "fz", "mx", "my", "mz")
GAP_FIELDS = ("gap_pos", "gap_rot", "gap_vel", "gap_angvel")


class InterfacePoints:
    """The names of a model's interface points, in model order."""

    def __init__(self, model: Model):
        self.names = tuple(p.name for p in model.points)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no interface point {name!r}; valid names: {list(self.names)}") from None


def inertial_added_mass(outputs: np.ndarray, mass: np.ndarray,
                        point_frame: np.ndarray) -> np.ndarray:
    """Added masses (k, 6, 6) in inertial axes from the point outputs (k, 13): those given in
    the point frame (`point_frame` true) turned by the point's attitude, T M Tᵀ with
    T = diag(R_p, R_p); the others as they are."""
    Rp = quat.to_matrix(outputs[:, 3:7])
    T = np.zeros((len(outputs), 6, 6))
    T[:, :3, :3] = T[:, 3:, 3:] = np.where(point_frame[:, None, None], Rp, np.eye(3))
    return T @ mass @ T.transpose(0, 2, 1)
