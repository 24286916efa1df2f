"""Interface nodes of a flexible body and the DOFs each coupling type holds.

A coupling ties one node of the structure to a rigid interface point:

- ``clamp``: all six components (position and rotation) follow the point;
- ``pin``: the rotation about ``axis`` is released, the node follows the point's position and
  the two other rotations;
- ``ball``: all rotations are released, the node follows the point's position only.

A released rotation is an interior DOF of the structure (not a boundary DOF), so the wrench on
the rigid body has no moment about it. Components are structure-frame axes (``x y z rx ry rz``
= 0..5; beams: x along the beam from node 0, y and z the section axes), so a pin axis must lie
along one of x, y, z.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

COUPLING_TYPES = ("clamp", "pin", "ball")


class InterfaceError(ValueError):
    """A bad interface; the message starts with the interface's ``where`` (file and key)."""


@dataclass(frozen=True)
class Interface:
    """One interface node: ``node`` ("end", a node index or a coordinate along a beam in m; an
    interface index for imported matrices), the released rotation components (3..5), and
    ``where``, the key that names it in error messages (e.g. "s.toml: couplings.pin_A")."""

    node: int | float | str = 0
    released: tuple[int, ...] = ()
    where: str = "interface"


def released_components(kind: str, axis: int | None) -> tuple[int, ...]:
    """Released structure-frame components for a coupling type: () for a clamp, (3 + axis,)
    for a pin about structure axis ``axis`` (0, 1, 2), (3, 4, 5) for a ball."""
    if kind == "clamp":
        return ()
    if kind == "pin":
        if axis not in (0, 1, 2):
            raise ValueError(f"pin: expected a structure axis 0, 1 or 2, got {axis!r}")
        return (3 + axis,)
    if kind == "ball":
        return (3, 4, 5)
    raise ValueError(f"type: expected one of {COUPLING_TYPES}, got {kind!r}")


def beam_node(interface: Interface, nodes_x: np.ndarray) -> int:
    """The node index of ``interface.node`` on a beam with node coordinates ``nodes_x`` (m):
    "end", an index, or a coordinate that must be a node's (to 1e-9 of the length)."""
    n, spec, where = nodes_x.size, interface.node, f"{interface.where}.node"
    if isinstance(spec, str):
        if spec != "end":
            raise InterfaceError(f"{where}: expected 'end', a node index or a node's coordinate, "
                             f"got {spec!r}")
        return n - 1
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if not 0 <= spec < n:
            raise InterfaceError(f"{where}: node index out of range 0..{n - 1}, got {spec}")
        return int(spec)
    if isinstance(spec, float):
        i = int(np.argmin(np.abs(nodes_x - spec)))
        if abs(nodes_x[i] - spec) > 1e-9 * (nodes_x[-1] - nodes_x[0]):
            raise InterfaceError(f"{where}: {spec} m is not at a node (nodes every "
                             f"{nodes_x[1] - nodes_x[0]:.6g} m from 0 to {nodes_x[-1]:.6g})")
        return i
    raise InterfaceError(f"{where}: expected 'end', a node index or a node's coordinate, "
                     f"got {spec!r}")


def imported_node(interface: Interface, n_nodes: int) -> int:
    """The interface index ``interface.node`` of imported matrices with ``n_nodes`` interface
    nodes (the file's ``boundary_nodes``)."""
    spec, where = interface.node, f"{interface.where}.node"
    if isinstance(spec, bool) or not isinstance(spec, (int, np.integer)) or not 0 <= spec < n_nodes:
        raise InterfaceError(f"{where}: imported matrices: expected an interface index 0.."
                             f"{n_nodes - 1} (the file's boundary_nodes), got {spec!r}")
    return int(spec)


def boundary_of(node_of_dof: np.ndarray, comp_of_dof: np.ndarray, nodes: Sequence[int],
                interfaces: Sequence[Interface]) -> tuple[np.ndarray, np.ndarray]:
    """Boundary DOF indices, interface by interface (in the DOFs' order within each), and the
    interface index of each: the DOFs of node ``nodes[i]`` less the released components.

    InterfaceError when two interfaces share a node or an interface keeps no DOF."""
    seen: dict[int, Interface] = {}
    dofs, owner = [], []
    for i, (node, f) in enumerate(zip(nodes, interfaces, strict=True)):
        if node in seen:
            raise InterfaceError(f"{f.where}.node: node {node} is already coupled by "
                                 f"{seen[node].where.rsplit(' ', 1)[-1]}")
        seen[node] = f
        mine = [d for d in np.flatnonzero(node_of_dof == node) if comp_of_dof[d] not in f.released]
        if not mine:
            raise InterfaceError(f"{f.where}.type: node {node} keeps no coupled DOF")
        dofs += mine
        owner += [i] * len(mine)
    return np.array(dofs, dtype=np.int64), np.array(owner, dtype=np.int64)
