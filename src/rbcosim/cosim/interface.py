"""Interface-point kinematics and the wrench inputs that enter Newton–Euler.

Point outputs (inertial frame), 13 numbers: position (3) m, quaternion (4) point frame ->
inertial, velocity (3) m/s, angular velocity (3) rad/s. Accelerations (6): linear m/s² and
angular rad/s², inertial. Wrench inputs, 6 numbers: force (3) N and moment (3) N·m about the
point; they enter the body as F and τ = M + (r_p − r_c) × F.
"""

from __future__ import annotations

import numpy as np

from rbcosim import quaternion as quat
from rbcosim.constraints import skew
from rbcosim.dynamics import scatter_matrix
from rbcosim.kinematics import Kinematics
from rbcosim.linalg3 import cross
from rbcosim.model import Model

OUTPUT_FIELDS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
WRENCH_FIELDS = ("fx", "fy", "fz", "mx", "my", "mz")
GAP_FIELDS = ("gap_pos", "gap_rot", "gap_vel", "gap_angvel")


class InterfacePoints:
    """Batched kinematics of a model's interface points and the loads they apply."""

    def __init__(self, model: Model):
        self.names = tuple(p.name for p in model.points)
        self.body = np.array([p.body for p in model.points], dtype=int)
        self.local = np.array([p.position for p in model.points]).reshape(-1, 3)
        self.axes_quaternion = np.array([quat.from_matrix(p.axes) for p in model.points]).reshape(-1, 4)
        self.n_bodies = model.n_bodies
        self._scatter = scatter_matrix(self.body, model.n_bodies)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no interface point {name!r}; valid names: {list(self.names)}") from None

    def outputs(self, kin: Kinematics) -> np.ndarray:
        """Point outputs (k, 13) at `kin`."""
        rho, pos, vel = kin.point(self.body, self.local)
        q = quat.normalize(quat.multiply(kin.q[self.body], self.axes_quaternion))
        return np.hstack([pos, q, vel, kin.w_inertial[self.body]])

    def accelerations(self, kin: Kinematics, vdot: np.ndarray, wdot_body: np.ndarray) -> np.ndarray:
        """Point accelerations (k, 6): a + α × ρ + ω × (ω × ρ), α = R ω̇^b; inertial."""
        b = self.body
        rho = np.einsum("kij,kj->ki", kin.R[b], self.local)
        alpha = np.einsum("kij,kj->ki", kin.R[b], wdot_body[b - 1])
        w = kin.w_inertial[b]
        acc = vdot[b - 1] + cross(alpha, rho) + cross(w, cross(w, rho))
        return np.hstack([acc, alpha])

    def body_loads(self, kin: Kinematics, wrenches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Force and torque (n,3) on the bodies' centres of mass from point wrenches (k,6)."""
        rho = np.einsum("kij,kj->ki", kin.R[self.body], self.local)
        return (self._scatter @ wrenches[:, :3],
                self._scatter @ (wrenches[:, 3:] + cross(rho, wrenches[:, :3])))


def rotation_difference(q: np.ndarray, q_ref: np.ndarray) -> np.ndarray:
    """Small inertial rotation vector (3,) rad taking attitude q_ref to q."""
    conj = q_ref * np.array([1.0, -1.0, -1.0, -1.0])
    d = quat.multiply(q, conj)
    if d[0] < 0:
        d = -d
    return 2.0 * d[1:]


def inertial_added_mass(points: InterfacePoints, kin: Kinematics, mass: np.ndarray,
                        in_point_frame: np.ndarray) -> np.ndarray:
    """Added masses (k,6,6) in inertial axes: those given in the point frame turned by the
    point's current attitude, T M Tᵀ with T = diag(R_p, R_p); the others as they are."""
    Rp = quat.to_matrix(quat.multiply(kin.q[points.body], points.axes_quaternion))
    T = np.zeros((points.body.size, 6, 6))
    T[:, :3, :3] = T[:, 3:, 3:] = np.where(in_point_frame[:, None, None], Rp, np.eye(3))
    return T @ mass @ T.transpose(0, 2, 1)


def added_mass_blocks(points: InterfacePoints, kin: Kinematics, mass_point_frame: np.ndarray,
                      in_point_frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Added mass M_a (k,6,6) at the points, as extra mass of their bodies.

    With u = [a, ω̇^b] of a body and the point acceleration [a_p; α_p] = G u + [ω×(ω×ρ); 0],
    G = [[I, −[ρ]× R], [0, R]], a wrench W = −M_a [a_p; α_p] adds Gᵀ M_a G to the body's mass
    and −Gᵀ M_a [ω×(ω×ρ); 0] to its generalized force. M_a is given in the point frame where
    `in_point_frame` is true, else in the inertial frame. Returns (blocks (n,6,6), bias (n,6)).
    """
    b = points.body
    k = b.size
    R = kin.R[b]
    rho = np.einsum("kij,kj->ki", R, points.local)
    w = kin.w_inertial[b]
    Ma = inertial_added_mass(points, kin, mass_point_frame, in_point_frame)
    G = np.zeros((k, 6, 6))
    G[:, :3, :3] = np.eye(3)
    G[:, :3, 3:] = -skew(rho) @ R
    G[:, 3:, 3:] = R
    GtMa = G.transpose(0, 2, 1) @ Ma
    centripetal = np.zeros((k, 6))
    centripetal[:, :3] = cross(w, cross(w, rho))
    blocks = np.zeros((points.n_bodies, 6, 6))
    bias = np.zeros((points.n_bodies, 6))
    np.add.at(blocks, b - 1, GtMa @ G)
    np.add.at(bias, b - 1, -np.einsum("kij,kj->ki", GtMa, centripetal))
    return blocks, bias
