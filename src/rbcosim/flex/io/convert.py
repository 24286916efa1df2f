"""Convert plain FE matrices and node coordinates to a floating body's ``.npz`` structure file.

Inputs: the mass M and stiffness K (and optional damping C) in physical coordinates, each a
Matrix Market ``.mtx``, ``.npy`` or ``.npz`` file (the array under ``M`` / ``K`` / ``C`` or the
file's only array); the node coordinates (CSV, one row ``x,y,z`` per node in node order, m, an
optional header line); the DOF labels: the same components for every node in node-major order
(``x,y,z,rx,ry,rz`` by default, as beam and shell models export them) or a CSV of one
``node,component`` row per coordinate. The interface node's coordinates are moved first (the
boundary), positions are made relative to it, and the file is validated as a floating body
(rigid-body modes in the null space of K, :func:`rbcosim.flex.io.matrices_io.check_floating`).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.declared_size import refuse_oversized
from rbcosim.flex.io.matrices_io import StructureMatrices, check_floating, validate_structure
from rbcosim.flex.io.matrix_market import read_matrix_market_file
from rbcosim.flex.modelling.beam import COMPONENT_NAMES


def convert_structure(
    mass: np.ndarray,
    stiffness: np.ndarray,
    node_positions: np.ndarray,
    dof_map: np.ndarray,
    *,
    interface_node: int | Sequence[int] = 0,
    damping: np.ndarray | None = None,
    output_nodes: Mapping[str, int] | None = None,
    label: str = "structure",
    stiffness_label: str | None = None,
) -> StructureMatrices:
    """A validated floating structure from physical matrices on coordinates ``dof_map`` (n, 2)
    = (node, component 0..5 = x y z rx ry rz), node positions (n_nodes, 3) in m (any origin),
    clamped at ``interface_node`` (or several interface nodes, a sequence: their DOFs first,
    in order; positions relative to the first); ``output_nodes`` maps names to node indices.
    ScenarioError naming ``label`` (the mass file) or ``stiffness_label`` (default ``label``:
    K's checks) and the key for bad input."""
    dof_map = np.asarray(dof_map, dtype=np.int64).reshape(-1, 2)
    pos = np.asarray(node_positions, dtype=float)
    nodes = [interface_node] if isinstance(interface_node, (int, np.integer)) else list(
        interface_node)
    for node in nodes:
        if pos.ndim != 2 or pos.shape[1] != 3 or not 0 <= node < pos.shape[0]:
            raise ScenarioError(f"{label}: interface_node: expected a node index in "
                                f"0..{pos.shape[0] - 1} of node positions (n_nodes, 3), got "
                                f"{node} for shape {pos.shape}")
        if not np.any(dof_map[:, 0] == node):
            raise ScenarioError(f"{label}: interface_node: node {node} has no DOFs")
    first = [np.flatnonzero(dof_map[:, 0] == node) for node in nodes]
    order = np.concatenate([*first, np.flatnonzero(~np.isin(dof_map[:, 0], nodes))])
    n_b = sum(f.size for f in first)
    owner = np.concatenate([np.full(f.size, j) for j, f in enumerate(first)])
    m, k = np.asarray(mass), np.asarray(stiffness)
    for key, a in (("M", m), ("K", k), ("C", damping)):
        if a is not None and np.shape(a) != (dof_map.shape[0],) * 2:
            raise ScenarioError(f"{stiffness_label or label if key == 'K' else label}: {key}: "
                                f"expected a {dof_map.shape[0]}x{dof_map.shape[0]} matrix "
                                f"(one row per DOF label: {pos.shape[0]} nodes), got shape "
                                f"{np.shape(a)}; give the components each node carries "
                                f"(--dofs-per-node, e.g. x,y,z for solids) or one label per "
                                f"row (--dof-labels)")
    outputs = dict(output_nodes or {})
    names = np.array([COMPONENT_NAMES[c] for c in dof_map[order, 1]], dtype=str)
    several = len(nodes) > 1
    structure = validate_structure(
        label, m[np.ix_(order, order)], k[np.ix_(order, order)],
        None if damping is None else np.asarray(damping)[np.ix_(order, order)],
        n_b, list(names[:n_b]) if several else None, list(outputs) or None, None, None,
        None, owner if several else None, pos[nodes] - pos[nodes[0]] if several else None,
        layout=(pos - pos[nodes[0]], dof_map[order, 0], names),
        output_nodes=np.array(list(outputs.values()), dtype=np.int64) if outputs else None)
    check_floating(label, structure, stiffness_label or label)
    return structure


def read_matrix(path: Path, key: str) -> np.ndarray:
    """A matrix from ``.mtx``, ``.npy`` or ``.npz`` (array ``key`` or the only one)."""
    path = Path(path)
    refuse_oversized(path, f"{path.name}: {key}")
    try:
        if path.suffix == ".mtx":
            return read_matrix_market_file(path)
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                names = data.files
                if key in names:
                    return data[key]
                if len(names) == 1:
                    return data[names[0]]
                raise ScenarioError(f"{path.name}: {key}: missing (the file holds {names})")
    except FileNotFoundError:
        raise ScenarioError(f"{path.name}: {key}: file not found ({path})") from None
    except (OSError, ValueError) as exc:
        raise ScenarioError(f"{path.name}: {key}: not readable ({exc})") from None
    raise ScenarioError(f"{path.name}: {key}: expected a .mtx, .npy or .npz file")


def _csv_rows(path: Path, columns: int, key: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of a CSV's data rows; '#' comments, blank lines and one header
    line (a first row whose first field is not a number) skipped."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ScenarioError(f"{path.name}: {key}: file not found ({path})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path.name}: {key}: not readable ({exc})") from None
    rows = []
    for number, fields in enumerate(csv.reader(text.splitlines()), start=1):
        fields = [f.strip() for f in fields]
        if not fields or not fields[0] or fields[0].startswith("#"):
            continue
        if not rows and not _is_number(fields[0]):
            continue  # header
        if len(fields) != columns:
            raise ScenarioError(f"{path.name}: {key}: line {number}: expected {columns} "
                                f"comma-separated fields, got {len(fields)}")
        rows.append((number, fields))
    if not rows:
        raise ScenarioError(f"{path.name}: {key}: no data rows")
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_nodes_csv(path: Path) -> np.ndarray:
    """Node positions (n_nodes, 3), m, one ``x,y,z`` row per node in node order."""
    out = []
    for number, fields in _csv_rows(path, 3, "nodes"):
        if not all(_is_number(f) for f in fields):
            raise ScenarioError(f"{Path(path).name}: nodes: line {number}: expected three "
                                f"numbers x,y,z, got {fields}")
        out.append([float(f) for f in fields])
    return np.array(out)


def read_dof_labels_csv(path: Path) -> np.ndarray:
    """DOF labels (n, 2): one ``node,component`` row per coordinate (component x y z rx ry rz)."""
    out = []
    for number, (node, comp) in _csv_rows(path, 2, "dof_labels"):
        if not node.isdigit() or comp not in COMPONENT_NAMES:
            raise ScenarioError(f"{Path(path).name}: dof_labels: line {number}: expected a node "
                                f"index and one of {list(COMPONENT_NAMES)}, got {node},{comp}")
        out.append((int(node), COMPONENT_NAMES.index(comp)))
    return np.array(out, dtype=np.int64)


def uniform_dof_labels(n_nodes: int, components: Sequence[str]) -> np.ndarray:
    """DOF labels (n_nodes * len(components), 2): the same components on every node,
    node-major."""
    bad = [c for c in components if c not in COMPONENT_NAMES]
    if bad or not components or len(set(components)) != len(components):
        raise ScenarioError(f"dofs_per_node: expected distinct names out of "
                            f"{list(COMPONENT_NAMES)}, got {list(components)}")
    comps = [COMPONENT_NAMES.index(c) for c in components]
    return np.array([(n, c) for n in range(n_nodes) for c in comps], dtype=np.int64)
