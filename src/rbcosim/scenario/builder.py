"""Build a scenario in Python: the tables of a TOML scenario file, one method per element.

    from rbcosim.scenario.builder import ModelBuilder, polynomial, rotation
    from rbcosim.runner import run_scenario

    m = ModelBuilder(gravity=(0.0, 0.0, -9.81), title="pendulum")
    m.body("rod", mass=1.0, inertia=(0.02, 0.02, 1e-8), position=(0.0, 0.0, -0.25))
    m.revolute("hinge", "ground", "rod", at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    scenario = m.scenario(dt=1e-3, t_end=2.0)
    results = run_scenario(scenario)

Every method writes one table of the scenario format (docs/scenario-format.md): its keyword
arguments are that table's keys, with the same names, SI units and frames; an argument left at
None is left out, so the format's default applies. Vectors may be tuples, lists or numpy
arrays; any number may be an expression string of the `parameters()` ("m*L^2/12"). `scenario()` validates the whole set of tables with `rbcosim.scenario.loader.build_scenario`,
the very reader of TOML files: a model built here equals the same model written in TOML, and
a bad argument raises the ScenarioError a file would, naming the element and the argument
(`ModelBuilder 'pendulum': bodies.rod.mass: expected a positive number, got -1.0`).
`to_toml()` writes the scenario file. A new key of the format is a new keyword argument here.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.scenario.loader import Scenario, build_scenario
from rbcosim.scenario.toml_writer import to_toml

Vector = tuple[float, ...] | list[float] | np.ndarray


# --- values of compound keys: orientations and driver motions --------------------------------

def rotation(axis: Vector, *, angle: float | None = None,
             angle_deg: float | None = None) -> dict:
    """An `orientation`: a right-handed rotation about `axis` by `angle` rad or `angle_deg`."""
    return _table(axis=axis, angle=angle, angle_deg=angle_deg)


def quaternion(q: Vector) -> dict:
    """An `orientation` as a unit quaternion [q0, q1, q2, q3], scalar first, body → inertial."""
    return {"quaternion": _plain(q)}


def placement(parent: str, *, position: Vector | None = None,
              orientation: dict | None = None) -> dict:
    """A body's `placement`: its frame at `position` (m) turned by `orientation`, both in the
    axes of marker `parent` ('body.marker' or 'ground.marker')."""
    return _table(parent=parent, position=position, orientation=orientation)


def joint_start(*, angle: float | None = None, angle_deg: float | None = None,
                displacement: float | None = None, rate: float | None = None,
                displacement_rate: float | None = None) -> dict:
    """A joint's `initial` coordinates and rates: revolute angle (rad, or angle_deg) and rate
    rad/s; prismatic displacement m and rate m/s; cylindrical angle, rate rad/s, displacement
    and displacement_rate m/s."""
    return _table(angle=angle, angle_deg=angle_deg, displacement=displacement, rate=rate,
                  displacement_rate=displacement_rate)


def polynomial(*coefficients: float) -> dict:
    """A driver `motion` f(t) = Σ c_k t^k (rad or m), c0 first (1 to 10 coefficients)."""
    return {"polynomial": _plain(list(coefficients))}


def harmonic(amplitude: float, frequency: float, *, offset: float | None = None,
             phase: float | None = None) -> dict:
    """A driver `motion` f(t) = offset + amplitude·sin(2π·frequency·t + phase); Hz, rad."""
    return {"harmonic": _table(offset=offset, amplitude=amplitude, frequency=frequency,
                               phase=phase)}


def motion_table(rows) -> dict:
    """A driver `motion` through rows [t, f] (a natural cubic spline), strictly increasing t."""
    return {"table": _plain(rows)}


def expression(text: str) -> dict:
    """A driver `motion` f(t) as an expression of time t (s) and the parameters (rad or m),
    e.g. "0.5*sin(2*pi*t)"; its derivatives are exact (docs/scenario-format.md)."""
    return {"expression": text}


# --- the builder ------------------------------------------------------------------------------

def _frame_joint(kind: str, doc: str):
    """A joint method of the `at`/`axis` or `marker1`/`marker2` form (see ModelBuilder)."""

    def joint(self, name: str, body1: str | None = None, body2: str | None = None, *,
              at: Vector | None = None, axis: Vector | None = None,
              x_axis: Vector | None = None, relative_to: str | None = None,
              marker1: str | None = None, marker2: str | None = None) -> str:
        return self._add("joints", name, type=kind, body1=body1, body2=body2, at=at, axis=axis,
                         x_axis=x_axis, relative_to=relative_to, marker1=marker1,
                         marker2=marker2)

    return _named(joint, kind, doc)


def _started_joint(kind: str, doc: str):
    """A joint method like `_frame_joint`'s, with the `initial` coordinate and rate."""

    def joint(self, name: str, body1: str | None = None, body2: str | None = None, *,
              at: Vector | None = None, axis: Vector | None = None,
              x_axis: Vector | None = None, relative_to: str | None = None,
              marker1: str | None = None, marker2: str | None = None,
              initial: dict | None = None) -> str:
        return self._add("joints", name, type=kind, body1=body1, body2=body2, at=at, axis=axis,
                         x_axis=x_axis, relative_to=relative_to, marker1=marker1,
                         marker2=marker2, initial=initial)

    return _named(joint, kind, doc + "; `initial` (`joint_start(...)`) sets its coordinate "
                                     "and rate at t = 0, the bodies beyond it placed to match")


