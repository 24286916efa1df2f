"""Node positions and DOF labels of a structure: what the floating-frame inertia terms need.

Coordinate i of a structure is component ``dof_map[i, 1]`` (0..5 = ``x y z rx ry rz``:
translations in m, small rotations in rad, structure axes) of node ``dof_map[i, 0]``. Node
positions are in the structure (body) frame relative to the interface node, m.

Affine fields ``x -> a0 + A x`` give nodal translations ``a0 + A X_i`` and rotations
:func:`rotation_dofs` (the beam convention: slopes of the field along the structure's x axis
and its twist about x; exact for every rigid rotation). The beam generator and imported
structures both describe themselves this way; one floating-frame model uses it
(:func:`rbcosim.flex.modelling.model.floating_inertia`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.bounds import MAX_MAGNITUDE
from rbcosim.errors import ScenarioError
from rbcosim.flex.modelling.beam import COMPONENT_NAMES
from rbcosim.spatial.linalg3 import skew

#: Relative size of ``K r`` (r a rigid-body mode) above which a floating structure is refused.
RIGID_MODE_TOLERANCE = 1e-6

_RIGID_MODE_NAMES = ("translation along x", "translation along y", "translation along z",
                     "rotation about x", "rotation about y", "rotation about z")


def rotation_dofs(a: np.ndarray) -> np.ndarray:
    """Nodal rotation DOFs (theta_x, theta_y, theta_z) of the affine field x -> A x, beam along x.

    Bending slopes follow the field's derivative along the beam axis (theta_z = A_yx,
    theta_y = -A_zx, exactly what the Hermite elements interpolate); the torsion DOF takes the
    field's rotation about x, ``(A_zy - A_yz) / 2``. For a rigid rotation ``A = [w]x`` this is w.
    Works on stacks: ``a`` shape (..., 3, 3) -> (..., 3).
    """
    return np.stack([0.5 * (a[..., 2, 1] - a[..., 1, 2]), -a[..., 2, 0], a[..., 1, 0]], axis=-1)


def field_nodal(nodes: np.ndarray, a0: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Field-consistent nodal vector of the affine field x -> a0 + A x, shape (6 n_nodes,),
    all six components of every node (node-major)."""
    u = np.empty((nodes.shape[0], 6))
    u[:, :3] = a0 + nodes @ a.T
    u[:, 3:] = rotation_dofs(a)
    return u.ravel()


@dataclass(frozen=True)
class NodalLayout:
    """Node positions (n_nodes, 3), m, structure frame, relative to the interface node, and the
    (node, component) label of each coordinate, ``dof_map`` (n, 2) int."""

    positions: np.ndarray
    dof_map: np.ndarray

    @property
    def full_index(self) -> np.ndarray:
        """Index of each coordinate in the all-six-components node-major layout, (n,)."""
        return 6 * self.dof_map[:, 0] + self.dof_map[:, 1]

    def rigid_modes(self) -> np.ndarray:
        """(n, 6): unit rigid translations along x, y, z and small rotations about x, y, z
        through the interface node, on this structure's coordinates."""
        eye = np.eye(3)
        cols = [field_nodal(self.positions, e, np.zeros((3, 3))) for e in eye]
        cols += [field_nodal(self.positions, np.zeros(3), skew(e)) for e in eye]
        return np.stack(cols, axis=1)[self.full_index]

    def translation_rows(self, node: int) -> np.ndarray:
        """(3, n): the node's displacement (x, y, z) = rows @ coordinates (zero rows for
        components the structure does not carry)."""
        rows = np.zeros((3, self.dof_map.shape[0]))
        for i, (nd, c) in enumerate(self.dof_map):
            if nd == node and c < 3:
                rows[c, i] = 1.0
        return rows


