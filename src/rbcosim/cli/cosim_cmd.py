"""`rbcosim cosim SCENARIO`: the coupled run across processes — the project's main job.

Starts `rbcosim serve` on an ipc socket of its own (or --bind, loopback; or uses --connect
ADDR, any host) and one `rbcosim flex` process per flexible body (or, with --serve-external,
waits for external flexible solvers), runs to the end time with a progress bar, prints a
summary, and writes the results (the same columns and numbers as `rbcosim run`), a JSON
summary (the layout of `rbcosim run`) and a PNG plot.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from rbcosim.blas_threads import quiet_blas_threads
from rbcosim.cli.animate_cmd import add_animate_option
from rbcosim.cli.options import (
    add_limit_option,
    add_output_options,
    enforce_limits,
    output_every,
    warn_unused_overrides,
)
from rbcosim.distributed.placement import PlacementError, parse_pin
from rbcosim.errors import ScenarioError
from rbcosim.gc_pause import loading


def add_parser(sub) -> None:
    p = sub.add_parser(
        "cosim",
        help="run a rigid–flexible co-simulation across processes (server + flexible solvers)",
        description="Run the scenario's co-simulation with the rigid side in an rbcosim server "
        "and each flexible body in its own process, joined over ZeroMQ; writes the same results "
        "table as `rbcosim run`, a JSON summary and a PNG plot.",
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML) with [couplings]")
    p.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append", default=[],
                   help="override a scenario key by dotted path (repeatable); every process "
                        "gets the same overrides")
    p.add_argument("--t-end", type=float, metavar="T", help="end time, s (as solver.t_end)")
    p.add_argument("--out", "-o", metavar="FILE",
                   help="results file: .csv, .npz or .h5 (default: results/<name>.csv); the "
                        "summary goes to <stem>.summary.json")
    add_output_options(p)
    p.add_argument("--plot", metavar="FILE.png",
                   help="plot file (default: the results file with .png); the figure of "
                        "`rbcosim plot RESULT`")
    p.add_argument("--no-plot", action="store_true", help="write no plot")
    add_animate_option(p)
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar and no summary: only warnings, errors and the files "
                        "written")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--connect", metavar="ADDR",
                       help="use the rbcosim server at ADDR (e.g. tcp://host:5555) instead of "
                            "starting one on loopback")
    where.add_argument("--bind", metavar="ADDR",
                       help="loopback endpoint for the server started here, e.g. "
                            "tcp://127.0.0.1:0 (default: an ipc socket in a folder of its "
                            "own, which only this user reaches)")
    p.add_argument("--serve-external", action="store_true",
                   help="start no flexible solvers: print the session and wait for external "
                        "solvers to attach to its joints and drive it to the end time "
                        "(the results then hold the rigid-side columns)")
    p.add_argument("--barrier-timeout", type=float, default=30.0, metavar="S",
                   help="seconds the server waits for a silent flexible solver (default %(default)s)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds any process waits for one reply (default %(default)s)")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the server's first reply (default %(default)s)")
    p.add_argument("--pin", type=_pin, default="auto", metavar="CPU",
                   help="once they step, run the server and the flexible solvers this command "
                        "starts on one CPU: a number, auto (the last CPU this process may use; "
                        "nothing on one CPU) or none (where the OS puts them; for a machine "
                        "busy with other work, or flexible solvers heavy enough to gain from "
                        "stepping beside the rigid side). One CPU makes the macro step's "
                        "exchange a switch instead of a wake-up on another CPU "
                        "(default %(default)s)")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help="server snapshots and flexible-solver checkpoints every N macro steps")
    p.add_argument("--curve-server-key", metavar="FILE",
                   help="with --connect: the server's CURVE public key")
    p.add_argument("--curve-secret", metavar="FILE",
                   help="with --connect: this side's CURVE .key_secret (on the server's allow-list)")
    add_limit_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.scenario)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such scenario file")
    if args.checkpoint_every < 0:
        raise ScenarioError("--checkpoint-every: expected 0 (off) or a positive integer")
    quiet_blas_threads()  # this process and those it starts, before any of them loads numpy
    # Before anything else, the processes whose start-up is the longest: the server, and a
    # flexible solver that loads its modules while this process loads the scenario (its
    # joints follow on its stdin; with --output-interval its overrides wait for the scenario).
    from rbcosim.distributed.processes import (
        CosimOptions,
        ServerProcess,
        scenario_overrides,
        start_flex,
        stop_processes,
    )

    options = CosimOptions(
        connect=args.connect, bind=args.bind, serve_external=args.serve_external,
        progress=not args.quiet, barrier_timeout=args.barrier_timeout, timeout=args.timeout,
        connect_timeout=args.connect_timeout, checkpoint_every=args.checkpoint_every,
        curve_server_key=args.curve_server_key, curve_secret=args.curve_secret,
        pin=args.pin,
    )
    overrides = scenario_overrides(args.overrides, args.t_end)
    server = None
    if args.connect is None:
        server = ServerProcess(args.bind, args.barrier_timeout, path.resolve().parent)
    early, folder = [], Path(tempfile.mkdtemp(prefix="rbcosim-cosim-"))
    try:
        if not args.serve_external and args.output_interval is None:
            early.append(start_flex(None, None, None, path.resolve(), overrides, folder,
                                    options))
        return _run(args, path, overrides, options, server, early)
    finally:  # the run asked the server to end: it ends while the results are written
        stop_processes(early)
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _run(args: argparse.Namespace, path: Path, overrides: list[str], options, server,
         early: list) -> int:
    """`run` once its server (None with --connect) and early flexible solver are started."""
    with loading():  # the imports and the scenario
        from rbcosim.distributed.driver import run_distributed
        from rbcosim.scenario.loader import load_scenario

        scenario = load_scenario(path, overrides)
        if args.output_interval is not None:
            overrides.append(
                f"solver.output_every={output_every(scenario, args.output_interval)}")
            scenario = load_scenario(path, overrides)
    warn_unused_overrides(scenario, args.overrides)
    enforce_limits(args, scenario)
    out = Path(args.out or Path("results") / (path.stem + ".csv"))
    results = run_distributed(path, overrides, options, server, early).results.select(
        args.output_variables)
    written = results.write(out)
    if not args.no_plot:
        from rbcosim.plotting import plot_results

        plot = Path(args.plot) if args.plot else out.with_suffix(".png")
        written.append(plot_results(results, plot, title=f"{path.stem} (multi-process)"))
    if args.animate:
        from rbcosim.animate import write_animation

        written += write_animation(results, args.animate, out.stem, scenario)
    if not args.quiet:
        from rbcosim.results import format_summary

        print(format_summary(results.summary()))
    print("results: " + ", ".join(str(p) for p in written))
    return 0


def _pin(text: str) -> str | int:
    try:
        return parse_pin(text)
    except PlacementError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
