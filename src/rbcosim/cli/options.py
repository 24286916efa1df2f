"""Command-line options shared by several subcommands."""

from __future__ import annotations

import argparse
from dataclasses import replace

from rbcosim.errors import ScenarioError
from rbcosim.integrators import INTEGRATOR_NAMES
from rbcosim.limits import RunLimits, RunSize, enforce
from rbcosim.scenario import Scenario, load_scenario
from rbcosim.settings import FORMULATIONS


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    """SCENARIO, --set KEY=VALUE and the solver overrides."""
    parser.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    parser.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append",
                        default=[], help="override a scenario key by dotted path, e.g. "
                                         "bodies.link1.mass=2 (repeatable)")
    parser.add_argument("--t-end", type=float, metavar="T", help="end time, s")
    parser.add_argument("--dt", type=float, metavar="H", help="integration step, s")
    parser.add_argument("--integrator", choices=INTEGRATOR_NAMES, help="integrator")
    parser.add_argument("--formulation", choices=FORMULATIONS,
                        help="maximal coordinates with multipliers, minimal joint coordinates, "
                             "or auto (minimal for trees)")
    add_limit_option(parser)


LIMIT_HELP = ("raise a run limit, e.g. total_steps=1000000000 (repeatable); keys: "
              + ", ".join(RunLimits().as_dict()) + "; `rbcosim check` prints the estimate")


def add_limit_option(parser: argparse.ArgumentParser) -> None:
    """--limit KEY=VALUE (repeatable): raise one of rbcosim.limits.RunLimits."""
    parser.add_argument("--limit", dest="limits", metavar="KEY=VALUE", action="append",
                        default=[], help=LIMIT_HELP)


def enforce_limits(args: argparse.Namespace, scenario: Scenario) -> RunSize:
    """The scenario's estimated size, or LimitError when it exceeds a (raised) limit."""
    return enforce(scenario, RunLimits.from_items(args.limits))


def load_with_options(args: argparse.Namespace) -> Scenario:
    """Load the scenario with --set overrides, then apply --t-end/--dt/--integrator."""
    scenario = load_scenario(args.scenario, args.overrides)
    solver = scenario.solver
    changes = {}
    for option, key in (("t_end", "t_end"), ("dt", "dt"), ("integrator", "integrator"),
                        ("formulation", "formulation")):
        value = getattr(args, option, None)
        if value is not None:
            if key in ("t_end", "dt") and not value > 0:
                raise ScenarioError(f"--{option.replace('_', '-')}: expected a positive number, "
                                    f"got {value}")
            changes[key] = value
    return replace(scenario, solver=replace(solver, **changes)) if changes else scenario
