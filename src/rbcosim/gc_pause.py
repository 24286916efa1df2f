"""The cyclic garbage collector paused while a process starts (imports, model build).

Importing numpy, scipy and the solvers makes some 10^5 objects that live as long as the
process, and the collector scans them again and again as they come: ~8% of a start-up's CPU
time (`rbcosim flex` of the main job: 207 -> 191 ms). Paused, it runs again afterwards (or
when the start-up fails) and collects any cyclic garbage made meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside; the collector's state before, after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
