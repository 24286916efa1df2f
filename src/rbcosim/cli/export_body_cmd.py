"""`rbcosim export-body SCENARIO --body NAME -o FILE`: a flexible body's file for C programs.

The file (rbcosim.flex.io.body_file, read by librbcosim/flex/body_file.h) holds the body's arrays
as rbcosim's own FlexBody steps them, for the scenario's macro step: the C examples
(interfaces/c/examples) and the FMU hosts (fmu/native/host) link the library's flexible body
and read it, so their flexible side is rbcosim's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rbcosim.cosim.flex_bodies import build_endpoints
from rbcosim.errors import ScenarioError
from rbcosim.flex.io.body_file import body_file_bytes
from rbcosim.scenario.loader import load_scenario


def add_parser(sub) -> None:
    p = sub.add_parser("export-body", help="write a scenario's flexible body for C programs",
                       description="Write the body file of a scenario's coupled flexible body "
                                   "(its model arrays, micro steps and, grounded, the "
                                   "propagator for cosim.macro_step) that C programs load "
                                   "with librbcosim/flex/body_file.h.")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    p.add_argument("--body", required=True, metavar="NAME",
                   help="the flexible body ([flex_bodies.NAME]) or the joint coupling it")
    p.add_argument("-o", "--out", required=True, metavar="FILE", help="the body file to write")
    p.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append", default=[],
                   help="override a scenario key by dotted path (repeatable)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario, args.overrides)
    path = export_body(scenario, args.body, args.out)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


def export_body(scenario, name: str, path: str | Path) -> Path:
    """Write the body file of ``scenario``'s (a loaded Scenario) flexible body coupled by
    joint ``name`` (or the body named ``name``) for the scenario's macro step."""
    H = scenario.cosim.macro_step
    endpoints = build_endpoints(scenario, H)
    chosen = [e for key, e in endpoints.items() if name in (key, e.flex_body)]
    if len(chosen) != 1:
        names = sorted({*endpoints, *(e.flex_body for e in endpoints.values())})
        raise ScenarioError(f"export-body: {name!r} names no single coupled flexible body "
                            f"(joints and bodies: {', '.join(names)})")
    endpoint = chosen[0]
    if len(endpoint.couplings) != 1:
        raise ScenarioError(f"export-body: flexible body {endpoint.flex_body!r} has "
                            f"{len(endpoint.couplings)} couplings; a body file holds a body "
                            "coupled at one node")
    path = Path(path)
    path.write_bytes(body_file_bytes(endpoint.body, H, endpoint.coupling.grounded_reference))
    return path
