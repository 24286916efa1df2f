"""Nodes and node sets of a CalculiX or Abaqus input deck (``.inp``): ``*NODE`` and ``*NSET``.

Keywords are case-insensitive; ``**`` lines are comments; ``*INCLUDE, INPUT=file`` is followed
(relative to the including file). ``*NODE`` data lines are ``number, x, y, z`` (missing
coordinates are 0); ``*NODE, NSET=name`` also adds the nodes to that set. ``*NSET, NSET=name``
lists node numbers or earlier set names, ``*NSET, NSET=name, GENERATE`` lines of
``first, last[, step]``. Everything else is skipped. Errors name the file and the line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError

_MAX_INCLUDE_DEPTH = 10


def read_inp_nodes(path: Path) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(node numbers (n_nodes,), positions (n_nodes, 3), node sets name -> node numbers), the
    nodes in the order the deck lists them; set names upper-cased (the codes' convention)."""
    nodes: dict[int, tuple[float, float, float]] = {}
    sets: dict[str, list[int]] = {}
    _read(Path(path), nodes, sets, 0)
    if not nodes:
        raise ScenarioError(f"{Path(path).name}: no *NODE lines (the model's node coordinates)")
    ids = np.fromiter(nodes, dtype=np.int64, count=len(nodes))
    pos = np.array(list(nodes.values()), dtype=float)
    return ids, pos, {k: np.array(v, dtype=np.int64) for k, v in sets.items()}


def _read(path: Path, nodes: dict, sets: dict, depth: int) -> None:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ScenarioError(f"{path.name}: not readable ({exc.strerror or exc}: {path})") from None
    block, params = None, {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{path.name}: line {number}"
        if not line or line.startswith("**"):
            continue
        if line.startswith("*"):
            words = [w.strip() for w in line[1:].split(",")]
            block = words[0].upper()
            params = {w.split("=")[0].strip().upper(): w.partition("=")[2].strip()
                      for w in words[1:] if w}
            if block == "INCLUDE":
                if depth >= _MAX_INCLUDE_DEPTH or not params.get("INPUT"):
                    raise ScenarioError(f"{where}: *INCLUDE needs INPUT=file (at most "
                                        f"{_MAX_INCLUDE_DEPTH} levels)")
                _read(path.parent / params["INPUT"], nodes, sets, depth + 1)
            elif block == "NSET" and not params.get("NSET"):
                raise ScenarioError(f"{where}: *NSET needs NSET=name")
            continue
        fields = [f.strip() for f in line.rstrip(",").split(",")]
        if block == "NODE":
            _node_line(fields, where, nodes, sets, params.get("NSET", "").upper())
        elif block == "NSET":
            _nset_line(fields, where, sets, params["NSET"].upper(), "GENERATE" in params)


def _node_line(fields, where, nodes, sets, nset) -> None:
    try:
        number = int(fields[0])
        xyz = [float(f) for f in fields[1:4] if f] + [0.0] * (4 - len(fields))
    except ValueError:
        raise ScenarioError(f"{where}: *NODE: expected 'number, x, y, z', got "
                            f"{','.join(fields)[:60]!r}") from None
    if len(xyz) != 3 or not np.all(np.isfinite(xyz)):
        raise ScenarioError(f"{where}: *NODE: expected 'number, x, y, z', got "
                            f"{','.join(fields)[:60]!r}")
    if number in nodes:
        raise ScenarioError(f"{where}: *NODE: node {number} is defined twice")
    nodes[number] = tuple(xyz)
    if nset:
        sets.setdefault(nset, []).append(number)


def _nset_line(fields, where, sets, name, generate) -> None:
    members = sets.setdefault(name, [])
    if generate:
        try:
            first, last, *step = (int(f) for f in fields)
        except ValueError:
            raise ScenarioError(f"{where}: *NSET, GENERATE: expected 'first, last[, step]', "
                                f"got {','.join(fields)[:60]!r}") from None
        members.extend(range(first, last + 1, step[0] if step else 1))
        return
    for f in fields:
        if f.lstrip("-").isdigit():
            members.append(int(f))
        elif f.upper() in sets:
            members.extend(sets[f.upper()])
        elif f:
            raise ScenarioError(f"{where}: *NSET: {f!r} is neither a node number nor a set "
                                f"defined above")
