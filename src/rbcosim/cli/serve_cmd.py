"""`rbcosim serve`: run the co-simulation service on a ZeroMQ endpoint until interrupted.

Prints the bound address on its first line of stdout (``serving on ENDPOINT``), so a caller
that asked for port 0 learns the port by reading one line, once a session can be created at
once (the session workers' fork server has loaded the core); then ``sessions ready`` (or
``sessions unavailable: WHY`` when the fork server could not start).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
from pathlib import Path

from rbcosim import PROTOCOL_VERSION, __version__
from rbcosim.blas_threads import quiet_blas_threads
from rbcosim.cli.limit_option import add_limit_option
from rbcosim.errors import RbcosimError
from rbcosim.gc_pause import loading
from rbcosim.limits import RunLimits
from rbcosim.service.defaults import (
    DEFAULT_BUILD_TIMEOUT,
    DEFAULT_SEND_BYTES,
    DEFAULT_SEND_HWM,
    DEFAULT_SESSION_IDLE,
)

#: The folder `rbcosim serve` reads and writes in when no --root is given (in the working
#: directory, created on start).
DEFAULT_ROOT = "rbcosim-sessions"


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
    _add_security_options(parser)
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="the only folder the server reads and writes: scenario paths, the structure files "
        "they name and state files must lie under DIR, and relative paths start there "
        f"(default: ./{DEFAULT_ROOT}, created)",
    )
    _add_limit_options(parser)
    add_limit_option(parser)
    parser.add_argument(
        "--rigid-factory",
        metavar="MODULE:NAME",
        help=argparse.SUPPRESS,  # e.g. toy_side:ToySide.from_scenario (tests/toy_side.py) for tests and benchmarks
    )
    parser.set_defaults(handler=run)
    return parser


def _add_security_options(parser: argparse.ArgumentParser) -> None:
    """--allow-remote, CURVE keys and --insecure."""
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


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    """Barrier timeout and the bounds of messages, sessions, queues and requests."""
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
    parser.add_argument("--max-sessions", type=int, default=256, metavar="N",
                        help="sessions held at once, each in its own process (default %(default)s)")
    parser.add_argument(
        "--build-timeout", type=float, default=DEFAULT_BUILD_TIMEOUT, metavar="S",
        help="seconds a session's model build may take before it is stopped (default %(default)s)")
    parser.add_argument(
        "--session-memory", type=int, default=None, metavar="BYTES",
        help="address space a session's process may add beyond the loaded core (default: "
        "unbounded); a session beyond it fails alone with limit_exceeded")
    parser.add_argument(
        "--send-hwm", type=int, default=DEFAULT_SEND_HWM, metavar="N",
        help="unread replies queued per client; a client that stops reading loses replies "
        "beyond it instead of growing the server (default %(default)s)")
    parser.add_argument(
        "--send-bytes", type=int, default=DEFAULT_SEND_BYTES, metavar="BYTES",
        help="bytes of unread replies queued per client (beyond them, as beyond --send-hwm, "
        "its replies are dropped; default %(default)s)")
    parser.add_argument(
        "--request-timeout", type=float, default=None, metavar="S",
        help="seconds one request to a session may run before the session's process is "
        "stopped and the session lost (default: unbounded)")
    parser.add_argument(
        "--session-idle", type=float, default=DEFAULT_SESSION_IDLE, metavar="S",
        help="seconds a session may go without any request (heartbeats count) before it is "
        "closed and its process ends (default %(default)s)")


def _load_factory(spec: str):
    module_name, _, attr = spec.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _generate_keys(folder: str) -> int:
    from rbcosim.service import generate_keys

    keys = generate_keys(folder)
    for name, (public, secret) in keys.items():
        print(f"{name}: public {public}, secret {secret}")
    print(
        "start the server with --curve-secret server.key_secret --curve-clients DIR_WITH_client.key; "
        "give clients server.key and their own .key_secret"
    )
    return 0


def _checked(args: argparse.Namespace) -> tuple[Path, RunLimits]:
    """The root folder (created when it is the default) and run limits; ServeError for a bad
    option."""
    if (args.curve_secret is None) != (args.curve_clients is None):
        raise ServeError("--curve-secret and --curve-clients go together")
    for option, value in (("--send-hwm", args.send_hwm), ("--send-bytes", args.send_bytes),
                          ("--request-timeout", args.request_timeout),
                          ("--session-idle", args.session_idle),
                          ("--build-timeout", args.build_timeout),
                          ("--session-memory", args.session_memory)):
        if value is not None and not value > 0:
            raise ServeError(f"{option} {value}: must be positive")
    root = Path(args.root if args.root is not None else DEFAULT_ROOT)
    if args.root is None:
        root.mkdir(exist_ok=True)
    elif not root.is_dir():
        raise ServeError(f"--root {args.root}: not a folder")
    return root, RunLimits.from_items(args.limits)


def run(args: argparse.Namespace) -> int:
    if args.generate_keys:
        return _generate_keys(args.generate_keys)
    root, run_limits = _checked(args)
    quiet_blas_threads()  # this process, its fork server and the session workers
    with loading():  # the imports, the service and its socket
        # The session workers' fork server loads the core while this process imports the
        # service and binds (if it cannot start now, the workers try again and say why).
        from rbcosim.service import fork_server

        with contextlib.suppress(OSError):
            fork_server.start()
        server, service, curve = _server(args, root, run_limits)
    _serve(server, f"rbcosim {__version__}, protocol {PROTOCOL_VERSION}"
           + (", CURVE on" if curve else "")
           + f", root {service.root} (scenario and state paths are relative to it)")
    return 0


def _server(args: argparse.Namespace, root: Path, run_limits: RunLimits):
    """The bound server, its service and CURVE settings; ServeError for a bad address."""
    import zmq

    from rbcosim.service import CurveConfig, Limits, Server, Service

    curve = CurveConfig(args.curve_secret, args.curve_clients) if args.curve_secret else None
    service = Service(
        rigid_factory=_load_factory(args.rigid_factory) if args.rigid_factory else None,
        barrier_timeout=args.barrier_timeout,
        root=root,
        max_sessions=args.max_sessions,
        limits=Limits(max_message_size=args.max_message_size),
        run_limits=run_limits,
    )
    try:
        server = Server(
            service, args.bind, allow_remote=args.allow_remote, curve=curve, insecure=args.insecure,
            send_hwm=args.send_hwm, send_bytes=args.send_bytes, build_timeout=args.build_timeout,
            session_memory=args.session_memory, request_timeout=args.request_timeout,
            session_idle=args.session_idle,
        )
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    except zmq.ZMQError as exc:  # address in use, bad endpoint
        raise ServeError(f"cannot bind {args.bind}: {exc}") from None
    return server, service, curve


def _serve(server, banner: str) -> None:
    """Announce the server once a create_session starts its worker at once (requests meanwhile
    wait in the bound socket: the first session then takes what later ones take), and serve
    until SIGTERM or Ctrl-C."""
    print("loading the core for the session workers", file=sys.stderr, flush=True)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: server.stop()) if in_main else None
    try:
        server.workers.wait_ready()
        print(f"serving on {server.address}", flush=True)
        error = server.workers.fork_error
        print("sessions ready" if error is None else f"sessions unavailable: {error}", flush=True)
        print(banner, file=sys.stderr, flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()  # a second SIGTERM meanwhile only asks again: the workers' folder goes
        if in_main:
            signal.signal(signal.SIGTERM, previous)


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
