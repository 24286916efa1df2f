"""Joint reactions and driver efforts, computed after a run from the written rows.

Per joint: the constraint wrench on body2 (marker2's body) at the joint point (marker2's
origin), force N and moment N·m, inertial (`J.fx .. J.mz`) and in the joint frame, marker1's
axes (`J.jfx .. J.jmz`). The wrench on body1 is the opposite one at the same point (the
joints' equations do not change under a rigid motion of both bodies). Per driver: its
generalized force `D.force` (N·m about the driven revolute's axis, or N along the driven
prismatic's axis, on body2) and `D.power` W, the power it puts into the mechanism.

Maximal route: from the multipliers λ at each row's state, generalized constraint forces
Q_c = −Jᵀ λ (columns [v, ω^b] per body: force inertial, torque in the body frame). Minimal
route: trees by inverse dynamics, Newton–Euler of every body with the accelerations of the
joint-coordinate solution, solved for one full wrench per joint; closed loops and driven
models take their joint wrenches from the multipliers at each row's state, and their driver
efforts from the joint-coordinate equations (`rbcosim.minimal.drivers`: the generalized force
of the prescribed coordinate). Redundant constraint rows
(e.g. a planar loop's out-of-plane rows) carry λ = 0: those reaction components are
indeterminate and reported as the solver's choice.
"""

from __future__ import annotations

import numpy as np

from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Model
from rbcosim.results import Results, body_columns
from rbcosim.spatial import quaternion as quat
from rbcosim.spatial.linalg3 import cross, skew
from rbcosim.state import State

WRENCH_FIELDS = ("fx", "fy", "fz", "mx", "my", "mz")
JOINT_FRAME_FIELDS = ("jfx", "jfy", "jfz", "jmx", "jmy", "jmz")
DRIVER_FIELDS = ("force", "power")


def _wrenched(model: Model) -> list[int]:
    return [k for k, j in enumerate(model.joints) if j.kind != "driver"]


def _drivers(model: Model) -> list[int]:
    return [k for k, j in enumerate(model.joints) if j.kind == "driver"]


def reaction_columns(model: Model) -> list[str]:
    """Column names of `reactions`: per joint 12 wrench columns, per driver 2."""
    cols = []
    for k in _wrenched(model):
        name = model.joints[k].name
        cols += [f"{name}.{f}" for f in WRENCH_FIELDS + JOINT_FRAME_FIELDS]
    for k in _drivers(model):
        cols += [f"{model.joints[k].name}.{f}" for f in DRIVER_FIELDS]
    return cols


def joint_point(model: Model, kin: Kinematics, k: int) -> np.ndarray:
    """Inertial position (3,) m of joint k's marker2 origin."""
    m2 = model.joints[k].marker2
    return kin.r[m2.body] + kin.R[m2.body] @ m2.position


def body_wrench(kin: Kinematics, body: int, q: np.ndarray, point: np.ndarray) -> np.ndarray:
    """[F, M] (6,) inertial at `point` of the generalized force q = [F, τ^b] on `body`."""
    moment = kin.R[body] @ q[3:] - np.cross(point - kin.r[body], q[:3])
    return np.concatenate([q[:3], moment])


