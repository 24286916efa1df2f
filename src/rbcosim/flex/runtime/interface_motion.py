"""Interface-point motion data: what the rigid side sends a flexible body at one time.

Quaternions are unit, scalar first ``[q0, q1, q2, q3]``, and rotate a vector from the point's
own frame to the inertial frame: ``v_inertial = R(q) @ v_point``.
"""

from __future__ import annotations

import math
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
        if a.shape != (19,) or not _finite(a):
            _refuse(a, values)
        a.setflags(write=False)
        return _view(a, time)

    @staticmethod
    def rows(values, time: float | None = None) -> list[InterfaceMotion]:
        """One motion per row of (n, 19) values in the :meth:`as_array` layout, all at
        ``time``: the values copied and checked at once, each motion a view of its row."""
        a = np.array(values, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != 19 or not _finite(a):
            for row in np.atleast_1d(a):  # the first bad row names what is wrong
                InterfaceMotion.from_array(row, time)
            raise ValueError(f"motions: expected (n, 19) values, got shape {a.shape}")
        a.setflags(write=False)
        return [_view(row, time) for row in a]

    @staticmethod
    def from_timed(row) -> InterfaceMotion:
        """From a (20,) row: the :meth:`as_array` layout, then the time s (NaN: none)."""
        time = float(row[19])
        return InterfaceMotion.from_array(row[:19], None if math.isnan(time) else time)

    def write_timed(self, row: np.ndarray) -> np.ndarray:
        """Write :meth:`as_array` and the time s (NaN: none) to ``row`` (20,); returns it."""
        row[:19] = self.as_array()
        row[19] = math.nan if self.time is None else self.time
        return row

    def frozen(self) -> InterfaceMotion:
        """This motion over its checked, read-only array (`as_array`), with the time
        `from_timed` gives back from `write_timed`'s row (a float, None for none or NaN)."""
        time = None if self.time is None or math.isnan(self.time) else float(self.time)
        return _view(self.as_array(), time)

    def __getattr__(self, name: str):
        """A field of a motion made over its array (`from_array`, `rows`): a view of it, made
        when first read."""
        span = _FIELDS.get(name)
        a = self.__dict__.get("_array")
        if span is None or a is None:
            raise AttributeError(f"'InterfaceMotion' object has no attribute {name!r}")
        value = self.__dict__[name] = a[span]
        return value

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


_FIELDS = {"position": slice(0, 3), "quaternion": slice(3, 7), "velocity": slice(7, 10),
           "angular_velocity": slice(10, 13), "acceleration": slice(13, 16),
           "angular_acceleration": slice(16, 19)}


def _view(a: np.ndarray, time: float | None) -> InterfaceMotion:
    """A motion over the checked, read-only (19,) array ``a`` (no copy, no further checks; its
    fields are views of ``a``, made when first read)."""
    m = object.__new__(InterfaceMotion)
    d = m.__dict__
    d["_array"], d["time"] = a, time
    return m


def _finite(a: np.ndarray) -> bool:
    """All values finite (the ufunc's reduce: ndarray.all's wrapper costs as much again)."""
    return bool(np.logical_and.reduce(np.isfinite(a), axis=None))


def _refuse(a: np.ndarray, values) -> None:
    """Raise the ValueError naming what is wrong with a motion's values (the attribute with
    non-finite values or too few, or the count)."""
    InterfaceMotion(a[:3], a[3:7], a[7:10], a[10:13], a[13:16], a[16:19]).as_array()
    raise ValueError(f"motion: expected 19 values, got shape {np.shape(values)}")


def _vec(a, n: int, name: str) -> np.ndarray:
    v = np.asarray(a, dtype=np.float64).reshape(-1)
    if v.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {np.shape(a)}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: contains non-finite values: {v.tolist()}")
    return v
