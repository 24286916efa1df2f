"""--limit KEY=VALUE, in a module of its own: `rbcosim serve` adds it without importing the
solvers (rbcosim.cli.options, which imports them, re-exports it)."""

from __future__ import annotations

import argparse

from rbcosim.limits import RunLimits

LIMIT_HELP = ("raise a run limit, e.g. total_steps=1000000000 (repeatable); keys: "
              + ", ".join(RunLimits().as_dict()) + "; `rbcosim check` prints the estimate")


def add_limit_option(parser: argparse.ArgumentParser) -> None:
    """--limit KEY=VALUE (repeatable): raise one of rbcosim.limits.RunLimits."""
    parser.add_argument("--limit", dest="limits", metavar="KEY=VALUE", action="append",
                        default=[], help=LIMIT_HELP)
