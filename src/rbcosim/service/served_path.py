"""A session worker's step path in C: ordinary `step` requests of a one-client session served by
the C core (librbcosim/cosim/served_loop.h) with the same checks, numbers and reply bytes as
`rbcosim.service.stepping`, without Python per step; everything else comes back to Python.

`ServedPath.run` hands the worker's wait to the C loop while its session qualifies (one client
holding every point and joint, nothing at the barrier, a maximal-formulation RK4 rigid side,
no reply queued in the outbox). Around it, the session's and rigid side's bookkeeping is
loaded into the C path's arrays and stored back (`enter`, `leave`); the history arrays, the
rigid state, its inputs and the macro step's scratch are shared, not copied.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rbcosim import _core
from rbcosim.service import requests
from rbcosim.service.session import Session
from rbcosim.service.wire import MessageEncoder

IDLE, OTHER, HANDOVER, UNSENT = range(4)  # why rbc_sl_run returned (served_loop.h)
STEP, REPORTED, HIST_N, REPLY_ID, DONE, MICRO_DONE = range(6)  # rbc_sl_session.ints
TIME, LAST_SEEN, LAST_END = range(3)  # rbc_sl_session.floats


class _Arrays:
    """The C path's own arrays for one session and client (sized once)."""

    def __init__(self, s: Session, client: Any, loop: tuple) -> None:
        _, y, _, _, _, _, micro, project = loop
        np_, nj = len(s.points), len(s.joints)
        self.key = (s.id, client.id, client.motions, id(s.rigid))
        self.flex = np.zeros((nj, 13))
        self.energy_rigid, self.energy_flex = np.zeros(nj), np.zeros(nj)
        self.last_gaps, self.gap_max, self.gaps = (np.zeros((nj, 4)) for _ in range(3))
        self.motions = np.zeros((np_, 19))
        self.scratch = np.zeros(14 * nj + 48 * np_ + y.size + 2 + 4 * nj + 13 * np_)
        self.out = np.zeros((4096 + 8 * (32 * np_ + 4 * nj)) // 8)
        self.ints = np.zeros(6, dtype=np.int64)
        self.floats = np.zeros(3)
        self.sizes = np.array([micro, s.output_every, s.snapshot_every, client.motions, project],
                              dtype=np.int64)
        self.mine = (self.flex, self.energy_flex, self.energy_rigid, self.last_gaps,
                     self.gap_max, self.gaps, self.motions)
        self.tail = (self.scratch, self.out, self.ints, self.floats, self.sizes,
                     float(s.macro_step),
                     MessageEncoder().step_reply_pieces(s.id, np_, nj, client.motions),
                     s.id.encode(), client.id.encode())

    def session(self, s: Session, loop: tuple) -> tuple:
        """The rbc_sl_session tuple with the rigid side's and the history's current arrays
        (a restore replaces the rigid state's, a full history grows)."""
        handle, y, stats, scratch, joint_point, tol, _, _ = loop
        h = s.history
        return (handle, y, stats, *scratch, joint_point, tol, *self.mine, h.time, h.kin, h.gaps,
                *self.tail)


class ServedPath:
    """The C step path of a worker's one session (see the module's docstring)."""

    def __init__(self) -> None:
        self._arrays: _Arrays | None = None
        self._session: Session | None = None
        self.steps = 0
        """Steps the C path has taken (all calls)."""

    def enter(self, service: Any, outbox: Any = None, last: float = 0.0) -> tuple | None:
        """The rbc_sl_session tuple of the service's session with its bookkeeping loaded, or
        None when the session does not qualify (the Python path serves it); `leave` after.
        last: when the worker's last request ended (monotonic s; its idle time counts from
        there)."""
        if len(service.sessions) != 1 or service._waiting or \
                (outbox is not None and outbox.pending):
            return None
        (s,) = service.sessions.values()
        if s.pending or s.orphans or s.failed is not None or len(s.clients) != 1:
            return None
        (c,) = s.clients.values()
        rigid = s.rigid
        if c.points != s.points or c.joints != s.joints or not hasattr(rigid, "loop_arrays") \
                or s.points != rigid.point_names or s.joints != rigid.joint_names:
            return None
        loop = rigid.loop_arrays()
        if loop is None:
            return None
        a = self._arrays
        if a is None or a.key != (s.id, c.id, c.motions, id(rigid)):
            a = self._arrays = _Arrays(s, c, loop)
        rigid.loop_load(a.flex, a.energy_rigid, a.energy_flex, a.last_gaps, a.gap_max)
        a.ints[:] = (s.step, -1 if s.reported_step is None else s.reported_step, s.history.n,
                     requests.next_reply_number(), 0, 0)
        a.floats[:] = (rigid.time, c.last_seen, last)
        self._session = s
        return a.session(s, loop)

    def leave(self) -> None:
        """Store what the C path did since `enter` into the session and its rigid side (and
        the numbering of replies, which it continued)."""
        a, s = self._arrays, self._session
        self._session = None
        ints, floats = a.ints, a.floats
        requests.number_replies_from(int(ints[REPLY_ID]))
        if not ints[DONE]:
            return
        self.steps += int(ints[DONE])
        (c,) = s.clients.values()
        s.rigid.loop_store(a.flex, a.energy_rigid, a.energy_flex, a.last_gaps, a.gap_max,
                           float(floats[TIME]), int(ints[MICRO_DONE]))
        s.step = int(ints[STEP])
        s.history.n = int(ints[HIST_N])
        if s.joints:
            s.reported_step = int(ints[REPORTED])
            s.reported_gaps = a.gaps.copy()
        s.motions = a.motions.copy() if c.motions else None
        c.last_seen = float(floats[LAST_SEEN])

    def run(self, service: Any, sockets: tuple, settings: tuple, status: Any, outbox: Any,
            last: float):
        """Serve on the C path until something else comes: sockets (direct ROUTER, server's
        DEALER); settings (idle s (< 0: none), request_timeout s (0: none), the largest
        request's bytes); status: the status file's doubles; last: when the worker's last
        request ended (monotonic s). Returns (code, extra, end): IDLE, OTHER, HANDOVER with
        the request's frames, or UNSENT (its reply handed to the outbox); end: when the last
        request C handled ended, or None. None when the session does not qualify."""
        session = self.enter(service, outbox, last)
        if session is None:
            return None
        direct, server = sockets
        idle, timer, max_message = settings
        try:
            code, extra = _core.served_loop(direct.underlying, server.underlying, idle, timer,
                                            max_message, status, session)
        finally:
            done = bool(self._arrays.ints[DONE])
            last = float(self._arrays.floats[LAST_END]) if done else None
            self.leave()
        if code == UNSENT:
            outbox.send(extra)
        return code, extra, last