def _named(joint, kind: str, doc: str):
    joint.__name__ = joint.__qualname__ = kind
    joint.__doc__ = (f"A {kind} joint: {doc}. Either body1, body2 (a body name or 'ground'), "
                     "`at` (m) and optionally `axis` (its z) and `x_axis`, inertial (or in "
                     "the frame of marker `relative_to`), in the initial configuration; or "
                     "marker1, marker2 ('body.marker', "
                     "'ground.marker'). Returns the joint's name.")
    return joint


class ModelBuilder:
    """The tables of one scenario, filled by calls in file order (bodies before the joints
    that name them is the natural order; references are resolved by `scenario()`).

    gravity: m/s², inertial, Z up (None: the format's default (0, 0, −9.81)); title: free
    text, also names the builder in error messages; base_dir: the folder that relative file
    names (a flexible body's matrices) are read from.
    """

    def __init__(self, *, gravity: Vector | None = None, title: str | None = None,
                 base_dir: str | Path = "."):
        self.base_dir = Path(base_dir)
        self.source = f"ModelBuilder {title!r}" if title else "ModelBuilder"
        self._raw: dict = _table(title=title)
        if gravity is not None:
            self._raw["world"] = {"gravity": _plain(gravity)}

    # -- parameters --
    def parameters(self, **values: float | str) -> None:
        """[parameters]: named numbers, or expressions (strings) of other parameters; any
        number of the scenario may then be an expression string of them ("m*L^2/12"). A later
        call adds names or replaces their values."""
        self._raw.setdefault("parameters", {}).update(_table(**values))

    # -- bodies and their frames --
    def body(self, name: str, *, mass: float, inertia, position: Vector | None = None,
             orientation: dict | None = None, placement: dict | None = None,
             center_of_mass: Vector | None = None, velocity: Vector | None = None,
             angular_velocity: Vector | None = None) -> str:
        """A rigid body. mass kg; inertia kg·m² about the centre of mass in body axes (3
        principal moments or 3×3); position m, inertial, of the body-frame origin at t = 0;
        orientation body → inertial (`rotation(...)`, `quaternion(...)`); or instead of both,
        placement relative to a marker (`placement(...)`); center_of_mass m, body frame;
        velocity m/s of the centre of mass, inertial; angular_velocity rad/s in the body frame.
        Returns the body's name."""
        return self._add("bodies", name, mass=mass, inertia=inertia, position=position,
                         orientation=orientation, placement=placement,
                         center_of_mass=center_of_mass, velocity=velocity,
                         angular_velocity=angular_velocity)

    def marker(self, body: str, name: str, *, position: Vector | None = None,
               axis: Vector | None = None, x_axis: Vector | None = None,
               orientation: dict | None = None) -> str:
        """A named frame on `body`: position m in the body frame, axes from `axis` (z) and
        `x_axis`, or `orientation`, body frame (on body 'ground': inertial). Returns its
        reference 'body.name'."""
        if body == "ground":
            owner = self._raw.setdefault("ground", {})
        else:
            owner = self._raw.get("bodies", {}).get(body)
        if owner is None:
            defined = list(self._raw.get("bodies", {}))
            raise ScenarioError(f"{self.source}: bodies.{body}.markers.{name}: no body {body!r} "
                                f"defined yet (define it with body() first); defined: {defined}")
        path = "ground.markers" if body == "ground" else f"bodies.{body}.markers"
        _insert(owner.setdefault("markers", {}), name, path, self.source,
                _table(position=position, axis=axis, x_axis=x_axis, orientation=orientation))
        return f"{body}.{name}"

    # -- joints: markers 1 and 2 on body1 and body2, axes conventions of docs/scenario-format.md
    fixed = _frame_joint("fixed", "no relative motion")
    revolute = _started_joint("revolute", "turning about z1; its coordinate is the angle from "
                                        "marker 1's x to marker 2's x about z1, rad")
    prismatic = _started_joint("prismatic", "sliding along z1; its coordinate is marker 2's "
                                          "displacement along z1, m")
    spherical = _frame_joint("spherical", "any rotation about the common point")
    universal = _frame_joint("universal", "turning about x1 (body 1) and y2 (body 2), the "
                                          "cross of a Hooke joint")
    cylindrical = _started_joint("cylindrical", "sliding along and turning about z1")
    planar = _frame_joint("planar", "sliding in the x1–y1 plane and turning about z1")

    def distance(self, name: str, body1: str | None = None, body2: str | None = None, *,
                 point1: Vector | None = None, point2: Vector | None = None,
                 length: float | None = None, marker1: str | None = None,
                 marker2: str | None = None) -> str:
        """Two points kept `length` m apart (default: their initial distance): body1/body2
        with point1/point2 (inertial, m, initial configuration), or marker1/marker2."""
        return self._add("joints", name, type="distance", body1=body1, body2=body2,
                         point1=point1, point2=point2, length=length, marker1=marker1,
                         marker2=marker2)

    def driver(self, name: str, joint: str, motion: dict) -> str:
        """Prescribes the coordinate of revolute or prismatic `joint` as f(t): `polynomial`,
        `harmonic`, `motion_table` or `expression` (rad or m; joints in the `at` form start
        at 0)."""
        return self._add("joints", name, type="driver", joint=joint, motion=motion)

    # -- forces --
    def load(self, name: str, body: str, *, point: Vector | None = None,
             force: Vector | None = None, torque: Vector | None = None, table=None) -> str:
        """A force N and torque N·m, inertial, on `body` at `point` (m, body frame); or
        `table` rows [t, fx, fy, fz, tx, ty, tz], linearly interpolated."""
        return self._add("forces", name, type="load", body=body, point=point, force=force,
                         torque=torque, table=table)

    def spring_damper(self, name: str, *, stiffness: float, damping: float | None = None,
                      free_length: float | None = None, body1: str | None = None,
                      point1: Vector | None = None, body2: str | None = None,
                      point2: Vector | None = None, marker1: str | None = None,
                      marker2: str | None = None) -> str:
        """F = stiffness·(ℓ − free_length) + damping·ℓ̇ (N/m, N·s/m, m; tension positive)
        between body1's point1 and body2's point2 (body frame; the ground's: inertial) or two
        markers; free_length defaults to the initial distance."""
        return self._add("forces", name, type="spring_damper", body1=body1, point1=point1,
                         body2=body2, point2=point2, marker1=marker1, marker2=marker2,
                         stiffness=stiffness, damping=damping, free_length=free_length)

    def torsional_spring_damper(self, name: str, joint: str, *, stiffness: float,
                                damping: float | None = None,
                                rest_angle: float | None = None) -> str:
        """Moment −stiffness·(θ − rest_angle) − damping·θ̇ about revolute `joint`'s z1 on its
        body 2 (N·m/rad, N·m·s/rad, rad)."""
        return self._add("forces", name, type="torsional_spring_damper", joint=joint,
                         stiffness=stiffness, damping=damping, rest_angle=rest_angle)

    # -- outputs --
    def sensor(self, name: str, type: str, **keys) -> str:
        """A sensor `[sensors.NAME]`: type "marker" (marker, or body and at), "distance"
        (marker1/marker2, or body1/point1, body2/point2), "angle" (marker1/marker2, or
        body1/body2 and axis); points and axes inertial at t = 0 (m)."""
        return self._add("sensors", name, type=type, **keys)

    # -- co-simulation --
    def interface_point(self, name: str, body: str, *, position: Vector | None = None,
                        axis: Vector | None = None, x_axis: Vector | None = None,
                        orientation: dict | None = None) -> str:
        """Where a flexible body attaches: position m and axes in `body`'s frame."""
        return self._add("interface_points", name, body=body, position=position, axis=axis,
                         x_axis=x_axis, orientation=orientation)

    def flex_body(self, name: str, **keys) -> str:
        """A flexible body; its keys are the flexible solver's, documented in
        src/rbcosim/flex/README.md (and validated by it when the scenario is built)."""
        return self._add("flex_bodies", name, **keys)

    def coupling(self, name: str, point: str, flex_body: str, *,
                 tolerances: dict | None = None, on_violation: str | None = None,
                 wrench_frame: str | None = None,
                 grounded_reference: Vector | None = None) -> str:
        """A rigid–flexible joint: interface `point` ↔ `flex_body`; tolerances {position m,
        rotation rad, velocity m/s, angular_velocity rad/s}; on_violation record/warn/stop;
        wrench_frame inertial/body; grounded_reference m, inertial."""
        return self._add("couplings", name, point=point, flex_body=flex_body,
                         tolerances=tolerances, on_violation=on_violation,
                         wrench_frame=wrench_frame, grounded_reference=grounded_reference)

    # -- generators and settings --
    def chain(self, *, links: int, link_length: float | None = None,
              link_mass: float | None = None, initial_angle_deg: float | None = None) -> None:
        """[generators.chain]: an N-link pendulum of uniform rods (m, kg, degrees)."""
        self._add("generators", "chain", links=links, link_length=link_length,
                  link_mass=link_mass, initial_angle_deg=initial_angle_deg)

    def solver(self, *, formulation: str | None = None, integrator: str | None = None,
               dt: float | None = None, t_end: float | None = None,
               output_every: int | None = None, projection: bool | None = None,
               baumgarte: Vector | None = None, rtol: float | None = None,
               atol: float | None = None, reactions: bool | None = None,
               joint_coordinates: bool | None = None,
               accelerations: bool | None = None) -> None:
        """[solver] settings (s, 1/s); a later call overrides the keys it gives."""
        self._raw.setdefault("solver", {}).update(_table(
            formulation=formulation, integrator=integrator, dt=dt, t_end=t_end,
            output_every=output_every, projection=projection, baumgarte=baumgarte, rtol=rtol,
            atol=atol, reactions=reactions, joint_coordinates=joint_coordinates,
            accelerations=accelerations))

    def cosim(self, *, macro_step: float | None = None, micro_steps: int | None = None,
              scheme: str | None = None, extrapolation: int | None = None,
              tolerance: float | None = None, max_iterations: int | None = None,
              added_mass: bool | None = None) -> None:
        """[cosim] settings (macro step s); a later call overrides the keys it gives."""
        self._raw.setdefault("cosim", {}).update(_table(
            macro_step=macro_step, micro_steps=micro_steps, scheme=scheme,
            extrapolation=extrapolation, tolerance=tolerance, max_iterations=max_iterations,
            added_mass=added_mass))

    # -- results --
    def tables(self) -> dict:
        """A copy of the scenario's tables, as `tomllib` would read them from `to_toml()`."""
        return copy.deepcopy(self._raw)

    def scenario(self, **solver) -> Scenario:
        """The validated Scenario (ScenarioError naming element and key); keyword arguments
        are [solver] settings, as for `solver()`."""
        if solver:
            self.solver(**solver)
        return build_scenario(self.tables(), source=self.source, base_dir=self.base_dir)

    def to_toml(self, path: str | Path | None = None) -> str:
        """The scenario file's text (validated first); also written to `path` if given."""
        self.scenario()
        text = to_toml(self._raw)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def _add(self, section: str, name: str, **keys) -> str:
        _insert(self._raw.setdefault(section, {}), name, section, self.source, _table(**keys))
        return name


def _insert(tables: dict, name: str, path: str, source: str, table: dict) -> None:
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{source}: {path}: expected a non-empty string name, got {name!r}")
    if name in tables:
        raise ScenarioError(f"{source}: {path}.{name}: defined twice")
    tables[name] = table


def _table(**keys) -> dict:
    """The keys that are not None, as plain TOML-like values."""
    return {k: _plain(v) for k, v in keys.items() if v is not None}


def _plain(value):
    """numpy arrays and scalars, tuples -> Python lists, floats, ints, bools (as tomllib reads)."""
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
