"""`rbcosim export-fmu SCENARIO -o FILE.fmu`: export a scenario's rigid side as an FMU."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from rbcosim.fmu_export.output_selection import parse_patterns
from rbcosim.fmu_export.packaging.python_fmu import (
    DEFAULT_ADDRESS,
    ExportOptions,
    export_fmu,
    model_identifier,
)

DESCRIPTION = (
    "Export a scenario's rigid side as a co-simulation FMU (pythonfmu for "
    "FMI 2.0, pythonfmu3 for FMI 3.0). Inputs: each interface point's force and moment and "
    "each joint's flexible-node kinematics; outputs: the points' kinematics and the "
    "joints' continuity gaps, and every rigid body's pose and velocities "
    "named as the results file's columns (rod1.x .. rod1.q0..q3 .. rod1.wz) and every "
    "joint's coordinates as `rbcosim run --joint-coordinates` writes them (shoulder.angle, "
    "shoulder.rate, angles continued over the run); the "
    "scenario's numeric settings as FMU parameters, except those of the flexible bodies, "
    "which are not in the FMU. The modelIdentifier is the scenario file's name made a C "
    "identifier (double_pendulum), or --name. Embedded FMUs also "
    "carry what a master needs to reproduce `rbcosim run`'s co-simulation: the points' "
    "accelerations, wrench derivatives (extrapolation), added-mass parameters, the "
    "flexible side's energy and the energy residual. The FMU runs in the "
    "importer's Python, which must have rbcosim installed (see fmu/README.md), except "
    "with --native: a C binary with the core and the model inside (or, with --address, a "
    "C client of `rbcosim serve`)."
)


def add_parser(sub) -> argparse.ArgumentParser:
    """The `export-fmu` subcommand: what to export, how, and which variables."""
    p = sub.add_parser(
        "export-fmu",
        help="export a scenario as an FMI 2.0 / 3.0 co-simulation FMU",
        description=DESCRIPTION,
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE.fmu",
        help="FMU to write (default: <scenario name>_fmi<version>.fmu)",
    )
    p.add_argument("--fmi", type=int, choices=(2, 3), default=2, help="FMI version (default 2)")
    _add_kind_options(p)
    _add_variable_options(p)
    p.set_defaults(handler=run)
    return p


def _add_kind_options(p: argparse.ArgumentParser) -> None:
    """Which FMU: embedded or remote, native, a flexible body, its name."""
    p.add_argument(
        "--mode",
        choices=("embedded", "remote"),
        help="embedded: the solver runs inside the FMU (default); remote: the FMU is "
        "a client of a running `rbcosim serve`",
    )
    p.add_argument(
        "--native",
        action="store_true",
        help="a C binary (FMI 2.0 or 3.0, Linux) compiled now with the system compiler, "
        "self-contained: the rigid core and the model inside, no Python, server or rbcosim "
        "needed where it runs, no scenario parameters; with --address, a client of `rbcosim "
        "serve` instead (scenario parameters settable; it starts a local server when "
        "server.address is empty); sources under sources/ in the FMU",
    )
    p.add_argument(
        "--address",
        metavar="ENDPOINT",
        help="remote mode and --native: default of the FMU parameter server.address "
        f"(remote default {DEFAULT_ADDRESS}; with --native it selects the server-client FMU, "
        "'' to start a local server)",
    )
    p.add_argument(
        "--flex",
        metavar="BODY",
        help="export the scenario's flexible body BODY instead of its rigid side: inputs the "
        "rigid points' motion, outputs the wrench (with its derivatives), the interface node's "
        "kinematics and energy, modal coordinates and output nodes; Jacobi coupling with the "
        "rigid-side FMU (see export-ssp)",
    )
    p.add_argument(
        "--name",
        metavar="IDENTIFIER",
        help="the FMU's modelName and modelIdentifier, a C identifier (default: the scenario "
        "file's stem with other characters replaced by _)",
    )


def _add_variable_options(p: argparse.ArgumentParser) -> None:
    """What the FMU offers beyond the default variables: derivatives, output selection,
    actuator inputs."""
    p.add_argument(
        "--derivatives",
        action="store_true",
        help="provide directional derivatives (FMI 2 fmi2GetDirectionalDerivative, FMI 3 "
        "directional and adjoint): the outputs after the last doStep with respect to the wrench "
        "inputs held over it (with --flex: to the motion inputs), for interface-Jacobian "
        "masters; embedded mode only, the FMU then runs on Linux x86-64 only (see "
        "fmu/README.md)",
    )
    p.add_argument(
        "--outputs",
        metavar="PATTERN[,PATTERN...]",
        help="expose only the body and joint-coordinate outputs whose names match a pattern "
        "(fnmatch: rod1.*,elbow.angle; default all); a pattern matching none is an error. The "
        "interface points' outputs, the joints' gaps and the exchange variables, which the "
        "coupling needs, always stay; embedded rigid side only",
    )
    p.add_argument(
        "--inputs",
        metavar="PATTERN[,PATTERN...]",
        help="inputs for the joints whose names match a pattern (fnmatch): J.torque (N.m) for "
        "a revolute joint, J.force (N) for a prismatic one, acting between its two bodies; "
        "D.target, D.rate, D.acceleration for a driver with a polynomial motion; a pattern "
        "matching no joint or another joint type is an error; embedded rigid side (joint "
        "actuators also --native without --address)",
    )


def refused_export(command: str, scenario: Path, output: Path, fmi: int) -> int | None:
    """The exit code (2: bad arguments, 1: cannot export) of an export whose `output` suffix is
    not `command`'s, whose scenario file is missing or whose FMI builder is not installed,
    after printing why; None when the export can go on."""
    suffix = ".ssp" if command == "export-ssp" else ".fmu"
    if output.suffix != suffix:
        print(f"rbcosim {command}: error: output must end in {suffix}: {output}", file=sys.stderr)
        return 2
    if not scenario.is_file():
        print(f"rbcosim {command}: error: no scenario file {scenario}", file=sys.stderr)
        return 1
    builder = "pythonfmu" if fmi == 2 else "pythonfmu3"
    if importlib.util.find_spec(builder) is None:  # the optional "fmu" extra
        print(f"rbcosim {command}: error: FMI {fmi} export needs {builder}; install rbcosim[fmu]",
              file=sys.stderr)
        return 1
    return None


def run(args: argparse.Namespace) -> int:
    scenario = Path(args.scenario)
    output = Path(args.output or f"{scenario.stem}_fmi{args.fmi}.fmu")
    if args.native:
        return run_native(args, scenario, output)
    refused = refused_export("export-fmu", scenario, output, args.fmi)
    if refused is not None:
        return refused
    mode = args.mode or "embedded"
    try:
        name = model_identifier(scenario, args.name)
    except ValueError as exc:
        print(f"rbcosim export-fmu: error: {exc}", file=sys.stderr)
        return 2
    if args.flex is not None and mode != "embedded":
        print("rbcosim export-fmu: error: --flex FMUs run their body inside: embedded mode only",
              file=sys.stderr)
        return 2
    if args.derivatives and mode != "embedded":
        print("rbcosim export-fmu: error: --derivatives re-runs the step inside the FMU: "
              "embedded mode only (not with --mode remote)", file=sys.stderr)
        return 2
    if args.outputs is not None and (args.flex is not None or mode != "embedded"):
        print("rbcosim export-fmu: error: --outputs selects body and joint outputs, which "
              "embedded rigid-side FMUs have only (not with --mode remote or --flex)",
              file=sys.stderr)
        return 2
    if args.inputs is not None and (args.flex is not None or mode != "embedded"):
        print("rbcosim export-fmu: error: --inputs (joint actuators) needs the rigid solver in "
              "the FMU: embedded rigid-side FMUs only (not with --mode remote or --flex)",
              file=sys.stderr)
        return 2
    try:
        outputs = None if args.outputs is None else parse_patterns(args.outputs)
        inputs = () if args.inputs is None else parse_patterns(args.inputs, "--inputs")
    except ValueError as exc:
        print(f"rbcosim export-fmu: error: {exc}", file=sys.stderr)
        return 2
    options = ExportOptions(fmi_version=args.fmi, mode=mode, address=args.address or DEFAULT_ADDRESS,
                            name=name, flex=args.flex, derivatives=args.derivatives,
                            outputs=outputs, inputs=inputs)
    written = export_fmu(scenario, output, options)
    what = mode if args.flex is None else f"flexible body {args.flex}"
    print(f"wrote {written} ({name}, FMI {args.fmi}.0 co-simulation, {what})")
    return 0


def run_native(args: argparse.Namespace, scenario: Path, output: Path) -> int:
    """`--native`: the C FMU (rbcosim.fmu_export.packaging.native_fmu); exit 2 for options it lacks."""
    from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu

    refused = [flag for flag, given in (("--flex", args.flex),
                                        ("--mode embedded", args.mode == "embedded"),
                                        ("--outputs", args.outputs is not None),
                                        ("--inputs with --address",
                                         args.inputs is not None and args.address is not None))
               if given]
    if refused:
        print(f"rbcosim export-fmu: error: --native builds the rigid side's C FMU; "
              f"{refused[0]} is not available with it", file=sys.stderr)
        return 2
    if output.suffix != ".fmu":
        print(f"rbcosim export-fmu: error: output must end in .fmu: {output}", file=sys.stderr)
        return 2
    if not scenario.is_file():
        print(f"rbcosim export-fmu: error: no scenario file {scenario}", file=sys.stderr)
        return 1
    try:
        name = model_identifier(scenario, args.name)
    except ValueError as exc:
        print(f"rbcosim export-fmu: error: {exc}", file=sys.stderr)
        return 2
    if args.address is None:
        try:
            inputs = () if args.inputs is None else parse_patterns(args.inputs, "--inputs")
        except ValueError as exc:
            print(f"rbcosim export-fmu: error: {exc}", file=sys.stderr)
            return 2
        written = export_native_fmu(scenario, output, fmi_version=args.fmi, name=name,
                                    self_contained=True, inputs=inputs)
        print(f"wrote {written} ({name}, FMI {args.fmi}.0 co-simulation, native, "
              "self-contained)")
        return 0
    written = export_native_fmu(scenario, output, fmi_version=args.fmi, address=args.address,
                                name=name)
    where = args.address or "a local server it starts"
    print(f"wrote {written} ({name}, FMI {args.fmi}.0 co-simulation, native client of {where})")
    return 0
