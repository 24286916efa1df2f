"""The interface-node keys of a [couplings.NAME] table: type, axis, node.

``type``: "clamp" (default; position and rotation held), "pin" (the rotation about ``axis``
released) or "ball" (every rotation released). ``axis`` (pin only): the released axis in the
flexible body's structure frame, "x", "y", "z" or a 3-vector along one of them (beams: x along
the beam from node 0, y and z the section axes; imported matrices: the file's axes).
``node``: which node of the flexible body the coupling holds: beams "end", a node index or a
node's coordinate along the beam (m); imported matrices the interface index of the file's
``boundary_nodes``; default 0.
"""

from __future__ import annotations

import numpy as np

from rbcosim.flex.modelling.interface_nodes import COUPLING_TYPES
from rbcosim.scenario.reader import TableReader

_AXES = ("x", "y", "z")


def read_interface(r: TableReader) -> tuple[str, int | None, int | float | str]:
    """(type, released structure axis 0..2 or None, node) of a coupling table ``r``."""
    kind = r.string("type", "clamp", choices=COUPLING_TYPES)
    axis = None
    if kind == "pin":
        if not r.has("axis"):
            raise r.error("axis", "missing: a pin needs the released axis ('x', 'y', 'z' or a "
                                  "3-vector along one of the body's structure axes)")
        axis = _axis(r)
    elif r.has("axis"):
        raise r.error("axis", f"only for type = 'pin' (got type = {kind!r})")
    node = r.raw("node", 0)
    if isinstance(node, bool) or not isinstance(node, (int, float, str)):
        raise r.error("node", f"expected 'end', a node index or a coordinate along the beam, "
                              f"got {node!r}")
    if isinstance(node, (int, float)) and node < 0:
        raise r.error("node", f"expected a non-negative node index or coordinate, got {node}")
    return kind, axis, node


def _axis(r: TableReader) -> int:
    value = r.raw("axis")
    if isinstance(value, str):
        if value not in _AXES:
            raise r.error("axis", f"expected one of {list(_AXES)} or a 3-vector, got {value!r}")
        return _AXES.index(value)
    v = r.as_vector("axis", value, 3)
    n = float(np.linalg.norm(v))
    i = int(np.argmax(np.abs(v)))
    if n == 0.0 or np.linalg.norm(np.delete(v, i)) > 1e-9 * n:
        raise r.error("axis", f"expected a vector along the structure's x, y or z axis (a "
                              f"released rotation is a structure DOF), got {value}")
    return i
