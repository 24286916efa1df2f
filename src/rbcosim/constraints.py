"""Joint constraints Φ(q, t) = 0: values, Jacobian, Φ_t and the acceleration right-hand side γ.

Every joint is built from four primitives (Haug's basic constraints), evaluated in batches:
  point  p1 − p2 = 0                    (3 rows: the marker origins coincide)
  dot1   u1 · u2 = 0                    (body-fixed directions stay perpendicular)
  dot2   u1 · (p2 − p1) = 0             (marker 2's origin stays in a plane of marker 1)
  dist   ½(|p2 − p1|² − L²) = 0         (the origins keep a distance L)
Jacobian columns are the generalized velocities ν = [v_i, ω^b_i] of each moving body, so
Φ̇ = J ν + Φ_t and J ν̇ = γ. A driver combines auxiliary primitives with its motion f(t).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from rbcosim.kinematics import Kinematics
from rbcosim.linalg3 import cross
from rbcosim.model import Joint, Model

_EYE = np.eye(3)


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices [v]× of vectors (k,3) -> (k,3,3)."""
    m = np.zeros((v.shape[0], 3, 3))
    m[:, 0, 1], m[:, 0, 2], m[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    m[:, 1, 0], m[:, 2, 0], m[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    return m


def _to_body(c: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Row vectors c (k,3) acting on inertial ω, re-expressed on body-frame ω^b: c R."""
    return np.einsum("ki,kij->kj", c, R)


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ki,ki->k", a, b)


def _centripetal(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return cross(w, cross(w, x))


@dataclass
class ConstraintValues:
    """Per row: Φ, Φ_t, γ (m,), bodies a, b (m,) and Jacobian blocks Ja, Jb (m, 6)."""

    phi: np.ndarray
    phi_t: np.ndarray
    gamma: np.ndarray
    a: np.ndarray
    b: np.ndarray
    ja: np.ndarray
    jb: np.ndarray

    def velocity_error(self, nu_ext: np.ndarray) -> np.ndarray:
        """Φ̇ = J ν + Φ_t for extended velocities nu_ext (n+1, 6), ground row zero."""
        return _rowdot(self.ja, nu_ext[self.a]) + _rowdot(self.jb, nu_ext[self.b]) + self.phi_t


class _Group:
    """Growing lists of one primitive type, frozen into arrays by `freeze`."""

    def __init__(self, fields: tuple[str, ...]):
        self.fields = fields
        self.rows: list[tuple] = []

    def add(self, *values) -> int:
        self.rows.append(values)
        return len(self.rows) - 1

    def freeze(self) -> None:
        for k, name in enumerate(self.fields):
            col = [r[k] for r in self.rows]
            setattr(self, name, np.array(col, dtype=int if name in ("a", "b") else float))

    def __len__(self) -> int:
        return len(self.rows)


class Constraints:
    """All joint constraints of a model; `evaluate(kin)` returns ConstraintValues."""

    def __init__(self, model: Model):
        self.model = model
        self._point = _Group(("a", "sa", "b", "sb"))
        self._dot1 = _Group(("a", "ua", "b", "ub"))
        self._dot2 = _Group(("a", "ua", "sa", "b", "sb"))
        self._dist = _Group(("a", "sa", "b", "sb", "length"))
        self._aux1 = _Group(("a", "ua", "b", "ub"))
        self._aux2 = _Group(("a", "ua", "sa", "b", "sb"))
        labels: dict[str, list[str]] = {"point": [], "dot1": [], "dot2": [], "dist": []}
        self._drivers: list[tuple[str, tuple[int, ...], object]] = []
        for joint in model.joints:
            self._add_joint(joint, labels)
        for g in (self._point, self._dot1, self._dot2, self._dist, self._aux1, self._aux2):
            g.freeze()
        self.row_labels: list[str] = (
            labels["point"] + labels["dot1"] + labels["dot2"] + labels["dist"]
            + [f"{name}: prescribed coordinate" for name, _, _ in self._drivers]
        )
        self.n_rows = len(self.row_labels)

    def _add_joint(self, joint: Joint, labels: dict[str, list[str]]) -> None:
        m1, m2 = joint.marker1, joint.marker2
        x1, y1, z1 = m1.axes.T
        x2, y2, _ = m2.axes.T
        name, kind = joint.name, joint.kind

        def point():
            self._point.add(m1.body, m1.position, m2.body, m2.position)
            labels["point"] += [f"{name}: {c} coincidence" for c in "xyz"]

        def dot1(u1, u2, text):
            self._dot1.add(m1.body, u1, m2.body, u2)
            labels["dot1"].append(f"{name}: {text}")

        def dot2(u1, text):
            self._dot2.add(m1.body, u1, m1.position, m2.body, m2.position)
            labels["dot2"].append(f"{name}: {text}")

        def parallel_z():
            dot1(z1, x2, "z1 ⟂ x2")
            dot1(z1, y2, "z1 ⟂ y2")

        if kind == "spherical":
            point()
        elif kind == "revolute":
            point()
            parallel_z()
        elif kind == "universal":
            point()
            dot1(x1, y2, "x1 ⟂ y2")
        elif kind in ("cylindrical", "prismatic"):
            parallel_z()
            dot2(x1, "origin 2 on axis (x1)")
            dot2(y1, "origin 2 on axis (y1)")
            if kind == "prismatic":
                dot1(x1, y2, "x1 ⟂ y2 (no twist)")
        elif kind == "planar":
            parallel_z()
            dot2(z1, "origin 2 in plane")
        elif kind == "fixed":
            point()
            parallel_z()
            dot1(x1, y2, "x1 ⟂ y2")
        elif kind == "distance":
            self._dist.add(m1.body, m1.position, m2.body, m2.position, joint.length)
            labels["dist"].append(f"{name}: distance")
        elif kind == "driver":
            target = self.model.joints[joint.driven_joint]
            t1, t2 = target.marker1, target.marker2
            if target.kind == "revolute":
                idx = (
                    self._aux1.add(t1.body, t1.axes[:, 1], t2.body, t2.axes[:, 0]),
                    self._aux1.add(t1.body, t1.axes[:, 0], t2.body, t2.axes[:, 0]),
                )
            else:
                idx = (self._aux2.add(t1.body, t1.axes[:, 2], t1.position, t2.body, t2.position),)
            self._drivers.append((name, idx, (target.kind, joint.motion)))
        else:
            raise ValueError(f"unknown joint kind {kind!r}")

    # --- primitive evaluations: each returns (phi, gamma, a, b, ja, jb) with one row each ---

    @staticmethod
    def _eval_point(g: _Group, kin: Kinematics):
        k = len(g)
        rho_a, pa, _ = kin.point(g.a, g.sa)
        rho_b, pb, _ = kin.point(g.b, g.sb)
        ja = np.zeros((k, 3, 6))
        jb = np.zeros((k, 3, 6))
        ja[:, :, :3] = _EYE
        jb[:, :, :3] = -_EYE
        ja[:, :, 3:] = -skew(rho_a) @ kin.R[g.a]
        jb[:, :, 3:] = skew(rho_b) @ kin.R[g.b]
        wa, wb = kin.w_inertial[g.a], kin.w_inertial[g.b]
        gamma = -(_centripetal(wa, rho_a) - _centripetal(wb, rho_b))
        return (
            (pa - pb).ravel(), gamma.ravel(), np.repeat(g.a, 3), np.repeat(g.b, 3),
            ja.reshape(-1, 6), jb.reshape(-1, 6),
        )

    @staticmethod
    def _eval_dot1(g: _Group, kin: Kinematics):
        k = len(g)
        ua, ub = kin.direction(g.a, g.ua), kin.direction(g.b, g.ub)
        wa, wb = kin.w_inertial[g.a], kin.w_inertial[g.b]
        c = cross(ua, ub)
        ja = np.zeros((k, 6))
        jb = np.zeros((k, 6))
        ja[:, 3:] = _to_body(c, kin.R[g.a])
        jb[:, 3:] = -_to_body(c, kin.R[g.b])
        gamma = -(
            _rowdot(_centripetal(wa, ua), ub)
            + 2 * _rowdot(cross(wa, ua), cross(wb, ub))
            + _rowdot(ua, _centripetal(wb, ub))
        )
        return _rowdot(ua, ub), gamma, g.a, g.b, ja, jb

    @staticmethod
    def _separation(g: _Group, kin: Kinematics):
        """Lever arms ρ_a, ρ_b, the separation d = p_b − p_a, its rate ḋ, and the relative
        centripetal acceleration ω_b×(ω_b×ρ_b) − ω_a×(ω_a×ρ_a) of a group's marker origins."""
        rho_a, pa, va = kin.point(g.a, g.sa)
        rho_b, pb, vb = kin.point(g.b, g.sb)
        wa, wb = kin.w_inertial[g.a], kin.w_inertial[g.b]
        centripetal = _centripetal(wb, rho_b) - _centripetal(wa, rho_a)
        return rho_a, rho_b, pb - pa, vb - va, centripetal

    @classmethod
    def _eval_dot2(cls, g: _Group, kin: Kinematics):
        k = len(g)
        ua = kin.direction(g.a, g.ua)
        wa = kin.w_inertial[g.a]
        rho_a, rho_b, d, dd, centripetal = cls._separation(g, kin)
        ja = np.zeros((k, 6))
        jb = np.zeros((k, 6))
        ja[:, :3] = -ua
        jb[:, :3] = ua
        ja[:, 3:] = _to_body(cross(ua, d + rho_a), kin.R[g.a])
        jb[:, 3:] = _to_body(cross(rho_b, ua), kin.R[g.b])
        gamma = -(
            _rowdot(_centripetal(wa, ua), d)
            + 2 * _rowdot(cross(wa, ua), dd)
            + _rowdot(ua, centripetal)
        )
        return _rowdot(ua, d), gamma, g.a, g.b, ja, jb

    @classmethod
    def _eval_dist(cls, g: _Group, kin: Kinematics):
        k = len(g)
        rho_a, rho_b, d, dd, centripetal = cls._separation(g, kin)
        ja = np.zeros((k, 6))
        jb = np.zeros((k, 6))
        ja[:, :3] = -d
        jb[:, :3] = d
        ja[:, 3:] = -_to_body(cross(rho_a, d), kin.R[g.a])
        jb[:, 3:] = _to_body(cross(rho_b, d), kin.R[g.b])
        gamma = -(_rowdot(dd, dd) + _rowdot(d, centripetal))
        phi = 0.5 * (_rowdot(d, d) - g.length**2)
        return phi, gamma, g.a, g.b, ja, jb

    def evaluate(self, kin: Kinematics) -> ConstraintValues:
        """Φ, Φ_t, γ and Jacobian blocks of every row at the kinematic state `kin`."""
        parts = []
        for g, fn in (
            (self._point, self._eval_point),
            (self._dot1, self._eval_dot1),
            (self._dot2, self._eval_dot2),
            (self._dist, self._eval_dist),
        ):
            if len(g):
                parts.append(fn(g, kin))
        phi_t = [np.zeros(sum(p[0].size for p in parts))]
        if self._drivers:
            driver_rows = self._eval_drivers(kin)
            parts.append(driver_rows[:6])
            phi_t.append(driver_rows[6])
        if not parts:
            z = np.zeros(0)
            return ConstraintValues(z, z, z, z.astype(int), z.astype(int), np.zeros((0, 6)), np.zeros((0, 6)))
        cat = [np.concatenate([p[i] for p in parts]) for i in range(6)]
        return ConstraintValues(cat[0], np.concatenate(phi_t), cat[1], cat[2], cat[3], cat[4], cat[5])

    def _eval_drivers(self, kin: Kinematics):
        aux1 = self._eval_dot1(self._aux1, kin) if len(self._aux1) else None
        aux2 = self._eval_dot2(self._aux2, kin) if len(self._aux2) else None
        nu = np.hstack([kin.v, kin.w_body])
        rows = []
        for _, idx, (target_kind, motion) in self._drivers:
            f, fd, fdd = motion.evaluate(kin.t)
            if target_kind == "revolute":
                phi_a, gam_a, a, b, ja_a, jb_a = (x[idx[0]] for x in aux1)
                phi_b, gam_b, _, _, ja_b, jb_b = (x[idx[1]] for x in aux1)
                rate_a = ja_a @ nu[a] + jb_a @ nu[b]
                rate_b = ja_b @ nu[a] + jb_b @ nu[b]
                c, s = np.cos(f), np.sin(f)
                phi = phi_a * c - phi_b * s
                phi_t = -(phi_a * s + phi_b * c) * fd
                gamma = (
                    c * gam_a - s * gam_b + 2 * (rate_a * s + rate_b * c) * fd
                    + (phi_a * c - phi_b * s) * fd**2 + (phi_a * s + phi_b * c) * fdd
                )
                ja, jb = c * ja_a - s * ja_b, c * jb_a - s * jb_b
            else:
                phi_d, gam_d, a, b, ja, jb = (x[idx[0]] for x in aux2)
                phi, phi_t, gamma = phi_d - f, -fd, gam_d + fdd
            rows.append((phi, gamma, a, b, ja, jb, phi_t))
        return tuple(np.array([r[i] for r in rows]) for i in range(7))


def joint_coordinate(joint: Joint, kin: Kinematics) -> tuple[float, float]:
    """(coordinate, rate) of a revolute (rad, about marker1 z) or prismatic (m, along z) joint."""
    m1, m2 = joint.marker1, joint.marker2
    R1, R2 = kin.R[m1.body], kin.R[m2.body]
    x1, y1, z1 = (R1 @ m1.axes).T
    x2 = R2 @ m2.axes[:, 0]
    if joint.kind == "revolute":
        angle = float(np.arctan2(x2 @ y1, x2 @ x1))
        rate = float((kin.w_inertial[m2.body] - kin.w_inertial[m1.body]) @ z1)
        return angle, rate
    p1 = kin.r[m1.body] + R1 @ m1.position
    p2 = kin.r[m2.body] + R2 @ m2.position
    v1 = kin.v[m1.body] + cross(kin.w_inertial[m1.body], p1 - kin.r[m1.body])
    v2 = kin.v[m2.body] + cross(kin.w_inertial[m2.body], p2 - kin.r[m2.body])
    d = p2 - p1
    return float(z1 @ d), float(cross(kin.w_inertial[m1.body], z1) @ d + z1 @ (v2 - v1))


class JacobianAssembler:
    """Scatters Jacobian blocks into a dense array or a fixed-pattern CSR matrix (m, 6n)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, n_bodies: int, sparse: bool):
        self.m, self.n = a.size, 6 * n_bodies
        self.sparse = sparse
        rows = np.repeat(np.arange(self.m), 6)
        cols_a = (6 * (a[:, None] - 1) + np.arange(6)).ravel()
        cols_b = (6 * (b[:, None] - 1) + np.arange(6)).ravel()
        self._keep_a = np.repeat(a > 0, 6)
        self._keep_b = np.repeat(b > 0, 6)
        if sparse:
            r = np.concatenate([rows[self._keep_a], rows[self._keep_b]])
            c = np.concatenate([cols_a[self._keep_a], cols_b[self._keep_b]])
            order = np.arange(1, r.size + 1, dtype=float)
            pattern = sp.csr_matrix((order, (r, c)), shape=(self.m, self.n))
            self._perm = pattern.data.astype(int) - 1
            self._matrix = pattern
        else:
            self._ra, self._ca = rows[self._keep_a], cols_a[self._keep_a]
            self._rb, self._cb = rows[self._keep_b], cols_b[self._keep_b]

    def assemble(self, values: ConstraintValues):
        """Jacobian J (m, 6n) of the generalized velocities."""
        va = values.ja.ravel()[self._keep_a]
        vb = values.jb.ravel()[self._keep_b]
        if self.sparse:
            self._matrix.data = np.concatenate([va, vb])[self._perm]
            return self._matrix
        J = np.zeros((self.m, self.n))
        J[self._ra, self._ca] = va
        J[self._rb, self._cb] = vb
        return J

