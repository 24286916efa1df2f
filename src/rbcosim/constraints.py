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
        self._table = _RowTable(self)
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

    def evaluate(self, kin: Kinematics) -> ConstraintValues:
        """Φ, Φ_t, γ and Jacobian blocks of every row at the kinematic state `kin`."""
        phi, gamma, ja, jb = self._table.evaluate(kin)
        t = self._table
        n = t.n_main
        phi_t = np.zeros(n)
        a, b = t.a[:n], t.b[:n]
        if not self._drivers:
            return ConstraintValues(phi[:n], phi_t, gamma[:n], a, b, ja[:n], jb[:n])
        rows = self._eval_drivers(kin, phi, gamma, ja, jb)
        return ConstraintValues(
            np.concatenate([phi[:n], rows[0]]), np.concatenate([phi_t, rows[6]]),
            np.concatenate([gamma[:n], rows[1]]), np.concatenate([a, rows[2]]),
            np.concatenate([b, rows[3]]), np.concatenate([ja[:n], rows[4]]),
            np.concatenate([jb[:n], rows[5]]),
        )

    def _eval_drivers(self, kin: Kinematics, phi, gamma, ja_all, jb_all):
        """Driver rows from the auxiliary rows of the table: (phi, gamma, a, b, ja, jb, phi_t)."""
        t = self._table
        nu = np.hstack([kin.v, kin.w_body])
        rows = []
        for _, idx, (target_kind, motion) in self._drivers:
            f, fd, fdd = motion.evaluate(kin.t)
            if target_kind == "revolute":
                i, k = t.aux1_offset + idx[0], t.aux1_offset + idx[1]
                a, b = t.a[i], t.b[i]
                phi_a, gam_a, ja_a, jb_a = phi[i], gamma[i], ja_all[i], jb_all[i]
                phi_b, gam_b, ja_b, jb_b = phi[k], gamma[k], ja_all[k], jb_all[k]
                rate_a = ja_a @ nu[a] + jb_a @ nu[b]
                rate_b = ja_b @ nu[a] + jb_b @ nu[b]
                c, s = np.cos(f), np.sin(f)
                value = phi_a * c - phi_b * s
                value_t = -(phi_a * s + phi_b * c) * fd
                acc = (
                    c * gam_a - s * gam_b + 2 * (rate_a * s + rate_b * c) * fd
                    + (phi_a * c - phi_b * s) * fd**2 + (phi_a * s + phi_b * c) * fdd
                )
                ja, jb = c * ja_a - s * ja_b, c * jb_a - s * jb_b
            else:
                i = t.aux2_offset + idx[0]
                a, b, ja, jb = t.a[i], t.b[i], ja_all[i], jb_all[i]
                value, value_t, acc = phi[i] - f, -fd, gamma[i] + fdd
            rows.append((value, acc, a, b, ja, jb, value_t))
        return tuple(np.array([r[i] for r in rows]) for i in range(7))


