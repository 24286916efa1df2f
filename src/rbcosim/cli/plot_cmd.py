"""`rbcosim plot RESULT [COLUMN ...]`: time series of an existing results file as a PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

from rbcosim.plotting import plot_results, select_columns
from rbcosim.results import read_results


def add_parser(sub) -> None:
    p = sub.add_parser(
        "plot", help="plot columns of a results file against time (PNG)",
        description="Plot columns of a results file (CSV, .npz or HDF5 .h5, as written by run and cosim) "
                    "against t, one panel per kind and unit. Without COLUMN: body, interface "
                    "point and flexible output node positions, the output nodes' deflection, "
                    "interface wrenches, modal coordinates (each over its largest |value|), "
                    "continuity gaps (with the summary's maxima over every step) and energy "
                    "(E − E(0)). Positions (bodies, interface points, flexible output nodes) "
                    "are drawn relative to their value at t=0 (the legend gives it): "
                    "--relative does so for every column, --absolute for none.")
    p.add_argument("result", metavar="RESULT", help="results file (CSV, .npz or .h5)")
    p.add_argument("columns", metavar="COLUMN", nargs="*",
                   help="column name or shell-style pattern, e.g. '*.gap_pos' 'beam.tip.*'")
    p.add_argument("--out", "-o", metavar="FILE.png",
                   help="plot file (default: RESULT with .png)")
    offset = p.add_mutually_exclusive_group()
    offset.add_argument("--relative", action="store_true", default=None,
                        help="subtract every column's value at t=0 (default: positions only)")
    offset.add_argument("--absolute", dest="relative", action="store_false",
                        help="subtract nothing, positions included")
    p.add_argument("--title", help="figure title (default: the results file name)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.result)
    results = read_results(path)
    columns = select_columns(results.columns, args.columns) if args.columns else None
    out = Path(args.out) if args.out else path.with_suffix(".png")
    written = plot_results(results, out, columns, relative=args.relative,
                           title=args.title or path.name)
    print(f"plot: {written}")
    return 0
