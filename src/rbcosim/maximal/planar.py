"""Planar mode: every body moves in a plane of unit normal n (model.planar_normal, inertial).

Each body keeps three degrees of freedom, two translations in the plane and the rotation about
n, held by three rows of its own (centre of mass at its initial height along n; the body's
initial normal stays ⟂ to the plane's two tangents t1, t2). A joint keeps only its in-plane
rows: those that planar motion does not satisfy identically. A row is tested on the planar
velocities at the initial state: its Jacobian on [v·t1, v·t2, ω·n] of both bodies must be
non-zero (in-plane row, kept) while its Jacobian on [v·n, ω·t1, ω·t2] vanishes, or the
reverse (out-of-plane row, dropped); a row with both parts (a joint axis not along n, a slide
out of the plane) cannot be planar and is refused.
"""

from __future__ import annotations

import numpy as np

#: Jacobian entries below this (relative to the row's largest) count as zero.
ZERO = 1e-12


def plane_basis(normal: np.ndarray) -> np.ndarray:
    """Rows t1, t2, n: an orthonormal right-handed basis with n the plane's unit normal."""
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    helper = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = np.cross(helper, n)
    t1 /= np.linalg.norm(t1)
    return np.array([t1, np.cross(n, t1), n])


def in_plane_rows(ja: np.ndarray, jb: np.ndarray, a: np.ndarray, b: np.ndarray,
                  R: np.ndarray, basis: np.ndarray, labels: list[str]) -> np.ndarray:
    """Boolean mask of the in-plane rows of Jacobian blocks ja, jb (m, 6) on [v, ω^b] of bodies
    a, b (m,), at body rotations R (n+1, 3, 3) (ground first); ValueError names a row that is
    neither in nor out of the plane."""
    keep = np.zeros(ja.shape[0], dtype=bool)
    for k in range(ja.shape[0]):
        inside, outside = [], []
        for block, body in ((ja[k], a[k]), (jb[k], b[k])):
            if body == 0:
                continue
            w_axes = basis @ R[body]  # t1, t2, n in the body frame (rows)
            inside += [block[:3] @ basis[0], block[:3] @ basis[1], block[3:] @ w_axes[2]]
            outside += [block[:3] @ basis[2], block[3:] @ w_axes[0], block[3:] @ w_axes[1]]
        scale = max(1.0, float(np.max(np.abs(np.concatenate([ja[k], jb[k]])))))
        has_in = np.max(np.abs(inside), initial=0.0) > ZERO * scale
        has_out = np.max(np.abs(outside), initial=0.0) > ZERO * scale
        if has_in and has_out:
            raise ValueError(f"{labels[k]} acts both in and out of the plane of normal "
                             f"{basis[2].tolist()}: its axes must lie along the normal or in "
                             "the plane for planar mode")
        keep[k] = has_in
    return keep