def check_rigid_modes(label: str, stiffness: np.ndarray, layout: NodalLayout) -> None:
    """ScenarioError naming the mode when ``K r`` is not ~0 for a rigid-body mode r (a floating
    structure's stiffness must not resist rigid motion): ``max|K r| <= RIGID_MODE_TOLERANCE
    max|K| max|r|``. Modes with no component on the structure's coordinates are skipped."""
    scale = float(abs(stiffness).max())
    for name, r in zip(_RIGID_MODE_NAMES, layout.rigid_modes().T, strict=True):
        size = float(np.max(np.abs(r)))
        if size == 0.0:
            continue
        residual = float(np.max(np.abs(stiffness @ r))) / (scale * size)
        if residual > RIGID_MODE_TOLERANCE:
            raise ScenarioError(
                f"{label}: K: the rigid {name} (from node_positions and the DOF labels) is not "
                f"in the null space of K: max|K r| / (max|K| max|r|) = {residual:.3g} > "
                f"{RIGID_MODE_TOLERANCE:g} (check node_positions, dof_nodes, dof_components)")


def check_held(label: str, stiffness, layout: NodalLayout, n_boundary: int) -> None:
    """ScenarioError when a rigid-body motion of the structure that K does not resist (``K r``
    ~ 0: the model is free in it) moves none of the first ``n_boundary`` coordinates (the
    interface DOFs) but moves others: the structure is not held by its interface (K_ii
    singular), e.g. a solid's node, which has no rotations, as the only interface node of a
    free part. Names the motion and the fix. ``stiffness`` dense or sparse (n, n)."""
    r = layout.rigid_modes()
    size = float(np.max(np.abs(r)))
    k_scale = float(abs(stiffness).max())
    _, sv, vt = np.linalg.svd(r[:n_boundary], full_matrices=True)
    sv = np.concatenate([sv, np.zeros(6 - sv.size)])
    for s, v in zip(sv, vt, strict=True):
        motion = r @ v
        if (s > 1e-9 * size or float(np.max(np.abs(motion))) <= 1e-9 * size
                or float(np.max(np.abs(stiffness @ motion))) > RIGID_MODE_TOLERANCE * k_scale
                * float(np.max(np.abs(motion)))):
            continue
        comps = {COMPONENT_NAMES[c] for c in layout.dof_map[:n_boundary, 1]}
        axis = np.round(v[3:] / max(float(np.max(np.abs(v[3:]))), 1e-300), 3)
        what = (f"the rigid rotation about {axis.tolist()}" if np.any(v[3:] != 0.0)
                else f"the rigid translation along {np.round(v[:3], 3).tolist()}")
        hint = ("; the interface node has no rotations (a solid's node): tie a face to a 6-DOF "
                "interface node (convert-structure --interface rigid=SET, or interfaces = "
                "[{ tie = \"rigid\", set = \"SET\" }] in the scenario)"
                if not comps & {"rx", "ry", "rz"} else "")
        raise ScenarioError(f"{label}: interface: {what} moves no interface DOF "
                            f"({' '.join(sorted(comps))}) but moves the structure: it is not "
                            f"held by its interface{hint}")


