"""Idle BLAS threads that sleep at once, in the processes of `rbcosim cosim`, `serve` and `flex`.

numpy and scipy each load an OpenBLAS that starts a pool of threads (one per CPU) and keeps
them spinning for 2**28 cycles (~0.1 s) whenever they are idle: at load and after each call
it splits among them. Every process that imports numpy and scipy so burns ~0.15 s of CPU on
spinning, which the processes of a co-simulation, starting together on a few CPUs (and stepping
on one), take from each other. OPENBLAS_THREAD_TIMEOUT=4 (its least: 2**4 cycles) makes idle
threads sleep at once. The number of threads, and so how a call splits its work and every
bit of its result, stays the same (OPENBLAS_NUM_THREADS=1 would change the sums of large
products); a value the user set is kept.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
SLEEP_AT_ONCE = "4"


def quiet_blas_threads(env: MutableMapping[str, str] = os.environ) -> MutableMapping[str, str]:
    """`env` (this process's environment by default: call it before numpy is imported) with
    idle OpenBLAS threads sleeping at once, unless it sets the variable already."""
    env.setdefault(VARIABLE, SLEEP_AT_ONCE)
    return env
