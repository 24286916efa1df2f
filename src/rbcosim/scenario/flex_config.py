"""Build a FlexModel from a scenario table (a plain dict parsed from TOML).

Beam (``kind = "beam"``)::

    kind = "beam"; attachment = "floating"          # or "grounded"
    length = 1.0; youngs_modulus = 2.1e11; density = 7850.0
    section = "square"; width = 0.01                # or "rectangle" (width along y, height
                                                    # along z), "circle" (diameter), or give
                                                    # area, second_moment_y [, second_moment_z,
                                                    # torsion_constant]
    shear_modulus = 8.1e10                          # or poissons_ratio (default 0.3)
    elements = 10; modes = 4; planar = true
    damping = { modal_ratio = 0.0 }                 # or { rayleigh = [alpha, beta] }
    output_nodes = { tip = "end" }                  # "end", node index, or coordinate (m)
    axis_in_point_frame = [1.0, 0.0, 0.0]           # beam axis in the interface point frame
    geometric_stiffening = false                    # floating: stiffening by the inertial
                                                    # axial load (spinning beams)

Matrices (``kind = "matrices"``)::

    kind = "matrices"; attachment = "grounded"      # or "floating" (file only, with node
                                                    # positions and DOF labels)
    file = "two_mass_flex.npz"                      # relative to the scenario file, or
    files = { M = "m.mtx", K = "k.mtx", C = "c.mtx" } # plus n_boundary, boundary_dofs
    modes = 1                                       # default: all interior coordinates
    damping = { modal_ratio = 0.02 }                # added to the file's C

Unknown, missing or ill-typed keys raise ScenarioError("{where}.{key}: expected ..., got ...").
The numbers may be expressions of the scenario's [parameters], resolved by the scenario
reader (``resolve_numbers``) before this module reads them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.matrices_io import check_floating, load_mtx, load_npz
from rbcosim.flex.modelling.beam import COMPONENT_NAMES
from rbcosim.flex.modelling.interface_nodes import Interface, InterfaceError
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.scenario.flex_chord_config import chord_model_from_config
from rbcosim.scenario.flex_keys import check_keys as _check_keys
from rbcosim.scenario.flex_keys import finite_number as _finite_number
from rbcosim.scenario.flex_keys import integer as _integer
from rbcosim.scenario.flex_keys import number as _number
from rbcosim.scenario.flex_keys import section as _section

_BEAM_KEYS = {
    "kind",
    "attachment",
    "length",
    "youngs_modulus",
    "density",
    "section",
    "width",
    "height",
    "diameter",
    "area",
    "second_moment_y",
    "second_moment_z",
    "torsion_constant",
    "shear_modulus",
    "poissons_ratio",
    "elements",
    "modes",
    "planar",
    "damping",
    "output_nodes",
    "axis_in_point_frame",
    "geometric_stiffening",
    "frame",
}
_MATRIX_KEYS = {
    "kind",
    "attachment",
    "file",
    "files",
    "n_boundary",
    "boundary_dofs",
    "modes",
    "damping",
    "source",
    "units",
    "interfaces",
    "output_nodes",
}
#: Keys of a structure read straight from an FE code's files (``source``).
_SOURCE_KEYS = ("units", "interfaces", "output_nodes")


#: Keys whose values are numbers (or lists of numbers), by path inside a flexible body's table.
NUMBER_KEYS = ("length", "youngs_modulus", "density", "width", "height", "diameter", "area",
               "second_moment_y", "second_moment_z", "torsion_constant", "shear_modulus",
               "poissons_ratio", "elements", "modes", "n_boundary", "axis_in_point_frame",
               "damping.modal_ratio", "damping.rayleigh")
#: Of those, the counts (an expression must give a whole number).
_COUNT_KEYS = ("elements", "modes", "n_boundary")


def resolve_numbers(cfg: Any, number: Callable[[str, str], float]) -> Any:
    """A copy of a flexible body's table with the strings at NUMBER_KEYS (also inside their
    lists) replaced by number(key path, text): the scenario's expressions of its parameters."""
    if not isinstance(cfg, dict):
        return cfg
    out = copy.deepcopy(cfg)
    for key in NUMBER_KEYS:
        *parents, last = key.split(".")
        table = out
        for part in parents:
            table = table.get(part) if isinstance(table, dict) else None
        if not isinstance(table, dict) or last not in table:
            continue
        value = table[last]
        if isinstance(value, list):
            table[last] = [number(f"{key}[{i}]", x) if isinstance(x, str) else x
                           for i, x in enumerate(value)]
        elif isinstance(value, str):
            x = number(key, value)
            table[last] = int(x) if key in _COUNT_KEYS and x.is_integer() else x
    return out


