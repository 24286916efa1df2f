"""Abaqus matrix output: ``*MATRIX GENERATE, STIFFNESS, MASS`` with ``*MATRIX OUTPUT,
STIFFNESS, MASS, FORMAT=MATRIX INPUT`` (the default) writes ``job_STIF<step>.mtx`` and
``job_MASS<step>.mtx``, one ``row node, row DOF, column node, column DOF, value`` line per
entry (DOF 1..3 translations along x y z, 4..6 rotations; one triangle or both).

The coordinates are every (node, DOF) pair either file names, sorted by node number then DOF.
Node coordinates and node sets come from the ``.inp`` (:mod:`.inp`; a flat deck or the nodes
of an assembly written with ``*NODE`` at model level), in the deck's units.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.calculix import _text
from rbcosim.flex.io.readers.inp import read_inp_nodes
from rbcosim.flex.io.readers.model import (
    FEModel,
    checked_dof_map,
    matrices_from_pairs,
    node_numbers,
)


def read_abaqus(inp: Path, stiffness: Path, mass: Path) -> FEModel:
    """The model of an Abaqus job's ``.inp`` and its STIF / MASS ``.mtx`` files."""
    inp = Path(inp)
    if stiffness is None or mass is None:
        raise ScenarioError(f"{inp.name}: abaqus needs the stiffness and mass .mtx files "
                            f"(job_STIF2.mtx, job_MASS2.mtx from *MATRIX GENERATE)")
    ids, positions, sets = read_inp_nodes(inp)
    k_entries = _read_entries(Path(stiffness))
    m_entries = _read_entries(Path(mass))
    pairs, (k, m) = matrices_from_pairs([k_entries, m_entries],
                                        [Path(stiffness).name, Path(mass).name])
    source = f"{inp.name}'s *NODE lines"
    nodes = node_numbers(ids, pairs[:, 0], Path(stiffness).name, source)
    dof_map = checked_dof_map(nodes, pairs[:, 1] - 1, Path(stiffness).name)
    return FEModel(
        stiffness=k, mass=m,
        node_ids=ids, positions=positions, dof_map=dof_map,
        node_sets={k: node_numbers(ids, v, f"{inp.name}: *NSET {k}", source)
                   for k, v in sets.items()},
        stiffness_file=Path(stiffness).name, mass_file=Path(mass).name, model_file=inp.name)


def _read_entries(path: Path) -> np.ndarray:
    """(n_entries, 5): row node, row DOF, column node, column DOF, value."""
    out = []
    for number, line in enumerate(_text(path, "Abaqus matrix output").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("*"):
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            if len(fields) != 5:
                raise ValueError
            row = [int(f) for f in fields[:4]] + [float(fields[4])]
        except ValueError:
            raise ScenarioError(f"{path.name}: line {number}: expected 'node, dof, node, dof, "
                                f"value' (FORMAT=MATRIX INPUT), got {line[:60]!r}") from None
        if min(row[0], row[2]) < 1:
            raise ScenarioError(f"{path.name}: line {number}: node {min(row[0], row[2])} is an "
                                f"internal node (Lagrange multipliers of constraints or "
                                f"connectors): export the matrices without constraints and "
                                f"tie the nodes here")
        if not (1 <= row[1] <= 6 and 1 <= row[3] <= 6):
            raise ScenarioError(f"{path.name}: line {number}: DOF {row[1]}/{row[3]}: expected "
                                f"1..6 (x y z, rotations about x y z)")
        out.append(row)
    if not out:
        raise ScenarioError(f"{path.name}: no matrix entries")
    return np.array(out, dtype=float)
