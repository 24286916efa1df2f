"""Craig–Bampton reduction: boundary DOFs kept physically, interior replaced by modes.

Reduced coordinates are ``q = [u_b; eta]``: the ``n_b`` boundary DOFs (in the order given) and
``k`` fixed-interface modal coordinates. Physical DOFs ``u = T @ q`` with

    T[b, :] = [I, 0]
    T[i, :] = [Psi, Phi]      Psi = -K_ii^-1 K_ib (constraint modes), Phi (fixed-interface modes)

Fixed-interface modes are mass-normalised (``Phi.T M_ii Phi = I``) and ordered by frequency, so
``M_cb[eta, eta] = I`` and ``K_cb[eta, eta] = diag(omega²)``; ``K_cb[b, eta] = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

_MECHANISM = 1e-13  # lowest fixed-interface eigenvalue / largest diagonal K_ii / M_ii


@dataclass(frozen=True)
class CraigBampton:
    """Result of :func:`craig_bampton`.

    Attributes:
        mass: reduced mass ``T.T M T``, shape (n_b + k, n_b + k).
        stiffness: reduced stiffness ``T.T K T``, shape (n_b + k, n_b + k).
        transformation: T, physical = T @ [u_b; eta], shape (n_dof, n_b + k).
        frequencies_hz: fixed-interface natural frequencies of the kept modes, shape (k,), Hz.
        boundary_dofs: physical indices of the boundary DOFs, shape (n_b,).
        interior_dofs: physical indices of the interior DOFs, ascending, shape (n_dof - n_b,).
    """

    mass: np.ndarray
    stiffness: np.ndarray
    transformation: np.ndarray
    frequencies_hz: np.ndarray
    boundary_dofs: np.ndarray
    interior_dofs: np.ndarray

    def reduce(self, matrix: np.ndarray) -> np.ndarray:
        """Project another physical matrix (e.g. damping) onto the reduced coordinates."""
        t = self.transformation
        return t.T @ np.asarray(matrix, dtype=float) @ t


def craig_bampton(
    mass: np.ndarray, stiffness: np.ndarray, boundary_dofs, n_modes: int | None
) -> CraigBampton:
    """Reduce (M, K) keeping ``boundary_dofs`` and the lowest ``n_modes`` fixed-interface modes.

    Args:
        mass: physical mass matrix, symmetric PSD, shape (n, n); dense or scipy.sparse.
        stiffness: physical stiffness, symmetric, shape (n, n); K_ii must be positive definite
            (the structure clamped at the boundary is stable).
        boundary_dofs: indices of the boundary DOFs, any order, no repeats.
        n_modes: number of interior modes kept; None keeps all.

    Raises:
        ValueError: bad indices, too many modes, or K_ii / M_ii not positive definite.
    """
    m = _dense(mass)
    k = _dense(stiffness)
    n = m.shape[0]
    b = np.asarray(boundary_dofs, dtype=np.int64).reshape(-1)
    if b.size and (b.min() < 0 or b.max() >= n or np.unique(b).size != b.size):
        raise ValueError(f"boundary_dofs: expected distinct indices in [0, {n}), got {b.tolist()}")
    interior = np.setdiff1d(np.arange(n), b)
    n_i = interior.size
    if n_modes is None:
        n_modes = n_i
    if n_modes < 0 or n_modes > n_i:
        raise ValueError(f"n_modes: expected 0..{n_i} (interior DOFs), got {n_modes}")
    if n_i:
        k_ii = k[np.ix_(interior, interior)]
        m_ii = m[np.ix_(interior, interior)]
        try:
            chol = scipy.linalg.cho_factor(k_ii)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                "stiffness: the interior block K_ii is not positive definite "
                "(the structure is not held by its boundary DOFs)"
            ) from exc
        psi = -scipy.linalg.cho_solve(chol, k[np.ix_(interior, b)])
        if n_modes:
            try:
                lam, phi = scipy.linalg.eigh(k_ii, m_ii, subset_by_index=[0, n_modes - 1])
            except np.linalg.LinAlgError as exc:
                raise ValueError(
                    "mass: the interior block M_ii is not positive definite "
                    "(every interior DOF needs mass for fixed-interface modes)"
                ) from exc
            # A mechanism (e.g. a beam free to swing about a released rotation) passes the
            # Cholesky test at round-off: its eigenvalue is ~1e-16 of the stiffest DOF's.
            if lam[0] <= _MECHANISM * np.max(np.diag(k_ii) / np.maximum(np.diag(m_ii), 1e-300)):
                raise ValueError(
                    "stiffness: the interior block K_ii is not positive definite (the structure "
                    "is not held by its boundary DOFs: a mechanism with eigenvalue "
                    f"{lam[0]:.3g} 1/s²)")
        else:
            lam, phi = np.zeros(0), np.zeros((n_i, 0))
    else:
        psi, lam, phi = np.zeros((0, b.size)), np.zeros(0), np.zeros((0, 0))
    t = np.zeros((n, b.size + n_modes))
    t[b, : b.size] = np.eye(b.size)
    t[np.ix_(interior, np.arange(b.size))] = psi
    t[np.ix_(interior, np.arange(b.size, b.size + n_modes))] = phi
    m_cb = t.T @ m @ t
    k_cb = t.T @ k @ t
    m_cb = 0.5 * (m_cb + m_cb.T)
    k_cb = 0.5 * (k_cb + k_cb.T)
    return CraigBampton(
        mass=m_cb,
        stiffness=k_cb,
        transformation=t,
        frequencies_hz=np.sqrt(np.clip(lam, 0.0, None)) / (2 * np.pi),
        boundary_dofs=b,
        interior_dofs=interior,
    )


def _dense(a) -> np.ndarray:
    if hasattr(a, "toarray"):
        a = a.toarray()
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {a.shape}")
    return a