def flex_model_from_config(cfg: dict, base_dir: Path, where: str,
                           interfaces: Sequence[Interface] = (Interface(),)) -> FlexModel:
    """FlexModel from ``cfg`` coupled at ``interfaces`` (one per coupling, in order; default one
    clamp at node 0); file paths are relative to ``base_dir``; ``where`` prefixes errors. A
    beam with ``frame = "chord"`` gives a :class:`~rbcosim.flex.modelling.chord.ChordModel` (its two
    pins are checked with the scenario's couplings, :mod:`rbcosim.scenario.chord_spring`)."""
    if not isinstance(cfg, dict):
        raise ScenarioError(f"{where}: expected a table, got {type(cfg).__name__}")
    kind = cfg.get("kind")
    if kind == "beam" and cfg.get("frame") == "chord":
        return chord_model_from_config(cfg, where)
    try:
        if kind == "beam":
            return _beam(cfg, where, interfaces)
        if kind == "matrices":
            return _matrices(cfg, Path(base_dir), where, interfaces)
    except InterfaceError as exc:
        raise ScenarioError(str(exc)) from None
    raise ScenarioError(f"{where}.kind: expected 'beam' or 'matrices', got {kind!r}")


def _attachment(cfg, where, default) -> str:
    v = cfg.get("attachment", default)
    if v not in ("grounded", "floating"):
        raise ScenarioError(f"{where}.attachment: expected 'grounded' or 'floating', got {v!r}")
    return v


def _damping(cfg, where) -> dict[str, Any]:
    d = cfg.get("damping", {})
    w = f"{where}.damping"
    if not isinstance(d, dict):
        raise ScenarioError(
            f"{w}: expected a table {{ modal_ratio = ... }} or "
            f"{{ rayleigh = [alpha, beta] }}, got {d!r}"
        )
    _check_keys(d, {"modal_ratio", "rayleigh"}, w)
    out: dict[str, Any] = {}
    if "modal_ratio" in d:
        r = d["modal_ratio"]
        values = r if isinstance(r, list) else [r]
        if not values or any(not _finite_number(x) or x < 0 for x in values):
            raise ScenarioError(
                f"{w}.modal_ratio: expected a number >= 0 or a list of them, got {r!r}"
            )
        out["modal_damping_ratio"] = [float(x) for x in values] if isinstance(r, list) else float(r)
    if "rayleigh" in d:
        r = d["rayleigh"]
        if (
            not isinstance(r, list)
            or len(r) != 2
            or any(not _finite_number(x) or x < 0 for x in r)
        ):
            raise ScenarioError(
                f"{w}.rayleigh: expected [alpha, beta], two numbers >= 0, got {r!r}"
            )
        out["rayleigh"] = (float(r[0]), float(r[1]))
    return out


def _shear_modulus(cfg: dict, where: str, youngs_modulus: float) -> float:
    """G, Pa: ``shear_modulus``, or from ``poissons_ratio`` (default 0.3)."""
    if "shear_modulus" in cfg and "poissons_ratio" in cfg:
        raise ScenarioError(
            f"{where}.poissons_ratio: give shear_modulus or poissons_ratio, not both"
        )
    g = _number(cfg, "shear_modulus", where, required=False)
    if g is None:
        nu = _number(cfg, "poissons_ratio", where, positive=False, default=0.3)
        if not -1.0 < nu < 0.5:
            raise ScenarioError(
                f"{where}.poissons_ratio: expected a number in (-1, 0.5), got {nu!r}"
            )
        g = youngs_modulus / (2 * (1 + nu))
    return g