def read_layout(label: str, positions, dof_nodes, dof_components, n: int,
                n_boundary: int, boundary_nodes=None) -> NodalLayout:
    """Validate a structure file's ``node_positions`` (n_nodes, 3), ``dof_nodes`` (n,) int and
    ``dof_components`` (n,) names out of ``x y z rx ry rz``: labels in range and distinct, the
    first ``n_boundary`` coordinates all the DOFs of the interface nodes (``boundary_nodes``
    (n_boundary,): the interface of each, default all 0: one node), one node each, interface
    node 0 at the origin. ScenarioError naming ``label`` and the key otherwise."""
    pos = np.asarray(positions)
    if pos.dtype.kind not in "iuf" or pos.ndim != 2 or pos.shape[1] != 3 or not pos.shape[0] \
            or not np.all(np.isfinite(pos)) or np.abs(pos).max() > MAX_MAGNITUDE:
        raise ScenarioError(f"{label}: node_positions: expected finite numbers of magnitude at "
                            f"most {MAX_MAGNITUDE:g}, shape (n_nodes, 3), got {pos.dtype} shape "
                            f"{pos.shape}")
    nodes = np.asarray(dof_nodes)
    if nodes.dtype.kind not in "iu" or nodes.shape != (n,):
        raise ScenarioError(f"{label}: dof_nodes: expected {n} integers (one node index per "
                            f"coordinate of M), got {nodes.dtype} shape {nodes.shape}")
    bad = np.flatnonzero((nodes < 0) | (nodes >= pos.shape[0]))
    if bad.size:
        raise ScenarioError(f"{label}: dof_nodes: coordinate {bad[0]} names node {nodes[bad[0]]}, "
                            f"not in node_positions (nodes 0..{pos.shape[0] - 1})")
    comps = np.asarray(dof_components)
    if comps.dtype.kind != "U" or comps.shape != (n,) or any(
            c not in COMPONENT_NAMES for c in comps.tolist()):
        raise ScenarioError(f"{label}: dof_components: expected {n} names out of "
                            f"{list(COMPONENT_NAMES)}, got {comps.dtype} shape {comps.shape}"
                            f"{'' if comps.dtype.kind != 'U' else ': ' + str(comps.tolist()[:8])}")
    dof_map = np.stack([nodes.astype(np.int64),
                        [COMPONENT_NAMES.index(c) for c in comps.tolist()]], axis=1)
    pairs = {}
    for i, (nd, c) in enumerate(dof_map.tolist()):
        if (nd, c) in pairs:
            raise ScenarioError(f"{label}: dof_components: coordinates {pairs[nd, c]} and {i} are "
                                f"both {COMPONENT_NAMES[c]} of node {nd}")
        pairs[nd, c] = i
    owner = (np.zeros(n_boundary, dtype=np.int64) if boundary_nodes is None
             else np.asarray(boundary_nodes))
    for j in range(int(owner.max()) + 1 if n_boundary else 0):
        mine = np.flatnonzero(owner == j)
        node = int(dof_map[mine[0], 0])
        of_node = np.flatnonzero(dof_map[:, 0] == node)
        if not np.array_equal(of_node, mine):
            what = (f"the first n_boundary = {n_boundary} coordinates" if owner.max() == 0 else
                    f"the boundary coordinates {mine.tolist()} of interface node {j}")
            raise ScenarioError(f"{label}: dof_nodes: {what} must be all the DOFs of the "
                                f"interface node {node}; its DOFs are coordinates "
                                f"{of_node.tolist()}")
    interface = int(dof_map[0, 0])
    if np.any(pos[interface] != 0.0):
        raise ScenarioError(f"{label}: node_positions: the interface node {interface} must be at "
                            f"the origin (positions relative to it), got {pos[interface].tolist()}")
    return NodalLayout(positions=pos.astype(float), dof_map=dof_map)


def node_outputs(label: str, layout: NodalLayout, output_nodes, n_out: int):
    """(output_rows (n_out, 3, n), output_positions (n_out, 3)) of the file's ``output_nodes``
    (n_out,) node indices: each node's translations and undeformed position."""
    idx = np.asarray(output_nodes)
    n_nodes = layout.positions.shape[0]
    if idx.dtype.kind not in "iu" or idx.shape != (n_out,) or np.any(idx < 0) \
            or np.any(idx >= n_nodes):
        raise ScenarioError(f"{label}: output_nodes: expected {n_out} node indices (one per "
                            f"output_names entry) in 0..{n_nodes - 1}, got {idx.tolist()}")
    rows = np.array([layout.translation_rows(int(i)) for i in idx]).reshape(
        n_out, 3, layout.dof_map.shape[0])
    return rows, layout.positions[idx].reshape(n_out, 3)
