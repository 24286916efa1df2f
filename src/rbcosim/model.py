"""The immutable model: bodies, markers, joints, forces, interface points (SI units).

Body frames have their origin at the centre of mass; every position "in the body frame" is
relative to the centre of mass. Index 0 is the ground; moving bodies are 1..n.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from rbcosim.expression_program import evaluate

GROUND = 0


def frozen_array(values, shape=None) -> np.ndarray:
    """A read-only float64 copy of `values` (optionally reshaped)."""
    a = np.array(values, dtype=float)
    if shape is not None:
        a = a.reshape(shape)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Body:
    """A rigid body: mass kg, inertia kg·m² about the centre of mass in body axes, initial state.

    position: centre of mass, inertial, m; quaternion: body -> inertial, scalar first;
    velocity: centre of mass, inertial, m/s; angular_velocity: body frame ω^b, rad/s.
    """

    name: str
    mass: float
    inertia: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray


@dataclass(frozen=True)
class Marker:
    """A frame fixed on a body: origin (3,) m in the body frame, axes (3, 3) as columns x, y, z."""

    body: int
    position: np.ndarray
    axes: np.ndarray


@dataclass(frozen=True)
class Motion:
    """A prescribed function of time f(t) with its first two derivatives.

    kind "polynomial": f = Σ c_k t^k; "harmonic": offset + amplitude·sin(2π frequency t + phase);
    "table": cubic spline through (times, values); "expression": `text`, a formula in t (s),
    as its compiled `program` (rbcosim.expression_program), parameters folded in.
    """

    kind: str
    coefficients: tuple[float, ...] = ()
    times: tuple[float, ...] = ()
    values: tuple[float, ...] = ()
    program: tuple[float, ...] = ()
    text: str = ""

    def evaluate(self, t: float) -> tuple[float, float, float]:
        """(f, ḟ, f̈) at time t (s)."""
        if self.kind == "polynomial":
            c = self.coefficients
            f = sum(ck * t**k for k, ck in enumerate(c))
            fd = sum(k * ck * t ** (k - 1) for k, ck in enumerate(c) if k >= 1)
            fdd = sum(k * (k - 1) * ck * t ** (k - 2) for k, ck in enumerate(c) if k >= 2)
            return f, fd, fdd
        if self.kind == "harmonic":
            offset, amplitude, frequency, phase = self.coefficients
            w = 2 * np.pi * frequency
            s, c = np.sin(w * t + phase), np.cos(w * t + phase)
            return offset + amplitude * s, amplitude * w * c, -amplitude * w * w * s
        if self.kind == "expression":
            return evaluate(np.array(self.program), t)[:3]
        spline = _spline(self.times, self.values)
        return float(spline(t)), float(spline(t, 1)), float(spline(t, 2))


@functools.lru_cache(maxsize=64)
def _spline(times: tuple[float, ...], values: tuple[float, ...]):
    """Natural cubic spline through a driver's table, built once per table."""
    from scipy.interpolate import CubicSpline

    return CubicSpline(np.array(times), np.array(values), bc_type="natural")


JOINT_KINDS = (
    "fixed",
    "revolute",
    "prismatic",
    "spherical",
    "universal",
    "cylindrical",
    "planar",
    "distance",
    "driver",
    "rolling_disk",
    "knife_edge",
)


@dataclass(frozen=True)
class Joint:
    """A constraint between marker1 (on body1) and marker2 (on body2).

    Axis conventions (marker axes): revolute turns about, prismatic slides along, cylindrical
    turns about and slides along marker1's z; universal turns about marker1's x and marker2's y;
    planar keeps marker2 in marker1's x–y plane; distance keeps the markers `length` m apart.
    A driver prescribes the coordinate of another revolute (angle, rad) or prismatic (m) joint.
    rolling_disk: a disk of radius `length` m (centre marker2's origin, axis marker2's z) rolls
    without slip on the ground plane through marker1's origin with normal marker1's z;
    knife_edge: marker2's origin does not move across the blade (marker2's x) in that plane.
    """

    name: str
    kind: str
    marker1: Marker
    marker2: Marker
    length: float = 0.0
    driven_joint: int = -1
    motion: Motion | None = None


@dataclass(frozen=True)
class BodyLoad:
    """Applied force (N) and torque (N·m), inertial frame, on `body` at `point` (body frame, m).

    times/values: a table with rows [fx, fy, fz, tx, ty, tz], linearly interpolated and held
    constant outside its range; a constant load is a one-row table.
    """

    name: str
    body: int
    point: np.ndarray
    times: np.ndarray
    values: np.ndarray

    def at(self, t: float) -> np.ndarray:
        """Load (6,) at time t."""
        if len(self.times) == 1:
            return self.values[0]
        return np.array([np.interp(t, self.times, self.values[:, k]) for k in range(6)])


@dataclass(frozen=True)
class SpringDamper:
    """Translational spring–damper between two markers' origins: N/m, N·s/m, free length m."""

    name: str
    marker1: Marker
    marker2: Marker
    stiffness: float
    damping: float
    free_length: float


@dataclass(frozen=True)
class TorsionalSpringDamper:
    """Torsional spring–damper on revolute joint `joint`: N·m/rad, N·m·s/rad, rest angle rad."""

    name: str
    joint: int
    stiffness: float
    damping: float
    rest_angle: float


@dataclass(frozen=True)
class InterfacePoint:
    """A named point fixed on a body where a flexible side attaches (body frame, m; axes columns)."""

    name: str
    body: int
    position: np.ndarray
    axes: np.ndarray


@dataclass(frozen=True)
class Model:
    """The constant description of a rigid multibody system."""

    bodies: tuple[Body, ...]
    joints: tuple[Joint, ...] = ()
    loads: tuple[BodyLoad, ...] = ()
    springs: tuple[SpringDamper, ...] = ()
    torsion_springs: tuple[TorsionalSpringDamper, ...] = ()
    points: tuple[InterfacePoint, ...] = ()
    gravity: np.ndarray = field(default_factory=lambda: frozen_array([0.0, 0.0, -9.81]))
    #: planar mode: the unit normal (inertial) of the plane every body moves in, or None
    planar_normal: np.ndarray | None = None
    #: indices of the bodies that are point masses: particles whose attitude stays constant
    #: (nothing acts on them off their centre), so their rotations are no degrees of freedom
    point_masses: tuple[int, ...] = ()

    @property
    def frozen_rotations(self) -> int:
        """Rotational coordinates of the point masses, constant by construction (3 each; 1 in
        planar mode, whose plane rows hold the other two)."""
        return len(self.point_masses) * (3 if self.planar_normal is None else 1)

    @property
    def n_bodies(self) -> int:
        """Number of moving bodies (ground excluded)."""
        return len(self.bodies)

    @property
    def body_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bodies)

    def body_index(self, name: str) -> int:
        """Index of a body by name (ground is 0); KeyError lists the valid names."""
        if name == "ground":
            return GROUND
        for i, b in enumerate(self.bodies):
            if b.name == name:
                return i + 1
        raise KeyError(f"no body {name!r}; valid names: {['ground', *self.body_names]}")

    @property
    def is_conservative(self) -> bool:
        """True when total mechanical energy must be conserved (no dampers, loads or drivers)."""
        return (
            not self.loads
            and all(s.damping == 0 for s in self.springs)
            and all(s.damping == 0 for s in self.torsion_springs)
            and all(j.kind != "driver" for j in self.joints)
        )
