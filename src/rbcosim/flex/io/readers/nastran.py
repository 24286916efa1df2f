"""Nastran: node coordinates from the bulk data (``GRID``, node sets ``SET1``) and the physical
matrices from a punch file of ``DMIG`` cards (``PARAM,EXTOUT,DMIGPCH`` or ``EXTSEOUT(...
DMIGPCH)`` writes KAAX (stiffness) and MAAX (mass)).

pyNastran 1.4.1, the registry's current release, requires numpy < 2, which the rest of rbcosim
does not allow, so this module reads the two cards itself: small-field (8 characters),
large-field (``GRID*``/``DMIG*``, 16 characters, ``*`` continuations) and free-field (commas);
``$`` comments; Nastran's exponent shorthand (``1.5-3``, ``1.5D+03``). ``GRID`` cards must use
the basic coordinate system (CP and CD blank or 0). A ``DMIG`` matrix is read by name (KAAX /
MAAX, or the file's only one with ``stiffness`` and ``mass`` in two files), real, symmetric
(IFO 6: one triangle or both) or square (IFO 1). The coordinates are every (grid, component
1..6) pair the matrices name, sorted. Units: the model's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.calculix import _text
from rbcosim.flex.io.readers.model import (
    FEModel,
    checked_dof_map,
    matrices_from_pairs,
    node_numbers,
)

_NAMES = {"stiffness": "KAAX", "mass": "MAAX"}
_SHORTHAND = re.compile(r"^([+-]?[0-9.]+)([+-][0-9]+)$")


def read_nastran(bdf: Path, stiffness: Path | None = None, mass: Path | None = None) -> FEModel:
    """The model of a bulk data file ``bdf`` and its DMIG punch file(s) (``stiffness`` and
    ``mass`` may be the same file; default ``bdf``'s name with ``.pch``)."""
    bdf = Path(bdf)
    stiffness = Path(stiffness) if stiffness else bdf.with_suffix(".pch")
    mass = Path(mass) if mass else stiffness
    ids, positions, sets = _grids(bdf)
    k_entries = _dmig(stiffness, "stiffness", stiffness == mass)
    m_entries = _dmig(mass, "mass", stiffness == mass)
    pairs, (k, m) = matrices_from_pairs([k_entries, m_entries], [stiffness.name, mass.name])
    source = f"{bdf.name}'s GRID cards"
    nodes = node_numbers(ids, pairs[:, 0], stiffness.name, source)
    return FEModel(
        stiffness=k, mass=m, node_ids=ids, positions=positions,
        dof_map=checked_dof_map(nodes, pairs[:, 1] - 1, stiffness.name),
        node_sets={k: node_numbers(ids, v, f"{bdf.name}: SET1 {k}", source)
                   for k, v in sets.items()},
        stiffness_file=stiffness.name, mass_file=mass.name, model_file=bdf.name)


def cards(path: Path):
    """(line number, card name upper-case, data fields as strings) of a bulk data file, the
    continuation lines' fields appended (8 per small/free-field line, 4 per large-field line)."""
    card = None
    for number, raw in enumerate(_text(path, "Nastran bulk data").splitlines(), start=1):
        line = raw.split("$", 1)[0].rstrip()
        if not line.strip():
            continue
        if "," in line:
            head, *fields = [f.strip() for f in line.split(",")]
            fields = (fields + [""] * 8)[:8]
        elif line[:8].rstrip().endswith("*") or line.startswith("*"):
            head = line[:8].strip()
            fields = [line[8 + 16 * i:24 + 16 * i].strip() for i in range(4)]
        else:
            head = line[:8].strip()
            fields = [line[8 + 8 * i:16 + 8 * i].strip() for i in range(8)]
        if head[:1] in ("+", "*") or head == "":
            if card is None:
                raise ScenarioError(f"{Path(path).name}: line {number}: a continuation line "
                                    f"without a card")
            card[2].extend(fields)
            continue
        if card is not None:
            yield card
        card = (number, head.rstrip("*").upper(), list(fields))
    if card is not None:
        yield card


def _real(text: str, where: str) -> float:
    t = text.strip().upper().replace("D", "E")
    m = _SHORTHAND.match(t)
    if m:
        t = f"{m.group(1)}E{m.group(2)}"
    try:
        return float(t) if t else 0.0
    except ValueError:
        raise ScenarioError(f"{where}: expected a number, got {text!r}") from None


def _int(text: str, where: str) -> int:
    try:
        return int(text) if text.strip() else 0
    except ValueError:
        raise ScenarioError(f"{where}: expected an integer, got {text!r}") from None


def _grids(path: Path):
    nodes, sets = {}, {}
    for number, name, f in cards(path):
        where = f"{path.name}: line {number}: {name}"
        if name == "GRID":
            gid = _int(f[0], where)
            if _int(f[1], where) or _int(f[5], where):
                raise ScenarioError(f"{where} {gid}: CP/CD coordinate systems are not read: "
                                    f"write the grids in the basic system")
            nodes[gid] = [_real(x, where) for x in f[2:5]]
        elif name == "SET1":
            sets[f[0].upper()] = _set1(f[1:], where)
    if not nodes:
        raise ScenarioError(f"{path.name}: no GRID cards (the model's node coordinates)")
    return (np.array(list(nodes), dtype=np.int64), np.array(list(nodes.values()), dtype=float),
            {k: np.array(v, dtype=np.int64) for k, v in sets.items()})


def _set1(fields, where) -> list[int]:
    items = [x.upper() for x in fields if x]
    out = []
    i = 0
    while i < len(items):
        if i + 2 < len(items) and items[i + 1] == "THRU":
            out.extend(range(_int(items[i], where), _int(items[i + 2], where) + 1))
            i += 3
        else:
            out.append(_int(items[i], where))
            i += 1
    return out


def _dmig(path: Path, role: str, shared: bool) -> np.ndarray:
    """(n, 5) entries of the role's DMIG matrix (by name, or the file's only one)."""
    found: dict[str, list] = {}
    for number, name, f in cards(path):
        if name != "DMIG":
            continue
        where = f"{path.name}: line {number}: DMIG {f[0]}"
        columns = found.setdefault(f[0].upper(), [])
        if f[1].strip() == "0":  # header: NAME 0 IFO TIN TOUT POLAR (blank) NCOL
            if _int(f[2], where) not in (1, 6) or _int(f[3], where) not in (1, 2):
                raise ScenarioError(f"{where}: expected a real (TIN 1 or 2) symmetric (IFO 6) "
                                    f"or square (IFO 1) matrix, got IFO {f[2]} TIN {f[3]}")
            continue
        gj, cj = _int(f[1], where), _int(f[2], where)
        for k in range(4, len(f) - 2, 4):
            if not f[k]:
                continue
            gi, ci = _int(f[k], where), _int(f[k + 1], where)
            if min(cj, ci) < 1 or max(cj, ci) > 6:
                bad = (gj, cj) if not 1 <= cj <= 6 else (gi, ci)
                raise ScenarioError(f"{where}: grid {bad[0]} component {bad[1]}: expected "
                                    f"1..6 (scalar "
                                    f"points and modal DOFs are not read: punch the physical "
                                    f"a-set)")
            columns.append((gi, ci, gj, cj, _real(f[k + 2], where)))
    want = _NAMES[role]
    if want in found:
        entries = found[want]
    elif len(found) == 1 and not shared:
        entries = next(iter(found.values()))
    else:
        raise ScenarioError(f"{path.name}: no DMIG {want} ({role}); the file holds "
                            f"{sorted(found) or 'no DMIG cards'}")
    if not entries:
        raise ScenarioError(f"{path.name}: DMIG {want}: no entries")
    return np.array(entries, dtype=float)
