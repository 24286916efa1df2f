"""The 3D chord frame of a floating multi-node body and its boundary coordinates, from the
interface points' motions (exact, no linearisation of the frame; :mod:`rbcosim.flex.modelling.floating_multi`).

Inertial d = p_1 - p_0 (and d', d''), l = |d|; u = S_0 e_y the structure's y axis carried by
interface 0's point (S_i: point i's structure orientation, inertial). Frame axes
x = d / l, y = (u - (u·x) x) / |...|, z = x × y; in frame components, with u = (u_x, u_y, 0),
c = u_x / u_y and the point's w_p, alpha_p:

    w_y = -d'_z / l,  w_z = d'_y / l,  w_x = w_p,x - c (w_p,y - w_y),
    alpha_y = w_x w_z - d''_z / l + 2 d'_x d'_z / l²,  alpha_z = d''_y / l - 2 d'_x d'_y / l² - w_x w_y,
    alpha_x = alpha_p,x + w_z w_p,y - w_y w_p,z + (w_p,z - w_z)(w_p,y - w_y) / u_y²
              - c (alpha_p,y + w_x w_p,z - w_z w_p,x - alpha_y)

(``d/dt`` of ``w·e`` equals ``alpha·e`` for the frame's own axes). The boundary coordinates
(relative to the frame, frame components): a node's translation ``rho = Rᵀ(p_i - p_0) - X_i``,
``rho' = Rᵀ(v_i - v_0) - w × r``, ``rho'' = Rᵀ(a_i - a_0) - alpha × r - w × (w × r) - 2 w × rho'``
(r = X_i + rho); a held rotation from the image ``w_a = Rᵀ S_i e_a`` of a point axis,
``w_a' = w_r × w_a``, ``w_a'' = w_r' × w_a + w_r × (w_r × w_a)``, ``w_r = Rᵀ w_i - w``,
``w_r' = Rᵀ alpha_i - alpha - w × w_r`` (:data:`~rbcosim.flex.modelling.floating_multi.ROTATION_MEASURES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rbcosim.flex.modelling.floating_multi import ROTATION_MEASURES, FloatingMultiModel


@dataclass
class FrameState:
    """The frame and the boundary coordinates at one instant.

    rot: frame -> inertial (3, 3); w, alpha (rad/s, rad/s²) and b = a_0 - g (m/s²) in frame
    components; ub, ubd, ubdd: u_b and its rates (n_b,); arms: (n_i, 3) each node's deformed
    position relative to node 0, frame components, m."""

    rot: np.ndarray
    w: np.ndarray
    alpha: np.ndarray
    b: np.ndarray
    ub: np.ndarray
    ubd: np.ndarray
    ubdd: np.ndarray
    arms: np.ndarray


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b of two 3-vectors (numpy's cross costs ~40x this on one pair), in Python floats:
    the same IEEE products and differences as on numpy's scalars, at half the cost."""
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def _axes(d: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    length = math.sqrt(d.dot(d))  # (np.linalg.norm's sum and root, without its wrapper)
    x = d / length
    ux = float(u @ x)
    yp = u - ux * x
    uy = math.sqrt(yp.dot(yp))
    y = yp / uy
    return np.column_stack([x, y, _cross(x, y)]), length, ux, uy


def frame_state(kin: np.ndarray, orient: np.ndarray, model: FloatingMultiModel,
                gravity: np.ndarray) -> FrameState:
    """The frame state from the points' kinematics ``kin`` (n_i, 18) = [p, v, a, -, w, alpha]
    rows (:func:`rbcosim.flex.runtime.frame.frame_at`'s layout, inertial) and structure orientations
    ``orient`` (n_i, 3, 3)."""
    p, v, a, wp, ap = kin[:, 0:3], kin[:, 3:6], kin[:, 6:9], kin[:, 12:15], kin[:, 15:18]
    rot, length, ux, uy = _axes(p[1] - p[0], orient[0][:, 1])
    dp, dpp = rot.T @ (v[1] - v[0]), rot.T @ (a[1] - a[0])
    wpf, apf = rot.T @ wp[0], rot.T @ ap[0]
    c = ux / uy
    wy, wz = -dp[2] / length, dp[1] / length
    wx = wpf[0] - c * (wpf[1] - wy)
    ay = wx * wz - dpp[2] / length + 2 * dp[0] * dp[2] / length**2
    az = dpp[1] / length - 2 * dp[0] * dp[1] / length**2 - wx * wy
    ax = (apf[0] + wz * wpf[1] - wy * wpf[2] + (wpf[2] - wz) * (wpf[1] - wy) / uy**2
          - c * (apf[1] + wx * wpf[2] - wz * wpf[0] - ay))
    w, al = np.array([wx, wy, wz]), np.array([ax, ay, az])
    n_i = kin.shape[0]
    arms = model.interface_positions.copy()
    trans = np.zeros((3, n_i, 3))  # rho, rho', rho'' per node
    for i in range(1, n_i):
        r = rot.T @ (p[i] - p[0])
        rho = r - model.interface_positions[i]
        rhod = rot.T @ (v[i] - v[0]) - _cross(w, r)
        trans[:, i] = rho, rhod, (rot.T @ (a[i] - a[0]) - _cross(al, r)
                                  - _cross(w, _cross(w, r)) - 2 * _cross(w, rhod))
        arms[i] = r
    rows = np.zeros((3, model.n_boundary))
    rotations: dict[int, tuple] = {}
    for j, (i, comp) in enumerate(model.boundary):
        if comp < 3:
            rows[:, j] = trans[:, i, comp]
            continue
        if i not in rotations:
            wr = rot.T @ wp[i] - w
            rotations[i] = (rot.T @ orient[i], wr, rot.T @ ap[i] - al - _cross(w, wr))
        rrel, wr, wrd = rotations[i]
        released = model.released[i]
        axis, k, sign = ROTATION_MEASURES["clamp" if not released else released[0] - 3][comp]
        wa = rrel[:, axis]
        wad = _cross(wr, wa)
        wadd = _cross(wrd, wa) + _cross(wr, wad)
        rows[:, j] = sign * wa[k], sign * wad[k], sign * wadd[k]
    b = rot.T @ (a[0] - gravity)
    return FrameState(rot, w, al, b, rows[0], rows[1], rows[2], arms)
