"""Readers of a [flex_bodies.NAME] table's values, shared by the node-frame and chord-frame
configurations (:mod:`rbcosim.scenario.flex_config`, :mod:`rbcosim.scenario.flex_chord_config`):
numbers, counts, unknown keys and beam sections, with errors that name the key path ``where``.
"""

from __future__ import annotations

import math

from rbcosim.bounds import MAX_MAGNITUDE
from rbcosim.errors import ScenarioError

#: Most finite elements of a beam (a dense model of 600,000 DOFs would not fit any machine).
MAX_ELEMENTS = 100_000


def check_keys(cfg: dict, allowed: set[str], where: str) -> None:
    """ScenarioError naming the first key of ``cfg`` not in ``allowed``."""
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        raise ScenarioError(f"{where}.{unknown[0]}: unknown key; valid keys: {sorted(allowed)}")


def number(cfg, key, where, *, positive=True, default=None, required=True) -> float | None:
    """``cfg[key]`` as a finite float (SI, as written), positive unless ``positive=False``;
    ``default`` (or None when not ``required``) if absent."""
    if key not in cfg:
        if required and default is None:
            raise ScenarioError(f"{where}.{key}: missing (expected a number)")
        return default
    v = cfg[key]
    if not finite_number(v):
        raise ScenarioError(f"{where}.{key}: expected a finite number of magnitude at most "
                            f"{MAX_MAGNITUDE:g}, got {v!r}")
    if positive and v <= 0:
        raise ScenarioError(f"{where}.{key}: expected a positive number, got {v!r}")
    return float(v)


def finite_number(v) -> bool:
    """Is ``v`` an int or float (not a bool), finite and at most MAX_MAGNITUDE in size?"""
    return (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
            and abs(v) <= MAX_MAGNITUDE)


def integer(cfg, key, where, *, minimum, default=None, maximum=MAX_ELEMENTS) -> int | None:
    """``cfg[key]`` as an int from ``minimum`` to ``maximum`` (written without a decimal point)."""
    if key not in cfg:
        if default is None:
            raise ScenarioError(f"{where}.{key}: missing (expected an integer >= {minimum})")
        return default
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        raise ScenarioError(f"{where}.{key}: expected an integer from {minimum} to {maximum} "
                            f"(written without a decimal point), got {v!r}")
    return v


def section(cfg, where) -> dict[str, float | None]:
    """A beam's section properties (m², m⁴): from ``section = "square" | "rectangle" |
    "circle"`` and its dimensions, or from explicit ``area``, ``second_moment_*``."""
    section = cfg.get("section")
    explicit = [
        k for k in ("area", "second_moment_y", "second_moment_z", "torsion_constant") if k in cfg
    ]
    if section is None:
        for key in ("width", "height", "diameter"):
            if key in cfg:
                raise ScenarioError(
                    f"{where}.{key}: only with section = 'square' | 'rectangle' | 'circle'"
                )
        return {
            "area": number(cfg, "area", where),
            "second_moment_y": number(cfg, "second_moment_y", where),
            "second_moment_z": number(cfg, "second_moment_z", where, required=False),
            "torsion_constant": number(cfg, "torsion_constant", where, required=False),
        }
    if explicit:
        raise ScenarioError(
            f"{where}.{explicit[0]}: give either section = ... or explicit "
            f"section properties, not both"
        )
    allowed = {"square": {"width"}, "rectangle": {"width", "height"}, "circle": {"diameter"}}
    if not isinstance(section, str) or section not in allowed:
        raise ScenarioError(
            f"{where}.section: expected 'square', 'rectangle' or 'circle', got {section!r}"
        )
    for key in {"width", "height", "diameter"} - allowed[section]:
        if key in cfg:
            raise ScenarioError(
                f"{where}.{key}: not used by section = {section!r} (expected "
                f"{sorted(allowed[section])})"
            )
    if section == "circle":
        d = number(cfg, "diameter", where)
        area = math.pi * d**2 / 4
        i = math.pi * d**4 / 64
        return {"area": area, "second_moment_y": i, "second_moment_z": i, "torsion_constant": 2 * i}
    b = number(cfg, "width", where)
    h = b if section == "square" else number(cfg, "height", where)
    long_side, short_side = max(b, h), min(b, h)
    # St-Venant torsion constant of a solid rectangle (Roark's approximation, < 1 % error).
    ratio = short_side / long_side
    j = long_side * short_side**3 * (1 / 3 - 0.21 * ratio * (1 - ratio**4 / 12))
    return {
        "area": b * h,
        "second_moment_y": b * h**3 / 12,
        "second_moment_z": h * b**3 / 12,
        "torsion_constant": j,
    }
