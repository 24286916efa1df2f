"""Joint constraints Φ(q, t) = 0: values, Jacobian, Φ_t and the acceleration right-hand side γ.

Every joint is built from four primitives (Haug's basic constraints), evaluated in batches:
  point  p1 − p2 = 0                    (3 rows: the marker origins coincide)
  dot1   u1 · u2 = 0                    (body-fixed directions stay perpendicular)
  dot2   u1 · (p2 − p1) = 0             (marker 2's origin stays in a plane of marker 1)
  dist   ½(|p2 − p1|² − L²) = 0         (the origins keep a distance L)
Jacobian columns are the generalized velocities ν = [v_i, ω^b_i] of each moving body, so
Φ̇ = J ν + Φ_t and J ν̇ = γ. A driver combines auxiliary primitives with its motion f(t).
A rolling disk or knife edge on a ground plane adds contact rows (`rbcosim.maximal.kernels.
contact_rows`); their non-holonomic rows are velocity rows J ν = 0 with no Φ. In planar mode
(model.planar_normal) the point rows are along the plane's axes, each body gets three plane
rows and the joints' out-of-plane rows are dropped (`rbcosim.maximal.planar`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.maximal.kernels.contact_rows import CONTACT_HEIGHT, CONTACT_SLIP, KNIFE
from rbcosim.maximal.kernels.rows import (
    DIST,
    DOT1,
    EXPRESSION,
    GAMMA,
    HARMONIC,
    PHI,
    PHI_T,
    PLANE,
    POLYNOMIAL,
    SPLINE,
    RowTable,
    evaluate_rows,
)
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.maximal.planar import in_plane_rows, plane_basis
from rbcosim.model import GROUND, Joint, Marker, Model, Motion
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State


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
            integer = name in ("kind", "a", "b")
            setattr(self, name, np.array(col, dtype=int if integer else float))

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
        self._contact = _Group(("kind", "b", "direction", "ub", "plane_point", "sb", "normal",
                                "length"))
        labels: dict[str, list[str]] = {"point": [], "dot1": [], "dot2": [], "dist": [],
                                        "contact": []}
        self._drivers: list[tuple[str, tuple[int, ...], object]] = []
        planar = model.planar_normal is not None
        #: rows: the directions of a point coincidence's rows (the plane's axes in planar mode)
        self._point_directions = plane_basis(model.planar_normal) if planar else np.eye(3)
        for joint in model.joints:
            self._add_joint(joint, labels)
        if planar:
            self._add_plane_rows(labels)
        for g in (self._point, self._dot1, self._dot2, self._dist, self._aux1, self._aux2,
                  self._contact):
            g.freeze()
        main_labels = (labels["point"] + labels["dot1"] + labels["dot2"] + labels["dist"]
                       + labels["contact"])
        nonholonomic = np.isin(self._contact_kinds(), (CONTACT_SLIP, KNIFE))
        nonholonomic = np.concatenate([np.zeros(len(main_labels) - nonholonomic.size, bool),
                                       nonholonomic])
        self.table = _row_table(self)
        if planar:
            keep = self._in_plane(main_labels)
            self.table = _row_table(self, keep)
            main_labels = [label for label, k in zip(main_labels, keep) if k]
            nonholonomic = nonholonomic[keep]
        self.row_labels: list[str] = (
            main_labels + [f"{name}: prescribed coordinate" for name, _, _ in self._drivers])
        self.n_rows = len(self.row_labels)
        #: (rows,) True for a velocity-level (non-holonomic) row, which has no Φ
        self.nonholonomic = np.concatenate([nonholonomic, np.zeros(len(self._drivers), bool)])

    def _contact_kinds(self) -> np.ndarray:
        return np.array([row[0] for row in self._contact.rows], dtype=int)

    def _add_plane_rows(self, labels: dict[str, list[str]]) -> None:
        """Planar mode: three rows per body hold it in its plane (centre-of-mass height along
        n, the body's initial normal ⟂ t1 and t2)."""
        t1, t2, n = self._point_directions
        self._plane_rows = set()
        for i, body in enumerate(self.model.bodies, start=1):
            normal_b = quat.to_matrix(body.quaternion).T @ n
            self._dot2.add(GROUND, n, body.position, i, np.zeros(3))
            labels["dot2"].append(f"{body.name}: in plane (centre of mass along the normal)")
            self._plane_rows.add(labels["dot2"][-1])
            for t, text in ((t1, "t1"), (t2, "t2")):
                self._dot1.add(GROUND, t, i, normal_b)
                labels["dot1"].append(f"{body.name}: in plane (normal ⟂ {text})")
                self._plane_rows.add(labels["dot1"][-1])

    def _in_plane(self, labels: list[str]) -> np.ndarray:
        """Mask of the main rows kept in planar mode: the joints' rows that act in the plane
        (at the initial state) and the bodies' plane rows."""
        kin = Kinematics.of(State.initial(self.model))
        values = self.evaluate(kin, n_rows=self.table.n_main + len(self._drivers))
        n = self.table.n_main
        plane = np.array([label in self._plane_rows for label in labels])
        joint_rows = ~plane
        keep = plane.copy()
        keep[joint_rows] = in_plane_rows(
            values.ja[:n][joint_rows], values.jb[:n][joint_rows], values.a[:n][joint_rows],
            values.b[:n][joint_rows], np.asarray(kin.R), self._point_directions,
            [label for label, j in zip(labels, joint_rows) if j])
        return keep

    def _add_joint(self, joint: Joint, labels: dict[str, list[str]]) -> None:
        m1, m2 = joint.marker1, joint.marker2
        x1, y1, z1 = m1.axes.T
        x2, y2, _ = m2.axes.T
        name, kind = joint.name, joint.kind

        def point():
            self._point.add(m1.body, m1.position, m2.body, m2.position)
            axes = ("t1", "t2", "n") if self.model.planar_normal is not None else "xyz"
            labels["point"] += [f"{name}: {c} coincidence" for c in axes]

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
        elif kind in ("rolling_disk", "knife_edge"):
            self._add_contact(joint, labels)
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

    def _add_contact(self, joint: Joint, labels: dict[str, list[str]]) -> None:
        """A rolling disk's three contact rows, or a knife edge's one: marker1 on the ground
        (origin on the plane, z its normal), marker2 on the body (disk centre and axis z, or
        blade point and blade direction x)."""
        m1, m2 = joint.marker1, joint.marker2
        x1, y1, n = m1.axes.T
        if joint.kind == "knife_edge":
            self._contact.add(KNIFE, m2.body, n, m2.axes[:, 0], m1.position, m2.position, n, 0.0)
            labels["contact"].append(f"{joint.name}: no sideways blade velocity (non-holonomic)")
            return
        self._contact.add(CONTACT_HEIGHT, m2.body, n, m2.axes[:, 2], m1.position, m2.position,
                          n, joint.length)
        labels["contact"].append(f"{joint.name}: contact on the plane")
        for t, text in ((x1, "x1"), (y1, "y1")):
            self._contact.add(CONTACT_SLIP, m2.body, t, m2.axes[:, 2], m1.position, m2.position,
                              n, joint.length)
            labels["contact"].append(f"{joint.name}: no slip along {text} (non-holonomic)")

    def evaluate(self, kin: Kinematics, n_rows: int | None = None) -> ConstraintValues:
        """Φ, Φ_t, γ and Jacobian blocks of every row at the kinematic state `kin` (n_rows:
        the row count while the table is being built)."""
        n_rows = self.n_rows if n_rows is None else n_rows
        values, jac = np.zeros((4, n_rows)), np.zeros((2, n_rows, 6))
        evaluate_rows(self.table, kin.t, kin, values, jac, np.zeros((2, 2, 6)))
        return ConstraintValues(values[PHI], values[PHI_T], values[GAMMA],
                                self.table.row_bodies[:, 0], self.table.row_bodies[:, 1],
                                jac[0], jac[1])


def _motion_data(motion: Motion) -> tuple[int, np.ndarray]:
    """(kind, data) of a driver's motion as RowTable encodes it."""
    if motion.kind == "polynomial":
        return POLYNOMIAL, np.array(motion.coefficients, dtype=float).reshape(-1)
    if motion.kind == "harmonic":
        return HARMONIC, np.array(motion.coefficients, dtype=float).reshape(4)
    if motion.kind == "expression":
        return EXPRESSION, np.array(motion.program, dtype=float)
    from scipy.interpolate import CubicSpline  # only tabulated motions need it

    spline = CubicSpline(np.array(motion.times), np.array(motion.values), bc_type="natural")
    k = spline.c.shape[1]
    return SPLINE, np.concatenate([[float(k)], spline.x, spline.c.ravel()])


def _row_table(c: Constraints, keep: np.ndarray | None = None) -> RowTable:
    """Every primitive row of `c` in one table: point (three rows each), dot1, dot2, dist,
    contact, then the drivers' auxiliary rows; `keep` masks the main rows (planar mode)."""
    rows = []  # (kind, a, b, f, u1, u2, sa, sb, normal, length)
    z = np.zeros(3)
    g = c._point
    for k in range(len(g)):
        for direction in c._point_directions:
            rows.append((PLANE, g.a[k], g.b[k], 0, -direction, z, g.sa[k], g.sb[k], z, 0.0))
    g = c._dot1
    rows += [(DOT1, g.a[k], g.b[k], g.a[k], g.ua[k], g.ub[k], z, z, z, 0.0)
             for k in range(len(g))]
    g = c._dot2
    rows += [(PLANE, g.a[k], g.b[k], g.a[k], g.ua[k], z, g.sa[k], g.sb[k], z, 0.0)
             for k in range(len(g))]
    g = c._dist
    rows += [(DIST, g.a[k], g.b[k], 0, z, z, g.sa[k], g.sb[k], z, g.length[k])
             for k in range(len(g))]
    g = c._contact
    rows += [(g.kind[k], GROUND, g.b[k], GROUND, g.direction[k], g.ub[k], g.plane_point[k],
              g.sb[k], g.normal[k], g.length[k]) for k in range(len(g))]
    if keep is not None:
        rows = [row for row, k in zip(rows, keep) if k]
    n_main = len(rows)
    aux1 = len(rows)
    g = c._aux1
    rows += [(DOT1, g.a[k], g.b[k], g.a[k], g.ua[k], g.ub[k], z, z, z, 0.0)
             for k in range(len(g))]
    aux2 = len(rows)
    g = c._aux2
    rows += [(PLANE, g.a[k], g.b[k], g.a[k], g.ua[k], z, g.sa[k], g.sb[k], z, 0.0)
             for k in range(len(g))]
    cols = list(zip(*rows)) if rows else [()] * 10
    index = np.array(cols[:4], dtype=np.int64).reshape(4, -1).T.copy()
    vectors = np.array(cols[4:9], dtype=float).reshape(5, -1, 3).transpose(1, 0, 2).copy()
    drivers, data, depths = [], [], []
    for _, idx, (target_kind, motion) in c._drivers:
        rows_of = (aux1 + idx[0], aux1 + idx[1]) if target_kind == "revolute" else (
            aux2 + idx[0], aux2 + idx[0])
        kind, values = _motion_data(motion)
        drivers.append((int(target_kind == "revolute"), *rows_of, kind))
        data.append(values)
        depths += [int(values[1])] if kind == EXPRESSION else []
    drivers = np.array(drivers, dtype=np.int64).reshape(-1, 4)
    bodies = np.concatenate([index[:n_main, 1:3], index[drivers[:, 1], 1:3]])
    return RowTable(
        index=index, vectors=vectors, length=np.array(cols[9], dtype=float), n_main=n_main,
        drivers=drivers, motion_start=np.cumsum([0] + [d.size for d in data]).astype(np.int64),
        motion_data=np.concatenate([np.zeros(0)] + data), row_bodies=bodies.copy(),
        motion_stack=np.zeros((max([1] + depths), 3)))


def marker_angle(m1: Marker, m2: Marker, kin: Kinematics) -> tuple[float, float]:
    """(angle rad in (−π, π], rate rad/s) from marker 1's x axis to marker 2's about marker 1's
    z axis: a revolute joint's coordinate, or an angle sensor's."""
    x1, y1, z1 = (kin.R[m1.body] @ m1.axes).T
    x2 = kin.R[m2.body] @ m2.axes[:, 0]
    angle = float(np.arctan2(x2 @ y1, x2 @ x1))
    rate = float((kin.w_inertial[m2.body] - kin.w_inertial[m1.body]) @ z1)
    return angle, rate


def joint_coordinate(joint: Joint, kin: Kinematics) -> tuple[float, float]:
    """(coordinate, rate) of a revolute (rad, about marker1 z) or prismatic (m, along z) joint."""
    m1, m2 = joint.marker1, joint.marker2
    if joint.kind == "revolute":
        return marker_angle(m1, m2, kin)
    R1, R2 = kin.R[m1.body], kin.R[m2.body]
    z1 = R1 @ m1.axes[:, 2]
    p1 = kin.r[m1.body] + R1 @ m1.position
    p2 = kin.r[m2.body] + R2 @ m2.position
    v1 = kin.v[m1.body] + np.cross(kin.w_inertial[m1.body], p1 - kin.r[m1.body])
    v2 = kin.v[m2.body] + np.cross(kin.w_inertial[m2.body], p2 - kin.r[m2.body])
    d = p2 - p1
    return float(z1 @ d), float(np.cross(kin.w_inertial[m1.body], z1) @ d + z1 @ (v2 - v1))


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
            import scipy.sparse as sp  # imported here: a process that never builds a sparse
            # pattern starts without scipy (about 0.2 s)

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

