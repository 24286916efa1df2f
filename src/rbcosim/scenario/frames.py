"""Scenario keys of frames: orientations, marker axes and inertia tensors.

An orientation turns frame axes into the parent frame's (for a body: body -> inertial); axes
are returned as 3x3 matrices whose columns are the frame's x, y, z.
"""

from __future__ import annotations

import numpy as np

from rbcosim.scenario.reader import TableReader
from rbcosim.spatial import quaternion as quat


def frame_from_axes(z, x=None) -> np.ndarray:
    """Orthonormal axes (columns x, y, z) with z along `z`, x as close to `x` as possible."""
    z = np.asarray(z, float) / np.linalg.norm(z)
    if x is None:
        x = np.eye(3)[int(np.argmin(np.abs(z)))]
    x = np.asarray(x, float) - (np.asarray(x, float) @ z) * z
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def read_orientation(r: TableReader, key: str) -> np.ndarray:
    """Quaternion from {quaternion=[...]} or {axis=[...], angle=rad | angle_deg=deg}."""
    if not r.has(key):
        r.raw(key, None)
        return np.array([1.0, 0.0, 0.0, 0.0])
    o = r.sub(key)
    if o.has("quaternion"):
        q = o.vector("quaternion", 4)
        if abs(np.linalg.norm(q) - 1) > 1e-6:
            raise o.error("quaternion", f"expected a unit quaternion, norm is {np.linalg.norm(q):.6g}")
        o.finish()
        return quat.normalize(q)
    axis = o.vector("axis", 3)
    if np.linalg.norm(axis) == 0:
        raise o.error("axis", "expected a non-zero axis")
    if o.has("angle_deg"):
        angle = np.radians(o.number("angle_deg"))
    else:
        angle = o.number("angle")
    o.finish()
    return quat.from_axis_angle(axis, angle)


def read_axes(r: TableReader) -> np.ndarray:
    """Frame axes from `axis` (+ optional `x_axis`) or `orientation`; identity by default."""
    if r.has("axis"):
        z = r.vector("axis", 3)
        if np.linalg.norm(z) == 0:
            raise r.error("axis", "expected a non-zero axis")
        x = r.vector("x_axis", 3) if r.has("x_axis") else None
        if x is not None and np.linalg.norm(np.cross(x, z)) < 1e-9:
            raise r.error("x_axis", "must not be parallel to axis")
        return frame_from_axes(z, x)
    return quat.to_matrix(read_orientation(r, "orientation"))


def read_inertia(r: TableReader) -> np.ndarray:
    """`inertia`: kg·m² about the centre of mass, body axes (3 principal moments or 3x3)."""
    value = r.raw("inertia")
    v = r.as_vector("inertia", value, (3, 9), wanted="3 or 3x3")
    I = np.diag(v) if v.size == 3 else v.reshape(3, 3)
    if not np.allclose(I, I.T, rtol=1e-12, atol=1e-14 * np.abs(I).max()):
        raise r.error("inertia", "expected a symmetric matrix")
    eig = np.linalg.eigvalsh(I)
    if eig[0] <= 0:
        raise r.error("inertia", f"expected a positive definite tensor, principal moments {eig.tolist()}")
    if eig[0] + eig[1] < eig[2] * (1 - 1e-9):
        raise r.error("inertia", f"principal moments {eig.tolist()} violate the triangle inequality "
                                 "I1 + I2 >= I3 (no physical body has them)")
    return I
