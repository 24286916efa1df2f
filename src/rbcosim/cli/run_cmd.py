"""`rbcosim run SCENARIO`: simulate in process, print a summary, write the results file."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from rbcosim.cli.options import add_scenario_options, enforce_limits, load_with_options
from rbcosim.errors import NonFiniteError, ScenarioError
from rbcosim.runner import run_scenario


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="simulate a scenario in process and write results",
                       description="Simulate a scenario in process (rigid bodies, and flexible "
                                   "bodies co-simulated in the same process) and write a "
                                   "results table (CSV, or .npz by suffix) with a JSON summary. "
                                   "A run that would exceed a limit (bodies, steps, memory, ...) "
                                   "is refused before it starts: --limit raises one. A run that "
                                   "turns non-finite stops with exit 1 after writing the rows "
                                   "computed before.")
    add_scenario_options(p)
    p.add_argument("--out", "-o", metavar="FILE", help="results file (default: results/<name>.csv)")
    p.add_argument("--reactions", action="store_true",
                   help="add joint reaction and driver force/power columns "
                        "(as [solver] reactions = true)")
    p.add_argument("--plot", metavar="FILE.png", nargs="?", const="",
                   help="also write the figure of `rbcosim plot RESULT` (default file: the "
                        "results file with .png)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="save the whole state (co-simulation: both sides) and the rows so far to "
                        "FILE every --checkpoint-every (macro) steps and at the end")
    p.add_argument("--checkpoint-every", type=int, default=1000, metavar="N",
                   help="(macro) steps between checkpoints (default 1000)")
    p.add_argument("--resume", metavar="FILE",
                   help="continue from a checkpoint of the same scenario and settings")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    scenario = load_with_options(args)
    if args.reactions:
        scenario = replace(scenario, solver=replace(scenario.solver, reactions=True))
    out = Path(args.out or Path("results") / (Path(args.scenario).stem + ".csv"))
    if args.checkpoint_every < 1:
        raise ScenarioError(f"--checkpoint-every: expected a positive integer, got "
                            f"{args.checkpoint_every}")
    enforce_limits(args, scenario)
    try:
        results = run_scenario(scenario, progress=not args.quiet, checkpoint=args.checkpoint,
                               checkpoint_every=args.checkpoint_every, resume=args.resume)
    except NonFiniteError as exc:
        if exc.partial is not None:
            written = exc.partial.write(out)
            print("rows before the failure: " + ", ".join(str(p) for p in written))
        raise
    written = results.write(out)
    if args.plot is not None:
        from rbcosim.plotting import plot_results

        plot = Path(args.plot) if args.plot else out.with_suffix(".png")
        written.append(plot_results(results, plot, title=Path(args.scenario).stem))
    print(format_summary(results.diagnostics))
    warning = results.diagnostics.get("accuracy", {}).get("warning")
    if warning:
        print(f"WARNING: {warning}")
    print("results: " + ", ".join(str(p) for p in written))
    return 0


def format_summary(diag: dict, indent: str = "") -> str:
    """Human-readable lines of a run's diagnostics (nested tables indented)."""
    lines = []
    for key, value in diag.items():
        if key.startswith("_"):
            continue
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines.append(format_summary(value, indent + "  "))
        else:
            lines.append(f"{indent}{key}: {_fmt(value)}")
    return "\n".join(line for line in lines if line)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
