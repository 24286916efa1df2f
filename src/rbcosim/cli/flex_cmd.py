"""`rbcosim flex`: the reference flexible body as its own process, a client of `rbcosim serve`.

It speaks only the public protocol (interfaces/PROTOCOL.md): attach to one or several joints of
a session as one client, then report, send the wrench polynomials, step, until the scenario's
end time. Its own result
columns (modal coordinates, output nodes) go to --out for `rbcosim cosim` to merge.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rbcosim.blas_threads import quiet_blas_threads
from rbcosim.errors import RbcosimError
from rbcosim.gc_pause import loading


def add_parser(sub) -> None:
    p = sub.add_parser(
        "flex",
        help="run the reference flexible body as a client of an rbcosim server",
        description="Run flexible bodies of a scenario in this process, coupled to a session of "
        "an rbcosim server over the public protocol as one client that drives all their joints "
        "(the same numbers as `rbcosim run`).",
    )
    p.add_argument("--connect", required=True, metavar="ADDR",
                   help="server endpoint, e.g. tcp://127.0.0.1:5555; '-' (with --session -): "
                        "load the scenario and its flexible bodies first, then read 'ADDR ID' "
                        "from the first line of stdin (how `rbcosim cosim` starts its processes "
                        "in parallel)")
    p.add_argument("--session", required=True, metavar="ID",
                   help="session id (create_session); '-': read it from stdin with --connect -")
    p.add_argument("--joint", dest="joints", metavar="NAME", action="append", default=[],
                   help="a rigid–flexible joint ([couplings.NAME]) this process drives "
                        "(repeatable); '-' (with --connect -): read the joints, separated by "
                        "spaces, from the first line of stdin, before 'ADDR ID'")
    p.add_argument("--body", dest="bodies", metavar="NAME", action="append", default=[],
                   help="drive every joint of this flexible body ([flex_bodies.NAME]; "
                        "repeatable, may be mixed with --joint)")
    p.add_argument("--scenario", required=True, metavar="FILE",
                   help="the scenario the session was created from (flexible body definitions)")
    p.add_argument("--set", dest="overrides", metavar="KEY=VALUE", action="append", default=[],
                   help="the same overrides the session was created with (repeatable)")
    p.add_argument("--t-end", type=float, metavar="T", help="end time, s (as solver.t_end)")
    p.add_argument("--out", metavar="FILE",
                   help="write this side's result columns (msgpack) for `rbcosim cosim` to merge")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds to wait for each reply (default %(default)s)")
    p.add_argument("--checkpoint-dir", metavar="DIR",
                   help="write this side's state every --checkpoint-every macro steps")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="N")
    p.add_argument("--resume", action="store_true",
                   help="take over the joints of a restored session from the checkpoint of its step")
    p.add_argument("--curve-server-key", metavar="FILE", help="server public key for CURVE")
    p.add_argument("--curve-secret", metavar="FILE", help="this client's CURVE .key_secret")
    p.set_defaults(handler=run)


def load(args: argparse.Namespace):
    from rbcosim.scenario.loader import load_scenario

    overrides = list(args.overrides)
    if args.t_end is not None:
        overrides.append(f"solver.t_end={args.t_end!r}")
    return load_scenario(args.scenario, overrides)


def run(args: argparse.Namespace) -> int:
    quiet_blas_threads()  # before numpy loads
    with loading():  # the imports, the scenario and its flexible bodies
        from rbcosim.client import Client
        from rbcosim.distributed.flex_solver import run_flex_solver, solver_tag, write_results

        scenario, joints, endpoints = _prepare(args)
    address, session = _handed() if args.connect == "-" else (args.connect, args.session)
    with Client(address, timeout=args.timeout, curve_server_key=args.curve_server_key,
                curve_client_secret_file=args.curve_secret) as client:
        client.hello(f"rbcosim flex {solver_tag(joints)}")
        results = run_flex_solver(scenario, joints, client, session,
                                  checkpoint_dir=args.checkpoint_dir,
                                  checkpoint_every=args.checkpoint_every, resume=args.resume,
                                  endpoints=endpoints)
    if args.out:
        write_results(Path(args.out), results)
    steps = next(iter(results.values())).steps
    print(f"done {solver_tag(joints)} {steps[-1] if steps else 0}", flush=True)
    return 0


def _prepare(args: argparse.Namespace):
    """The scenario, the joints to drive (read from stdin with --joint -) and, with --connect -,
    their flexible bodies, built while the server starts (None: built once attached)."""
    from rbcosim.distributed.flex_solver import endpoints_for, select_joints

    scenario = load(args)
    if args.checkpoint_every < 0:
        raise RbcosimError("--checkpoint-every: expected 0 (off) or a positive integer")
    if (args.connect == "-") != (args.session == "-"):
        raise RbcosimError("--connect - and --session - go together (both read from stdin)")
    names = args.joints
    if "-" in names:
        if names != ["-"] or args.bodies or args.connect != "-":
            raise RbcosimError("--joint - (joints read from stdin) goes alone, with --connect -")
        names = sys.stdin.readline().split()
        if not names:
            raise RbcosimError("--joint -: expected the joint names on stdin, got none")
    joints = select_joints(scenario, names, args.bodies)
    endpoints = endpoints_for(scenario, joints) if args.connect == "-" else None
    return scenario, joints, endpoints


def _handed() -> tuple[str, str]:
    """--connect - --session -: 'ADDRESS SESSION' from stdin."""
    words = sys.stdin.readline().split()
    if len(words) != 2:
        raise RbcosimError("--connect -: expected 'ADDRESS SESSION' on stdin, got "
                           f"{' '.join(words)!r}")
    return words[0], words[1]


def main(argv: list[str] | None = None) -> int:
    """``python -m rbcosim.cli.flex_cmd ...``: the same as ``rbcosim flex ...``."""
    from rbcosim.cli.main import main as rbcosim_main

    return rbcosim_main(["flex", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
