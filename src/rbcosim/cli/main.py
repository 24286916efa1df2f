"""`rbcosim` entry point: dispatches to one module per subcommand.

Exit codes: 0 ok, 1 failure (bad scenario, failed run), 2 usage error.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import sys
import warnings

from rbcosim import PROTOCOL_VERSION, __version__
from rbcosim.errors import RbcosimError
from rbcosim.gc_pause import program_run

#: Subcommand name -> module under rbcosim.cli; each module has add_parser(sub) and run(args).
SUBCOMMANDS = {
    "run": "rbcosim.cli.run_cmd",
    "check": "rbcosim.cli.check_cmd",
    "export-fmu": "rbcosim.cli.export_fmu_cmd",
    "export-ssp": "rbcosim.cli.export_ssp_cmd",
    "serve": "rbcosim.cli.serve_cmd",
    "cosim": "rbcosim.cli.cosim_cmd",
    "flex": "rbcosim.cli.flex_cmd",
    "convert-structure": "rbcosim.cli.convert_cmd",
    "export-body": "rbcosim.cli.export_body_cmd",
    "sweep": "rbcosim.cli.sweep_cmd",
    "plot": "rbcosim.cli.plot_cmd",
    "animate": "rbcosim.cli.animate_cmd",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `only` (when the command line names it: its
    module alone is imported, so that e.g. `rbcosim serve` starts without the solvers)."""
    parser = argparse.ArgumentParser(
        prog="rbcosim",
        description="Rigid multibody solver and co-simulation server for rigid-flexible coupling.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"rbcosim {__version__} (protocol {PROTOCOL_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in SUBCOMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module_name).add_parser(sub)
    parser.commands = sub.choices  # name -> the subcommand's parser
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the program's run (not a caller's): what it loads is frozen
        program_run()
    words = sys.argv[1:] if argv is None else argv
    first = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(first if first in SUBCOMMANDS else None)
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            _refuse_unknown(parser, args, extra)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    before = warnings.formatwarning
    warnings.formatwarning = _one_line_warning
    try:
        return int(args.handler(args) or 0)
    except RbcosimError as exc:
        print(f"rbcosim {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`rbcosim check x | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, KeyError, OSError) as exc:
        # Bad values that reached the solvers (inputs, files): a sentence, not a traceback.
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"rbcosim {args.command}: error: {message}", file=sys.stderr)
        return 1
    except MemoryError as exc:
        print(f"rbcosim {args.command}: error: out of memory ({exc}); `rbcosim check` estimates "
              "what a scenario needs and `--limit memory_bytes=N` bounds it", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = before
        if argv is None:  # the program's run (not a caller's): the process ends next, and
            gc.freeze()  # its objects need no collection on the way out (~50 ms with scipy)


def _refuse_unknown(parser: argparse.ArgumentParser, args, extra: list[str]) -> None:
    """Exit 2 as argparse does for unrecognized arguments, naming the closest option of the
    command for a mistyped one (`--tend`: did you mean --t-end?)."""
    command = parser.commands.get(getattr(args, "command", None) or "", parser)
    options = [o for a in command._actions for o in a.option_strings]
    for word in extra:
        close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.6)
        if word.startswith("-") and close:
            command.error(f"unrecognized option {word} (did you mean {close[0]}?)")
    command.error(f"unrecognized arguments: {' '.join(extra)}")


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the CLI prints it: `warning: <Category>: message`, no source path."""
    return f"warning: {category.__name__}: {message}\n"


if __name__ == "__main__":
    sys.exit(main())
