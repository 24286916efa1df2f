"""CalculiX's matrix output: ``*FREQUENCY, SOLVER=MATRIXSTORAGE`` writes, next to the job's
``.inp``,

- ``job.sti`` (stiffness) and ``job.mas`` (mass): one ``row column value`` line per entry,
  1-based, the upper triangle (either triangle, or both, is accepted);
- ``job.dof``: one ``node.direction`` label per row (direction 1..3 translations along x y z,
  4..6 rotations; constrained DOFs (``*BOUNDARY``) are left out).

Node coordinates and node sets come from the ``.inp`` (:mod:`.inp`), in the deck's units.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.inp import read_inp_nodes
from rbcosim.flex.io.readers.model import (
    FEModel,
    checked_dof_map,
    node_numbers,
    symmetric_from_triplets,
)

_EXPANDED = ("CalculiX expands beam and shell elements into 20-node solids with new nodes "
             "and writes their labels: model the part with solid elements (C3D20, C3D10) for "
             "matrix export")


def read_calculix(inp: Path, stiffness: Path | None = None, mass: Path | None = None,
                  dofs: Path | None = None) -> FEModel:
    """The model of a CalculiX job; the matrix files default to ``inp``'s name with ``.sti``,
    ``.mas`` and ``.dof``."""
    inp = Path(inp)
    stiffness = Path(stiffness) if stiffness else inp.with_suffix(".sti")
    mass = Path(mass) if mass else inp.with_suffix(".mas")
    dofs = Path(dofs) if dofs else inp.with_suffix(".dof")
    ids, positions, sets = read_inp_nodes(inp)
    labels = _read_dofs(dofs)
    where = f"{dofs.name}"
    try:
        nodes = node_numbers(ids, labels[:, 0], where, f"{inp.name}'s *NODE lines")
    except ScenarioError as exc:
        raise ScenarioError(f"{exc} ({_EXPANDED})") from None
    dof_map = checked_dof_map(nodes, labels[:, 1] - 1, dofs.name)
    n = dof_map.shape[0]
    return FEModel(
        stiffness=read_triplets(stiffness, n, dofs.name),
        mass=read_triplets(mass, n, dofs.name),
        node_ids=ids, positions=positions, dof_map=dof_map,
        node_sets={k: node_numbers(ids, v, f"{inp.name}: *NSET {k}", f"{inp.name}'s *NODE lines")
                   for k, v in sets.items()},
        stiffness_file=stiffness.name, mass_file=mass.name, model_file=inp.name)


def _read_dofs(path: Path) -> np.ndarray:
    """(n, 2) int: (node number, direction 1..6) per line of a ``.dof`` file."""
    text = _text(path, "the DOF labels (node.direction per row)")
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        node, dot, direction = line.strip().partition(".")
        if not (dot and node.isdigit() and direction.isdigit() and 1 <= int(direction) <= 6):
            raise ScenarioError(f"{path.name}: line {number}: expected 'node.direction' with "
                                f"direction 1..6 (x y z, rotations about x y z), got "
                                f"{line.strip()[:40]!r}")
        out.append((int(node), int(direction)))
    if not out:
        raise ScenarioError(f"{path.name}: no DOF labels")
    return np.array(out, dtype=np.int64)


def read_triplets(path: Path, n: int, dof_file: str):
    """(n, n) sparse symmetric matrix from ``row column value`` lines (1-based)."""
    _text_exists(path, "a matrix written by SOLVER=MATRIXSTORAGE")
    try:
        data = np.loadtxt(path, dtype=float, ndmin=2)
    except ValueError:
        bad = _first_bad_line(Path(path).read_text(errors="replace"))
        raise ScenarioError(f"{path.name}: line {bad[0]}: expected 'row column value', got "
                            f"{bad[1][:60]!r}") from None
    if data.shape[1] != 3:
        raise ScenarioError(f"{path.name}: expected 'row column value' lines, got "
                            f"{data.shape[1]} numbers per line")
    rows, cols = data[:, 0], data[:, 1]
    bad = ~((rows == np.round(rows)) & (cols == np.round(cols)) & (rows >= 1) & (cols >= 1)
            & (rows <= n) & (cols <= n))
    if bad.any():
        k = int(np.argmax(bad))
        raise ScenarioError(f"{path.name}: line {k + 1}: index ({rows[k]:g}, {cols[k]:g}) "
                            f"outside 1..{n}, the {n} DOF labels of {dof_file} (written by "
                            f"the same run?)")
    return symmetric_from_triplets(rows.astype(np.int64) - 1, cols.astype(np.int64) - 1,
                                   data[:, 2], n, path.name)


def _first_bad_line(text: str) -> tuple[int, str]:
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        try:
            [float(p) for p in parts]
        except ValueError:
            return number, line
        if parts and len(parts) != 3:
            return number, line
    return 0, ""


def _text_exists(path: Path, what: str) -> None:
    if not Path(path).is_file():
        raise ScenarioError(f"{Path(path).name}: file not found ({path}): {what}")


def _text(path: Path, what: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        raise ScenarioError(f"{Path(path).name}: file not found ({path}): {what}") from None
    except OSError as exc:
        raise ScenarioError(f"{Path(path).name}: not readable ({exc})") from None
