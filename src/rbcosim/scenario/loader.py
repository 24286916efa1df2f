"""Scenario files (TOML) -> Scenario: the model, solver and co-simulation settings.

The format is documented key by key in docs/scenario-format.md. Overrides use dotted key
paths (`--set bodies.link1.mass=2`); the value is parsed as TOML, else taken as a string
(an expression of the [parameters], see rbcosim.scenario.parameters).
"""

from __future__ import annotations

import copy
import difflib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rbcosim.errors import ScenarioError, UnknownKeyError
from rbcosim.maximal.integrators import INTEGRATOR_NAMES
from rbcosim.model import (
    JOINT_KINDS,
    BodyLoad,
    InterfacePoint,
    Joint,
    Marker,
    Model,
    Motion,
    SpringDamper,
    TorsionalSpringDamper,
    frozen_array,
)
from rbcosim.scenario.assembly import JointStart, assemble, read_start
from rbcosim.scenario.bodies import read_bodies
from rbcosim.scenario.chord_spring import chord_springs
from rbcosim.scenario.contact import CONTACT_KINDS, check_planar, contact_joint, planar_normal
from rbcosim.scenario.couplings import read_interface
from rbcosim.scenario.flex_config import resolve_numbers
from rbcosim.scenario.frames import read_axes
from rbcosim.scenario.nesting import NestingError, check_nesting, loads_toml
from rbcosim.scenario.parameters import Parameters
from rbcosim.scenario.particles import check_point_masses
from rbcosim.scenario.reader import TYPO_RATIO, TableReader
from rbcosim.scenario.sensors import read_sensors
from rbcosim.sensors import Sensor
from rbcosim.settings import (
    FORMULATIONS,
    SCHEMES,
    VIOLATION_ACTIONS,
    CosimSettings,
    Coupling,
    SolverSettings,
)

#: Most coupling iterations per macro step a scenario may ask for.
MAX_ITERATIONS = 10_000
#: Most links a [generators.chain] may have (the run limits then apply to its bodies).
MAX_LINKS = 1_000_000


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario. `raw` is the TOML data after overrides (for re-export and FMUs)."""

    source: str
    base_dir: Path
    raw: dict
    model: Model
    solver: SolverSettings
    cosim: CosimSettings
    couplings: tuple[Coupling, ...] = ()
    flex_bodies: dict = field(default_factory=dict)
    title: str = ""
    sensors: tuple[Sensor, ...] = ()


# --- loading ---------------------------------------------------------------------------------

def load_scenario(path, overrides: dict[str, str] | list[str] | None = None) -> Scenario:
    """Read a scenario file and apply `--set`-style overrides."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such scenario file")
    return load_scenario_text(path.read_text(encoding="utf-8"), source=str(path),
                              base_dir=path.parent, overrides=overrides)


def load_scenario_text(text: str, *, source: str = "<inline>", base_dir=".",
                       overrides: dict[str, str] | list[str] | None = None) -> Scenario:
    """Parse scenario TOML text; `source` names it in error messages."""
    raw = loads_toml(text, source)
    parsed = parse_overrides(overrides or {}, source)
    created = created_tables(raw, parsed)
    raw = apply_overrides(raw, parsed, source)
    try:
        return build_scenario(raw, source=source, base_dir=Path(base_dir))
    except ScenarioError as exc:
        missing = getattr(exc, "missing", None)
        for key, (path, siblings) in created.items():
            if missing is not None and missing.startswith(path + "."):
                parent, _, name = path.rpartition(".")
                close = difflib.get_close_matches(name, siblings, n=1, cutoff=TYPO_RATIO)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise UnknownKeyError(f"{source}: --set {key}: unknown key {name!r} in "
                                    f"{parent or 'the scenario'}{hint}; the table it would "
                                    f"create lacks {missing}") from None
        raise


