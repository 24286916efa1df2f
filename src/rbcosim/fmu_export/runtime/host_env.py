"""The environment a host without its own Python (a C or C++ master, OMSimulator's or
libcosim's command line) needs to run rbcosim's Python FMUs, printed as shell lines:

    eval "$(python -m rbcosim.fmu_export.runtime.host_env)"

run with the Python that has rbcosim installed. pythonfmu's binary links against libpython but
cannot choose an interpreter: ``LD_PRELOAD`` loads this one's shared library, ``PYTHONHOME``
points the embedded interpreter at its standard library (it cannot find it from the host's
executable), and ``PYTHONPATH`` lists this environment's whole import path — site-packages and
the folders editable installs add through ``.pth`` files, which ``PYTHONPATH`` does not read."""

from __future__ import annotations

import ast
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path


def host_environment() -> dict[str, str]:
    """LD_PRELOAD, PYTHONHOME and PYTHONPATH for this interpreter (Linux).

    Raises RuntimeError when the interpreter has no shared libpython to load."""
    library = Path(sysconfig.get_config_var("LIBDIR") or "") / (
        sysconfig.get_config_var("INSTSONAME") or "")
    if not library.is_file() or ".so" not in library.name:
        raise RuntimeError(
            f"this Python ({sys.executable}) has no shared libpython ({library} not found): "
            "a host can only load the FMU's interpreter from a Python built with "
            "--enable-shared (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared)")
    # The environment's own import path, without this process's current folder or PYTHONPATH.
    isolated = subprocess.run([sys.executable, "-I", "-c", "import sys; print(repr(sys.path))"],
                              capture_output=True, text=True, check=True).stdout
    path = [p for p in ast.literal_eval(isolated) if p and Path(p).exists()]
    return {"LD_PRELOAD": str(library), "PYTHONHOME": sys.base_prefix,
            "PYTHONPATH": ":".join(path)}


def main() -> int:
    try:
        env = host_environment()
    except RuntimeError as exc:
        print(f"host_env: error: {exc}", file=sys.stderr)
        return 1
    for key, value in env.items():
        print(f"export {key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
