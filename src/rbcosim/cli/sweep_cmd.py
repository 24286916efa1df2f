"""`rbcosim sweep SCENARIO`: many cases of one scenario on Dask, one results table."""

from __future__ import annotations

import argparse
from pathlib import Path

from rbcosim.cli.options import add_limit_option
from rbcosim.errors import ScenarioError
from rbcosim.limits import RunLimits
from rbcosim.scenario.loader import split_overrides


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="run a grid or Monte Carlo sample of cases on Dask",
        description="Run many cases of one scenario on Dask (a local cluster with one worker per "
                    "core, or --scheduler ADDRESS). Each case is a set of --set overrides. "
                    "Writes OUT/sweep.csv (one row per case: parameters, summary figures, "
                    "probes, wall time, status, error) and OUT/cases/<case>.csv. A sweep run "
                    "again skips the cases already in OUT/sweep.csv.")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a grid axis (repeatable; the cases are the product of the axes)")
    p.add_argument("--sample", action="append", default=[], metavar="KEY=DIST",
                   help="a random parameter: uniform(a, b), normal(mean, std) or "
                        "loguniform(a, b) (repeatable; needs --samples)")
    p.add_argument("--samples", type=int, default=0, metavar="N", help="number of random cases")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override applied to every case (repeatable)")
    p.add_argument("--probe", action="append", default=[], metavar="COLUMN@T",
                   help="record a results column at time T in the table (repeatable)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="an existing Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--workers", type=int, metavar="N",
                   help="local cluster workers (default: one per core)")
    p.add_argument("--out", "-o", default="sweep", metavar="DIR", help="output folder")
    p.add_argument("--plot", metavar="FIGURE:PARAM",
                   help="also write OUT/FIGURE.png: a summary figure against a parameter key")
    p.add_argument("--case-timeout", type=float, default=0.0, metavar="S",
                   help="a case still running after S s of wall time fails with a "
                        "case-timeout error and the sweep goes on (default 0: no limit)")
    p.add_argument("--cosim", action="store_true",
                   help="run each case as `rbcosim cosim` does: a server and one flexible "
                        "process per flexible body on the Dask worker's host (the same bits "
                        "as in process)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_limit_option(p)
    p.set_defaults(handler=run)


def _probes(specs: list[str]) -> list[tuple[str, float]]:
    probes = []
    for spec in specs:
        column, _, t = spec.rpartition("@")
        try:
            probes.append((column, float(t)))
        except ValueError:
            raise ScenarioError(f"--probe {spec!r}: expected COLUMN@T, e.g. mass1.x@0.5") from None
        if not column:
            raise ScenarioError(f"--probe {spec!r}: expected COLUMN@T, e.g. mass1.x@0.5")
    return probes


def _overrides(specs: list[str], source: str) -> dict[str, str]:
    out = split_overrides(specs, source)
    if "" in out:
        raise ScenarioError(f"{source}: --set: empty key in {specs}")
    return out


def run(args: argparse.Namespace) -> int:
    from rbcosim.sweep import sweep
    from rbcosim.sweep.plot import plot_figure

    if not args.case_timeout >= 0:
        raise ScenarioError(f"--case-timeout: expected seconds >= 0, got {args.case_timeout}")
    if args.workers is not None and args.workers < 1:
        raise ScenarioError(f"--workers: expected a positive integer, got {args.workers}")
    if args.sample and args.samples < 1:
        raise ScenarioError("--sample needs --samples N (N >= 1)")
    if args.samples and not args.sample:
        raise ScenarioError("--samples needs at least one --sample KEY=DIST")
    plot = None
    if args.plot:
        figure, sep, parameter = args.plot.rpartition(":")
        if not sep or not figure or not parameter:
            raise ScenarioError(f"--plot {args.plot!r}: expected FIGURE:PARAM, e.g. "
                                "energy_drift:cosim.macro_step")
        plot = (figure, parameter)
    table = sweep(args.scenario, grid=args.grid, sample=args.sample, samples=args.samples,
                  seed=args.seed, overrides=_overrides(args.overrides, args.scenario), out=args.out,
                  scheduler=args.scheduler, workers=args.workers, probes=_probes(args.probe),
                  progress=not args.quiet, limits=RunLimits.from_items(args.limits),
                  case_timeout=args.case_timeout or None, cosim=args.cosim)
    failed = int((table["status"] != "ok").sum())
    print(f"cases: {len(table)}, ok: {len(table) - failed}, failed: {failed}")
    for _, row in table[table["status"] != "ok"].iterrows():
        reason = str(row["error"]).strip().splitlines()
        print(f"failed case {row['case']}: {reason[0] if reason else row['status']}")
    print(f"table: {Path(args.out) / 'sweep.csv'}")
    if plot is not None:
        png = plot_figure(table, plot[0], plot[1], Path(args.out) / f"{plot[0]}.png")
        print(f"plot: {png}")
    return 1 if failed else 0
