"""`rbcosim convert-structure`: plain M, K (, C) and node coordinates -> a floating body's .npz."""

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
    p.add_argument("--mass", required=True, type=Path, help="mass matrix M (.mtx, .npy, .npz)")
    p.add_argument("--stiffness", required=True, type=Path, help="stiffness matrix K")
    p.add_argument("--damping", type=Path, help="optional viscous damping matrix C")
    p.add_argument("--nodes", required=True, type=Path,
                   help="CSV of node coordinates x,y,z (m), one row per node in node order")
    labels = p.add_mutually_exclusive_group()
    labels.add_argument("--dofs-per-node", default="x,y,z,rx,ry,rz",
                        help="components of every node, node-major (default x,y,z,rx,ry,rz)")
    labels.add_argument("--dof-labels", type=Path,
                        help="CSV of node,component per matrix row (instead of --dofs-per-node)")
    p.add_argument("--interface-node", type=int, default=0,
                   help="node clamped to the interface point (default 0)")
    p.add_argument("--output-node", action="append", default=[], metavar="NAME=NODE",
                   help="named output node (repeatable), e.g. tip=10")
    p.add_argument("--out", required=True, type=Path, help="the .npz file to write")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rbcosim.errors import ScenarioError
    from rbcosim.flex.convert import (
        convert_structure,
        read_dof_labels_csv,
        read_matrix,
        read_nodes_csv,
        uniform_dof_labels,
    )
    from rbcosim.flex.matrices_io import save_npz

    if args.out.suffix != ".npz":
        raise ScenarioError(f"--out: expected a path ending in .npz, got {str(args.out)!r}")
    outputs = {}
    for item in args.output_node:
        name, _, node = item.partition("=")
        if not name or not node.strip().isdigit():
            raise ScenarioError(f"--output-node: expected NAME=NODE (a node index), got {item!r}")
        outputs[name] = int(node)
    nodes = read_nodes_csv(args.nodes)
    dof_map = (read_dof_labels_csv(args.dof_labels) if args.dof_labels is not None
               else uniform_dof_labels(nodes.shape[0], args.dofs_per_node.split(",")))
    structure = convert_structure(
        read_matrix(args.mass, "M"), read_matrix(args.stiffness, "K"), nodes, dof_map,
        interface_node=args.interface_node,
        damping=None if args.damping is None else read_matrix(args.damping, "C"),
        output_nodes=outputs, label=args.mass.name)
    save_npz(args.out, structure)
    n = structure.mass.shape[0]
    print(f"wrote {args.out}: {nodes.shape[0]} nodes, {n} coordinates, boundary "
          f"{' '.join(structure.boundary_dofs)} at node {args.interface_node}, "
          f"outputs {list(structure.output_names) or 'none'}")
    return 0