def created_tables(raw: dict, overrides: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    """--set key -> (dotted path of the first table it creates, the names beside it) for the
    overrides whose path leaves the scenario's tables (a new table, or a misspelled name)."""
    out = {}
    for key in overrides:
        parts, table = key.split("."), raw
        for depth, part in enumerate(parts[:-1]):
            if not isinstance(table, dict):
                break
            if part not in table:
                out[key] = (".".join(parts[: depth + 1]), list(table))
                break
            table = table[part]
    return out


def split_overrides(overrides: list[str], source: str) -> dict[str, str]:
    """KEY=VALUE strings -> {dotted key: value text}, both stripped."""
    items = {}
    for item in overrides:
        if "=" not in item:
            raise ScenarioError(f"{source}: --set {item!r}: expected KEY=VALUE, "
                                "e.g. bodies.link1.mass=2")
        key, value = item.split("=", 1)
        items[key.strip()] = value.strip()
    return items


def parse_overrides(overrides: dict[str, str] | list[str], source: str) -> dict[str, Any]:
    """KEY=VALUE strings (or a dict of strings) -> {dotted key: parsed value}."""
    items = overrides if isinstance(overrides, dict) else split_overrides(overrides, source)
    parsed = {}
    for key, value in items.items():
        if not isinstance(value, str):
            parsed[key] = value
            continue
        try:
            parsed[key] = loads_toml(f"v = {value}", f"{source}: --set {key}")["v"]
        except NestingError:
            raise
        except ScenarioError:
            parsed[key] = value  # not a TOML value: the text itself
    for key, value in parsed.items():
        check_nesting(value, f"{source}: --set {key}", depth=len(key.split(".")))
    return parsed


def apply_overrides(raw: dict, overrides: dict[str, Any], source: str) -> dict:
    """A copy of `raw` with each dotted key set; intermediate tables are created."""
    raw = copy.deepcopy(raw)
    for key, value in overrides.items():
        parts = key.split(".")
        if not all(parts):
            raise ScenarioError(f"{source}: --set {key}: empty part in dotted key")
        table = raw
        for depth, part in enumerate(parts[:-1]):
            node = table.setdefault(part, {})
            if not isinstance(node, dict):
                where = ".".join(parts[: depth + 1])
                raise ScenarioError(f"{source}: --set {key}: {where} is a value, not a table")
            table = node
        table[parts[-1]] = value
    return raw


def scalar_parameters(raw: dict, prefix: str = "") -> dict[str, float]:
    """Every numeric scalar of the scenario by dotted key (FMU parameters, `--set` targets)."""
    out = {}
    for key, value in raw.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(scalar_parameters(value, path))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[path] = float(value)
    return out


# --- building --------------------------------------------------------------------------------

def _chain_tables(n: int, length: float, mass: float, angle: float) -> dict:
    """Raw bodies and joints of an n-link chain of uniform rods (length m, mass kg) hanging
    from the origin at `angle` rad from the downward vertical, swinging about Y."""
    bodies, joints = {}, {}
    direction = np.array([np.sin(angle), 0.0, -np.cos(angle)])
    top = np.zeros(3)
    inertia = mass * length**2 / 12
    for k in range(1, n + 1):
        centre = top + 0.5 * length * direction
        bodies[f"link{k}"] = {
            "mass": mass, "inertia": [inertia, inertia, 1e-6 * inertia],
            "position": centre.tolist(),
            "orientation": {"axis": [0.0, 1.0, 0.0], "angle": -angle},
        }
        joints[f"hinge{k}"] = {"type": "revolute", "body1": "ground" if k == 1 else f"link{k-1}",
                               "body2": f"link{k}", "at": top.tolist(), "axis": [0.0, 1.0, 0.0]}
        top = top + length * direction
    return {"bodies": bodies, "joints": joints}


class _Builder:
    def __init__(self, raw: dict, source: str, base_dir: Path):
        self.source, self.base_dir = source, base_dir
        self.parameters = Parameters(source, raw.get("parameters", {}))
        self.root = TableReader(source, "", raw, self.parameters)
        self.root.raw("parameters", {})
        self.starts: list[JointStart] = []

    def body_ref(self, r: TableReader, key: str) -> int:
        name = r.string(key)
        if name not in self.index:
            raise r.error(key, f"no body {name!r}; valid names: {list(self.index)}")
        return self.index[name]

    def marker_from_inertial(self, body: int, at: np.ndarray, axes_inertial: np.ndarray) -> Marker:
        """Marker on `body` at an inertial point/axes in the initial configuration."""
        r, R = self.pose[body]
        return Marker(body, frozen_array(R.T @ (at - r)), frozen_array(R.T @ axes_inertial))

    def marker_ref(self, r: TableReader, key: str) -> Marker:
        name = r.string(key)
        if name not in self.markers:
            raise r.error(key, f"no marker {name!r}; valid names: {sorted(self.markers)}")
        return self.markers[name]

    # -- sections --
    def read_bodies(self) -> None:
        """[bodies] and [ground]: bodies, their names, centre-of-mass offsets, markers, poses."""
        t = read_bodies(self.root)
        self.bodies, self.index, self.com_offset = t.bodies, t.index, t.com_offset
        self.markers, self.pose, self.particles = t.markers, t.pose, t.particles

    def read_chain_generator(self) -> dict | None:
        """[generators.chain]: the bodies and joints of an N-link pendulum of uniform rods
        hanging from the origin, as raw tables (None without a generator)."""
        if not self.root.has("generators"):
            return None
        generated = None
        gens = self.root.sub("generators")
        if gens.has("chain"):
            c = gens.sub("chain")
            n = c.number("links", integer=True, positive=True, maximum=MAX_LINKS)
            length = c.number("link_length", 0.1, positive=True)
            mass = c.number("link_mass", 0.1, positive=True)
            angle = np.radians(c.number("initial_angle_deg", 30.0))
            c.finish()
            generated = _chain_tables(n, length, mass, angle)
        gens.finish()
        return generated


    def read_joints(self) -> list[Joint]:
        joints: list[Joint] = []
        names: dict[str, int] = {}
        pending_drivers = []
        for name, r in self.root.items("joints"):
            kind = r.string("type", choices=JOINT_KINDS)
            start = read_start(r, kind, len(joints))
            if start is not None:
                self.starts.append(start)
            if kind == "driver":
                pending_drivers.append((name, r))
                continue
            if kind in CONTACT_KINDS:
                names[name] = len(joints)
                joints.append(contact_joint(self, name, r))
                continue
            m1, m2 = self.distance_markers(r) if kind == "distance" else self.joint_markers(r)
            if m1.body == m2.body:
                raise r.error("body2", "a joint must connect two different bodies")
            length = self.distance_length(r, m1, m2) if kind == "distance" else 0.0
            r.finish()
            names[name] = len(joints)
            joints.append(Joint(name, kind, m1, m2, length=length))
        for name, r in pending_drivers:
            target_name = r.string("joint")
            if target_name not in names:
                raise r.error("joint", f"no joint {target_name!r}; valid names: {list(names)}")
            target = joints[names[target_name]]
            if target.kind not in ("revolute", "prismatic"):
                raise r.error("joint", f"a driver needs a revolute or prismatic joint, "
                                       f"{target_name!r} is {target.kind}")
            motion = self.motion(r.sub("motion"))
            r.finish()
            joints.append(Joint(name, "driver", target.marker1, target.marker2,
                                driven_joint=names[target_name], motion=motion))
        self.joint_names = names
        return joints

    def distance_markers(self, r: TableReader) -> tuple[Marker, Marker]:
        """A distance joint's two attachment points: marker1/marker2, or body1/body2 with
        point1/point2 (inertial, m, initial configuration); the one-point `at` form would put
        both ends together (length 0), so it is refused."""
        if r.has("at"):
            raise r.error("at", "a distance joint needs two attachment points: give point1 and "
                                "point2 (inertial positions, m) instead of at, or marker1/marker2")
        if r.has("marker1") or r.has("marker2"):
            return self.marker_ref(r, "marker1"), self.marker_ref(r, "marker2")
        b1, b2 = self.body_ref(r, "body1"), self.body_ref(r, "body2")
        return (self.marker_from_inertial(b1, r.vector("point1", 3), np.eye(3)),
                self.marker_from_inertial(b2, r.vector("point2", 3), np.eye(3)))

    def distance_length(self, r: TableReader, m1: Marker, m2: Marker) -> float:
        """`length`, by default the attachment points' initial distance (which must be > 0)."""
        p1 = self.pose[m1.body][0] + self.pose[m1.body][1] @ m1.position
        p2 = self.pose[m2.body][0] + self.pose[m2.body][1] @ m2.position
        initial = float(np.linalg.norm(p2 - p1))
        if not r.has("length") and initial < 1e-12:
            raise r.error("length", "missing, and the attachment points coincide initially "
                                    "(a zero-length distance joint): give length > 0 m or "
                                    "attachment points apart")
        return r.number("length", initial, positive=True)

    def joint_markers(self, r: TableReader) -> tuple[Marker, Marker]:
        """marker1/marker2, or both at `at` with axes from `axis`/`x_axis`: inertial, or in the
        frame of marker `relative_to` (m, initial configuration)."""
        if r.has("marker1") or r.has("marker2"):
            return self.marker_ref(r, "marker1"), self.marker_ref(r, "marker2")
        b1, b2 = self.body_ref(r, "body1"), self.body_ref(r, "body2")
        at = r.vector("at", 3)
        axes = read_axes(r) if r.has("axis") else np.eye(3)
        if r.has("relative_to"):
            m = self.marker_ref(r, "relative_to")
            centre, R = self.pose[m.body]
            at, axes = centre + R @ (m.position + m.axes @ at), R @ m.axes @ axes
        return self.marker_from_inertial(b1, at, axes), self.marker_from_inertial(b2, at, axes)

    @staticmethod
    def motion(r: TableReader) -> Motion:
        kinds = [k for k in ("polynomial", "harmonic", "table", "expression") if r.has(k)]
        if len(kinds) != 1:
            raise r.error_at(r.path, "expected exactly one of polynomial = [c0, c1, ...], "
                                     "harmonic = {offset, amplitude, frequency, phase}, "
                                     "table = [[t, value], ...], expression = \"f(t)\"")
        kind = kinds[0]
        if kind == "polynomial":
            c = r.raw("polynomial")
            if isinstance(c, list) and any(isinstance(x, list) for x in c):
                raise r.error("polynomial", "expected a flat list of 1 to 10 numbers, got "
                                            "nested lists")
            coeffs = r.as_vector("polynomial", c, tuple(range(1, 11)))
            r.finish()
            return Motion("polynomial", tuple(coeffs))
        if kind == "harmonic":
            h = r.sub("harmonic")
            values = (h.number("offset", 0.0), h.number("amplitude"),
                      h.number("frequency", positive=True), h.number("phase", 0.0))
            h.finish()
            r.finish()
            return Motion("harmonic", values)
        if kind == "expression":
            text = r.string("expression")
            program = r.parameters.motion_program(r.key_path("expression"), text)
            r.finish()
            return Motion("expression", program=tuple(program.tolist()), text=text)
        rows = r.matrix_rows("table", 2)
        if np.any(np.diff(rows[:, 0]) <= 0) or len(rows) < 2:
            raise r.error("table", "expected at least two rows with strictly increasing times")
        r.finish()
        return Motion("table", times=tuple(rows[:, 0]), values=tuple(rows[:, 1]))

    def read_forces(self, joints: list[Joint]):
        loads, springs, torsion = [], [], []
        for name, r in self.root.items("forces"):
            kind = r.string("type", choices=("load", "spring_damper", "torsional_spring_damper"))
            if kind == "load":
                body = self.body_ref(r, "body")
                if body == 0:
                    raise r.error("body", "a load on the ground has no effect")
                name_b = self.bodies[body - 1].name
                point = r.vector("point", 3, [0.0, 0.0, 0.0]) - self.com_offset[name_b]
                if r.has("table"):
                    rows = r.matrix_rows("table", 7)
                    if np.any(np.diff(rows[:, 0]) <= 0):
                        raise r.error("table", "expected strictly increasing times in column 1")
                    times, values = rows[:, 0], rows[:, 1:]
                else:
                    f = r.vector("force", 3, [0.0, 0.0, 0.0])
                    t = r.vector("torque", 3, [0.0, 0.0, 0.0])
                    times, values = np.zeros(1), np.concatenate([f, t])[None]
                loads.append(BodyLoad(name, body, frozen_array(point), frozen_array(times),
                                      frozen_array(values)))
            elif kind == "spring_damper":
                if r.has("marker1"):
                    m1, m2 = self.marker_ref(r, "marker1"), self.marker_ref(r, "marker2")
                else:
                    m1 = self._point_marker(r, "body1", "point1")
                    m2 = self._point_marker(r, "body2", "point2")
                p1 = self.pose[m1.body][0] + self.pose[m1.body][1] @ m1.position
                p2 = self.pose[m2.body][0] + self.pose[m2.body][1] @ m2.position
                if np.linalg.norm(p2 - p1) < 1e-12:
                    raise r.error_at(r.path, "the spring's end points coincide initially; "
                                             "its direction is undefined")
                springs.append(SpringDamper(
                    name, m1, m2, r.number("stiffness", nonnegative=True),
                    r.number("damping", 0.0, nonnegative=True),
                    r.number("free_length", float(np.linalg.norm(p2 - p1)), nonnegative=True)))
            else:
                jname = r.string("joint")
                if jname not in self.joint_names or joints[self.joint_names[jname]].kind != "revolute":
                    revolutes = [j.name for j in joints if j.kind == "revolute"]
                    raise r.error("joint", f"no revolute joint {jname!r}; valid names: {revolutes}")
                torsion.append(TorsionalSpringDamper(
                    name, self.joint_names[jname], r.number("stiffness", nonnegative=True),
                    r.number("damping", 0.0, nonnegative=True), r.number("rest_angle", 0.0)))
            r.finish()
        return loads, springs, torsion

    def _point_marker(self, r: TableReader, body_key: str, point_key: str) -> Marker:
        body = self.body_ref(r, body_key)
        name = "ground" if body == 0 else self.bodies[body - 1].name
        pos = r.vector(point_key, 3, [0.0, 0.0, 0.0]) - self.com_offset[name]
        return Marker(body, frozen_array(pos), frozen_array(np.eye(3)))

    def read_points(self) -> list[InterfacePoint]:
        points = []
        for name, r in self.root.items("interface_points"):
            body = self.body_ref(r, "body")
            if body == 0:
                raise r.error("body", "an interface point must sit on a moving body")
            bname = self.bodies[body - 1].name
            pos = r.vector("position", 3, [0.0, 0.0, 0.0]) - self.com_offset[bname]
            points.append(InterfacePoint(name, body, frozen_array(pos), frozen_array(read_axes(r))))
            r.finish()
        return points

    def read_solver(self) -> SolverSettings:
        s = self.root.sub("solver", {})
        d = SolverSettings()
        settings = SolverSettings(
            formulation=s.string("formulation", d.formulation, choices=FORMULATIONS),
            integrator=s.string("integrator", d.integrator, choices=INTEGRATOR_NAMES),
            dt=s.number("dt", d.dt, positive=True),
            t_end=s.number("t_end", d.t_end, positive=True),
            output_every=s.number("output_every", d.output_every, positive=True, integer=True),
            projection=s.boolean("projection", d.projection),
            baumgarte=tuple(s.vector("baumgarte", 2, list(d.baumgarte))),
            rtol=s.number("rtol", d.rtol, positive=True),
            atol=s.number("atol", d.atol, positive=True),
            reactions=s.boolean("reactions", d.reactions),
            joint_coordinates=s.boolean("joint_coordinates", d.joint_coordinates),
            accelerations=s.boolean("accelerations", d.accelerations),
        )
        if min(settings.baumgarte) < 0:
            raise s.error("baumgarte", "expected non-negative [alpha, beta]")
        s.finish()
        return settings

    def read_cosim(self) -> CosimSettings:
        c = self.root.sub("cosim", {})
        d = CosimSettings()
        settings = CosimSettings(
            macro_step=c.number("macro_step", d.macro_step, positive=True),
            micro_steps=c.number("micro_steps", d.micro_steps, positive=True, integer=True),
            scheme=c.string("scheme", d.scheme, choices=SCHEMES),
            extrapolation=c.number("extrapolation", d.extrapolation, integer=True, nonnegative=True),
            tolerance=c.number("tolerance", d.tolerance, positive=True),
            max_iterations=c.number("max_iterations", d.max_iterations, positive=True, integer=True,
                                    maximum=MAX_ITERATIONS),
            added_mass=c.boolean("added_mass", d.added_mass),
        )
        if settings.extrapolation > 2:
            raise c.error("extrapolation", f"expected 0, 1 or 2, got {settings.extrapolation}")
        c.finish()
        return settings

    def read_couplings(self, points: list[InterfacePoint], flex_names: list[str]) -> list[Coupling]:
        out = []
        point_names = [p.name for p in points]
        for name, r in self.root.items("couplings"):
            point = r.string("point")
            if point not in point_names:
                raise r.error("point", f"no interface point {point!r}; valid names: {point_names}")
            flex = r.string("flex_body")
            if flex not in flex_names:
                raise r.error("flex_body", f"no flexible body {flex!r}; valid names: {flex_names}")
            t = r.sub("tolerances", {})
            tol = np.array([t.number(k, np.inf, positive=True) for k in
                            ("position", "rotation", "velocity", "angular_velocity")])
            t.finish()
            reference = r.vector("grounded_reference", 3) if r.has("grounded_reference") else None
            out.append(Coupling(name, point, flex, frozen_array(tol),
                                r.string("on_violation", "record", choices=VIOLATION_ACTIONS),
                                r.string("wrench_frame", "inertial", choices=("inertial", "body")),
                                None if reference is None else frozen_array(reference),
                                *read_interface(r)))
            r.finish()
        return out


def _flex_number(parameters: Parameters, body: str, key: str, text: str) -> float:
    """Expression `text` at `key` of [flex_bodies.`body`]."""
    return parameters.number(f"flex_bodies.{body}.{key}", text)


def build_scenario(raw: dict, *, source: str = "<inline>", base_dir: Path = Path(".")) -> Scenario:
    """Validate raw TOML data and build the Scenario (raises ScenarioError)."""
    b = _Builder(raw, source, base_dir)
    title = b.root.string("title", "")
    generated = b.read_chain_generator()
    if generated is not None:
        for section in ("bodies", "joints"):
            if section in raw:
                raise b.root.error(section, "cannot be combined with [generators.chain]")
        read_so_far = b.root._read
        b.root = TableReader(source, "", {**raw, **generated}, b.parameters)
        b.root._read |= read_so_far
    b.read_bodies()
    world = b.root.sub("world", {})
    gravity = world.vector("gravity", 3, [0.0, 0.0, -9.81])
    planar = planar_normal(world)
    world.finish()
    joints = b.read_joints()
    loads, springs, torsion = b.read_forces(joints)
    points = b.read_points()
    sensors = read_sensors(b, b.root, {*b.index, *(j.name for j in joints)})
    flex = b.root.raw("flex_bodies", {})
    if not isinstance(flex, dict) or not all(isinstance(v, dict) for v in flex.values()):
        raise b.root.error("flex_bodies", "expected a table of named [flex_bodies.NAME] tables")
    flex = {name: resolve_numbers(cfg, functools.partial(_flex_number, b.parameters, name))
            for name, cfg in flex.items()}
    couplings = b.read_couplings(points, list(flex))
    springs += chord_springs(flex, couplings, points, source, b.base_dir)  # chord_spring
    bodies = assemble(b.bodies, joints, b.starts, frozenset(b.particles))
    model = Model(tuple(bodies), tuple(joints), tuple(loads), tuple(springs), tuple(torsion),
                  tuple(points), frozen_array(gravity), planar_normal=planar,
                  point_masses=tuple(sorted(b.particles)))
    if planar is not None:
        check_planar(model, world)
    check_point_masses(b, model)
    solver = b.read_solver()
    cosim = b.read_cosim()
    b.root.finish()
    return Scenario(source, base_dir, raw, model, solver, cosim, tuple(couplings), flex, title,
                    tuple(sensors))