class _RowTable:
    """Every primitive row of a Constraints object in one table, evaluated in one pass.

    Three row kinds cover the four primitives:
      plane  Φ = u1 · (p_b − p_a), u1 fixed on body f (f = a for dot2; f = ground with
             u1 = −e_c for the three rows of a point coincidence, so Φ = (p_a − p_b)_c);
      dot1   Φ = u1 · u2, u1 fixed on a, u2 on b;
      dist   Φ = ½(|p_b − p_a|² − L²).
    Rows: point, dot1, dot2, dist (the constraint rows), then the drivers' auxiliary rows.
    """

    def __init__(self, c: Constraints):
        rows = []  # (kind, a, b, f, u1, u2, sa, sb, length)
        z = np.zeros(3)
        g = c._point
        for k in range(len(g)):
            for comp in range(3):
                rows.append((0, g.a[k], g.b[k], 0, -np.eye(3)[comp], z, g.sa[k], g.sb[k], 0.0))
        for g in (c._dot1,):
            rows += [(1, g.a[k], g.b[k], g.a[k], g.ua[k], g.ub[k], z, z, 0.0) for k in range(len(g))]
        g = c._dot2
        rows += [(0, g.a[k], g.b[k], g.a[k], g.ua[k], z, g.sa[k], g.sb[k], 0.0) for k in range(len(g))]
        g = c._dist
        rows += [(2, g.a[k], g.b[k], 0, z, z, g.sa[k], g.sb[k], g.length[k]) for k in range(len(g))]
        self.n_main = len(rows)
        self.aux1_offset = len(rows)
        g = c._aux1
        rows += [(1, g.a[k], g.b[k], g.a[k], g.ua[k], g.ub[k], z, z, 0.0) for k in range(len(g))]
        self.aux2_offset = len(rows)
        g = c._aux2
        rows += [(0, g.a[k], g.b[k], g.a[k], g.ua[k], z, g.sa[k], g.sb[k], 0.0) for k in range(len(g))]
        self.size = len(rows)
        cols = list(zip(*rows)) if rows else [()] * 9
        kind = np.array(cols[0], dtype=int)
        self.a, self.b, self.f = (np.array(cols[i], dtype=int) for i in (1, 2, 3))
        self.u1, self.u2, self.sa, self.sb = (np.array(cols[i], dtype=float).reshape(-1, 3)
                                              for i in (4, 5, 6, 7))
        self.length = np.array(cols[8], dtype=float)
        self.plane, self.dot1, self.dist = ((kind == k).astype(float) for k in (0, 1, 2))
        # u1 turns with body a (dot1, dot2); for point rows it is fixed in the inertial frame.
        self.f_is_a = (self.f == self.a).astype(float)[:, None]
        self._p3, self._d13, self._s3 = (x[:, None] for x in (self.plane, self.dot1, self.dist))

    def evaluate(self, kin: Kinematics):
        """(Φ, γ, Ja, Jb) of every row; Ja, Jb (rows, 6) act on [v, ω^b] of bodies a and b."""
        if not self.size:
            e = np.zeros(0)
            return e, e, np.zeros((0, 6)), np.zeros((0, 6))
        a, b = self.a, self.b
        Ra, Rb = kin.R[a], kin.R[b]
        u1 = np.einsum("kij,kj->ki", kin.R[self.f], self.u1)
        u2 = np.einsum("kij,kj->ki", Rb, self.u2)
        rho_a = np.einsum("kij,kj->ki", Ra, self.sa)
        rho_b = np.einsum("kij,kj->ki", Rb, self.sb)
        wa, wb, wf = kin.w_inertial[a], kin.w_inertial[b], kin.w_inertial[self.f]
        d = kin.r[b] + rho_b - kin.r[a] - rho_a
        wa_rho, wb_rho = cross(wa, rho_a), cross(wb, rho_b)
        dd = kin.v[b] + wb_rho - kin.v[a] - wa_rho
        centripetal = cross(wb, wb_rho) - cross(wa, wa_rho)
        wf_u1, wb_u2 = cross(wf, u1), cross(wb, u2)
        p, d1, s3 = self._p3, self._d13, self._s3
        u1_d = _rowdot(u1, d)
        phi = self.plane * u1_d + self.dot1 * _rowdot(u1, u2) + self.dist * 0.5 * (
            _rowdot(d, d) - self.length**2)
        gamma = -(
            self.plane * (_rowdot(cross(wf, wf_u1), d) + 2 * _rowdot(wf_u1, dd)
                          + _rowdot(u1, centripetal))
            + self.dot1 * (_rowdot(cross(wf, wf_u1), u2) + 2 * _rowdot(wf_u1, wb_u2)
                           + _rowdot(u1, cross(wb, wb_u2)))
            + self.dist * (_rowdot(dd, dd) + _rowdot(d, centripetal))
        )
        trans = p * u1 + s3 * d
        u1_x_u2 = cross(u1, u2)
        # Row vectors acting on inertial ω of a (incl. the rotation of u1 when f = a) and b.
        w_a = (p * cross(u1, rho_a) - s3 * cross(rho_a, d)
               + self.f_is_a * (p * cross(u1, d) + d1 * u1_x_u2))
        w_b = p * cross(rho_b, u1) - d1 * u1_x_u2 + s3 * cross(rho_b, d)
        ja = np.empty((self.size, 6))
        jb = np.empty((self.size, 6))
        ja[:, :3], jb[:, :3] = -trans, trans
        ja[:, 3:] = _to_body(w_a, Ra)
        jb[:, 3:] = _to_body(w_b, Rb)
        return phi, gamma, ja, jb


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

