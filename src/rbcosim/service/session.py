"""A session's bookkeeping as the service holds it: its attached clients, the requests waiting
at its step barrier, its snapshots and result history. Numbers live in the rigid side; this is
only who owns which interface point and joint, and what has been recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

EMPTY_KINEMATICS = np.empty((0, 13))
EMPTY_GAPS = np.empty((0, 4))
NO_WRENCH = np.empty((0, 6))


def joint_points(rigid: Any, joints: tuple[str, ...]) -> dict[str, str]:
    """Joint -> the interface point it couples, where the rigid side tells (``couplings``)."""
    couplings = getattr(rigid, "couplings", None)
    if isinstance(couplings, dict):
        return {j: couplings[j].point for j in joints if hasattr(couplings.get(j), "point")}
    if set(joints) <= set(rigid.point_names):
        return {j: j for j in joints}
    return {}


def row_indices(names: tuple[str, ...], order: tuple[str, ...]):
    if names == order:
        return None
    return np.array([order.index(n) for n in names], dtype=np.intp)


def select_rows(table: np.ndarray, rows) -> np.ndarray:
    return table if rows is None else table[rows]


def scenario_output_every(rigid: Any) -> int:
    """The scenario's solver.output_every where the rigid side has one, else 1."""
    every = getattr(getattr(getattr(rigid, "scenario", None), "solver", None), "output_every", 1)
    return every if isinstance(every, int) and every >= 1 else 1