def _beam(cfg: dict, where: str, interfaces: Sequence[Interface]) -> FlexModel:
    _check_keys(cfg, _BEAM_KEYS, where)
    if cfg.get("frame", "node") != "node":  # "chord": rbcosim.scenario.flex_chord_config
        raise ScenarioError(f"{where}.frame: expected 'node' or 'chord', got "
                            f"{cfg.get('frame')!r}")
    attachment = _attachment(cfg, where, "floating")
    length = _number(cfg, "length", where)
    e = _number(cfg, "youngs_modulus", where)
    rho = _number(cfg, "density", where)
    section = _section(cfg, where)
    g = _shear_modulus(cfg, where, e)
    elements = _integer(cfg, "elements", where, minimum=1)
    modes = _integer(cfg, "modes", where, minimum=0)
    planar = cfg.get("planar", True)
    if not isinstance(planar, bool):
        raise ScenarioError(f"{where}.planar: expected true or false, got {planar!r}")
    per_node = 3 if planar else 6
    if modes > per_node * elements:
        raise ScenarioError(
            f"{where}.modes: expected at most {per_node * elements} (interior "
            f"DOFs of {elements} elements), got {modes}"
        )
    outputs = cfg.get("output_nodes", {})
    if not isinstance(outputs, dict):
        raise ScenarioError(
            f"{where}.output_nodes: expected a table name = 'end' | node index "
            f"| coordinate, got {outputs!r}"
        )
    axis = cfg.get("axis_in_point_frame", [1.0, 0.0, 0.0])
    if (
        not isinstance(axis, list)
        or len(axis) != 3
        or any(not _finite_number(x) for x in axis)
        or math.hypot(*axis) < 1e-12
    ):
        raise ScenarioError(
            f"{where}.axis_in_point_frame: expected a non-zero vector of 3 numbers, got {axis!r}"
        )
    stiffening = cfg.get("geometric_stiffening", False)
    if not isinstance(stiffening, bool):
        raise ScenarioError(
            f"{where}.geometric_stiffening: expected true or false, got {stiffening!r}")
    if stiffening and attachment != "floating":
        raise ScenarioError(f"{where}.geometric_stiffening: only for attachment = 'floating' "
                            f"(got attachment = {attachment!r})")
    damping = _damping(cfg, where)
    if isinstance(damping.get("modal_damping_ratio"), list) and len(
        damping["modal_damping_ratio"]
    ) not in (1, modes):
        raise ScenarioError(
            f"{where}.damping.modal_ratio: expected 1 or {modes} (modes) values, "
            f"got {len(damping['modal_damping_ratio'])}"
        )
    try:
        return FlexModel.from_beam(
            length,
            e,
            rho,
            section["area"],
            section["second_moment_y"],
            n_elements=elements,
            n_modes=modes,
            second_moment_z=section["second_moment_z"],
            torsion_constant=section["torsion_constant"],
            shear_modulus=g,
            planar=planar,
            attachment=attachment,
            output_nodes=outputs,
            axis_in_point_frame=[float(x) for x in axis],
            geometric_stiffening=stiffening,
            interfaces=interfaces,
            **damping,
        )
    except (ScenarioError, InterfaceError):
        raise
    except ValueError as exc:
        raise ScenarioError(f"{where}.{exc}") from exc


def _matrices(cfg: dict, base_dir: Path, where: str,
              interfaces: Sequence[Interface]) -> FlexModel:
    _check_keys(cfg, _MATRIX_KEYS, where)
    attachment = _attachment(cfg, where, "grounded")
    if attachment == "floating" and "files" in cfg:
        raise ScenarioError(
            f"{where}.files: a floating body needs node positions and DOF labels: convert the "
            f"matrices to one .npz file (`rbcosim convert-structure`) and give file = '*.npz'"
        )
    if ("file" in cfg) + ("files" in cfg) + ("source" in cfg) != 1:
        raise ScenarioError(
            f"{where}.file: expected exactly one of file = '*.npz', "
            f"files = {{ M = ..., K = ..., C = ... }} or source = {{ from = 'calculix', "
            f"inp = '*.inp' }}"
        )
    given = [k for k in _SOURCE_KEYS if k in cfg]
    if given and "source" not in cfg:
        raise ScenarioError(f"{where}.{given[0]}: only with source = {{ from = ..., ... }} (a "
                            f"structure read from an FE code's files)")
    if "source" in cfg:
        return _from_source(cfg, base_dir, where, interfaces, attachment)
    n_b = cfg.get("n_boundary")
    if n_b is not None and (isinstance(n_b, bool) or not isinstance(n_b, int) or n_b < 1):
        raise ScenarioError(f"{where}.n_boundary: expected an integer >= 1, got {n_b!r}")
    names = cfg.get("boundary_dofs")
    if names is not None and (
        not isinstance(names, list) or any(s not in COMPONENT_NAMES for s in names)
    ):
        raise ScenarioError(
            f"{where}.boundary_dofs: expected a list of names out of "
            f"{list(COMPONENT_NAMES)}, got {names!r}"
        )
    structure = _structure_file(cfg, base_dir, where, attachment, n_b, names)
    n_interior = structure.mass.shape[0] - structure.n_boundary
    modes = _integer(cfg, "modes", where, minimum=0, default=n_interior)
    if "modes" not in cfg:
        modes = None  # all interior coordinates, with released boundary coordinates among them
    elif modes > n_interior:
        raise ScenarioError(
            f"{where}.modes: expected at most {n_interior} (interior coordinates), got {modes}"
        )
    damping = _damping(cfg, where)
    try:
        return FlexModel.from_matrices(structure, n_modes=modes, interfaces=interfaces,
                                       attachment=attachment,
                                       **damping)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc


