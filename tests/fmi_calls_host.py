"""fmu/hosts/fmi_calls.c (a plain C host replaying FMI call sequences), built for the tests,
and what it needs to run an FMU: its binary, resources URI and token."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import fmpy
from native_build import native_unavailable

REPO = Path(__file__).resolve().parents[1]


def build_host(folder: Path) -> Path:
    """Compile fmi_calls into ``folder`` (skipped without a C compiler)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        native_unavailable("no C compiler (cc, gcc) is installed")
    exe = folder / "fmi_calls"
    subprocess.run([compiler, "-O1", "-Wall", "-Werror", "-o", str(exe),
                    str(REPO / "fmu" / "hosts" / "fmi_calls.c"),
                    f"-I{REPO / 'fmu' / 'native' / 'include'}", "-ldl"], check=True)
    return exe


def unpack(fmu: Path, folder: Path) -> tuple[list[str], dict[str, int], float]:
    """The host's first arguments (version, binary, resources URI or path, token), the value
    references and the macro step of ``fmu``, unzipped into ``folder``."""
    with zipfile.ZipFile(fmu) as archive:
        archive.extractall(folder)
    md = fmpy.read_model_description(str(fmu))
    version = md.fmiVersion[0]
    platform = "linux64" if version == "2" else "x86_64-linux"
    binary = folder / "binaries" / platform / f"{md.coSimulation.modelIdentifier}.so"
    refs = {v.name: v.valueReference for v in md.modelVariables}
    # FMI 2 takes the resources folder as a file URI, FMI 3 as a path ending in a separator
    resources = (folder / "resources").as_uri() if version == "2" else f"{folder / 'resources'}/"
    return ([version, str(binary), resources, md.guid], refs,
            float(md.defaultExperiment.stepSize))


def statuses(stdout: str) -> list[str]:
    """The status of each call the host printed ("-" for void calls)."""
    return [line.split()[-1] for line in stdout.splitlines() if not line.startswith("value ")]


def values(stdout: str) -> dict[int, float]:
    """The values the host's get calls printed, by value reference (the last of each)."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("value "):
            _, vr, value = line.split()
            out[int(vr)] = float(value)
    return out
