"""A chord-frame beam (``frame = "chord"``) from its [flex_bodies.NAME] table and couplings.

    kind = "beam"; attachment = "floating"; frame = "chord"
    length, youngs_modulus, density, section (or area, second_moment_y), elements, modes
    planar = true                      # the only choice: bending in the x–z plane
    output_nodes = { mid = 0.15 }      # "end", a node index or a coordinate along the chord (m)
    geometric_stiffening = true        # the bending modes stiffen by the axial force

and exactly two couplings, ``type = "pin"`` about ``axis = "y"``, the first at ``node = 0``
(the frame's origin A), the second at ``node = "end"`` (B). See :mod:`rbcosim.flex.modelling.chord`.
"""

from __future__ import annotations

from rbcosim.errors import ScenarioError
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.scenario import flex_keys as keys

FRAMES = ("node", "chord")

_KEYS = {"kind", "attachment", "frame", "length", "youngs_modulus", "density", "section",
         "width", "height", "diameter", "area", "second_moment_y", "second_moment_z",
         "torsion_constant", "elements", "modes", "planar", "output_nodes",
         "geometric_stiffening"}


def frame_of(cfg: dict, where: str) -> str:
    """The table's ``frame`` ("node", the default, or "chord")."""
    frame = cfg.get("frame", "node")
    if frame not in FRAMES:
        raise ScenarioError(f"{where}.frame: expected one of {list(FRAMES)}, got {frame!r}")
    return frame


def stretch_spring(cfg: dict, where: str) -> tuple[float, float]:
    """(EA/L N/m, L m): the chord's axial spring, which the rigid side carries."""
    length = keys.number(cfg, "length", where)
    modulus = keys.number(cfg, "youngs_modulus", where)
    return modulus * keys.section(cfg, where)["area"] / length, length


def check_couplings(couplings, source: str, body: str) -> None:
    """Two pins about y, at node 0 then at the end (ScenarioError naming the file and the
    coupling)."""
    if len(couplings) != 2:
        names = ", ".join(c.name for c in couplings)
        raise ScenarioError(f"{source}: flex_bodies.{body}.frame: 'chord' needs exactly two "
                            f"couplings (pins at node 0 and at the end), got {len(couplings)} "
                            f"({names})")
    for c, node in zip(couplings, (0, "end"), strict=True):
        if c.type != "pin" or c.axis != 1 or c.node != node:
            raise ScenarioError(
                f"{source}: couplings.{c.name}: a chord-frame body takes type = 'pin', axis = 'y', "
                f"node = {node!r} here (got type = {c.type!r}, axis = {c.axis!r}, node = "
                f"{c.node!r}); the first coupling is the chord's origin")
        if c.grounded_reference is not None or c.wrench_frame != "inertial":
            key = "grounded_reference" if c.grounded_reference is not None else "wrench_frame"
            raise ScenarioError(f"{source}: couplings.{c.name}.{key}: not for a chord-frame "
                                "body (floating; its forces are inertial)")


def chord_model_from_config(cfg: dict, where: str) -> ChordModel:
    """ChordModel from a [flex_bodies.NAME] table with ``frame = "chord"``."""
    keys.check_keys(cfg, _KEYS, where)
    if cfg.get("kind") != "beam":
        raise ScenarioError(f"{where}.kind: frame = 'chord' needs kind = 'beam', got "
                            f"{cfg.get('kind')!r}")
    if cfg.get("attachment", "floating") != "floating":
        raise ScenarioError(f"{where}.attachment: frame = 'chord' is a floating frame, got "
                            f"{cfg.get('attachment')!r}")
    if cfg.get("planar", True) is not True:
        raise ScenarioError(f"{where}.planar: frame = 'chord' is planar (x–z) only, got "
                            f"{cfg.get('planar')!r}")
    stiffening = cfg.get("geometric_stiffening", False)
    if not isinstance(stiffening, bool):
        raise ScenarioError(f"{where}.geometric_stiffening: expected true or false, got "
                            f"{stiffening!r}")
    length = keys.number(cfg, "length", where)
    elements = keys.integer(cfg, "elements", where, minimum=1)
    modes = keys.integer(cfg, "modes", where, minimum=0)
    if modes > 3 * elements - 2:
        raise ScenarioError(f"{where}.modes: expected at most {3 * elements - 2} (interior DOFs "
                            f"of {elements} pinned–pinned elements), got {modes}")
    outputs = cfg.get("output_nodes", {})
    if not isinstance(outputs, dict):
        raise ScenarioError(f"{where}.output_nodes: expected a table name = 'end' | node index "
                            f"| coordinate, got {outputs!r}")
    at = {}
    for name, spec in outputs.items():
        if isinstance(spec, bool) or not (spec == "end" or isinstance(spec, (int, float))):
            raise ScenarioError(f"{where}.output_nodes.{name}: expected 'end', a node index or "
                                f"a coordinate along the chord, got {spec!r}")
        if isinstance(spec, int) and not 0 <= spec <= elements:
            raise ScenarioError(f"{where}.output_nodes.{name}: node index out of range "
                                f"0..{elements}, got {spec}")
        at[name] = spec * length / elements if isinstance(spec, int) else spec
    section = keys.section(cfg, where)
    try:
        return ChordModel.from_beam(length, keys.number(cfg, "youngs_modulus", where),
                                    keys.number(cfg, "density", where), section["area"],
                                    section["second_moment_y"], n_elements=elements,
                                    n_modes=modes, output_nodes=at,
                                    geometric_stiffening=stiffening)
    except ValueError as exc:
        raise ScenarioError(f"{where}.{exc}") from exc
