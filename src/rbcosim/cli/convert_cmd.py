"""`rbcosim convert-structure`: plain M, K (, C) and node coordinates, or an FE code's export
(CalculiX, Abaqus, Nastran), -> a body's .npz (physical floating, or reduced grounded)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "convert-structure",
        help="write a floating flexible body's .npz from plain FE matrices and node coordinates",
        description="Read the physical mass and stiffness matrices (Matrix Market .mtx, .npy "
                    "or .npz), the node coordinates (CSV x,y,z per node, m) and the DOF labels, "
                    "check that every rigid-body mode is in the null space of K, and write the "
                    ".npz structure file of a floating body (kind = \"matrices\", attachment = "
                    "\"floating\"): the interface node's DOFs first, positions relative to it.")
    p.add_argument("--from", dest="fmt", default="matrices",
                   choices=("matrices", "calculix", "abaqus", "nastran", "ansys"),
                   help="what the files are: plain matrices (default) or an FE code's export")
    p.add_argument("--inp", type=Path, help="calculix / abaqus: the input deck (*NODE, *NSET)")
    p.add_argument("--bdf", type=Path, help="nastran: the bulk data (GRID, SET1)")
    p.add_argument("--full", type=Path, help="ansys: the MAPDL .full file (nodes from --nodes: "
                   "the model's .cdb or .rst, default FULL's .rst)")
    p.add_argument("--dofs", type=Path, help="calculix: the .dof labels (default INP's .dof)")
    p.add_argument("--mass", type=Path, help="mass matrix M (.mtx, .npy, .npz; calculix .mas, "
                   "abaqus _MASS .mtx, nastran DMIG punch)")
    p.add_argument("--stiffness", type=Path, help="stiffness matrix K")
    p.add_argument("--damping", type=Path, help="optional viscous damping matrix C (matrices)")
    p.add_argument("--nodes", type=Path,
                   help="matrices: CSV of node coordinates x,y,z (m), one row per node; "
                        "ansys: the .cdb archive or .rst result file")
    p.add_argument("--interface", action="append", default=[], metavar="SPEC",
                   help="FE formats: an interface node (repeatable, in order): NODE (an FE node "
                        "with rotations), rigid=SET or average=SET (a node set or n1,n2,... "
                        "tied to a new 6-DOF node at its centroid)")
    p.add_argument("--units", default="m-kg-s",
                   help="FE formats: the model's units LENGTH-MASS-TIME (m-kg-s, mm-t-s, "
                        "mm-kg-ms, ...), scaled to SI")
    p.add_argument("--modes", type=int,
                   help="FE formats: write the Craig-Bampton reduction with this many "
                        "fixed-interface modes (a grounded body's file) instead of the physical "
                        "structure (a floating body's file)")
    labels = p.add_mutually_exclusive_group()
    labels.add_argument("--dofs-per-node", default="x,y,z,rx,ry,rz",
                        help="components of every node, node-major (default x,y,z,rx,ry,rz)")
    labels.add_argument("--dof-labels", type=Path,
                        help="CSV of node,component per matrix row (instead of --dofs-per-node)")
    p.add_argument("--interface-node", type=int, default=0,
                   help="node clamped to the interface point (default 0)")
    p.add_argument("--output-node", action="append", default=[], metavar="NAME=NODE",
                   help="named output node (repeatable), e.g. tip=10 (FE formats: the FE node "
                        "number)")
    p.add_argument("--out", required=True, type=Path, help="the .npz file to write")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rbcosim.errors import ScenarioError
    from rbcosim.flex.io.convert import (
        convert_structure,
        read_dof_labels_csv,
        read_matrix,
        read_nodes_csv,
        uniform_dof_labels,
    )
    from rbcosim.flex.io.matrices_io import save_npz

    if args.out.suffix != ".npz":
        raise ScenarioError(f"--out: expected a path ending in .npz, got {str(args.out)!r}")
    outputs = {}
    for item in args.output_node:
        name, _, node = item.partition("=")
        if not name or not node.strip().isdigit():
            raise ScenarioError(f"--output-node: expected NAME=NODE (a node index), got {item!r}")
        outputs[name] = int(node)
    if args.fmt != "matrices":
        plain = [o for o, v in (("--interface-node", args.interface_node != 0),
                                ("--dof-labels", args.dof_labels is not None),
                                ("--damping", args.damping is not None)) if v]
        if plain:
            raise ScenarioError(f"{plain[0]}: only with --from matrices (FE formats take "
                                f"--interface)")
        structure = _from_fe(args, outputs)
    else:
        if args.mass is None or args.stiffness is None or args.nodes is None:
            raise ScenarioError("--mass, --stiffness and --nodes: required with --from matrices")
        fe_only = [o for o, v in (("--interface", args.interface), ("--modes", args.modes),
                                  ("--inp", args.inp), ("--bdf", args.bdf),
                                  ("--full", args.full), ("--dofs", args.dofs),
                                  ("--units", args.units != "m-kg-s")) if v]
        if fe_only:
            raise ScenarioError(f"{fe_only[0]}: only with --from calculix|abaqus|nastran|ansys")
        nodes = read_nodes_csv(args.nodes)
        dof_map = (read_dof_labels_csv(args.dof_labels) if args.dof_labels is not None
                   else uniform_dof_labels(nodes.shape[0], args.dofs_per_node.split(",")))
        structure = convert_structure(
            read_matrix(args.mass, "M"), read_matrix(args.stiffness, "K"), nodes, dof_map,
            interface_node=args.interface_node,
            damping=None if args.damping is None else read_matrix(args.damping, "C"),
            output_nodes=outputs, label=args.mass.name, stiffness_label=args.stiffness.name)
    save_npz(args.out, structure)
    n = structure.mass.shape[0]
    kind = ("reduced (grounded)" if structure.layout is None
            else f"{structure.layout.positions.shape[0]} nodes")
    print(f"wrote {args.out}: {kind}, {n} coordinates, boundary "
          f"{' '.join(structure.boundary_dofs)}, outputs "
          f"{list(structure.output_names) or 'none'}")
    return 0


def _from_fe(args: argparse.Namespace, outputs: dict):
    """The structure of an FE code's files (every check runs before anything is written)."""
    from rbcosim.errors import ScenarioError
    from rbcosim.flex.io.fe_import import import_structure, parse_interface
    from rbcosim.flex.io.readers import FORMATS, read_fe_model

    model_key = FORMATS[args.fmt][0]
    model = getattr(args, model_key)
    if model is None:
        raise ScenarioError(f"--{model_key}: required with --from {args.fmt}")
    files = {model_key: model}
    for key in ("stiffness", "mass", "dofs", "nodes"):
        if getattr(args, key) is not None:
            if key not in FORMATS[args.fmt]:
                raise ScenarioError(f"--{key}: not read with --from {args.fmt}")
            files[key] = getattr(args, key)
    if not args.interface:
        raise ScenarioError("--interface: required with an FE format (e.g. --interface "
                            "rigid=FIX ties node set FIX to a new 6-DOF node)")
    specs = [parse_interface(s, "--interface") for s in args.interface]
    if args.modes is not None and args.modes < 1:
        raise ScenarioError(f"--modes: expected an integer >= 1, got {args.modes}")
    return import_structure(read_fe_model(args.fmt, files, "--from"), specs, units=args.units,
                            outputs=outputs, modes=args.modes, where="--interface")
