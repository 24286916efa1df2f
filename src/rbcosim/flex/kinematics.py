"""Interface-point motion data and the small rotation helpers the flexible side needs.

Quaternions are unit, scalar first ``[q0, q1, q2, q3]``, and rotate a vector from the point's
own frame to the inertial frame: ``v_inertial = R(q) @ v_point``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class InterfaceMotion:
    """The rigid side's interface point at one time, all inertial, SI.

    Attributes:
        position: (3,) m. quaternion: (4,) scalar first, point frame -> inertial.
        velocity: (3,) m/s. angular_velocity: (3,) rad/s, inertial components.
        acceleration: (3,) m/s². angular_acceleration: (3,) rad/s², inertial components.
        time: s, optional; only used to place past motions given for extrapolation (when None,
            past motions are taken at t - H, t - 2H, most recent first).
    """

    position: np.ndarray
    quaternion: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    acceleration: np.ndarray
    angular_acceleration: np.ndarray
    time: float | None = None

    @staticmethod
    def at_rest(position=(0.0, 0.0, 0.0), quaternion=(1.0, 0.0, 0.0, 0.0)) -> InterfaceMotion:
        """A point at rest (zero velocities and accelerations)."""
        z = np.zeros(3)
        return InterfaceMotion(
            np.asarray(position, float), np.asarray(quaternion, float), z, z, z, z
        )

    def as_array(self) -> np.ndarray:
        """Flat (19,) float64: position, quaternion, velocity, ω, acceleration, α."""
        return np.concatenate(
            [
                _vec(self.position, 3, "position"),
                _vec(self.quaternion, 4, "quaternion"),
                _vec(self.velocity, 3, "velocity"),
                _vec(self.angular_velocity, 3, "angular_velocity"),
                _vec(self.acceleration, 3, "acceleration"),
                _vec(self.angular_acceleration, 3, "angular_acceleration"),
            ]
        )


def _vec(a, n: int, name: str) -> np.ndarray:
    v = np.asarray(a, dtype=np.float64).reshape(-1)
    if v.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {np.shape(a)}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: contains non-finite values: {v.tolist()}")
    return v


def rotation_matrix(q) -> np.ndarray:
    """R(q), shape (3, 3), from a quaternion (normalised here)."""
    w, x, y, z = (float(c) for c in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_multiply(p, q) -> np.ndarray:
    """Hamilton product p ⊗ q, shape (4,)."""
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return np.array(
        [
            pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw,
        ]
    )


def quat_conjugate(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=float)


def rotation_vector(q) -> np.ndarray:
    """Rotation vector (axis * angle, rad, angle in [0, pi]) of a unit quaternion, shape (3,)."""
    q = np.asarray(q, dtype=float)
    if q[0] < 0:
        q = -q
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return 2.0 * q[1:]
    angle = 2.0 * math.atan2(s, q[0])
    return q[1:] * (angle / s)


def quat_from_rotation_vector(v) -> np.ndarray:
    """Unit quaternion of the rotation vector v (rad), shape (4,)."""
    v = np.asarray(v, dtype=float)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        q = np.array([1.0, 0.5 * v[0], 0.5 * v[1], 0.5 * v[2]])
        return q / np.linalg.norm(q)
    s = math.sin(0.5 * angle) / angle
    return np.array([math.cos(0.5 * angle), v[0] * s, v[1] * s, v[2] * s])


def skew(v) -> np.ndarray:
    """[v]×, shape (3, 3): skew(v) @ w == cross(v, w)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def shortest_arc(axis) -> np.ndarray:
    """Rotation matrix taking +x to the unit vector ``axis`` by the shortest arc, (3, 3).

    For ``axis = -x`` (no unique shortest arc) the rotation is pi about +z.
    """
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    ex = np.array([1.0, 0.0, 0.0])
    c = float(ex @ a)
    if c < -1.0 + 1e-12:
        return np.diag([-1.0, -1.0, 1.0])
    v = np.cross(ex, a)
    vx = skew(v)
    return np.eye(3) + vx + vx @ vx / (1.0 + c)
