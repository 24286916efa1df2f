"""Import (and export) of a structure's matrices for a grounded or floating Craig–Bampton body.

The matrices describe a structure on coordinates whose FIRST ``n_boundary`` entries are the
boundary DOFs at the joint (driven by the interface point); the rest are interior coordinates,
either physical DOFs or already-reduced modal coordinates (both work: the body re-runs the
Craig–Bampton reduction, which is exact for a model already in Craig–Bampton form).

NumPy ``.npz`` keys (SI units):

- ``M`` (n, n) mass, ``K`` (n, n) stiffness — required, symmetric, positive semi-definite;
- ``C`` (n, n) viscous damping — optional, symmetric PSD;
- ``n_boundary`` — required, integer scalar, 1..6 per interface node and < n;
- ``boundary_dofs`` — optional, n_boundary strings out of ``x y z rx ry rz`` naming which
  interface-point component (translation along / small rotation about an inertial axis) each
  boundary coordinate follows; default ``["x", "y", "z", "rx", "ry", "rz"][:n_boundary]``;
- ``boundary_nodes`` — optional, (n_boundary,) integers, non-decreasing from 0: the interface
  node each boundary coordinate belongs to (a structure coupled at several nodes); default all
  0 (one interface node); the names in ``boundary_dofs`` are distinct per node;
- ``interface_positions`` — optional, (n_nodes, 3): each interface node's undeformed position
  relative to interface node 0, inertial axes, m; default zeros;
- ``output_names`` — optional, (n_out,) strings: named output nodes;
- ``output_rows`` — with ``output_names``, (n_out, 3, n): node displacement (x, y, z, m) =
  ``output_rows[j] @ coordinates``;
- ``output_positions`` — optional, (n_out, 3): node positions relative to interface node 0
  in the undeformed state, m; default zeros;
- ``gravity_load`` — optional, (n, 3), N per m/s²: column j is the structure's load vector for
  a unit gravity acceleration along inertial axis j (an FE code's gravity load case divided
  by g, with the share of the mass tied to constrained DOFs; for an unconstrained model,
  ``M @ R`` with R the coordinates of unit rigid translations). Without it, gravity acts
  through the constraint modes of the boundary translations (support acceleration: exact
  only when the boundary DOFs alone hold the structure).

- ``node_positions`` (n_nodes, 3), ``dof_nodes`` (n,) int, ``dof_components`` (n,) strings out
  of ``x y z rx ry rz`` — optional together, required for a floating body: node positions in
  the structure frame relative to the interface node (whose DOFs are the boundary) and the
  (node, component) label of each coordinate (:mod:`rbcosim.flex.modelling.nodal`);
- ``output_nodes`` — optional, (n_out,) node indices with ``output_names``, instead of
  ``output_rows`` / ``output_positions``.

Matrix Market ``.mtx``: one file per matrix (``M``, ``K``, optional ``C``), dense or
sparse, read by :mod:`rbcosim.flex.io.matrix_market`; ``n_boundary`` and ``boundary_dofs`` then come from the scenario.

Every problem raises :class:`rbcosim.errors.ScenarioError` naming the file and the key, e.g.
``two_mass.npz: K: expected a square 2x2 matrix, got shape (2, 3)``.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rbcosim.bounds import MAX_MAGNITUDE
from rbcosim.errors import ScenarioError
from rbcosim.flex.io.declared_size import refuse_oversized
from rbcosim.flex.io.matrix_market import read_matrix_market_file
from rbcosim.flex.modelling.beam import COMPONENT_NAMES
from rbcosim.flex.modelling.nodal import (
    NodalLayout,
    check_held,
    check_rigid_modes,
    node_outputs,
    read_layout,
)

#: The node description a floating body needs (all three or none).
_LAYOUT_KEYS = ("node_positions", "dof_nodes", "dof_components")
_NPZ_KEYS = {
    "M",
    "K",
    "C",
    "n_boundary",
    "boundary_dofs",
    "output_names",
    "output_rows",
    "output_positions",
    "gravity_load",
    *_LAYOUT_KEYS,
    "output_nodes",
    "boundary_nodes",
    "interface_positions",
}


@dataclass(frozen=True)
class StructureMatrices:
    """Validated matrices of a structure; coordinates ``[boundary (n_boundary); interior]``.

    Attributes:
        mass, stiffness: shape (n, n); damping: shape (n, n) or None.
        n_boundary: number of leading boundary coordinates.
        boundary_dofs: interface component name per boundary coordinate.
        output_names: names of output nodes; output_rows: (n_out, 3, n) recovery rows;
        output_positions: (n_out, 3) undeformed node positions relative to the interface point.
        gravity_load: (n, 3) load per unit gravity along inertial x, y, z, N/(m/s²), or None.
        layout: node positions and DOF labels (:mod:`rbcosim.flex.modelling.nodal`), or None; required
            for a floating body.
        boundary_nodes: (n_boundary,) interface node of each boundary coordinate.
        interface_positions: (n_nodes, 3) interface node positions relative to node 0, m.
    """

    mass: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray | None
    n_boundary: int
    boundary_dofs: tuple[str, ...]
    output_names: tuple[str, ...] = ()
    output_rows: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 0)))
    output_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    gravity_load: np.ndarray | None = None
    layout: NodalLayout | None = None
    boundary_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    interface_positions: np.ndarray = field(default_factory=lambda: np.zeros((1, 3)))


#: What a damaged archive or array header raises inside zipfile, zlib and numpy's reader.
_DAMAGED_ZIP = (OSError, ValueError, EOFError, KeyError, NotImplementedError, OverflowError,
                RuntimeError, MemoryError, struct.error, zipfile.BadZipFile, zlib.error)


def _strings(content, key: str, label: str) -> list[str] | None:
    """The 1-D string array `key` of a structure file as a list (None when absent)."""
    if key not in content:
        return None
    a = content[key]
    if a.dtype.kind != "U" or a.ndim != 1:
        raise ScenarioError(
            f"{label}: {key}: expected a 1-D array of strings, got {a.dtype} shape {a.shape}"
        )
    return [str(s) for s in a]


def load_npz(path: str | Path) -> StructureMatrices:
    """Read and validate a ``.npz`` structure file (see the module docstring for the keys)."""
    path = Path(path)
    label = path.name
    refuse_oversized(path, label)
    try:
        with np.load(path, allow_pickle=False) as data:
            content = {key: data[key] for key in data.files}
    except FileNotFoundError as exc:
        raise ScenarioError(f"{label}: file not found ({path})") from exc
    except _DAMAGED_ZIP as exc:
        raise ScenarioError(f"{label}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    unknown = sorted(set(content) - _NPZ_KEYS)
    if unknown:
        raise ScenarioError(f"{label}: unknown keys {unknown}; valid keys: {sorted(_NPZ_KEYS)}")
    for key in ("M", "K", "n_boundary"):
        if key not in content:
            raise ScenarioError(f"{label}: {key}: missing (required keys: M, K, n_boundary)")
    n_b = content["n_boundary"]
    if n_b.shape != () or n_b.dtype.kind not in "iu":
        raise ScenarioError(
            f"{label}: n_boundary: expected an integer scalar, got {n_b.dtype} shape {n_b.shape}"
        )
    names = _strings(content, "boundary_dofs", label)
    out_names = _strings(content, "output_names", label)
    return validate_structure(
        label,
        content["M"],
        content["K"],
        content.get("C"),
        int(n_b),
        names,
        out_names,
        content.get("output_rows"),
        content.get("output_positions"),
        content.get("gravity_load"),
        content.get("boundary_nodes"),
        content.get("interface_positions"),
        layout=_layout_arrays(label, content),
        output_nodes=content.get("output_nodes"),
    )


def _layout_arrays(label: str, content: dict) -> tuple | None:
    """(node_positions, dof_nodes, dof_components) from the file, or None if it has none."""
    given = [k for k in _LAYOUT_KEYS if k in content]
    if not given:
        return None
    missing = [k for k in _LAYOUT_KEYS if k not in content]
    if missing:
        raise ScenarioError(f"{label}: {missing[0]}: missing ({', '.join(_LAYOUT_KEYS)} go "
                            f"together; the file has {', '.join(given)})")
    return tuple(content[k] for k in _LAYOUT_KEYS)


def load_mtx(
    files: dict[str, str | Path], n_boundary: int, boundary_dofs=None
) -> StructureMatrices:
    """Read ``files = {"M": path, "K": path, "C": path (optional)}`` in Matrix Market format."""
    missing = [k for k in ("M", "K") if k not in files]
    if missing:
        raise ScenarioError(f"files: {missing[0]}: missing (required: M, K; optional: C)")
    unknown = sorted(set(files) - {"M", "K", "C"})
    if unknown:
        raise ScenarioError(f"files: unknown keys {unknown}; valid keys: ['C', 'K', 'M']")
    mats = {}
    for key, p in files.items():
        p = Path(p)
        refuse_oversized(p, f"{p.name}: {key}")
        try:
            a = read_matrix_market_file(p)
        except FileNotFoundError as exc:
            raise ScenarioError(f"{p.name}: {key}: file not found ({p})") from exc
        except OSError as exc:
            raise ScenarioError(f"{p.name}: {key}: cannot read ({exc.strerror})") from None
        except ValueError as exc:
            raise ScenarioError(f"{p.name}: {key}: not a readable Matrix Market file: {exc}"
                                ) from None
        mats[key] = (p.name, a)
    label_m, m = mats["M"]
    label_k, k = mats["K"]
    _check_square(label_m, "M", m, None)
    c = mats.get("C")
    # Validate each matrix against its own file name, then the set under M's name.
    _check_square(label_k, "K", k, m.shape[0])
    if c is not None:
        _check_square(c[0], "C", c[1], m.shape[0])
        _check_psd(c[0], "C", np.asarray(c[1], dtype=float))
    _check_psd(label_k, "K", np.asarray(k, dtype=float))
    return validate_structure(
        label_m, m, k, None if c is None else c[1], n_boundary, boundary_dofs, None, None, None
    )


def save_npz(path: str | Path, structure: StructureMatrices) -> None:
    """Write ``structure`` in the ``.npz`` layout :func:`load_npz` reads."""
    content = {
        "M": structure.mass,
        "K": structure.stiffness,
        "n_boundary": np.int64(structure.n_boundary),
        "boundary_dofs": np.array(structure.boundary_dofs, dtype=str),
    }
    if structure.damping is not None:
        content["C"] = structure.damping
    if structure.gravity_load is not None:
        content["gravity_load"] = structure.gravity_load
    if structure.layout is not None:
        content["node_positions"] = structure.layout.positions
        content["dof_nodes"] = structure.layout.dof_map[:, 0]
        content["dof_components"] = np.array(
            [COMPONENT_NAMES[c] for c in structure.layout.dof_map[:, 1]], dtype=str)
    if structure.interface_positions.shape[0] > 1:
        content["boundary_nodes"] = structure.boundary_nodes
        content["interface_positions"] = structure.interface_positions
    if structure.output_names:
        content["output_names"] = np.array(structure.output_names, dtype=str)
        content["output_rows"] = structure.output_rows
        content["output_positions"] = structure.output_positions
    np.savez(path, **content)


def validate_structure(
    label: str,
    mass,
    stiffness,
    damping,
    n_boundary: int,
    boundary_dofs,
    output_names,
    output_rows,
    output_positions,
    gravity_load=None,
    boundary_nodes=None,
    interface_positions=None,
    *,
    layout: tuple | None = None,
    output_nodes=None,
) -> StructureMatrices:
    """Check shapes, finiteness, symmetry, semi-definiteness and names; ScenarioError otherwise.

    ``layout``: (node_positions, dof_nodes, dof_components) arrays (:func:`read_layout`), or
    None; ``output_nodes``: node indices of the named outputs (instead of ``output_rows``)."""
    m, k, c = _checked_matrices(label, mass, stiffness, damping)
    n = m.shape[0]
    if isinstance(n_boundary, bool) or not isinstance(n_boundary, (int, np.integer)):
        raise ScenarioError(f"{label}: n_boundary: expected an integer, got {n_boundary!r}")
    nodes, node_positions = _interface_nodes(label, n_boundary, boundary_nodes,
                                             interface_positions)
    most = min(6 * node_positions.shape[0], n - 1)
    if not 1 <= n_boundary <= most:
        raise ScenarioError(
            f"{label}: n_boundary: expected 1..{most} for {n} coordinates, got {n_boundary}"
        )
    names = _boundary_names(label, n_boundary, boundary_dofs, nodes, node_positions.shape[0])
    nodal = (None if layout is None
             else read_layout(label, *layout, n, int(n_boundary), nodes))
    if nodal is not None:
        labelled = tuple(COMPONENT_NAMES[c] for c in nodal.dof_map[:n_boundary, 1])
        if boundary_dofs is not None and names != labelled:
            raise ScenarioError(f"{label}: boundary_dofs: {list(names)} contradicts "
                                f"dof_components of the boundary {list(labelled)}")
        names = labelled
    if output_nodes is not None:
        if (nodal is None or output_names is None or output_rows is not None
                or output_positions is not None):
            raise ScenarioError(f"{label}: output_nodes: needs output_names and node_positions, "
                                f"and replaces output_rows / output_positions")
        output_rows, output_positions = node_outputs(label, nodal, output_nodes,
                                                     len(output_names))
    out_names, rows, positions = _outputs(label, n, output_names, output_rows, output_positions)
    return StructureMatrices(
        mass=m,
        stiffness=k,
        damping=c,
        n_boundary=int(n_boundary),
        boundary_dofs=names,
        output_names=out_names,
        output_rows=rows,
        output_positions=positions,
        gravity_load=_gravity_load(label, gravity_load, n),
        boundary_nodes=nodes,
        interface_positions=node_positions,
        layout=nodal,
    )


def _checked_matrices(label: str, mass, stiffness, damping):
    """(M, K, C or None) as float arrays: square, of one size, finite, symmetric PSD."""
    m = np.asarray(mass)
    _check_square(label, "M", m, None)
    n = m.shape[0]
    k = np.asarray(stiffness)
    _check_square(label, "K", k, n)
    c = None if damping is None else np.asarray(damping)
    if c is not None:
        _check_square(label, "C", c, n)
    m = m.astype(float)
    k = k.astype(float)
    _check_psd(label, "M", m)
    _check_psd(label, "K", k)
    if c is not None:
        c = c.astype(float)
        _check_psd(label, "C", c)
    return m, k, c


def _boundary_names(label: str, n_boundary: int, boundary_dofs, nodes: np.ndarray,
                    n_nodes: int) -> tuple[str, ...]:
    """The interface component name of each boundary coordinate (default x y z rx ry rz)."""
    if boundary_dofs is None:
        if n_nodes > 1:
            raise ScenarioError(f"{label}: boundary_dofs: required with several interface "
                                "nodes (boundary_nodes)")
        return COMPONENT_NAMES[:n_boundary]
    names = tuple(boundary_dofs)
    if len(names) != n_boundary:
        raise ScenarioError(
            f"{label}: boundary_dofs: expected {n_boundary} names (n_boundary), "
            f"got {len(names)}: {list(names)}"
        )
    bad = [s for s in names if s not in COMPONENT_NAMES]
    if bad or len(set(zip(nodes, names))) != len(names):
        raise ScenarioError(
            f"{label}: boundary_dofs: expected distinct names out of "
            f"{list(COMPONENT_NAMES)} (per interface node), got {list(names)}"
        )
    return names


def _outputs(label: str, n: int, output_names, output_rows, output_positions):
    """(names, rows (n_out, 3, n), positions (n_out, 3)) of the named output nodes."""
    if output_names is None:
        if output_rows is not None or output_positions is not None:
            raise ScenarioError(f"{label}: output_names: missing (required with output_rows)")
        return (), np.zeros((0, 3, n)), np.zeros((0, 3))
    out_names = tuple(output_names)
    if len(set(out_names)) != len(out_names):
        raise ScenarioError(f"{label}: output_names: duplicate names {list(out_names)}")
    if output_rows is None:
        raise ScenarioError(f"{label}: output_rows: missing (required with output_names)")
    rows = np.asarray(output_rows, dtype=float)
    if rows.shape != (len(out_names), 3, n) or not np.all(np.isfinite(rows)):
        raise ScenarioError(
            f"{label}: output_rows: expected finite shape ({len(out_names)}, 3, {n}), "
            f"got shape {rows.shape}"
        )
    if output_positions is None:
        return out_names, rows, np.zeros((len(out_names), 3))
    positions = np.asarray(output_positions, dtype=float)
    if positions.shape != (len(out_names), 3) or not np.all(np.isfinite(positions)):
        raise ScenarioError(
            f"{label}: output_positions: expected finite shape ({len(out_names)}, 3), "
            f"got shape {positions.shape}"
        )
    return out_names, rows, positions


def _gravity_load(label: str, gravity_load, n: int) -> np.ndarray | None:
    """The (n, 3) load per unit gravity as floats, or None."""
    if gravity_load is None:
        return None
    load = np.asarray(gravity_load)
    if load.dtype.kind not in "iuf" or load.shape != (n, 3) or not np.all(np.isfinite(load)):
        raise ScenarioError(
            f"{label}: gravity_load: expected finite numbers of shape ({n}, 3), got "
            f"{load.dtype} shape {load.shape}"
        )
    return load.astype(float)


def check_floating(label: str, structure: StructureMatrices,
                   stiffness_label: str | None = None) -> None:
    """A floating body's file: node positions and DOF labels present, every rigid-body mode in
    the null space of K (:func:`rbcosim.flex.modelling.nodal.check_rigid_modes`), and a ``gravity_load``
    (if given) equal to the mass on the unit rigid translations, ``M R``, from which a floating
    body takes its weight. ScenarioError naming ``label`` (``stiffness_label``, default
    ``label``, for K and the interface) and the key otherwise."""
    layout = structure.layout
    if layout is None:
        raise ScenarioError(f"{label}: node_positions: missing (a floating body needs "
                            f"{', '.join(_LAYOUT_KEYS)}; `rbcosim convert-structure` writes them)")
    check_held(stiffness_label or label, structure.stiffness, layout, structure.n_boundary)
    check_rigid_modes(stiffness_label or label, structure.stiffness, layout)
    if structure.gravity_load is not None:
        weight = structure.mass @ layout.rigid_modes()[:, :3]
        gap = float(np.max(np.abs(structure.gravity_load - weight)))
        scale = float(np.max(np.abs(weight)))
        if gap > 1e-6 * scale:
            raise ScenarioError(f"{label}: gravity_load: differs from M R (the mass on unit rigid "
                                f"translations, the weight a floating body takes) by {gap:.3g} "
                                f"(max |M R| = {scale:.3g}); leave it out for a floating body")


def _interface_nodes(label: str, n_b: int, boundary_nodes, interface_positions):
    """(boundary_nodes (n_b,) int, interface_positions (n_nodes, 3)) checked, or the one-node
    defaults."""
    if boundary_nodes is None:
        if interface_positions is not None:
            raise ScenarioError(f"{label}: boundary_nodes: missing (required with "
                                "interface_positions)")
        return np.zeros(n_b, dtype=np.int64), np.zeros((1, 3))
    nodes = np.asarray(boundary_nodes)
    if (nodes.dtype.kind not in "iu" or nodes.shape != (n_b,) or nodes[0] != 0
            or np.any(np.diff(nodes) < 0) or np.any(np.diff(nodes) > 1)):
        raise ScenarioError(f"{label}: boundary_nodes: expected {n_b} integers (n_boundary), "
                            f"non-decreasing from 0 in steps of 0 or 1, got {nodes.tolist()}")
    count = int(nodes[-1]) + 1
    if interface_positions is None:
        return nodes.astype(np.int64), np.zeros((count, 3))
    pos = np.asarray(interface_positions)
    if pos.dtype.kind not in "iuf" or pos.shape != (count, 3) or not np.all(np.isfinite(pos)):
        raise ScenarioError(f"{label}: interface_positions: expected finite numbers of shape "
                            f"({count}, 3) (one row per interface node), got shape {pos.shape}")
    return nodes.astype(np.int64), pos.astype(float)


def _check_square(label: str, key: str, a: np.ndarray, n: int | None) -> None:
    if a.dtype.kind not in "iuf":
        raise ScenarioError(f"{label}: {key}: expected a real numeric matrix, got dtype {a.dtype}")
    if n is None:
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
            raise ScenarioError(f"{label}: {key}: expected a square matrix, got shape {a.shape}")
    elif a.shape != (n, n):
        raise ScenarioError(
            f"{label}: {key}: expected a square {n}x{n} matrix, got shape {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ScenarioError(f"{label}: {key}: contains non-finite values")
    if np.abs(a).max() > MAX_MAGNITUDE:
        raise ScenarioError(f"{label}: {key}: contains values of magnitude above {MAX_MAGNITUDE:g}")


def _check_psd(label: str, key: str, a: np.ndarray) -> None:
    """ScenarioError unless ``a`` is symmetric and positive semi-definite: smallest eigenvalue
    at least ``-1e-9 max|A| n``. Tested by a Cholesky factorization of ``A + 1e-9 max|A| n I``
    (n³/3 operations, no eigenvalues); only a failed one computes the smallest eigenvalue (for
    the message, and to let round-off at the limit pass)."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    if scale == 0.0:
        return
    asym = float(np.max(np.abs(a - a.T)))
    if asym > 1e-9 * scale:
        raise ScenarioError(
            f"{label}: {key}: expected a symmetric matrix, max |A - A^T| = {asym:.3g} "
            f"(max |A| = {scale:.3g})"
        )
    shift = 1e-9 * scale * a.shape[0]
    shifted = a + a.T
    shifted *= 0.5
    shifted.flat[:: a.shape[0] + 1] += shift
    try:
        np.linalg.cholesky(shifted)
        return
    except np.linalg.LinAlgError:
        pass
    import scipy.linalg

    shifted.flat[:: a.shape[0] + 1] -= shift
    lam_min = float(scipy.linalg.eigvalsh(shifted, subset_by_index=[0, 0])[0])
    if lam_min < -shift:
        raise ScenarioError(
            f"{label}: {key}: expected a positive semi-definite matrix, smallest eigenvalue "
            f"{lam_min:.6g}"
        )