class MaximalReactions:
    """Reactions of a model from the maximal route's multipliers."""

    def __init__(self, model: Model, system: MaximalSystem | None = None):
        self.model = model
        self.system = system or MaximalSystem(model)
        labels = self.system.constraints.row_labels
        names = sorted({j.name for j in model.joints}, key=len, reverse=True)
        owner = [next(n for n in names if lab.startswith(n + ": ")) for lab in labels]
        index = {j.name: k for k, j in enumerate(model.joints)}
        self.rows_of = {k: [] for k in range(len(model.joints))}
        for r, name in enumerate(owner):
            self.rows_of[index[name]].append(r)

    def wrenches(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """(per joint the wrench [F, M] on body2 at its point, inertial (k, 6); per joint the
        constraint power Σ λ Φ_t W (k,)), k = all joints in model order."""
        sys, model = self.system, self.model
        _, _, kept = sys.accelerations(state)
        lam = np.zeros(sys.constraints.n_rows)
        lam[sys.rows] = kept
        kin = Kinematics.of(state)
        values = sys.constraints.evaluate(kin)
        out = np.zeros((len(model.joints), 6))
        power = np.zeros(len(model.joints))
        for k, joint in enumerate(model.joints):
            rows = self.rows_of[k]
            b1, b2 = joint.marker1.body, joint.marker2.body
            side, body, sign = (values.jb, b2, 1.0) if b2 else (values.ja, b1, -1.0)
            q = -side[rows].T @ lam[rows]
            out[k] = sign * body_wrench(kin, body, q, joint_point(model, kin, k))
            power[k] = float(lam[rows] @ values.phi_t[rows])
        return out, power


def tree_wrenches(model: Model, state: State, acc: tuple[np.ndarray, np.ndarray],
                  applied: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Inverse dynamics: the joint wrenches (k, 6) on body2 at the joint points, inertial,
    that with the applied forces give the body accelerations acc = (v̇ inertial, ω̇^b);
    Newton–Euler per body, least squares over all joints (exact for a tree)."""
    kin = Kinematics.of(state)
    n, joints = model.n_bodies, model.joints
    inertia = np.array([b.inertia for b in model.bodies], dtype=float).reshape(n, 3, 3)
    mass = np.array([b.mass for b in model.bodies], dtype=float)
    rhs = np.zeros((n, 6))
    w = state.w
    rhs[:, :3] = mass[:, None] * acc[0] - applied[0]
    tau_b = np.einsum("nij,nj->ni", inertia, acc[1]) + cross(w, np.einsum("nij,nj->ni", inertia, w))
    rhs[:, 3:] = np.einsum("nij,nj->ni", kin.R[1:], tau_b) - applied[1]
    A = np.zeros((6 * n, 6 * len(joints)))
    for k, joint in enumerate(joints):
        p = joint_point(model, kin, k)
        for body, sign in ((joint.marker2.body, 1.0), (joint.marker1.body, -1.0)):
            if body:
                block = np.eye(6)
                block[3:, :3] = skew(p - kin.r[body])
                A[6 * body - 6 : 6 * body, 6 * k : 6 * k + 6] += sign * block
    sol = np.linalg.lstsq(A, rhs.ravel(), rcond=None)[0]
    return sol.reshape(len(joints), 6)


def _row_columns(model: Model, kin: Kinematics, wrench: np.ndarray,
                 power: np.ndarray) -> list[float]:
    """One row of reaction_columns from all joints' wrenches (k, 6) and constraint powers."""
    row = []
    for k in _wrenched(model):
        m1 = model.joints[k].marker1
        axes = kin.R[m1.body] @ m1.axes
        row += [*wrench[k], *(axes.T @ wrench[k, :3]), *(axes.T @ wrench[k, 3:])]
    for k in _drivers(model):
        target = model.joints[model.joints[k].driven_joint]
        z1 = kin.R[target.marker1.body] @ target.marker1.axes[:, 2]
        force = float(z1 @ (wrench[k, 3:] if target.kind == "revolute" else wrench[k, :3]))
        row += [force, power[k]]
    return row


def _minimal_driver_columns(model: Model, row: list[float], system, t: float,
                            y: np.ndarray) -> list[float]:
    """`row` with its driver columns replaced by the minimal route's driver efforts at y."""
    force, power = system.driver_efforts(t, y)
    first = len(row) - 2 * len(_drivers(model))
    return row[:first] + [x for pair in zip(force.tolist(), power.tolist()) for x in pair]


def state_of_row(model: Model, results: Results, i: int) -> State:
    """The State of results row i (body columns)."""
    columns = [results.columns.index(c) for c in body_columns(model)]
    return state_of_body_row(results.t[i], results.data[i, columns])


def state_of_body_row(t: float, row: np.ndarray) -> State:
    """The State at time t (s) of a body row [x y z q0..q3 vx vy vz wx wy wz] per body (the
    results file's body columns, RigidSide.body_row), its quaternions normalized."""
    bodies = np.asarray(row, dtype=float).reshape(-1, 13)
    return State(t, bodies[:, :3], quat.normalize(bodies[:, 3:7]), bodies[:, 7:10],
                 bodies[:, 10:])


def with_reactions(model: Model, results: Results, minimal_system=None) -> Results:
    """`results` with the reaction columns appended, one value per written row. Pass the
    minimal route's system to use its inverse dynamics (trees) instead of multipliers, and
    its driver efforts (models with drivers)."""
    tree = minimal_system is not None and not minimal_system.has_loops
    maximal = None if tree else MaximalReactions(model)
    first = results.columns.index("constraint_drift") + 1
    extra = []
    for i in range(results.data.shape[0]):
        state = state_of_row(model, results, i)
        kin = Kinematics.of(state)
        if minimal_system is not None:
            y = results.data[i, first : first + minimal_system.nq + minimal_system.nv]
        if tree:
            acc = minimal_system.body_accelerations(state.t, y)
            applied = minimal_system.maximal.applied(state.t, kin)
            wrench = tree_wrenches(model, state, acc, applied)
            extra.append(_row_columns(model, kin, wrench, np.zeros(len(model.joints))))
        else:
            wrench, power = maximal.wrenches(state)
            row = _row_columns(model, kin, wrench, power)
            if minimal_system is not None and _drivers(model):
                row = _minimal_driver_columns(model, row, minimal_system, state.t, y)
            extra.append(row)
    data = np.hstack([results.data, np.array(extra).reshape(len(extra), -1)])
    return Results([*results.columns, *reaction_columns(model)], data,
                   {**results.diagnostics, "reactions": True})
