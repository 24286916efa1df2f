"""Euler–Bernoulli beam finite elements (Hermite bending, linear axial and torsion).

Beam frame: the axis runs along local +x from node 0 (the interface / clamped node) at the
origin to node ``n_elements`` at ``(length, 0, 0)``. Units SI.

Nodal DOF components are numbered 0..5 = ``u_x, u_y, u_z, theta_x, theta_y, theta_z``
(translations in m, small rotations in rad about the beam-frame axes, right-handed). Bending
kinematics follow from the right-hand rule:

- bending in the x–y plane: ``theta_z = +dv/dx`` (v = u_y);
- bending in the x–z plane: ``theta_y = -dw/dx`` (w = u_z), because a positive rotation about +y
  carries a point on +x towards -z.

Planar beams keep the x–z plane only: per node ``(u_x, u_z, theta_y)``, i.e. components
``(0, 2, 4)``. The planar matrices are exactly the corresponding sub-block of the 3D ones (the
straight beam's axial, x–z bending, x–y bending and torsion blocks do not couple).

Mass matrices are consistent (Euler–Bernoulli, no rotary inertia of the bending sections; the
torsional inertia uses the polar moment ``I_y + I_z``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PLANAR_COMPONENTS = (0, 2, 4)
"""Nodal components kept by a planar (x–z) beam: u_x, u_z, theta_y."""

COMPONENT_NAMES = ("x", "y", "z", "rx", "ry", "rz")
"""Names of nodal components 0..5, as used for boundary-DOF maps."""


@dataclass(frozen=True)
class BeamFE:
    """Assembled beam finite-element model.

    Attributes:
        mass: consistent mass matrix, shape (n_dof, n_dof), kg / kg·m / kg·m².
        stiffness: stiffness matrix, shape (n_dof, n_dof), N/m / N / N·m.
        nodes: node coordinates in the beam frame, shape (n_nodes, 3), m.
        dof_map: for each DOF its ``(node, component)``, shape (n_dof, 2), int; DOFs are ordered
            node by node, components ascending.
        planar: True for the x–z planar model (3 DOFs per node), False for 3D (6 per node).
    """

    mass: np.ndarray
    stiffness: np.ndarray
    nodes: np.ndarray
    dof_map: np.ndarray
    planar: bool

    def dofs_of_node(self, node: int) -> np.ndarray:
        """Indices of the DOFs of one node, components ascending, shape (3,) or (6,)."""
        return np.flatnonzero(self.dof_map[:, 0] == node)


def _hermite_matrices(length: float) -> tuple[np.ndarray, np.ndarray]:
    """Unit bending stiffness (EI=1) and mass (rho*A=1) on DOFs (w1, w1', w2, w2')."""
    ell = length
    k = (
        np.array(
            [
                [12.0, 6 * ell, -12.0, 6 * ell],
                [6 * ell, 4 * ell**2, -6 * ell, 2 * ell**2],
                [-12.0, -6 * ell, 12.0, -6 * ell],
                [6 * ell, 2 * ell**2, -6 * ell, 4 * ell**2],
            ]
        )
        / ell**3
    )
    m = np.array(
        [
            [156.0, 22 * ell, 54.0, -13 * ell],
            [22 * ell, 4 * ell**2, 13 * ell, -3 * ell**2],
            [54.0, 13 * ell, 156.0, -22 * ell],
            [-13 * ell, -3 * ell**2, -22 * ell, 4 * ell**2],
        ]
    ) * (ell / 420.0)
    return k, m


def _element_3d(
    ell: float, e: float, g: float, rho: float, a: float, iy: float, iz: float, j: float
) -> tuple[np.ndarray, np.ndarray]:
    """12x12 element stiffness and mass in the local DOF order (node1 comps 0..5, node2 0..5)."""
    k = np.zeros((12, 12))
    m = np.zeros((12, 12))
    bar_k = np.array([[1.0, -1.0], [-1.0, 1.0]]) / ell
    bar_m = np.array([[2.0, 1.0], [1.0, 2.0]]) * (ell / 6.0)
    axial = [0, 6]
    torsion = [3, 9]
    k[np.ix_(axial, axial)] = e * a * bar_k
    m[np.ix_(axial, axial)] = rho * a * bar_m
    k[np.ix_(torsion, torsion)] = g * j * bar_k
    m[np.ix_(torsion, torsion)] = rho * (iy + iz) * bar_m
    kb, mb = _hermite_matrices(ell)
    # x–y bending: (v, theta_z = +v'); x–z bending: (w, theta_y = -w').
    xy = [1, 5, 7, 11]
    xz = [2, 4, 8, 10]
    sign_xz = np.diag([1.0, -1.0, 1.0, -1.0])
    k[np.ix_(xy, xy)] = e * iz * kb
    m[np.ix_(xy, xy)] = rho * a * mb
    k[np.ix_(xz, xz)] = e * iy * (sign_xz @ kb @ sign_xz)
    m[np.ix_(xz, xz)] = rho * a * (sign_xz @ mb @ sign_xz)
    return k, m


def euler_bernoulli_beam(
    length: float,
    youngs_modulus: float,
    density: float,
    area: float,
    second_moment_y: float,
    *,
    n_elements: int,
    second_moment_z: float | None = None,
    torsion_constant: float | None = None,
    shear_modulus: float | None = None,
    planar: bool = True,
) -> BeamFE:
    """Assemble a uniform straight Euler–Bernoulli beam along the beam-frame +x axis.

    Args:
        length: beam length, m.
        youngs_modulus: E, Pa.
        density: rho, kg/m³.
        area: cross-section area A, m².
        second_moment_y: I_y, m⁴ (bending in the x–z plane, the planar one).
        n_elements: number of equal elements (>= 1); nodes are ``n_elements + 1``.
        second_moment_z: I_z, m⁴ (x–y bending); defaults to ``second_moment_y``.
        torsion_constant: St-Venant J, m⁴; defaults to ``I_y + I_z`` (exact for circles).
        shear_modulus: G, Pa; defaults to ``E / (2 (1 + 0.3))``.
        planar: keep only the x–z plane DOFs (u_x, u_z, theta_y) per node.

    Returns:
        The free-free model (no DOF constrained); see :class:`BeamFE`.
    """
    for name, value in (
        ("length", length),
        ("youngs_modulus", youngs_modulus),
        ("density", density),
        ("area", area),
        ("second_moment_y", second_moment_y),
    ):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name}: expected a positive finite number, got {value!r}")
    if isinstance(n_elements, bool) or not isinstance(n_elements, int) or n_elements < 1:
        raise ValueError(f"n_elements: expected an integer >= 1, got {n_elements!r}")
    iz = second_moment_y if second_moment_z is None else second_moment_z
    j = second_moment_y + iz if torsion_constant is None else torsion_constant
    g = youngs_modulus / 2.6 if shear_modulus is None else shear_modulus
    for name, value in (("second_moment_z", iz), ("torsion_constant", j), ("shear_modulus", g)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name}: expected a positive finite number, got {value!r}")

    n_nodes = n_elements + 1
    ell = length / n_elements
    ke, me = _element_3d(ell, youngs_modulus, g, density, area, second_moment_y, iz, j)
    n_full = 6 * n_nodes
    k_full = np.zeros((n_full, n_full))
    m_full = np.zeros((n_full, n_full))
    for e in range(n_elements):
        idx = slice(6 * e, 6 * e + 12)
        k_full[idx, idx] += ke
        m_full[idx, idx] += me
    comps = PLANAR_COMPONENTS if planar else tuple(range(6))
    keep = np.array([6 * n + c for n in range(n_nodes) for c in comps])
    dof_map = np.array([(n, c) for n in range(n_nodes) for c in comps], dtype=np.int64)
    nodes = np.zeros((n_nodes, 3))
    nodes[:, 0] = np.linspace(0.0, length, n_nodes)
    return BeamFE(
        mass=m_full[np.ix_(keep, keep)].copy(),
        stiffness=k_full[np.ix_(keep, keep)].copy(),
        nodes=nodes,
        dof_map=dof_map,
        planar=planar,
    )
