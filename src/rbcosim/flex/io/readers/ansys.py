"""Ansys MAPDL's full file (``job.full``, written by a modal or substructure solve with
``WRFULL``) through ansys-mapdl-reader (``pip install 'rbcosim[ansys]'``).

``FullFile.load_km`` gives K and M (upper triangle, mirrored here) with a ``(node, dof)``
reference per row, dof 0..5 = UX UY UZ ROTX ROTY ROTZ (structural analyses); the DOFs the model
constrains (``D`` commands, ``FullFile.const``) carry no stiffness in the file and are left out,
as CalculiX leaves out ``*BOUNDARY`` DOFs. Node coordinates (and node components, the named
node sets) come from the same model's archive (``.cdb``, ``CDWRITE``) or result file
(``.rst``), default ``job.rst``. Units: the model's own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.model import FEModel, checked_dof_map, node_numbers


def read_ansys(full: Path, nodes: Path | None = None) -> FEModel:
    """The model of an MAPDL ``.full`` file and its ``.cdb`` / ``.rst`` node coordinates."""
    try:
        from ansys.mapdl import reader as mapdl
    except ImportError:
        raise ScenarioError(f"{Path(full).name}: reading Ansys .full files needs "
                            f"ansys-mapdl-reader: pip install 'rbcosim[ansys]'") from None
    full, nodes = Path(full), Path(nodes) if nodes else Path(full).with_suffix(".rst")
    for path in (full, nodes):
        if not path.is_file():
            raise ScenarioError(f"{path.name}: file not found ({path.resolve()})")
    try:
        dof_ref, k, m = mapdl.read_binary(str(full)).load_km(sort=True)
        constrained = np.asarray(mapdl.read_binary(str(full)).const).reshape(-1, 2)
    except Exception as exc:  # noqa: BLE001 - the reader raises anything on a damaged file
        raise ScenarioError(f"{full.name}: not a readable MAPDL full file "
                            f"({type(exc).__name__}: {exc})") from None
    ids, positions, sets = _nodes(mapdl, nodes)
    dof_ref = np.asarray(dof_ref, dtype=np.int64)
    if dof_ref.size and (dof_ref[:, 1].min() < 0 or dof_ref[:, 1].max() > 5):
        raise ScenarioError(f"{full.name}: DOF index {int(dof_ref[:, 1].max())}: expected "
                            f"0..5 (UX UY UZ ROTX ROTY ROTZ; a structural analysis)")
    key = dof_ref[:, 0] * 8 + dof_ref[:, 1]
    free = ~np.isin(key, constrained[:, 0] * 8 + constrained[:, 1])
    k = scipy.sparse.csr_matrix(k)[free][:, free]
    m = scipy.sparse.csr_matrix(m)[free][:, free]
    k = k + scipy.sparse.triu(k, 1).T
    m = m + scipy.sparse.triu(m, 1).T
    source = f"{nodes.name}'s nodes"
    node_idx = node_numbers(ids, dof_ref[free, 0], full.name, source)
    return FEModel(
        stiffness=k.tocsr(), mass=m.tocsr(), node_ids=ids, positions=positions,
        dof_map=checked_dof_map(node_idx, dof_ref[free, 1], full.name),
        node_sets={name: node_numbers(ids, v, f"{nodes.name}: component {name}", source)
                   for name, v in sets.items()},
        stiffness_file=full.name, mass_file=full.name, model_file=nodes.name)


def _nodes(mapdl, path: Path):
    """(node numbers, positions, node components) of a ``.cdb`` archive or ``.rst`` file."""
    try:
        if path.suffix.lower() == ".cdb":
            mesh = mapdl.Archive(str(path))
        else:
            mesh = mapdl.read_binary(str(path)).mesh
        ids = np.asarray(mesh.nnum, dtype=np.int64)
        positions = np.asarray(mesh.nodes, dtype=float)[:, :3]
        sets = {str(k).upper(): np.asarray(v, dtype=np.int64)
                for k, v in (getattr(mesh, "node_components", None) or {}).items()}
    except Exception as exc:  # noqa: BLE001 - the reader raises anything on a damaged file
        raise ScenarioError(f"{path.name}: no node coordinates read (expected an MAPDL .cdb "
                            f"archive or .rst result file: {type(exc).__name__}: {exc})") from None
    if not ids.size:
        raise ScenarioError(f"{path.name}: no nodes")
    return ids, positions, sets
