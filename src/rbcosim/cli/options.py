"""Command-line options shared by several subcommands."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from rbcosim.cli.limit_option import LIMIT_HELP, add_limit_option  # noqa: F401 - re-exported
from rbcosim.errors import ScenarioError
from rbcosim.limits import RunLimits, RunSize, enforce

if TYPE_CHECKING:  # the solver modules load when a command runs, not when it parses
    from rbcosim.scenario.loader import Scenario


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    """SCENARIO, --set KEY=VALUE and the solver overrides."""
    from rbcosim.maximal.integrators import INTEGRATOR_NAMES
    from rbcosim.settings import FORMULATIONS

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




def enforce_limits(args: argparse.Namespace, scenario: Scenario) -> RunSize:
    """The scenario's estimated size, or LimitError when it exceeds a (raised) limit."""
    return enforce(scenario, RunLimits.from_items(args.limits))


def load_with_options(args: argparse.Namespace) -> Scenario:
    """Load the scenario with --set overrides, then apply --t-end/--dt/--integrator."""
    from rbcosim.scenario.loader import load_scenario

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


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """--output-variables and --output-interval: which columns and rows the results keep."""
    parser.add_argument("--output-variables", metavar="PATTERN,...", type=_patterns,
                        help="keep only these columns (names or shell-style patterns, comma-"
                             "separated, e.g. 'rod1.x,*.gap_pos'); t is always kept")
    parser.add_argument("--output-interval", type=float, metavar="S",
                        help="seconds between written rows: a whole multiple of the step dt "
                             "(co-simulations: of cosim.macro_step); sets solver.output_every")


def _patterns(text: str) -> list[str]:
    patterns = [p.strip() for p in text.split(",") if p.strip()]
    if not patterns:
        raise argparse.ArgumentTypeError("expected column names or patterns, e.g. 'rod1.*'")
    return patterns


def is_cosimulation(scenario: Scenario) -> bool:
    return bool(scenario.couplings or scenario.flex_bodies)


def output_every(scenario: Scenario, interval: float) -> int:
    """solver.output_every for --output-interval `interval` s: the whole number of steps (dt,
    or cosim.macro_step in a co-simulation) it spans, to 1e-9 relative; ScenarioError else."""
    step, name = ((scenario.cosim.macro_step, "cosim.macro_step") if is_cosimulation(scenario)
                  else (scenario.solver.dt, "solver.dt"))
    if not interval > 0:
        raise ScenarioError(f"--output-interval: expected a positive number of seconds, got "
                            f"{interval}")
    n = round(interval / step)
    if n < 1 or not math.isclose(n * step, interval, rel_tol=1e-9, abs_tol=0.0):
        below, above = max(1, math.floor(interval / step)), math.ceil(interval / step)
        raise ScenarioError(f"--output-interval {interval:g}: not a whole multiple of "
                            f"{name} = {step:g} s (nearest: {below * step:g} or "
                            f"{max(above, 1) * step:g} s)")
    return n


def with_output_interval(args: argparse.Namespace, scenario: Scenario) -> Scenario:
    """`scenario` with solver.output_every from --output-interval (unchanged without it)."""
    if args.output_interval is None:
        return scenario
    every = output_every(scenario, args.output_interval)
    return replace(scenario, solver=replace(scenario.solver, output_every=every))


def unused_overrides(scenario: Scenario, keys: list[str]) -> list[str]:
    """Sentences for the --set keys that the scenario accepts but this run does not use."""
    from rbcosim.maximal.integrators import ADAPTIVE

    cosim = is_cosimulation(scenario)
    adaptive = scenario.solver.integrator in ADAPTIVE
    reasons = []
    for key in keys:
        why = None
        if key.startswith("cosim.") and not cosim:
            why = "the scenario has no co-simulation ([couplings])"
        elif key in ("solver.rtol", "solver.atol") and not adaptive:
            why = (f"only the adaptive integrators use it (this run: "
                   f"{scenario.solver.integrator})")
        elif key == "solver.dt" and cosim:
            why = "a co-simulation steps by cosim.macro_step / cosim.micro_steps"
        elif key == "solver.formulation" and cosim and scenario.solver.formulation == "auto":
            why = "a co-simulation's rigid side runs \"auto\" in the maximal formulation"
        if why:
            reasons.append(f"warning: --set {key}: no effect on this run: {why}")
    return reasons


def warn_unused_overrides(scenario: Scenario, overrides: list[str]) -> None:
    """One stderr line per --set KEY=VALUE that has no effect on this run."""
    keys = [item.split("=", 1)[0].strip() for item in overrides]
    for line in unused_overrides(scenario, keys):
        print(line, file=sys.stderr)
