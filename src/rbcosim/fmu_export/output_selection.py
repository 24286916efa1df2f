"""Which of an embedded FMU's model outputs it exposes (`export-fmu --outputs`): the bodies'
pose and velocities and the joints' coordinates, picked by fnmatch patterns on their names.
The interface points' outputs and the joints' gaps (what a coupling needs) always stay."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

#: Table kinds that --outputs selects among.
SELECTABLE_KINDS = ("body", "joint_coordinate")


def select_outputs(names: Iterable[str], patterns: Iterable[str]) -> set[str]:
    """The ``names`` matching any of ``patterns`` (fnmatch, case-sensitive). ValueError naming
    each pattern that matches none of them."""
    names, patterns = list(names), list(patterns)
    unmatched = [p for p in patterns if not any(fnmatchcase(n, p) for n in names)]
    if unmatched:
        raise ValueError(f"--outputs: {', '.join(repr(p) for p in unmatched)} match no body or "
                         f"joint-coordinate output (there are: {', '.join(names[:8])}"
                         f"{', …' if len(names) > 8 else ''})")
    return {n for n in names if any(fnmatchcase(n, p) for p in patterns)}


def parse_patterns(text: str, option: str = "--outputs") -> tuple[str, ...]:
    """``PATTERN[,PATTERN…]`` as a tuple; ValueError naming ``option`` for an empty pattern."""
    patterns = tuple(p.strip() for p in text.split(","))
    if not all(patterns):
        raise ValueError(f"{option}: empty pattern in {text!r}")
    return patterns
