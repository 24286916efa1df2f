"""A progress bar (tqdm on stderr) that appears only once work has run for about a second."""

from __future__ import annotations

import sys
import time

from tqdm import tqdm


class Progress:
    """Context manager: `update(done)` with the count of finished units out of `total`."""

    def __init__(self, total: int, *, enabled: bool = True, label: str = "", delay: float = 1.0):
        self.total, self.enabled, self.label, self.delay = total, enabled, label, delay
        self._bar = None
        self._start = time.perf_counter()

    def __enter__(self) -> Progress:
        return self

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            if time.perf_counter() - self._start < self.delay:
                return
            self._bar = tqdm(total=self.total, desc=self.label, file=sys.stderr, leave=False,
                             mininterval=0.2, unit="step")
        self._bar.update(done - self._bar.n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
