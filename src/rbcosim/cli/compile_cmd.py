"""`rbcosim compile`: compile every kernel into the on-disk cache now."""

from __future__ import annotations

import argparse

import numba


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compile", help="compile the numerical kernels into the on-disk cache now",
        description="Run small built-in models through every compiled path (maximal and "
                    "minimal routes, RK4, SDIRK2, adaptive, drivers, forces, co-simulation "
                    "with floating and grounded beams) so that the one-off compilation of a "
                    "new install (tens of seconds) is paid now. The cache folder is printed; "
                    "NUMBA_CACHE_DIR moves it.")
    p.add_argument("--quiet", action="store_true", help="print only the total")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rbcosim.warmup import warm_up

    seconds = warm_up(report=(lambda _: None) if args.quiet else print)
    print(f"compiled kernels in {seconds:.1f} s; cache: {numba.config.CACHE_DIR}")
    return 0
