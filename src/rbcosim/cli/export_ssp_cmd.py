"""`rbcosim export-ssp SCENARIO -o FILE.ssp`: both sides of a co-simulation as an SSP package."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "export-ssp",
        help="export a co-simulation scenario as an SSP 1.0 package of FMUs",
        description="Write an SSP 1.0 package (SystemStructure.ssd + resources/*.fmu): the "
        "scenario's rigid side as an embedded FMU (rigid.fmu), each flexible body as its own "
        "FMU (export-fmu --flex), and their connections by equal variable names. A Jacobi "
        "master (libcosim's fixed-step algorithm) at the scenario's macro step runs "
        "cosim.scheme = \"jacobi\" with the scenario's extrapolation, as `rbcosim run` does "
        "(see fmu/README.md).",
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML) with couplings")
    p.add_argument("-o", "--output", metavar="FILE.ssp",
                   help="package to write (default: <scenario name>.ssp)")
    p.add_argument("--fmi", type=int, choices=(2, 3), default=2,
                   help="FMI version of the FMUs inside (default 2)")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    from rbcosim.cli.export_fmu_cmd import refused_export
    from rbcosim.fmu_export.packaging.ssp import export_ssp

    scenario = Path(args.scenario)
    output = Path(args.output or f"{scenario.stem}.ssp")
    refused = refused_export("export-ssp", scenario, output, args.fmi)
    if refused is not None:
        return refused
    written = export_ssp(scenario, output, args.fmi)
    print(f"wrote {written} (SSP 1.0, FMI {args.fmi}.0 FMUs)")
    return 0