def _structure_file(cfg: dict, base_dir: Path, where: str, attachment: str, n_b, names):
    """The StructureMatrices of ``file = "*.npz"`` or ``files = { M = ..., K = ... }``,
    checked against the table's ``n_boundary`` and ``boundary_dofs``."""
    try:
        if "file" in cfg:
            f = cfg["file"]
            if not isinstance(f, str) or not f.endswith(".npz"):
                raise ScenarioError(f"{where}.file: expected a path to a .npz file, got {f!r}")
            if not (base_dir / f).is_file():
                raise ScenarioError(f"{where}.file: {f}: file not found "
                                    f"({(base_dir / f).resolve()})")
            structure = load_npz(base_dir / f)
            if attachment == "floating":
                check_floating(Path(f).name, structure)
            if n_b is not None and n_b != structure.n_boundary:
                raise ScenarioError(
                    f"{where}.n_boundary: {n_b} disagrees with the file "
                    f"{f} ({structure.n_boundary})"
                )
            if names is not None and tuple(names) != structure.boundary_dofs:
                raise ScenarioError(
                    f"{where}.boundary_dofs: {names} disagrees with the file "
                    f"{f} ({list(structure.boundary_dofs)})"
                )
        else:
            files = cfg["files"]
            if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
                raise ScenarioError(
                    f"{where}.files: expected a table {{ M = 'm.mtx', "
                    f"K = 'k.mtx', C = 'c.mtx' }}, got {files!r}"
                )
            if n_b is None:
                raise ScenarioError(f"{where}.n_boundary: missing (required with files)")
            for key, name in files.items():
                if not (base_dir / name).is_file():
                    raise ScenarioError(f"{where}.files.{key}: {name}: file not found "
                                        f"({(base_dir / name).resolve()})")
            structure = load_mtx({k: base_dir / v for k, v in files.items()}, n_b, names)
    except ScenarioError as exc:
        msg = str(exc)
        raise ScenarioError(msg if msg.startswith(where) else f"{where}: {msg}") from exc
    return structure


def _from_source(cfg: dict, base_dir: Path, where: str, interfaces: Sequence[Interface],
                 attachment: str) -> FlexModel:
    """A body read from an FE code's files (``source``): grounded, reduced once and cached
    beside the source (:func:`rbcosim.flex.io.fe_import.cached_reduction`); floating, the
    physical structure clamped at its one interface node."""
    from rbcosim.flex.io.fe_import import cached_reduction, import_structure, parse_interface
    from rbcosim.flex.io.readers import read_fe_model

    source = cfg["source"]
    if (not isinstance(source, dict) or not isinstance(source.get("from"), str)
            or not all(isinstance(v, str) for v in source.values())):
        raise ScenarioError(f"{where}.source: expected a table {{ from = 'calculix', inp = "
                            f"'job.inp' }} of file names, got {source!r}")
    fmt = source["from"]
    files = {k: base_dir / v for k, v in source.items() if k != "from"}
    specs = cfg.get("interfaces")
    if not isinstance(specs, list) or not specs:
        raise ScenarioError(f"{where}.interfaces: expected a list of interface nodes, e.g. "
                            f"[{{ tie = 'rigid', set = 'FIX' }}] or [{{ node = 12 }}]")
    specs = [parse_interface(s, f"{where}.interfaces[{i}]") for i, s in enumerate(specs)]
    outputs = cfg.get("output_nodes", {})
    if not isinstance(outputs, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in outputs.values()):
        raise ScenarioError(f"{where}.output_nodes: expected {{ name = FE node number }}, got "
                            f"{outputs!r}")
    units = cfg.get("units", "m-kg-s")
    damping = _damping(cfg, where)
    try:
        if attachment == "grounded":
            modes = _integer(cfg, "modes", where, minimum=1)
            structure = cached_reduction(fmt, files, specs, units=units, outputs=outputs,
                                         modes=modes, where=where)
            modes = None
        else:
            structure = import_structure(read_fe_model(fmt, files, f"{where}.source"), specs,
                                         units=units, outputs=outputs,
                                         where=f"{where}.interfaces")
            modes = _integer(cfg, "modes", where, minimum=0) if "modes" in cfg else None
        return FlexModel.from_matrices(structure, n_modes=modes, interfaces=interfaces,
                                       attachment=attachment, **damping)
    except ScenarioError:
        raise
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc
