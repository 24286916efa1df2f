"""Build the wrapper shim (``wrapper_shim.c``) into a built FMU: Linux x86-64.

The shim takes the place of pythonfmu's wrapper binary ``<id>.so``, which is renamed
``<id>.pythonfmu.so``. It guards every call (null or freed instances are answered with Error
without reaching the wrapper; a refused call is Error, not Fatal) and, with derivatives,
answers the derivative calls. With derivatives the Windows binary is dropped (the
modelDescription then declares derivatives the Windows wrapper would refuse); without, the
Windows binary stays pythonfmu's own, unguarded. pythonfmu3 also ships its wrapper's C++
sources (a CMake project needing Python's headers) as the FMU's sources/: they no longer build
the FMU's binary and have no buildDescription.xml, so they are left out.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import zipfile
from importlib import resources as importlib_resources
from pathlib import Path

#: The binaries' folders inside an FMU, by FMI version: (Linux x86-64, Windows x64).
_PLATFORMS = {2: ("linux64", "win64"), 3: ("x86_64-linux", "x86_64-windows")}
#: Functions the shim answers itself (always, and with derivatives); every other function of
#: the FMI headers is forwarded.
_OWN = {2: {"fmi2Instantiate", "fmi2FreeInstance"},
        3: {"fmi3InstantiateCoSimulation", "fmi3FreeInstance"}}
_OWN_DERIVATIVES = {
    2: {"fmi2GetDirectionalDerivative"},
    3: {"fmi3GetDirectionalDerivative", "fmi3GetAdjointDerivative"},
}
#: Forwarded functions that take no instance: jumped to without the guard.
_PLAIN = re.compile(r"fmi[23](GetVersion|GetTypesPlatform|Instantiate\w*)")


def compiler() -> str | None:
    """The C compiler the shim is built with (cc, gcc or clang on PATH), or None."""
    return next((shutil.which(c) for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def _headers() -> Path:
    """FMPy's copy of the FMI 2 and FMI 3 headers (FMPy is in rbcosim's ``fmu`` extra)."""
    spec = importlib.util.find_spec("fmpy")
    if spec is None or spec.origin is None:
        raise RuntimeError("the wrapper shim needs the FMI headers that ship with fmpy; "
                           "install rbcosim[fmu]")
    return Path(spec.origin).parent / "c-code"


def build_shim(fmi_version: int, output: Path, work: Path, derivatives: bool) -> None:
    """Compile the shim for FMI ``fmi_version`` into ``output`` (a shared library)."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("exporting a Python FMU needs a C compiler (cc, gcc or clang) to "
                           "build the guard in front of pythonfmu's binary; none is on PATH")
    headers = _headers()
    declared = re.findall(
        rf"FMI{fmi_version}_Export\s+fmi{fmi_version}\w+TYPE\s+(fmi{fmi_version}\w+)\s*;",
        (headers / f"fmi{fmi_version}Functions.h").read_text("utf-8"),
    )
    own = _OWN[fmi_version] | (_OWN_DERIVATIVES[fmi_version] if derivatives else set())
    forwarded = [name for name in declared if name not in own]

    def listing(macro: str, names: list[str]) -> str:
        return f"#define {macro}(X) " + " ".join(f"X({name})" for name in names) + "\n"

    work.mkdir(parents=True, exist_ok=True)
    (work / "forwarded.h").write_text(
        listing("ALL", declared)
        + listing("FORWARDED_PLAIN", [n for n in forwarded if _PLAIN.fullmatch(n)])
        + listing("FORWARDED_GUARDED", [n for n in forwarded if not _PLAIN.fullmatch(n)]),
        "utf-8",
    )
    source = work / "wrapper_shim.c"
    source.write_text(
        (importlib_resources.files("rbcosim.fmu_export.packaging") / "wrapper_shim.c").read_text("utf-8"),
        "utf-8",
    )
    command = [cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", f"-DRBC_FMI={fmi_version}",
               '-DFORWARDED_H="forwarded.h"', f"-I{work}", f"-I{headers}", str(source),
               "-o", str(output), "-ldl", "-lpthread"]
    if derivatives:
        command.insert(-4, "-DRBC_DERIVATIVES")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building the wrapper shim failed ({' '.join(command)}):\n"
                           f"{done.stderr}")


def install_shim(
    fmu: Path, fmi_version: int, identifier: str, work: Path, derivatives: bool
) -> None:
    """Rewrite ``fmu`` in place: the shim as the Linux binary, pythonfmu's wrapper next to it
    as ``<identifier>.pythonfmu.so``; with ``derivatives`` no Windows binary; no sources/."""
    linux, windows = _PLATFORMS[fmi_version]
    wrapper = f"binaries/{linux}/{identifier}.so"
    shim = work / f"{identifier}.so"
    build_shim(fmi_version, shim, work / "shim", derivatives)
    rewritten = fmu.with_suffix(".shim.fmu")
    with zipfile.ZipFile(fmu) as source, zipfile.ZipFile(
        rewritten, "w", zipfile.ZIP_DEFLATED
    ) as target:
        for item in source.infolist():
            if derivatives and item.filename.startswith(f"binaries/{windows}/"):
                continue
            if item.filename.startswith("sources/"):  # pythonfmu3's wrapper, see above
                continue
            data = source.read(item)
            if item.filename == wrapper:
                renamed = zipfile.ZipInfo(f"binaries/{linux}/{identifier}.pythonfmu.so",
                                          item.date_time)
                renamed.external_attr = item.external_attr
                target.writestr(renamed, data, zipfile.ZIP_DEFLATED)
                target.write(shim, wrapper)
            else:
                target.writestr(item, data)
    rewritten.replace(fmu)
