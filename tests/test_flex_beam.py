"""Euler–Bernoulli beam generator and Craig–Bampton reduction against closed-form results."""

import math

import numpy as np
import pytest
import scipy.linalg

from rbcosim.flex import craig_bampton, euler_bernoulli_beam

pytestmark = pytest.mark.unit

# rigid_flex_pendulum beam: steel, 1 m, square 10 mm x 10 mm.
L, E, RHO, W = 1.0, 2.1e11, 7850.0, 0.01
AREA, I_SEC = W * W, W**4 / 12


def _beam(planar=True, n=10):
    return euler_bernoulli_beam(L, E, RHO, AREA, I_SEC, n_elements=n, planar=planar)


def test_cantilever_first_frequency_matches_euler_bernoulli():
    beam = _beam()
    cb = craig_bampton(beam.mass, beam.stiffness, beam.dofs_of_node(0), 4)
    exact = 1.875104068**2 * math.sqrt(E * I_SEC / (RHO * AREA * L**4)) / (2 * math.pi)
    assert cb.frequencies_hz[0] == pytest.approx(exact, rel=1e-4)
    # Second bending mode: beta L = 4.694091.
    exact2 = 4.694091133**2 * math.sqrt(E * I_SEC / (RHO * AREA * L**4)) / (2 * math.pi)
    assert cb.frequencies_hz[1] == pytest.approx(exact2, rel=1e-3)


def test_3d_square_beam_has_equal_bending_frequencies_and_torsion():
    beam = _beam(planar=False)
    g = E / 2.6
    j = 0.1406 * W**4
    beam = euler_bernoulli_beam(
        L, E, RHO, AREA, I_SEC, n_elements=10, planar=False, torsion_constant=j, shear_modulus=g
    )
    cb = craig_bampton(beam.mass, beam.stiffness, beam.dofs_of_node(0), None)
    f = cb.frequencies_hz
    assert f[0] == pytest.approx(f[1], rel=1e-9)  # round-off: K spans ~12 decades
    # First torsion mode of a clamped-free shaft: (1/4L) sqrt(G J / (rho Ip)), Ip = 2 I.
    f_tor = math.sqrt(g * j / (RHO * 2 * I_SEC)) / (4 * L)
    assert np.min(np.abs(f / f_tor - 1)) < 5e-3  # linear torsion elements, 10 of them


def test_cantilever_tip_load_deflection_and_sign_convention():
    beam = _beam()
    free = np.setdiff1d(np.arange(beam.mass.shape[0]), beam.dofs_of_node(0))
    load = np.zeros(beam.mass.shape[0])
    tip = beam.dofs_of_node(10)  # (u_x, u_z, theta_y)
    p = 3.0
    load[tip[1]] = p
    u = np.zeros_like(load)
    u[free] = np.linalg.solve(beam.stiffness[np.ix_(free, free)], load[free])
    assert u[tip[1]] == pytest.approx(p * L**3 / (3 * E * I_SEC), rel=1e-12)
    # theta_y = -dw/dx: a tip bent towards +z has a negative rotation about +y.
    assert u[tip[2]] == pytest.approx(-p * L**2 / (2 * E * I_SEC), rel=1e-12)


def test_mass_matrix_rigid_body_properties():
    beam = _beam(planar=False)
    n = beam.nodes.shape[0]
    m_beam = RHO * AREA * L
    for c in range(3):
        t = np.zeros((n, 6))
        t[:, c] = 1.0
        assert t.ravel() @ beam.mass @ t.ravel() == pytest.approx(m_beam, rel=1e-12)
    rot_y = np.zeros((n, 6))  # rigid rotation about +y through node 0: u_z = -x, theta_y = 1
    rot_y[:, 2] = -beam.nodes[:, 0]
    rot_y[:, 4] = 1.0
    assert rot_y.ravel() @ beam.mass @ rot_y.ravel() == pytest.approx(m_beam * L**2 / 3, rel=1e-12)


def test_craig_bampton_all_modes_reproduces_full_eigenvalues():
    beam = _beam(n=6)
    b = beam.dofs_of_node(0)
    k_ground = np.diag([1e5, 2e3, 50.0])  # springs to ground on the boundary DOFs
    k_full = beam.stiffness.copy()
    k_full[np.ix_(b, b)] += k_ground
    full = scipy.linalg.eigh(k_full, beam.mass, eigvals_only=True)
    cb = craig_bampton(beam.mass, beam.stiffness, b, None)
    k_red = cb.stiffness.copy()
    k_red[:3, :3] += k_ground
    red = scipy.linalg.eigh(k_red, cb.mass, eigvals_only=True)
    np.testing.assert_allclose(red, full, rtol=1e-8)  # round-off: K spans ~12 decades
    # Truncated: Rayleigh–Ritz upper bounds on the lowest eigenvalues.
    cb4 = craig_bampton(beam.mass, beam.stiffness, b, 4)
    k4 = cb4.stiffness.copy()
    k4[:3, :3] += k_ground
    red4 = scipy.linalg.eigh(k4, cb4.mass, eigvals_only=True)
    assert np.all(red4 >= full[: red4.size] * (1 - 1e-12))
    assert red4[0] == pytest.approx(full[0], rel=1e-6)


def test_craig_bampton_static_condensation_is_exact():
    beam = _beam()
    b = beam.dofs_of_node(0)
    i = np.setdiff1d(np.arange(beam.mass.shape[0]), b)
    k = beam.stiffness
    u_b = np.array([1e-4, -2e-3, 0.01])
    u_i = np.linalg.solve(k[np.ix_(i, i)], -k[np.ix_(i, b)] @ u_b)
    reaction_full = k[np.ix_(b, b)] @ u_b + k[np.ix_(b, i)] @ u_i
    cb = craig_bampton(beam.mass, beam.stiffness, b, 2)
    reaction_cb = cb.stiffness[:3, :3] @ u_b
    np.testing.assert_allclose(reaction_cb, reaction_full, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cb.stiffness[:3, 3:], 0.0, atol=1e-6)
    np.testing.assert_allclose(cb.mass[3:, 3:], np.eye(2), atol=1e-12)
    np.testing.assert_allclose(
        np.diag(cb.stiffness[3:, 3:]), (2 * np.pi * cb.frequencies_hz) ** 2, rtol=1e-8
    )


def test_beam_rejects_bad_arguments():
    with pytest.raises(ValueError, match="length"):
        euler_bernoulli_beam(-1.0, E, RHO, AREA, I_SEC, n_elements=3)
    with pytest.raises(ValueError, match="n_elements"):
        euler_bernoulli_beam(L, E, RHO, AREA, I_SEC, n_elements=0)
    beam = _beam(n=2)
    with pytest.raises(ValueError, match="n_modes"):
        craig_bampton(beam.mass, beam.stiffness, beam.dofs_of_node(0), 99)
