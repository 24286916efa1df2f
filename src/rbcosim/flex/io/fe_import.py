"""From an FE code's model to a structure file: units, interface nodes, and one reduction.

``import_structure`` takes an :class:`~rbcosim.flex.io.readers.FEModel` (any reader), scales it to
SI (:mod:`rbcosim.flex.io.units`), makes the interface nodes (FE nodes with their own DOFs, or
node sets tied to new 6-DOF nodes, :mod:`rbcosim.flex.io.tie`), checks that the interface holds
the structure, and gives either

- the physical structure (``modes=None``; one interface node, dense): a floating body's file,
  as ``rbcosim convert-structure`` writes for plain matrices; or
- its Craig–Bampton reduction (``modes=k``, sparse: LU for the constraint modes, shift-invert
  Lanczos for the k lowest fixed-interface modes): coordinates ``[interface DOFs; eta]``, the
  output nodes' rows and the gravity load projected, a grounded body's file.

``cached_reduction`` keeps the reduced file next to the source, named by a hash of the inputs
(the files' bytes, the format, interfaces, units, modes, outputs), and reads it back instead of
reducing again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.convert import convert_structure
from rbcosim.flex.io.matrices_io import StructureMatrices, load_npz, save_npz, validate_structure
from rbcosim.flex.io.readers import FORMATS, FEModel, read_fe_model
from rbcosim.flex.io.tie import TIE_KINDS, Tie, apply_ties
from rbcosim.flex.io.units import to_si
from rbcosim.flex.modelling.beam import COMPONENT_NAMES
from rbcosim.flex.modelling.craig_bampton import craig_bampton
from rbcosim.flex.modelling.nodal import RIGID_MODE_TOLERANCE, NodalLayout, check_held

#: Bumped when the reduced file's content changes for the same inputs.
_CACHE_VERSION = 2


def parse_interface(spec, where: str) -> dict:
    """An interface spec from a scenario table or a ``--interface`` value: ``{node = N}`` (an FE
    node with its own DOFs), or ``{tie = "rigid"|"average", set = "NAME"}`` / ``nodes = [..]``,
    optional ``at = [x, y, z]`` (model units). Strings: ``N`` or ``rigid=SET``,
    ``average=1,2,3``; one name after ``=`` is a node set, even a number (Nastran's SET1 ids),
    two or more comma-separated numbers are FE node numbers."""
    if isinstance(spec, str):
        kind, eq, what = spec.partition("=")
        if not eq:
            if not kind.strip().isdigit():
                raise ScenarioError(f"{where}: expected NODE or rigid=SET / average=SET (or a "
                                    f"comma-separated node list), got {spec!r}")
            return {"node": int(kind)}
        numbers = [w.strip() for w in what.split(",")]
        if len(numbers) > 1 and all(w.isdigit() for w in numbers):
            return {"tie": kind, "nodes": [int(w) for w in numbers]}
        return {"tie": kind, "set": what}
    allowed = {"node", "tie", "set", "nodes", "at"}
    if not isinstance(spec, Mapping) or set(spec) - allowed:
        raise ScenarioError(f"{where}: expected {{ node = N }} or {{ tie = 'rigid', set = "
                            f"'NAME' }} (keys {sorted(allowed)}), got {spec!r}")
    if ("node" in spec) == ("tie" in spec):
        raise ScenarioError(f"{where}: expected exactly one of node or tie, got {dict(spec)}")
    if "tie" in spec and ("set" in spec) == ("nodes" in spec):
        raise ScenarioError(f"{where}: a tie needs exactly one of set or nodes")
    return dict(spec)


def _interfaces(fe: FEModel, specs: Sequence[dict], where: str):
    """(ties, [(kind, index)]) with kind "node" (index a node) or "tie" (index in ties)."""
    ties, order = [], []
    for i, spec in enumerate(specs):
        w = f"{where}[{i}]"
        if "node" in spec:
            order.append(("node", fe.node_index(int(spec["node"]), f"{w}.node")))
            continue
        if spec["tie"] not in TIE_KINDS:
            raise ScenarioError(f"{w}.tie: expected one of {list(TIE_KINDS)}, got "
                                f"{spec['tie']!r}")
        if "set" in spec:
            name = str(spec["set"]).upper()
            if name not in fe.node_sets:
                raise ScenarioError(f"{w}.set: no node set {spec['set']!r} in {fe.model_file} "
                                    f"(sets: {sorted(fe.node_sets) or 'none'})")
            nodes = fe.node_sets[name]
        else:
            nodes = np.array([fe.node_index(int(n), f"{w}.nodes") for n in spec["nodes"]])
        at = spec.get("at")
        ties.append(Tie(np.asarray(nodes, dtype=np.int64), spec["tie"],
                        None if at is None else np.asarray(at, dtype=float), w))
        order.append(("tie", len(ties) - 1))
    if not order:
        raise ScenarioError(f"{where}: expected at least one interface node")
    return ties, order


def import_structure(fe: FEModel, interfaces: Sequence[dict], *, units: str = "m-kg-s",
                     outputs: Mapping[str, int] | None = None, modes: int | None = None,
                     where: str = "interfaces") -> StructureMatrices:
    """The structure of ``fe`` at ``interfaces`` (specs of :func:`parse_interface`, in order),
    ``outputs`` name -> FE node number, in SI; physical (``modes=None``, one interface) or
    reduced to ``modes`` fixed-interface modes (see the module docstring)."""
    ties, order = _interfaces(fe, interfaces, where)
    out_idx = {name: fe.node_index(int(n), f"output_nodes.{name}")
               for name, n in (outputs or {}).items()}
    fe = to_si(fe, units)
    fe, new_nodes = apply_ties(fe, ties)
    nodes = [idx if kind == "node" else new_nodes[idx] for kind, idx in order]
    for node in nodes:
        if not np.any(fe.dof_map[:, 0] == node):
            raise ScenarioError(f"{where}: node {fe.node_ids[node]} has no DOFs in "
                                f"{fe.stiffness_file} (constrained in the FE model?)")
    boundary = np.concatenate([np.flatnonzero(fe.dof_map[:, 0] == nd) for nd in nodes])
    perm = np.concatenate([boundary, np.setdiff1d(np.arange(fe.dof_map.shape[0]), boundary)])
    layout = NodalLayout(fe.positions - fe.positions[nodes[0]], fe.dof_map[perm])
    check_held(fe.stiffness_file, fe.stiffness[perm][:, perm], layout, boundary.size)
    if modes is None:  # physical: a floating body (several interface nodes: its first two
        return convert_structure(  # define its frame, rbcosim.flex.modelling.floating_multi)
            fe.mass.toarray(), fe.stiffness.toarray(), fe.positions, fe.dof_map,
            interface_node=nodes, output_nodes=out_idx, label=fe.mass_file,
            stiffness_label=fe.stiffness_file)
    return _reduced(fe, layout, perm, nodes, boundary.size, out_idx, modes)


def _reduced(fe, layout, perm, nodes, n_b, out_idx, modes) -> StructureMatrices:
    """The Craig–Bampton file: [interface DOFs; eta], outputs and gravity projected."""
    k = fe.stiffness[perm][:, perm]
    m = fe.mass[perm][:, perm]
    n = perm.size
    rows = np.array([layout.translation_rows(i) for i in out_idx.values()]).reshape(-1, 3, n)
    translations = np.flatnonzero(layout.dof_map[:, 1] < 3)
    rigid = np.zeros((n, 3))  # unit rigid translations: the gravity load is M @ rigid
    rigid[translations, layout.dof_map[translations, 1]] = 1.0
    unit_rows = scipy.sparse.csr_matrix(  # the translational DOFs' unit rows, in DOF order
        (np.ones(translations.size), (np.arange(translations.size), translations)),
        shape=(translations.size, n))
    try:
        cb = craig_bampton(m, k, np.arange(n_b), modes, sign_references=(rows, unit_rows))
    except ValueError as exc:
        key = fe.mass_file if str(exc).startswith("mass") else fe.stiffness_file
        raise ScenarioError(f"{key}: {exc}") from None
    boundary_nodes = np.array([nodes.index(int(nd)) for nd in layout.dof_map[:n_b, 0]])
    return validate_structure(
        fe.stiffness_file, cb.mass, _free_boundary(cb.stiffness, k, layout, n_b), None, n_b,
        [COMPONENT_NAMES[c] for c in layout.dof_map[:n_b, 1]],
        list(out_idx) or None, rows @ cb.transformation if out_idx else None,
        layout.positions[list(out_idx.values())] if out_idx else None,
        cb.transformation.T @ (m @ rigid),
        boundary_nodes, layout.positions[nodes])


def _free_boundary(k_cb: np.ndarray, k, layout: NodalLayout, n_b: int) -> np.ndarray:
    """``k_cb`` with its boundary block projected off the rigid motions K does not resist.

    A rigid motion r of a free structure is ``[r_b; 0]`` in Craig–Bampton coordinates (the
    constraint modes carry it exactly), so ``K_bb r_b = 0`` in exact arithmetic; the FE file's
    printed digits leave a residue there (a 100,000-DOF solid: -1.2 against 3e7) that makes the
    reduced K indefinite. ``K_bb <- P^T K_bb P``, ``P = I - R_b R_b^+``, restores it."""
    r = layout.rigid_modes()
    scale = float(abs(k).max())
    free = [j for j in range(6) if np.any(r[:, j]) and float(np.max(np.abs(k @ r[:, j])))
            <= RIGID_MODE_TOLERANCE * scale * float(np.max(np.abs(r[:, j])))]
    if not free:
        return k_cb
    r_b = r[:n_b, free]
    p = np.eye(n_b) - r_b @ np.linalg.pinv(r_b)
    out = k_cb.copy()
    out[:n_b, :n_b] = p.T @ k_cb[:n_b, :n_b] @ p
    return 0.5 * (out + out.T)


def cached_reduction(fmt: str, files: Mapping[str, Path], interfaces: Sequence[dict], *,
                     units: str, outputs: Mapping[str, int], modes: int,
                     where: str = "flex_body") -> StructureMatrices:
    """:func:`import_structure` reduced to ``modes``, read from (or written to) the cache file
    ``<first file>.rbcosim-<hash>.npz`` beside the source (no cache if that folder is
    read-only)."""
    files = {k: Path(v) for k, v in files.items()}
    first = files.get(FORMATS.get(fmt, ("",))[0])
    if first is None:
        raise ScenarioError(f"{where}.source: {fmt!r} needs the file {FORMATS.get(fmt, ('',))[0]!r} "
                            f"(formats and files: {FORMATS})")
    if fmt == "calculix":  # the matrices beside the deck, hashed with it
        for key, suffix in (("stiffness", ".sti"), ("mass", ".mas"), ("dofs", ".dof")):
            files.setdefault(key, first.with_suffix(suffix))
    digest = hashlib.sha256(json.dumps(
        [_CACHE_VERSION, fmt, sorted((k, p.name) for k, p in files.items()), list(interfaces),
         units, dict(outputs), modes], sort_keys=True, default=str).encode())
    for key in sorted(files):
        try:
            digest.update(files[key].read_bytes())
        except OSError as exc:
            raise ScenarioError(f"{where}.source.{key}: file not found or not readable "
                                f"({files[key].resolve()}: {exc.strerror})") from None
    cache = first.with_name(f"{first.stem}.rbcosim-{digest.hexdigest()[:16]}.npz")
    if cache.exists():
        return load_npz(cache)
    structure = import_structure(read_fe_model(fmt, files, f"{where}.source"), interfaces,
                                 units=units, outputs=outputs, modes=modes,
                                 where=f"{where}.interfaces")
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp.npz")
    try:
        save_npz(tmp, structure)
        os.replace(tmp, cache)
    except OSError:
        tmp.unlink(missing_ok=True)
    return structure
