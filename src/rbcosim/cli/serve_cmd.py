"""`rbcosim serve`: run the co-simulation service on a ZeroMQ endpoint until interrupted.

Prints the bound address on its first line of stdout (``serving on ENDPOINT``), so a caller
that asked for port 0 learns the port by reading one line.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

import zmq

from rbcosim import PROTOCOL_VERSION, __version__
from rbcosim.errors import RbcosimError


class ServeError(RbcosimError):
    """The server could not start (address, keys, options)."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "serve",
        help="run the ZeroMQ co-simulation service",
        description="Serve rigid-side sessions over ZeroMQ (protocol: interfaces/PROTOCOL.md). "
        "Binds to loopback unless --allow-remote is given.",
    )
    parser.add_argument(
        "--bind",
        default="tcp://127.0.0.1:5555",
        metavar="ADDR",
        help="ZeroMQ endpoint (default %(default)s); port 0 picks a free port; ipc://PATH works too",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow an endpoint beyond loopback (needs --curve-secret/--curve-clients or --insecure)",
    )
    parser.add_argument(
        "--curve-secret", metavar="FILE", help="server CURVE secret certificate (.key_secret)"
    )
    parser.add_argument(
        "--curve-clients", metavar="DIR", help="folder of allowed client public certificates (.key)"
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="bind beyond loopback without CURVE (plain text, anyone may connect)",
    )
    parser.add_argument(
        "--generate-keys",
        metavar="DIR",
        help="write CURVE key pairs server.key[_secret] and client.key[_secret] into DIR and exit",
    )
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="scenario paths and state files must lie under DIR "
        "(default: unrestricted on loopback, the working directory otherwise)",
    )
    parser.add_argument(
        "--barrier-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds a step barrier waits for a missing client before reporting it (default %(default)s)",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=64 * 1024 * 1024,
        metavar="BYTES",
        help="largest accepted message (default %(default)s)",
    )
    parser.add_argument("--max-sessions", type=int, default=256, metavar="N")
    parser.add_argument(
        "--rigid-factory",
        metavar="MODULE:NAME",
        help=argparse.SUPPRESS,  # e.g. rbcosim.service.toy:ToySide.from_scenario for tests and benchmarks
    )
    parser.set_defaults(handler=run)
    return parser


def _load_factory(spec: str):
    module_name, _, attr = spec.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def run(args: argparse.Namespace) -> int:
    from rbcosim.service import CurveConfig, Limits, Server, Service, generate_keys
    from rbcosim.service.server import is_loopback

    if args.generate_keys:
        keys = generate_keys(args.generate_keys)
        for name, (public, secret) in keys.items():
            print(f"{name}: public {public}, secret {secret}")
        print(
            "start the server with --curve-secret server.key_secret --curve-clients DIR_WITH_client.key; "
            "give clients server.key and their own .key_secret"
        )
        return 0
    if (args.curve_secret is None) != (args.curve_clients is None):
        raise ServeError("--curve-secret and --curve-clients go together")
    curve = CurveConfig(args.curve_secret, args.curve_clients) if args.curve_secret else None
    root = args.root
    if root is None and not is_loopback(args.bind):
        root = "."
    service = Service(
        rigid_factory=_load_factory(args.rigid_factory) if args.rigid_factory else None,
        barrier_timeout=args.barrier_timeout,
        root=root,
        max_sessions=args.max_sessions,
        limits=Limits(max_message_size=args.max_message_size),
    )
    try:
        server = Server(
            service, args.bind, allow_remote=args.allow_remote, curve=curve, insecure=args.insecure
        )
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    except zmq.ZMQError as exc:  # address in use, bad endpoint
        raise ServeError(f"cannot bind {args.bind}: {exc}") from None
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: server.stop()) if in_main else None
    print(f"serving on {server.address}", flush=True)
    print(
        f"rbcosim {__version__}, protocol {PROTOCOL_VERSION}"
        + (", CURVE on" if curve else "")
        + (f", root {service.root}" if service.root else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        server.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m rbcosim.cli.serve_cmd [options]``: the same as ``rbcosim serve``."""
    parser = argparse.ArgumentParser(prog="rbcosim")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except RbcosimError as exc:
        print(f"rbcosim serve: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
