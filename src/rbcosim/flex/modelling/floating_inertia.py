"""The floating frame's inertia data of a structure described by nodes and DOF labels
(``FloatingInertia``, :func:`floating_inertia`), shared by the one-node floating body
(:mod:`rbcosim.flex.modelling.model`) and the body floating at several nodes
(:mod:`rbcosim.flex.modelling.floating_multi`); SI, structure frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.flex.modelling.geometric import axial_load_matrices
from rbcosim.flex.modelling.nodal import NodalLayout, field_nodal, rotation_dofs
from rbcosim.model import frozen_array
from rbcosim.spatial.linalg3 import skew


@dataclass(frozen=True)
class FloatingInertia:
    """Physical inertia data for the floating frame terms (beam frame, interface node at 0).

    Attributes:
        mass: 3D consistent mass matrix, shape (n, n), n = 6 * n_nodes, DOFs node-major with
            components (u_x, u_y, u_z, theta_x, theta_y, theta_z).
        modes: fixed-interface modes embedded in the 3D DOFs, shape (n, k) (planar models have
            zero out-of-plane rows).
        nodes: node positions relative to the interface node, shape (n_nodes, 3), m.
        total_mass: kg. first_moment: m * r_cm, (3,), kg·m.
        modal_first_moment: S = P_t^T M Phi, (3, k), kg·m per unit eta: first moment of the
            elastic displacement field, ``integral rho u = S @ eta``.
        spin_inertia: (3, 3), kg·m², the sections' rotary (torsional) inertia, which the nodal
            field terms carry for angular acceleration but not for the gyroscopic term
            ``omega x (J omega)``; the wrench adds that term so a rigid beam's moment is exact.
        ode_matrix: W, shape (k, 20k + 15): ``eta_dd = W @ z`` with
            ``z = [eta, eta_d, b, alpha, kron(w, w), kron(w, eta_d), kron(alpha, eta),
            kron(kron(w, w), eta), kron(b, eta)]``, all structure-frame components,
            b = a_p - g (the last block: geometric stiffening, zero without it).
        moment_invariants: Y, (3 (k + 1), 12 + 13k): the wrench's moment from the state at a
            cost independent of the mesh (:func:`moment_invariants`).
        geometric_stiffening: whether ode_matrix carries the geometric stiffness.
    """

    mass: np.ndarray
    modes: np.ndarray
    nodes: np.ndarray
    total_mass: float
    first_moment: np.ndarray
    modal_first_moment: np.ndarray
    spin_inertia: np.ndarray
    ode_matrix: np.ndarray
    moment_invariants: np.ndarray
    geometric_stiffening: bool = False


def _nodal_block(b: np.ndarray) -> np.ndarray:
    """(6, 6): one node's map (u, theta) -> (B u, rotation_dofs(B [theta]x))."""
    q = np.stack([rotation_dofs(b @ skew(e)) for e in np.eye(3)], axis=1)
    block = np.zeros((6, 6))
    block[:3, :3] = b
    block[3:, 3:] = q
    return block


def _nodal_operator(b: np.ndarray, n_nodes: int) -> np.ndarray:
    """Matrix of the nodal map (u, theta) -> (B u, rotation_dofs(B [theta]x)), (6n, 6n)."""
    return np.kron(np.eye(n_nodes), _nodal_block(b))


