"""rbcosim.flex.runtime.arc_shape: output nodes on the inextensible axis through the section rotations.

A beam bent to constant curvature κ (w = κx²/2, section rotation ψ = κx, which the Hermite
elements represent exactly) has an inextensible axis that is a circular arc: the tip at
(sin κL / κ − L, (1 − cos κL) / κ) from its undeformed place. The linear field puts it at
(0, κL²/2)."""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim.flex.modelling.model import FlexModel
from rbcosim.flex.runtime.arc_shape import ArcShape, is_beam_line

L, E, RHO, AREA, I_SEC = 2.0, 2.1e11, 7850.0, 1e-4, 1e-9


def _beam(planar: bool) -> FlexModel:
    n_dofs = (3 if planar else 6) * 8  # 8 elements: every interior DOF kept as a mode
    return FlexModel.from_beam(L, E, RHO, AREA, I_SEC, n_elements=8, n_modes=n_dofs,
                               attachment="floating", planar=planar,
                               output_nodes={"mid": L / 2, "tip": "end"})


def _eta_of(model: FlexModel, nodal: np.ndarray) -> np.ndarray:
    """Modal coordinates of a nodal field (n_nodes, 6) (all modes kept: exact)."""
    modes = model.floating.modes
    eta, *_ = np.linalg.lstsq(modes, nodal.ravel(), rcond=None)
    assert np.allclose(modes @ eta, nodal.ravel(), atol=1e-12)
    return eta


@pytest.mark.parametrize("planar", [True, False])
def test_constant_curvature_puts_the_nodes_on_a_circle(planar):
    model = _beam(planar)
    assert is_beam_line(model)
    x = model.floating.nodes[:, 0]
    kappa = 0.6  # 1/m: the tip's section turned by κL = 1.2 rad
    nodal = np.zeros((x.size, 6))
    if planar:
        nodal[:, 2], nodal[:, 4] = kappa * x**2 / 2, -kappa * x  # w, theta_y = -w'
        bend = np.array([0.0, 0.0, 1.0])
    else:  # bent in the plane at 30° from z towards y: v = sin, w = cos parts
        c, s = np.cos(np.pi / 6), np.sin(np.pi / 6)
        nodal[:, 1], nodal[:, 5] = s * kappa * x**2 / 2, s * kappa * x  # v, theta_z = v'
        nodal[:, 2], nodal[:, 4] = c * kappa * x**2 / 2, -c * kappa * x
        bend = np.array([0.0, s, c])
    eta = _eta_of(model, nodal)
    arc = ArcShape(model).displacements(eta)
    for (name, X), u in zip(zip(model.output_names, model.output_positions[:, 0]), arc):
        along = np.sin(kappa * X) / kappa - X
        across = (1 - np.cos(kappa * X)) / kappa
        expected = np.array([along, 0.0, 0.0]) + across * bend
        assert u == pytest.approx(expected, abs=1e-7 * X), name
    # the linear field's tip: κL²/2 across, no shortening (what the arc corrects)
    linear = model.output_rows[1] @ np.concatenate((np.zeros(model.n_boundary), eta))
    assert linear == pytest.approx(kappa * L**2 / 2 * bend, abs=1e-12)


def test_small_deflection_equals_the_linear_field_to_first_order():
    """A small random modal state (scaled by ε and 2ε): across the axis the arc equals the
    linear field (the correction is third order), along it the shortening is second order
    (fourfold at 2ε)."""
    model = _beam(planar=False)
    shape = np.random.default_rng(3).normal(size=model.floating.modes.shape[1])
    arc_shape = ArcShape(model)

    def both(scale):
        eta = scale * shape
        linear = model.output_rows @ np.concatenate((np.zeros(model.n_boundary), eta))
        return arc_shape.displacements(eta), linear

    arc, linear = both(1e-6)
    assert arc[:, 1:] == pytest.approx(linear[:, 1:], abs=1e-6 * np.abs(linear).max())
    arc2, linear2 = both(2e-6)
    assert arc2[:, 0] - linear2[:, 0] == pytest.approx(4 * (arc[:, 0] - linear[:, 0]), rel=1e-3)


def test_refuses_a_grounded_body():
    grounded = FlexModel.from_beam(L, E, RHO, AREA, I_SEC, n_elements=4, n_modes=2,
                                   attachment="grounded")
    assert not is_beam_line(grounded)
    with pytest.raises(ValueError, match="floating beam"):
        ArcShape(grounded)


def test_rigid_beam_and_root_node_stay_at_rest():
    """No modes, or an output node at the clamp: the displacement is zero."""
    rigid = FlexModel.from_beam(L, E, RHO, AREA, I_SEC, n_elements=4, n_modes=0,
                                attachment="floating", output_nodes={"root": 0, "tip": "end"})
    assert np.array_equal(ArcShape(rigid).displacements(np.zeros(0)), np.zeros((2, 3)))
    root = FlexModel.from_beam(L, E, RHO, AREA, I_SEC, n_elements=8, n_modes=24,
                               attachment="floating", planar=True, output_nodes={"root": 0})
    eta = np.ones(root.floating.modes.shape[1])
    assert np.array_equal(ArcShape(root).displacements(eta), np.zeros((1, 3)))
