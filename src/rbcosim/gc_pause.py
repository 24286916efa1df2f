"""The cyclic garbage collector paused while a program loads what it keeps for its life.

Importing numpy, scipy and the solvers, reading the scenario and building the models make
some 10^5 objects that live as long as the process. The collector would scan them again and
again as they come, and then once more in full at its first collection after: `loading`
pauses it and, in a program's own process (`program_run`), then freezes what was loaded
(`gc.freeze`, as the Python documentation advises for a process that forks, here also for
one that steps: its collections then scan only what it makes later). The 4-step cosim of the
main job: 0.81 -> 0.76 s of CPU, medians of 11. In a caller's process (a test calling the
command line's `main` with arguments) nothing is frozen: its objects stay the collector's.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_program = False


def program_run() -> None:
    """Say that this process is a program's own (the command line's, the fork server's): what
    it loads from now on is frozen."""
    global _program
    _program = True


@contextmanager
def loading() -> Iterator[None]:
    """No cyclic garbage collection inside; after (or when loading fails), what exists is
    frozen in a program's own process, and the collector is in its state before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _program:
            gc.freeze()
        if enabled:
            gc.enable()
