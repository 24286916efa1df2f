"""Geometric stiffness of a floating beam from its inertial axial load (per unit load).

A beam along the structure axis +x, clamped at x = 0 to a frame with structure-frame ``b =
a_p - g`` (m/s²) and ``A = [alpha]x + [w]x [w]x`` (1/s²), carries the axial force (tension
positive, free end at x = L, rigid-body inertia only)

    N(x) = -rho A_s [b_x (L - x) + A_xx (L² - x²) / 2],   A_xx = -(w_y² + w_z²),

so its geometric stiffness ``K_g = Σ_e ∫ N(x) (v'ᵀv' + w'ᵀw') dx`` (both bending planes) is
``K_g = -b_x K_b - A_xx K_c`` with the two matrices of :func:`axial_load_matrices`.
"""

from __future__ import annotations

import numpy as np

_GAUSS_X, _GAUSS_W = np.polynomial.legendre.leggauss(4)  # exact to degree 7 (here 6)


def _hermite_slopes(xi: np.ndarray, ell: float) -> np.ndarray:
    """d/dx of the Hermite shape functions on (w1, w1', w2, w2') at xi in [0, 1], (4, q), 1/m."""
    return np.array([(-6 * xi + 6 * xi**2) / ell, 1 - 4 * xi + 3 * xi**2,
                     (6 * xi - 6 * xi**2) / ell, -2 * xi + 3 * xi**2])


def axial_load_matrices(nodes_x: np.ndarray, line_density: float) -> tuple[np.ndarray, np.ndarray]:
    """(K_b, K_c), each (6n, 6n) on the 3D nodal DOFs (u_x u_y u_z theta_x theta_y theta_z per
    node): ``∫ N φ'ᵀφ' dx`` for the axial force fields ``N = rho A_s (L - x)`` (N per m/s² of
    ``b_x``) and ``N = rho A_s (L² - x²) / 2`` (N per 1/s² of ``-A_xx``); ``line_density`` is
    rho A_s, kg/m, ``nodes_x`` the node coordinates along the beam from the clamp (x = 0), m."""
    length = float(np.asarray(nodes_x, dtype=float)[-1])
    k_b, k_c = axial_field_matrices(nodes_x, (lambda x: line_density * (length - x),
                                              lambda x: 0.5 * line_density * (length**2 - x**2)))
    return k_b, k_c


def axial_field_matrices(nodes_x: np.ndarray, fields) -> list[np.ndarray]:
    """For each axial force field N(x) of ``fields`` (callables, N), ``∫ N (v'ᵀv' + w'ᵀw') dx``
    (6n, 6n) on the 3D nodal DOFs of a beam along x with nodes at ``nodes_x`` (m); 4-point
    Gauss per element (exact for N of degree <= 2 with the Hermite slopes)."""
    x = np.asarray(nodes_x, dtype=float)
    n = x.size
    out = [np.zeros((6 * n, 6 * n)) for _ in fields]
    xi = 0.5 * (_GAUSS_X + 1.0)
    # Hermite DOFs per plane: x–y bending (v, theta_z = +v'), x–z bending (w, theta_y = -w').
    planes = (([1, 5, 7, 11], np.array([1.0, 1.0, 1.0, 1.0])),
              ([2, 4, 8, 10], np.array([1.0, -1.0, 1.0, -1.0])))
    for e in range(n - 1):
        ell = x[e + 1] - x[e]
        xs = x[e] + xi * ell
        weights = 0.5 * _GAUSS_W * ell
        slopes = _hermite_slopes(xi, ell)
        for field, mat in zip(fields, out, strict=True):
            block = (slopes * (field(xs) * weights)) @ slopes.T
            for dofs, sign in planes:
                idx = 6 * e + np.array(dofs)
                mat[np.ix_(idx, idx)] += sign[:, None] * block * sign[None, :]
    return out
