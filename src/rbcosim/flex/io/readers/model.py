"""The FE model every reader produces, and the checks they share.

Coordinates: coordinate i is component ``dof_map[i, 1]`` (0..5 = ``x y z rx ry rz``) of node
index ``dof_map[i, 0]`` (row of ``positions``; ``node_ids`` holds the FE code's node numbers).
Units: the FE file's own (:mod:`rbcosim.flex.io.units` scales to SI).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse

from rbcosim.errors import ScenarioError


@dataclass(frozen=True)
class FEModel:
    """A structure as an FE code exports it.

    Attributes:
        stiffness, mass: (n, n) sparse symmetric CSR matrices on the coordinates ``dof_map``.
        node_ids: (n_nodes,) the FE code's node numbers; positions: (n_nodes, 3) coordinates.
        dof_map: (n, 2) int (node index, component 0..5 = x y z rx ry rz).
        node_sets: named node sets, name -> node indices.
        stiffness_file, mass_file, model_file: file names for error messages.
    """

    stiffness: scipy.sparse.csr_matrix
    mass: scipy.sparse.csr_matrix
    node_ids: np.ndarray
    positions: np.ndarray
    dof_map: np.ndarray
    node_sets: dict = field(default_factory=dict)
    stiffness_file: str = "K"
    mass_file: str = "M"
    model_file: str = "nodes"

    def node_index(self, number: int, where: str) -> int:
        """Index of FE node ``number``; ScenarioError naming ``where`` if there is none."""
        hit = np.flatnonzero(self.node_ids == number)
        if not hit.size:
            raise ScenarioError(f"{where}: node {number} is not a node of {self.model_file}")
        return int(hit[0])


def symmetric_from_triplets(rows, cols, values, n: int, label: str) -> scipy.sparse.csr_matrix:
    """(n, n) symmetric CSR matrix from 0-based triplets holding one triangle (either) or
    both (then equal pairs are taken once); duplicates are summed, as FE assembly does."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        k = int(np.argmax(~np.isfinite(values)))
        raise ScenarioError(f"{label}: entry {k + 1} ({rows[k] + 1}, {cols[k] + 1}) is not "
                            f"finite")
    a = scipy.sparse.coo_matrix((values, (rows, cols)), shape=(n, n)).tocsr()
    a.sum_duplicates()
    lower, upper = scipy.sparse.tril(a, -1), scipy.sparse.triu(a, 1)
    if lower.nnz and upper.nnz:  # both triangles: a full symmetric matrix
        gap = abs(a - a.T).max()
        scale = abs(a).max()
        if gap > 1e-9 * scale:
            raise ScenarioError(f"{label}: holds both triangles but is not symmetric (max "
                                f"|A - A^T| = {gap:.3g}, max |A| = {scale:.3g})")
        return ((a + a.T) * 0.5).tocsr()
    return (a + (lower if lower.nnz else upper).T).tocsr()


def node_numbers(node_ids: np.ndarray, numbers, label: str, source: str) -> np.ndarray:
    """Indices of FE node ``numbers`` in ``node_ids``; ScenarioError naming the first unknown
    node (``label``) and where nodes come from (``source``)."""
    order = np.argsort(node_ids)
    numbers = np.asarray(numbers, dtype=np.int64)
    pos = np.searchsorted(node_ids[order], numbers)
    pos = np.minimum(pos, node_ids.size - 1)
    found = node_ids[order][pos] == numbers
    if not found.all():
        bad = int(numbers[np.argmax(~found)])
        raise ScenarioError(f"{label}: node {bad} is not in {source}")
    return order[pos]


def checked_dof_map(nodes: np.ndarray, components: np.ndarray, label: str) -> np.ndarray:
    """(n, 2) DOF map of node indices and components 0..5, each pair once."""
    dof_map = np.stack([np.asarray(nodes, np.int64), np.asarray(components, np.int64)], axis=1)
    _, first, counts = np.unique(dof_map, axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        i = int(first[np.argmax(counts > 1)])
        raise ScenarioError(f"{label}: coordinate {i + 1}: node index {dof_map[i, 0]} component "
                            f"{dof_map[i, 1] + 1} is listed twice")
    return dof_map


def matrices_from_pairs(entries: list[np.ndarray], labels: list[str], n_limit: int = 0):
    """(pairs (n, 2) of (node number, component 1..6) sorted, [CSR matrix per entries]) from
    (n_e, 5) arrays of (row node, row component, column node, column component, value): the
    coordinates are every pair any of them names (one triangle or both per matrix)."""
    pairs = np.unique(np.concatenate(
        [e[:, [0, 1]] for e in entries] + [e[:, [2, 3]] for e in entries]).astype(np.int64),
        axis=0)
    key = pairs[:, 0] * 8 + pairs[:, 1]
    out = []
    for e, label in zip(entries, labels, strict=True):
        rows = np.searchsorted(key, e[:, 0].astype(np.int64) * 8 + e[:, 1].astype(np.int64))
        cols = np.searchsorted(key, e[:, 2].astype(np.int64) * 8 + e[:, 3].astype(np.int64))
        out.append(symmetric_from_triplets(rows, cols, e[:, 4], pairs.shape[0], label))
    return pairs, out
