"""The grounded body: its exact discrete propagator and its kernels (C core).

Coordinates ``[u_b; eta]`` (see :mod:`rbcosim.flex.modelling.model`); the boundary DOFs ``u_b`` follow
the interface point from the reference pose (p_ref, q_ref) in structure-frame components
``r0^T x`` (r0: structure -> inertial): translations in m, small rotations (rotation vector of
``q ⊗ conj(q_ref)``) in rad, selected by the model's ``boundary_components``.

The interior obeys the linear ODE ``y' = A y + B [u_b; u_b'; u_b''] + [0; g_e]``,
``y = [eta; eta']``, ``A = [[0, I], [W_eta, W_eta']]``, ``B = [0; W_b]`` with
``W = -M_ee^-1 [K_ee, C_ee, K_eb, C_eb, M_eb]`` and ``g_e = M_ee^-1 f_e`` the constant modal
acceleration of gravity (``f = gravity_load @ g``, :class:`rbcosim.flex.modelling.model.FlexModel`). Inside a macro step the interface accelerations are a polynomial of degree <= 2 in
tau (:mod:`rbcosim.flex.runtime.frame`), so ``u_b(tau)`` is a polynomial of degree <= 4 whose
coefficients are linear in ``u = [d, v, c_0, c_1, c_2]`` (each n_b: the boundary displacement
and velocity at tau = 0 and the acceleration coefficients). The step is then exact:
``y(H) = Phi y(0) + Psi u + Gamma g_e`` with ``Phi = e^{AH}``, ``Psi`` and ``Gamma`` from the
matrix exponential of the ODE augmented with the polynomial input (Van Loan), precomputed once
per step size H.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim import _core

_DEGREE = 4  # of u_b(tau): position through twice-integrated quadratic accelerations


@dataclass(frozen=True)
class GroundedMatrices:
    """The grounded body's constant matrices, from the reduced M, C, K on [u_b; eta]:

    w: W (k, 2k + 3 n_b), eta'' = W @ [eta, eta', u_b, u_b', u_b''] (+ gravity);
    fb: (n_b, 3 n_b + 3k), f_b = fb @ [u_b, u_b', u_b'', eta, eta', eta''];
    minv: M_ee^-1 (k, k); shift: M_ee^-1 M_eb (k, n_b), the interior's shift when the boundary
    moves at a frozen physical interior; jac_k, jac_c: Z^T K Z, Z^T C Z with Z = [I; -shift].
    """

    w: np.ndarray
    fb: np.ndarray
    minv: np.ndarray
    shift: np.ndarray
    jac_k: np.ndarray
    jac_c: np.ndarray


def grounded_matrices(m: np.ndarray, c: np.ndarray, kk: np.ndarray, nb: int) -> GroundedMatrices:
    """:class:`GroundedMatrices` of reduced mass m, damping c, stiffness kk with n_b = nb."""
    k = m.shape[0] - nb
    minv = np.linalg.inv(m[nb:, nb:]) if k else np.zeros((0, 0))
    w = -minv @ np.hstack([kk[nb:, nb:], c[nb:, nb:], kk[nb:, :nb], c[nb:, :nb], m[nb:, :nb]])
    fb = np.hstack([kk[:nb, :nb], c[:nb, :nb], m[:nb, :nb], kk[:nb, nb:], c[:nb, nb:],
                    m[:nb, nb:]])
    shift = minv @ m[nb:, :nb]
    z = np.vstack([np.eye(nb), -shift])
    return GroundedMatrices(w, fb, minv, shift, z.T @ kk @ z, z.T @ c @ z)


def _input_maps(nb: int) -> list[np.ndarray]:
    """L_j (3 n_b, 5 n_b): u = [d, v, c0, c1, c2] -> the tau^j coefficient of [u_b; u_b'; u_b'']:
    u_b = d + v tau + c0 tau²/2 + c1 tau³/6 + c2 tau⁴/12, and its two derivatives."""
    eye = np.eye(nb)
    blocks = {  # (j, row block: 0 u_b, 1 u_b', 2 u_b'') -> (column block, factor)
        (0, 0): (0, 1.0), (0, 1): (1, 1.0), (0, 2): (2, 1.0),
        (1, 0): (1, 1.0), (1, 1): (2, 1.0), (1, 2): (3, 1.0),
        (2, 0): (2, 0.5), (2, 1): (3, 0.5), (2, 2): (4, 1.0),
        (3, 0): (3, 1.0 / 6.0), (3, 1): (4, 1.0 / 3.0),
        (4, 0): (4, 1.0 / 12.0),
    }
    maps = [np.zeros((3 * nb, 5 * nb)) for _ in range(_DEGREE + 1)]
    for (j, row), (col, factor) in blocks.items():
        maps[j][row * nb:(row + 1) * nb, col * nb:(col + 1) * nb] = factor * eye
    return maps


def propagator(ode_matrix: np.ndarray, nb: int, H: float) -> np.ndarray:
    """P = [Phi, Psi, Gamma], shape (2k, 3k + 5 n_b): y(H) = P @ [y(0); u; g_e] (module
    docstring).

    ode_matrix: W (k, 2k + 3 n_b); H: step, s."""
    k = ode_matrix.shape[0]
    d = 2 * k
    a = np.zeros((d, d))
    a[:k, k:] = np.eye(k)
    a[k:] = ode_matrix[:, :d]
    b = np.zeros((d, 3 * nb))
    b[k:] = ode_matrix[:, d:]
    # y' = A y + w_0, w_j' = w_{j+1}, w_4' = 0: w_0(tau) = sum_j w_j(0) tau^j / j!, and the top
    # row of expm(M H) holds Phi and the integrals Phi_j of e^{A(H-s)} s^j / j!.
    n_blocks = _DEGREE + 2
    m = np.zeros((n_blocks * d, n_blocks * d))
    m[:d, :d] = a
    for j in range(n_blocks - 1):
        m[j * d:(j + 1) * d, (j + 1) * d:(j + 2) * d] = np.eye(d)
    import scipy.linalg  # here: importing the flexible bodies needs no scipy (~0.2 s)

    top = scipy.linalg.expm(m * H)[:d]
    psi = np.zeros((d, 5 * nb))
    for j, lj in enumerate(_input_maps(nb)):
        psi += math.factorial(j) * top[:, (j + 1) * d:(j + 2) * d] @ b @ lj
    gamma = top[:, d:2 * d][:, k:]  # a constant modal acceleration: integral of e^{A(H-s)} ds
    return np.hstack([top[:, :d], psi, gamma])


# --- the step kernels, in the C core (librbcosim/flex/grounded.c) ------------------------------


def to_structure(r0: np.ndarray, x: np.ndarray, rx: np.ndarray, comps: np.ndarray,
                 out: np.ndarray) -> None:
    """out (n_b,) = (r0^T [x; rx])[comps]: a translation-rotation pair (3 + 3) in the selected
    structure-frame components."""
    _core.to_structure(r0, np.ascontiguousarray(x), np.ascontiguousarray(rx), comps, out)


def boundary(s: np.ndarray, r0: np.ndarray, comps: np.ndarray) -> np.ndarray:
    """Rows (u_b, u_b', u_b''), shape (3, n_b), at the state's frame."""
    out = np.empty((3, comps.size))
    _core.boundary(s, r0, comps, out)
    return out


def regrounded_frame(s: np.ndarray, motion: np.ndarray, r0: np.ndarray, comps: np.ndarray,
                     shift: np.ndarray) -> None:
    """Move the frame to ``motion`` (19,) keeping the interior's physical position and
    velocity: eta -= S du_b, eta' -= S du_b', S = M_ee^-1 M_eb (``shift``, (k, n_b))."""
    _core.regrounded_frame(s, motion, r0, comps, shift)


def grounded_wrench(s: np.ndarray, r0: np.ndarray, comps: np.ndarray, wmat: np.ndarray,
                    fb_matrix: np.ndarray, gacc: np.ndarray, gb: np.ndarray) -> np.ndarray:
    """[force (3) N, moment (3) N·m] on the rigid body, inertial: minus the boundary rows of
    the reduced equations, f_b = FB @ [u_b, u_b', u_b'', eta, eta', eta''] - gb, at the state
    (eta'' = W z + gacc; gacc (k,), gb (n_b,): gravity's modal acceleration and boundary
    load)."""
    out = np.empty(6)
    _core.grounded_wrench(s, r0, comps, wmat, fb_matrix, gacc, gb, out)
    return out
