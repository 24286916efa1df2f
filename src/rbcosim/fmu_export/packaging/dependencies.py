"""``documentation/externalDependencies.txt`` of the FMUs that need something outside the FMU
(FMI 3 requires it wherever ``needsExecutionTool="true"``; the FMI 2 FMUs carry it too)."""

from __future__ import annotations

import sys

from rbcosim import __version__

#: The file's name inside the FMU's documentation/ folder.
EXTERNAL_DEPENDENCIES = "externalDependencies.txt"

_PYTHON = f"""\
This FMU runs Python code. Its binary (pythonfmu's wrapper, behind rbcosim's guard) embeds or
joins a Python interpreter and imports rbcosim {__version__} from it, with numpy, scipy, pyzmq
and msgpack; it was exported with Python {sys.version_info.major}.{sys.version_info.minor}.

- A Python host (FMPy, libcosimpy, PyFMI): install rbcosim in that Python
  (pip install 'rbcosim[fmu]').
- Any other host (a C/C++ master, OMSimulator, fmusim): libpython must be loadable and the
  interpreter must find rbcosim. Start the host with the environment that Python prints:
      eval "$(/path/to/python -m rbcosim.fmu_export.runtime.host_env)"
  (LD_PRELOAD = its shared libpython, PYTHONHOME, PYTHONPATH).
"""

_SERVER = """\
- A reachable rbcosim server (rbcosim serve) at the parameter server.address.
"""

_NATIVE_SERVER = f"""\
This native FMU is a client of an rbcosim server (rbcosim {__version__}); it needs no Python
in the host, but:

- libzmq (libzmq5) on the host's library path (msgpack-c is linked in);
- with server.address empty (the default): the program rbcosim on PATH (or
  RBCOSIM_SERVE_PROGRAM), which the FMU starts as `rbcosim serve` and stops with the
  instance (it also ends when the host process ends); else a server reachable at
  server.address.
"""


def python_fmu_dependencies(mode: str) -> str:
    """The text for a pythonfmu-based FMU of ``mode`` (``embedded`` or ``remote``)."""
    return _PYTHON + (_SERVER if mode == "remote" else "")


def native_server_dependencies() -> str:
    """The text for a native server-mode FMU (``--native --address``)."""
    return _NATIVE_SERVER