def _nodal_apply(b: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``_nodal_operator(b, n) @ phi`` node by node, phi (6n, k) -> (6n, k)."""
    k = phi.shape[1]
    n = phi.shape[0] // 6
    return np.einsum("ab,nbk->nak", _nodal_block(b), phi.reshape(n, 6, k)).reshape(6 * n, k)


def moment_invariants(m3: np.ndarray, nodes: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """The floating wrench's moment invariants Y, (3 (k + 1), 12 + 13k), structure frame.

    The nodal moment ``sum_i (X_i + u_i) x f_t,i + f_r,i`` of ``f = M acc`` (module docstring
    of :mod:`rbcosim.flex.runtime.body`) is bilinear: ``acc = V c`` with the inputs
    ``c = [b, A (row-major), eta'', kron(w, eta'), kron(A, eta)]`` and the lever arms affine in
    eta, so the moment is ``(Y_0 + sum_m eta_m Y_m) c`` with ``Y = [Y_0; Y_1; ...; Y_k]``
    (3 rows each) computed here once: a step's cost no longer depends on the mesh."""
    eye, zero = np.eye(3), np.zeros((3, 3))
    units = [np.outer(eye[i], eye[j]) for i in range(3) for j in range(3)]
    cols = [field_nodal(nodes, e, zero)[:, None] for e in eye]
    cols += [field_nodal(nodes, np.zeros(3), u)[:, None] for u in units]
    cols += [phi] + [2.0 * _nodal_apply(skew(e), phi) for e in eye]
    cols += [_nodal_apply(u, phi) for u in units]
    f = (m3 @ np.hstack(cols)).reshape(nodes.shape[0], 6, -1)  # node, component, input
    eps = np.zeros((3, 3, 3))
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    y0 = np.einsum("jab,na,nbt->jt", eps, nodes, f[:, :3]) + f[:, 3:].sum(axis=0)
    arms = phi.reshape(nodes.shape[0], 6, phi.shape[1])[:, :3]  # node, axis, mode
    y1 = np.einsum("jab,nam,nbt->mjt", eps, arms, f[:, :3])
    return np.vstack([y0, y1.reshape(-1, y0.shape[1])])


def floating_inertia(layout: NodalLayout, mass: np.ndarray, mode_dofs: np.ndarray,
                     modes: np.ndarray, k_ee: np.ndarray, c_ee: np.ndarray,
                     stiffening_density: float = 0.0) -> FloatingInertia:
    """The floating frame's inertia data of any structure described by nodes and DOF labels.

    ``mass`` (n, n) is the physical mass matrix on the coordinates ``layout.dof_map`` labels;
    ``modes`` (n_m, k) the fixed-interface modes on coordinates labelled ``mode_dofs``
    (n_m, 2) (node, component), e.g. a planar beam's in-plane DOFs inside its 3D mass;
    ``k_ee``, ``c_ee`` (k, k) their modal stiffness and damping. Both are embedded in the
    all-six-components node-major layout the kernels use (absent components: zero mass, zero
    mode rows). ``stiffening_density`` (rho A, kg/m; 0: none) scales the geometric stiffness of
    the inertial axial load of a beam along x (:mod:`rbcosim.flex.modelling.geometric`)."""
    nodes = layout.positions
    n_nodes = nodes.shape[0]
    k = modes.shape[1]
    index = layout.full_index
    m3 = np.zeros((6 * n_nodes, 6 * n_nodes))
    m3[np.ix_(index, index)] = mass
    phi = np.zeros((6 * n_nodes, k))
    phi[6 * mode_dofs[:, 0] + mode_dofs[:, 1], :] = modes
    eye = np.eye(3)
    zero = np.zeros(3)
    p0 = np.stack([field_nodal(nodes, e, np.zeros((3, 3))) for e in eye], axis=1)
    total_mass = float(p0[:, 0] @ m3 @ p0[:, 0])
    # first_moment_i = sum of m x_i: the field x -> e_i x_i tested with unit translation e_i.
    first_moment = np.array(
        [p0[:, i] @ m3 @ field_nodal(nodes, zero, np.outer(eye[i], eye[i])) for i in range(3)]
    )
    spin = np.zeros((n_nodes, 6))
    spin[:, 3] = 1.0
    spin_inertia = np.zeros((3, 3))
    spin_inertia[0, 0] = spin.ravel() @ m3 @ spin.ravel()
    pt_m = phi.T @ m3
    m_ee = pt_m @ phi
    minv = np.linalg.inv(m_ee) if k else np.zeros((0, 0))
    sk = [skew(e) for e in eye]
    l0 = pt_m @ p0
    l_alpha = np.stack([pt_m @ field_nodal(nodes, zero, s) for s in sk], axis=1)
    l_ww = np.stack(
        [pt_m @ field_nodal(nodes, zero, sk[i] @ sk[j]) for i in range(3) for j in range(3)],
        axis=1,
    )
    g = [pt_m @ _nodal_apply(s, phi) for s in sk]
    h = [pt_m @ _nodal_apply(sk[i] @ sk[j], phi) for i in range(3) for j in range(3)]
    # Geometric stiffness -b_x K_b + (w_y² + w_z²) K_c: kron(w, w) entries yy (4) and zz (8).
    gb = np.zeros((k, 3 * k))
    if stiffening_density > 0.0:
        k_b, k_c = (phi.T @ g_e @ phi
                    for g_e in axial_load_matrices(nodes[:, 0], stiffening_density))
        h[4] = h[4] + k_c
        h[8] = h[8] + k_c
        gb[:, :k] = -k_b
    blocks = [k_ee, c_ee, l0, l_alpha, l_ww, 2.0 * np.hstack(g), np.hstack(g), np.hstack(h), gb]
    w = -minv @ np.hstack(blocks) if k else np.zeros((0, 15))
    return FloatingInertia(
        mass=frozen_array(m3),
        modes=frozen_array(phi),
        nodes=frozen_array(nodes),
        total_mass=total_mass,
        first_moment=frozen_array(first_moment),
        modal_first_moment=frozen_array(p0.T @ m3 @ phi),
        spin_inertia=frozen_array(spin_inertia),
        ode_matrix=frozen_array(w),
        moment_invariants=frozen_array(moment_invariants(m3, nodes, phi)),
        geometric_stiffening=stiffening_density > 0.0,
    )
