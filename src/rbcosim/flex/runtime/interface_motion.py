"""Interface-point motion data: what the rigid side sends a flexible body at one time.

Quaternions are unit, scalar first ``[q0, q1, q2, q3]``, and rotate a vector from the point's
own frame to the inertial frame: ``v_inertial = R(q) @ v_point``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    A motion is a value: :meth:`as_array` validates and flattens it once, so its arrays are not
    to be modified afterwards (:meth:`from_array` gives read-only ones).
    """

    position: np.ndarray
    quaternion: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    acceleration: np.ndarray
    angular_acceleration: np.ndarray
    time: float | None = None

    _array: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    @staticmethod
    def at_rest(position=(0.0, 0.0, 0.0), quaternion=(1.0, 0.0, 0.0, 0.0)) -> InterfaceMotion:
        """A point at rest (zero velocities and accelerations)."""
        z = np.zeros(3)
        return InterfaceMotion(
            np.asarray(position, float), np.asarray(quaternion, float), z, z, z, z
        )

    @staticmethod
    def from_array(values, time: float | None = None) -> InterfaceMotion:
        """From the flat (19,) layout of :meth:`as_array` (copied once; the attributes are
        read-only views of the copy)."""
        a = np.array(values, dtype=np.float64).reshape(-1)
        if a.shape != (19,) or not _all_finite(a):
            # the per-attribute checks name what is wrong
            InterfaceMotion(a[:3], a[3:7], a[7:10], a[10:13], a[13:16], a[16:19]).as_array()
            raise ValueError(f"motion: expected 19 values, got shape {np.shape(values)}")
        a.setflags(write=False)
        m = InterfaceMotion(a[:3], a[3:7], a[7:10], a[10:13], a[13:16], a[16:19], time)
        object.__setattr__(m, "_array", a)
        return m

    def as_array(self) -> np.ndarray:
        """Flat (19,) float64, read-only: position, quaternion, velocity, ω, acceleration, α.

        Validated and built once per motion."""
        if self._array is None:
            a = np.concatenate(
                [
                    _vec(self.position, 3, "position"),
                    _vec(self.quaternion, 4, "quaternion"),
                    _vec(self.velocity, 3, "velocity"),
                    _vec(self.angular_velocity, 3, "angular_velocity"),
                    _vec(self.acceleration, 3, "acceleration"),
                    _vec(self.angular_acceleration, 3, "angular_acceleration"),
                ]
            )
            a.setflags(write=False)
            object.__setattr__(self, "_array", a)
        return self._array


def _all_finite(a: np.ndarray) -> bool:
    return bool(np.isfinite(a).all())


def _vec(a, n: int, name: str) -> np.ndarray:
    v = np.asarray(a, dtype=np.float64).reshape(-1)
    if v.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {np.shape(a)}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: contains non-finite values: {v.tolist()}")
    return v