class History:
    """A session's recorded steps from step index `first` on: time (n,) s, the points'
    kinematics (n, n_points, 13) and the joints' gaps (n, n_joints, 4) at each step's end
    (NaN where none were evaluated; the gaps of t_k, once evaluated, replace row k's). Rows
    live in preallocated arrays grown by doubling, which the C step path writes too
    (`rbcosim.service.served_path`)."""

    def __init__(self, n_points: int, n_joints: int, capacity: int | None = None) -> None:
        if capacity is None:  # 1024 rows, or fewer of a wide model's (about 1 MB at first)
            capacity = max(16, min(1024, (1 << 20) // (8 * (13 * n_points + 4 * n_joints + 1))))
        self.first = 0
        self.n = 0
        self.time = np.empty(capacity)
        self.kin = np.empty((capacity, n_points, 13))
        self.gaps = np.empty((capacity, n_joints, 4))

    @property
    def capacity(self) -> int:
        return len(self.time)

    def reset(self, first: int, time: float, kin: np.ndarray) -> None:
        """One row: step index `first` at `time` s with kinematics `kin`, no gaps."""
        self.first, self.n = first, 0
        self.append(time, kin, None)

    def append(self, time: float, kin: np.ndarray, gaps: np.ndarray | None) -> None:
        """A row at the end (gaps None: NaN)."""
        if self.n == self.capacity:
            self._grow()
        self.time[self.n] = time
        self.kin[self.n] = kin
        self.gaps[self.n] = np.nan if gaps is None else gaps
        self.n += 1

    def set_last_gaps(self, gaps: np.ndarray | None) -> None:
        self.gaps[self.n - 1] = np.nan if gaps is None else gaps

    def truncate(self, n: int) -> None:
        """Keep the first n rows."""
        self.n = min(self.n, n)

    def holds(self, step: int) -> bool:
        return self.first <= step < self.first + self.n

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of (time, kinematics, gaps) of the rows written."""
        n = self.n
        return self.time[:n].copy(), self.kin[:n].copy(), self.gaps[:n].copy()

    def last_gaps(self) -> np.ndarray:
        """The most recently evaluated gap rows (NaN before any)."""
        for k in range(self.n - 1, -1, -1):
            if not np.isnan(self.gaps[k]).all():
                return self.gaps[k].copy()
        return np.full(self.gaps.shape[1:], np.nan)

    def _grow(self) -> None:
        grown = 2 * self.capacity
        for name in ("time", "kin", "gaps"):
            old = getattr(self, name)
            new = np.empty((grown, *old.shape[1:]))
            new[: self.n] = old[: self.n]
            setattr(self, name, new)


@dataclass
class AttachedClient:
    id: str
    name: str
    points: tuple[str, ...]
    joints: tuple[str, ...]
    last_seen: float
    point_rows: Any = None
    """Row indices of this client's points in the session's point order (None: all, in order)."""
    joint_rows: Any = None
    motions: bool = False
    """The client asked for motions (outputs + accelerations, (n, 19)) in its replies."""


@dataclass(slots=True)
class PendingRequest:
    client: str
    peer: Any
    msg: dict
    wrench: np.ndarray
    """(n_points, 6) held wrenches, or (n_points, m, 6) polynomial coefficients."""
    flex: np.ndarray | None
    """(n_joints, 13) node kinematics, or None when the reports of this index are already in."""
    flex_at_end: bool
    jacobian: np.ndarray | None = None
    energy: np.ndarray | None = None
    """(n_joints,) energy J each joint's flexible side has delivered so far, or None."""
    kind: str = "step"
    """"step" (take the macro step) or "report" (reports only, no step)."""


@dataclass
class Snapshot:
    step: int
    time: float
    blob: bytes


@dataclass
class Session:
    id: str
    rigid: Any
    macro_step: float
    barrier_timeout: float
    points: tuple[str, ...]
    joints: tuple[str, ...]
    step: int = 0
    clients: dict[str, AttachedClient] = field(default_factory=dict)
    point_owner: dict[str, str] = field(default_factory=dict)
    joint_owner: dict[str, str] = field(default_factory=dict)
    orphans: dict[str, str] = field(default_factory=dict)
    pending: dict[str, PendingRequest] = field(default_factory=dict)
    barrier_opened: float | None = None
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    failed: str | None = None
    history: History = field(default_factory=lambda: History(0, 0, 1))
    outputs_array: Any = None
    """The rigid side's ``point_outputs_array()`` ((n, 13) in point order), if it has one."""
    nan_gaps: np.ndarray = field(default_factory=lambda: EMPTY_GAPS)
    motions_array: Any = None
    """The rigid side's ``motions_array()`` ((n, 19): outputs + accelerations), if it has one."""
    motions: np.ndarray | None = None
    """Motions as of the last step, report or restore (None: not evaluated since)."""
    reported_step: int | None = None
    """Step index whose flexible-side reports (at the start of the step) are applied."""
    reported_gaps: np.ndarray | None = None
    output_every: int = 1
    snapshot_every: int = 0
    wait_for_joints: bool = False
    """Barriers also wait until every joint has a client (a run that starts its clients apart)."""
    coupling: dict | None = None
    """The rigid side's coupling_info(), sent to every attaching client (protocol 1.2)."""
    row_steps: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    """Result rows (the rigid side's ``results_row()``) and the step index of each."""

    @property
    def records_rows(self) -> bool:
        return hasattr(self.rigid, "results_row")

    def barrier_full(self) -> bool:
        """Every attached client has sent its request (and, if asked, every joint has one)."""
        if not self.pending or len(self.pending) < len(self.clients):
            return False
        if not self.wait_for_joints:
            return True
        if self.orphans:
            return False
        owner = self.joint_owner
        for j in self.joints:  # (a loop: no generator to make at every step)
            if j not in owner:
                return False
        return True

    def wants_motions(self) -> bool:
        if self.motions_array is None:
            return False
        for c in self.clients.values():
            if c.motions:
                return True
        return False

    def current_motions(self) -> np.ndarray:
        """(n_points, 19) as of the last step, report or restore."""
        if self.motions is None:
            self.motions = np.asarray(self.motions_array(), dtype=np.float64)
        return self.motions

    def record_row(self, step: int) -> None:
        """The rigid side's result row at step index ``step`` (replacing one already there)."""
        while self.row_steps and self.row_steps[-1] >= step:
            self.row_steps.pop()
            self.rows.pop()
        self.row_steps.append(step)
        self.rows.append(np.asarray(self.rigid.results_row(), dtype=np.float64))

    def where(self) -> str:
        return f"step {self.step} (t = {self.rigid.time:.9g} s)"

    def all_kinematics(self, outs=None) -> np.ndarray:
        """(n_points, 13) in point order, from the rigid side's array or dict of outputs."""
        if outs is None:
            outs = (
                self.outputs_array()
                if self.outputs_array is not None
                else self.rigid.point_outputs()
            )
        if isinstance(outs, np.ndarray):
            return np.array(outs, dtype=np.float64).reshape(len(self.points), 13)
        return np.array([outs[p] for p in self.points]) if self.points else EMPTY_KINEMATICS

    def reset_history(self) -> None:
        """The history from the current step on (its one row: now, no gaps)."""
        if self.history.kin.shape[1:] != (len(self.points), 13) or \
                self.history.gaps.shape[1] != len(self.joints):
            self.history = History(len(self.points), len(self.joints))
        self.history.reset(self.step, self.rigid.time, self.all_kinematics())
