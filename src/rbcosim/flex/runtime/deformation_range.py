"""Where a floating flexible body leaves the small-deformation range its linear field holds for.

The floating-frame models describe the elastic displacement as a linear field of the modes,
u = Φ η, with small nodal rotations. A bent beam's points move on arcs, which a linear field
cannot follow: at a section rotation ψ a transverse position is off by about ψ²/6 of the
deflection (the foreshortening the linear field leaves out). The continuity gaps cannot see
this — they compare the two sides of the joint, not the body with the physics — so the
endpoint measures, after every macro step, the largest elastic rotation of the body's nodes
and warns once when it passes ROTATION_LIMIT (ψ²/6 = 1 %)."""

from __future__ import annotations

import numpy as np

from rbcosim.flex.modelling.model import FlexModel

#: rad: largest elastic nodal rotation before the warning (ψ²/6 ≈ 1 % at 0.25 rad).
ROTATION_LIMIT = 0.25


class DeformationWarning(UserWarning):
    """A flexible body deforms beyond the small-deformation range of its formulation."""


class DeformationRange:
    """Largest elastic nodal rotation (rad) and deflection (m, and per body length) of a
    floating body's modal coordinates η, from its nodal mode shapes (structure frame)."""

    def __init__(self, model: FlexModel):
        floating = model.floating
        n_nodes = floating.nodes.shape[0]
        dofs = floating.modes.reshape(n_nodes, 6, -1)
        self._n_nodes = n_nodes
        self._translations = np.ascontiguousarray(dofs[:, :3]).reshape(3 * n_nodes, -1)
        self._rotations = np.ascontiguousarray(dofs[:, 3:]).reshape(3 * n_nodes, -1)
        self.length = float(np.max(np.linalg.norm(floating.nodes, axis=1)))
        # Largest spectral norm of a node's rotation rows: |theta_i| <= gain |eta| for all i.
        blocks = self._rotations.reshape(n_nodes, 3, -1)
        self._rotation_gain = float(max((np.linalg.norm(b, 2) for b in blocks), default=0.0))

    def _largest(self, rows: np.ndarray, eta: np.ndarray) -> float:
        u = rows @ eta
        return float(np.sqrt((u * u).reshape(self._n_nodes, 3).sum(axis=1).max()))

    def rotation(self, eta: np.ndarray) -> float:
        """Largest elastic nodal rotation, rad (the check after every macro step)."""
        return self._largest(self._rotations, eta)

    def rotation_exceeds(self, eta: np.ndarray, limit: float) -> bool:
        """rotation(eta) > limit, without the nodal rotations while the bound gain |eta| on
        them stays below the limit (the check after every macro step)."""
        e = float(eta @ eta)
        if (1.0 + 1e-9) * self._rotation_gain * np.sqrt(e) <= limit:
            return False
        return self.rotation(eta) > limit

    def measure(self, eta: np.ndarray) -> tuple[float, float]:
        """(largest nodal rotation rad, largest nodal displacement / body length)."""
        deflection = self._largest(self._translations, eta)
        return self.rotation(eta), deflection / self.length if self.length else 0.0
