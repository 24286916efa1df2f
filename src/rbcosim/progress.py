"""A progress bar (tqdm on stderr) that appears only once work has run for about a second, and
the wall-clock deadline runs check at each progress update (sweeps' --case-timeout)."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar

from rbcosim.errors import CaseTimeoutError

#: (monotonic deadline, allowance s) of the runs in this context, or None
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("rbcosim_deadline", default=None)


@contextmanager
def deadline(seconds: float | None):
    """Runs inside stop with CaseTimeoutError at their next progress update after `seconds`
    of wall time (None or 0: no limit). Every fixed-step route updates its progress at least
    every 1000 steps (co-simulations every 256 macro steps)."""
    token = _DEADLINE.set((time.monotonic() + seconds, seconds) if seconds else None)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class Progress:
    """Context manager: `update(done)` with the count of finished units out of `total`."""

    def __init__(self, total: int, *, enabled: bool = True, label: str = "", delay: float = 1.0):
        self.total, self.enabled, self.label, self.delay = total, enabled, label, delay
        self._bar = None
        self._start = time.perf_counter()

    def __enter__(self) -> Progress:
        return self

    def update(self, done: int) -> None:
        limit = _DEADLINE.get()
        if limit is not None and time.monotonic() > limit[0]:
            raise CaseTimeoutError(f"case timeout: still running after {limit[1]:g} s "
                                   f"({done} of {self.total} steps done)")
        if not self.enabled:
            return
        if self._bar is None:
            if time.perf_counter() - self._start < self.delay:
                return
            # imported here: a process that shows no bar (a short or quiet run, a session
            # worker, a flexible solver) starts without it (~20 ms of imports)
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.label, file=sys.stderr, leave=False,
                             mininterval=0.2, unit="step")
        self._bar.update(done - self._bar.n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
