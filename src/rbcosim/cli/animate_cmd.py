"""`rbcosim animate RESULT`: a ParaView time series (.vtu + .pvd) and a GIF of a results file."""

from __future__ import annotations

import argparse
from pathlib import Path

from rbcosim.errors import ScenarioError

DESCRIPTION = (
    "Write a ParaView time series of a results file (CSV, .npz or .h5): one VTK .vtu per row "
    "and a .pvd collection (File > Open the .pvd in ParaView, Apply, play), plus a quick-look "
    "GIF. Bodies are drawn as their frame axes and, with --scenario, lines from the centre of "
    "mass to the points where joints, springs and interface points attach; interface points "
    "and flexible output nodes as points; floating flexible beams (with --scenario) as their "
    "deformed FE nodes and elements. Needs the animate extra: pip install 'rbcosim[animate]'.")


def add_animate_option(p) -> None:
    """`--animate DIR` of run and cosim."""
    p.add_argument("--animate", metavar="DIR",
                   help="also write the ParaView series and GIF of `rbcosim animate` into DIR")


def add_parser(sub) -> None:
    p = sub.add_parser("animate", help="ParaView time series (.vtu/.pvd) and GIF of a results "
                                       "file", description=DESCRIPTION)
    p.add_argument("result", metavar="RESULT", help="results file (CSV, .npz or .h5)")
    p.add_argument("--scenario", "-s", metavar="SCENARIO",
                   help="the scenario the results came from (body shapes, flexible beams)")
    p.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append", default=[],
                   help="scenario override used for the run (repeatable)")
    p.add_argument("--out-dir", "-o", metavar="DIR",
                   help="output directory (default: RESULT's name with _animation)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="factor on the flexible bodies' modal displacements (default 1)")
    p.add_argument("--every", type=int, default=1, metavar="N",
                   help="write every N-th row as a .vtu (default 1; the last row always)")
    p.add_argument("--frames", type=int, default=120, metavar="N",
                   help="GIF frames, evenly spaced over the run (default 120; 0: no GIF)")
    p.add_argument("--fps", type=float, default=20.0, help="GIF frames per second (default 20)")
    p.add_argument("--mp4", action="store_true", help="an MP4 instead of the GIF (needs ffmpeg)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rbcosim.animate import write_animation
    from rbcosim.results import read_results
    from rbcosim.scenario.loader import load_scenario

    for name, value, low in (("--every", args.every, 1), ("--frames", args.frames, 0)):
        if value < low:
            raise ScenarioError(f"{name}: expected an integer >= {low}, got {value}")
    if not args.fps > 0:
        raise ScenarioError(f"--fps: expected a positive number, got {args.fps}")
    path = Path(args.result)
    results = read_results(path)
    scenario = None
    if args.scenario:
        if not Path(args.scenario).is_file():
            raise ScenarioError(f"{args.scenario}: no such scenario file")
        scenario = load_scenario(args.scenario, args.overrides)
    elif args.overrides:
        raise ScenarioError("--set: needs --scenario")
    out = Path(args.out_dir) if args.out_dir else path.with_name(path.stem + "_animation")
    written = write_animation(results, out, path.stem, scenario, scale=args.scale,
                              every=args.every, gif_frames=args.frames,
                              movie="mp4" if args.mp4 else "gif", fps=args.fps)
    print("animation: " + ", ".join(str(p) for p in written))
    return 0
