"""Where the linear floating frame stops being stable: a spin that makes a mode's stiffness
negative (centrifugal softening without geometric stiffening)."""

from __future__ import annotations

import numpy as np

from rbcosim.flex.modelling.model import FlexModel


class SpinWarning(UserWarning):
    """A floating body without geometric stiffening spins where its linear model is unstable."""


class SpinLimit:
    """The modal stiffness of a floating body without geometric stiffening at a steady angular
    velocity w (rad/s, structure axes): ``K(w) = K_ee + Σ_ij w_i w_j H_ij`` per unit modal mass
    (``H_ij`` the centrifugal terms of the model's ODE), unstable when an eigenvalue is < 0."""

    def __init__(self, model: FlexModel):
        k = model.n_modes
        w = model.floating.ode_matrix
        o_h = 8 * k + 15
        self._k0 = -w[:, :k]
        self._h = -w[:, o_h:o_h + 9 * k].reshape(k, 9, k).transpose(1, 0, 2)  # (9, k, k)
        # The softening is at most |w|² per unit modal mass: below half the lowest stiffness
        # there is nothing to compute.
        self._floor = 0.5 * float(np.min(np.linalg.eigvals(self._k0).real))

    def below_floor(self, w_squared: float) -> bool:
        """True if an angular velocity of squared norm ``w_squared`` (rad²/s², any axes: the
        norm does not depend on them) is certainly stable (the cheap first check)."""
        return w_squared * (1.0 + 1e-9) < self._floor

    def unstable(self, w_structure: np.ndarray) -> bool:
        """True if the modal stiffness at angular velocity ``w_structure`` (3,) is not positive."""
        w = np.asarray(w_structure, dtype=float)
        if w @ w < self._floor:
            return False
        stiffness = self._k0 + np.tensordot(np.outer(w, w).ravel(), self._h, axes=1)
        return bool(np.min(np.linalg.eigvals(stiffness).real) < 0.0)
