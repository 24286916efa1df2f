"""A floating beam's output nodes on the inextensible axis through its section rotations.

The linear floating-frame field u = Φ η moves a bent beam's points along straight lines: at a
section rotation ψ the transverse displacement grows like ∫ψ ds, where the points of an
inextensible axis move on arcs, ∫sin ψ ds, and shorten along it, ∫(cos ψ − 1) ds. The
difference is about ψ²/6 of the deflection (2 % of the spin-up beam's at 28 % of its length).
This module places each output node on the curve of unit tangent R(ψ(s)) e_x instead, ψ(s) the
section rotation the Hermite field interpolates (ψ_y = −w′, ψ_z = v′; torsion does not turn
the tangent), integrated from the clamp (x = 0) by 4-point Gauss quadrature per element, plus
the field's axial displacement u_x:

    r(X) = ∫₀^X R(ψ(s)) e_x ds + u_x(X) e_x,    displacement = r(X) − X e_x,

which equals the linear field's displacement to first order in ψ and keeps the axis' length
(the results' ``<flex>.<node>.arc_ux .arc_uy .arc_uz``, structure axes of the floating frame).
It is a reading of the modal state, not a change of the dynamics (the modal equations stay
the linear floating frame's, with or without geometric stiffening). Beams only: the structure's
nodes on its +x axis from the clamp, in increasing order.
"""

from __future__ import annotations

import numpy as np

from rbcosim.flex.modelling.model import FlexModel

_GAUSS_POINTS, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(4)


def is_beam_line(model: FlexModel) -> bool:
    """True for a floating body whose nodes (six DOFs each) lie on its +x axis from the
    clamp, in increasing order."""
    floating = model.floating
    if floating is None or floating.nodes.shape[0] < 2:
        return False
    nodes = floating.nodes
    x = nodes[:, 0]
    return bool(floating.modes.shape[0] == 6 * x.size and np.all(nodes[:, 1:] == 0.0)
                and x[0] == 0.0 and np.all(np.diff(x) > 0.0))


class ArcShape:
    """Output-node displacements (m, floating frame's structure axes) on the inextensible axis
    through the section rotations of the modal coordinates η (module docstring)."""

    def __init__(self, model: FlexModel):
        if not is_beam_line(model):
            raise ValueError("arc shape: a floating beam (nodes on +x from the clamp) is needed")
        floating = model.floating
        x = floating.nodes[:, 0]
        dofs = floating.modes.reshape(x.size, 6, -1)  # node, component, mode
        self._n_boundary = model.n_boundary
        self._rows = model.output_rows
        self._slopes = []  # per output node: (v' rows (G, k), w' rows (G, k), weights (G,))
        for target in model.output_positions[:, 0]:
            v_rows, w_rows, weights = [], [], []
            for e in range(x.size - 1):
                a, b = x[e], min(x[e + 1], target)
                if b <= a:
                    break
                h = x[e + 1] - x[e]
                for g, wg in zip(_GAUSS_POINTS, _GAUSS_WEIGHTS):
                    s = 0.5 * (a + b) + 0.5 * (b - a) * g
                    xi = (s - x[e]) / h
                    dn = ((6 * xi * xi - 6 * xi) / h, 1 - 4 * xi + 3 * xi * xi,
                          (6 * xi - 6 * xi * xi) / h, 3 * xi * xi - 2 * xi)
                    v_rows.append(dn[0] * dofs[e, 1] + dn[1] * dofs[e, 5]
                                  + dn[2] * dofs[e + 1, 1] + dn[3] * dofs[e + 1, 5])
                    w_rows.append(dn[0] * dofs[e, 2] - dn[1] * dofs[e, 4]  # w' = -theta_y
                                  + dn[2] * dofs[e + 1, 2] - dn[3] * dofs[e + 1, 4])
                    weights.append(0.5 * (b - a) * wg)
            k = dofs.shape[2]
            g = len(weights)
            self._slopes.append((np.array(v_rows, dtype=float).reshape(g, k),
                                 np.array(w_rows, dtype=float).reshape(g, k),
                                 np.array(weights, dtype=float)))

    def displacements(self, eta: np.ndarray) -> np.ndarray:
        """(n_out, 3) displacement of each output node on the inextensible axis, m."""
        coords = np.concatenate((np.zeros(self._n_boundary), eta))
        axial = (self._rows @ coords)[:, 0]
        out = np.zeros((len(self._slopes), 3))
        for i, (v_rows, w_rows, weights) in enumerate(self._slopes):
            vp, wp = v_rows @ eta, w_rows @ eta
            angle = np.hypot(vp, wp)
            sinc = np.sinc(angle / np.pi)  # sin(ψ)/ψ
            out[i] = (weights @ (np.cos(angle) - 1.0) + axial[i],
                      weights @ (sinc * vp), weights @ (sinc * wp))
        return out
