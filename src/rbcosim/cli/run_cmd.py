"""`rbcosim run SCENARIO`: simulate in process, print a summary, write the results file."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from rbcosim.cli.animate_cmd import add_animate_option
from rbcosim.cli.options import (
    add_output_options,
    add_scenario_options,
    enforce_limits,
    load_with_options,
    warn_unused_overrides,
    with_output_interval,
)
from rbcosim.errors import RunFailedError, ScenarioError
from rbcosim.results import format_summary
from rbcosim.runner import run_scenario


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="simulate a scenario in process and write results",
                       description="Simulate a scenario in process (rigid bodies, and flexible "
                                   "bodies co-simulated in the same process) and write a "
                                   "results table (CSV; .npz or HDF5 .h5 by suffix) with a JSON summary "
                                   "(out.csv -> out.summary.json). "
                                   "A run that would exceed a limit (bodies, steps, memory, ...) "
                                   "is refused before it starts: --limit raises one. A run that "
                                   "fails (non-finite state, Newton failure, continuity stop) "
                                   "stops with exit 1 after writing the rows computed before "
                                   "and a summary with status failed (diverged: a non-finite "
                                   "or absurd state, docs/divergence.md).")
    add_scenario_options(p)
    p.add_argument("--out", "-o", metavar="FILE",
                   help="results file: .csv, .npz or .h5 (default: results/<name>.csv)")
    add_output_options(p)
    p.add_argument("--reactions", action="store_true",
                   help="add joint reaction and driver force/power columns "
                        "(as [solver] reactions = true)")
    p.add_argument("--joint-coordinates", action="store_true",
                   help="add joint coordinate and rate columns (as [solver] "
                        "joint_coordinates = true)")
    p.add_argument("--accelerations", action="store_true",
                   help="add body acceleration columns (as [solver] accelerations = true)")
    p.add_argument("--plot", metavar="FILE.png", nargs="?", const="",
                   help="also write the figure of `rbcosim plot RESULT` (default file: the "
                        "results file with .png)")
    add_animate_option(p)
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar and no summary: only warnings, errors and the files "
                        "written")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="save the whole state (co-simulation: both sides) and the rows so far to "
                        "FILE every --checkpoint-every (macro) steps and at the end")
    p.add_argument("--checkpoint-every", type=int, default=1000, metavar="N",
                   help="(macro) steps between checkpoints (default 1000)")
    p.add_argument("--resume", metavar="FILE",
                   help="continue from a checkpoint of the same scenario and settings")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    scenario = with_output_interval(args, load_with_options(args))
    warn_unused_overrides(scenario, args.overrides)
    switches = {key: True for key in ("reactions", "joint_coordinates", "accelerations")
                if getattr(args, key)}
    if switches:
        scenario = replace(scenario, solver=replace(scenario.solver, **switches))
    out = Path(args.out or Path("results") / (Path(args.scenario).stem + ".csv"))
    if args.checkpoint_every < 1:
        raise ScenarioError(f"--checkpoint-every: expected a positive integer, got "
                            f"{args.checkpoint_every}")
    enforce_limits(args, scenario)
    try:
        results = run_scenario(scenario, progress=not args.quiet, checkpoint=args.checkpoint,
                               checkpoint_every=args.checkpoint_every, resume=args.resume)
    except RunFailedError as exc:
        report_failure(exc, args.output_variables, out, quiet=args.quiet)
        raise
    results = results.select(args.output_variables)
    written = results.write(out)
    if args.plot is not None:
        from rbcosim.plotting import plot_results

        plot = Path(args.plot) if args.plot else out.with_suffix(".png")
        written.append(plot_results(results, plot, title=Path(args.scenario).stem))
    if args.animate:
        from rbcosim.animate import write_animation

        written += write_animation(results, args.animate, out.stem, scenario)
    if not args.quiet:
        print(format_summary(results.summary()))
    warning = results.diagnostics.get("accuracy", {}).get("warning")
    if warning:
        print(f"WARNING: {warning}")
    print("results: " + ", ".join(str(p) for p in written))
    return 0


def report_failure(exc: RunFailedError, patterns: list[str] | None, out: Path, *,
                   quiet: bool = False) -> None:
    """Write the rows computed before the failure and say where (stdout: the summary, unless
    `quiet`)."""
    partial = exc.partial.select(patterns)
    written = partial.write(out)
    if not quiet:
        print(format_summary(partial.summary()))
    last = partial.summary()["t_last_row"]
    print(f"partial results (rows up to t = {last:.6g} s): "
          + ", ".join(str(p) for p in written))
