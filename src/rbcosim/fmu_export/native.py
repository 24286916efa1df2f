"""`rbcosim export-fmu --native`: an FMI 2.0 or 3.0 co-simulation FMU whose binary is C, compiled
here with the system compiler, a thin client of `rbcosim serve` (no Python in the host).

The binary is fmu/native/*.c (FMI API, state machine, session, FMU states) with the C client
library interfaces/c/*.c and a generated table of the variables (``native_files``). It links
msgpack-c statically when its static library is installed and libzmq dynamically (Debian's
libzmq.a is not position-independent code, so it cannot go into a shared object). The FMU
carries the same C sources under sources/ (listed in modelDescription's SourceFiles) and the
scenario with its data files under resources/scenario/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import zipfile
from dataclasses import replace
from pathlib import Path

from rbcosim.errors import RbcosimError
from rbcosim.fmu_export.build import ExportOptions, describe, model_identifier, referenced_files
from rbcosim.fmu_export.native_files import (
    build_description,
    fmi2_model_description,
    fmi3_model_description,
    model_table_c,
)
from rbcosim.fmu_export.table import (
    ACCELERATION_COMPONENTS,
    ADDED_MASS_UNITS,
    WRENCH_COMPONENTS,
    WRENCH_DERIVATIVES,
    Variable,
    VariableTable,
    variable_row,
)

_CHECKOUT = Path(__file__).resolve().parents[3]
NATIVE_SOURCES = _CHECKOUT / "fmu" / "native"
CLIENT_SOURCES = _CHECKOUT / "interfaces" / "c"
#: The platform folder under binaries/, by FMI version.
PLATFORM = {2: "linux64", 3: "x86_64-linux"}


class NativeBuildError(RbcosimError):
    """The native FMU could not be built (no compiler, a missing library, a compile error)."""


def export_native_fmu(
    scenario: str | Path,
    output: str | Path,
    *,
    fmi_version: int = 2,
    address: str = "",
    timeout: float = 30.0,
    name: str | None = None,
) -> Path:
    """Build ``output`` (``.fmu``): scenario's rigid side as a native FMI ``fmi_version``
    (2 or 3) co-simulation FMU.

    ``address`` is the default of the parameter ``server.address`` (empty: the FMU starts a
    local ``rbcosim serve`` itself), ``timeout`` the default of ``server.timeout`` (s, per
    reply). Raises ScenarioError for a scenario that does not build, NativeBuildError when
    the binary cannot be compiled.
    """
    from rbcosim.cosim.rigid_side import RigidSide

    if fmi_version not in PLATFORM:
        raise ValueError(f"fmi_version must be 2 or 3, got {fmi_version!r}")
    if sys.platform != "linux":
        raise NativeBuildError(f"--native builds Linux FMUs only, not on {sys.platform}")
    for needed in (NATIVE_SOURCES / "fmu_core.c", CLIENT_SOURCES / "rbcosim_client.c"):
        if not needed.is_file():
            raise NativeBuildError(f"--native compiles the C sources of a source checkout; "
                                   f"{needed} is missing")
    scenario = Path(scenario).resolve()
    output = Path(output).resolve()
    if output.suffix != ".fmu":
        raise ValueError(f"output must end in .fmu: {output}")
    identifier = model_identifier(scenario, name)
    side = RigidSide.from_scenario(scenario)
    options = ExportOptions(mode="remote", address=address, timeout=timeout, name=identifier)
    table, config = describe(scenario, options, side=side)
    table = with_exchange(table, side)
    config["description"] = config["description"].replace("(remote)", "(native)")
    guid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"rbcosim-native:{identifier}:{table.to_json()}"))

    with tempfile.TemporaryDirectory(prefix="rbcosim_native_") as tmp:
        root = Path(tmp) / "fmu"
        sources = root / "sources"
        sources.mkdir(parents=True)
        other = f"fmi{5 - fmi_version}_native.c"  # the other FMI version's API
        for folder, pattern in ((NATIVE_SOURCES, "*.[ch]"),
                                (NATIVE_SOURCES / "include", f"fmi{fmi_version}*.h"),
                                (CLIENT_SOURCES, "*.[ch]")):
            for path in sorted(folder.glob(pattern)):
                if path.name != other:
                    shutil.copy2(path, sources / path.name)
        shutil.copy2(NATIVE_SOURCES / "include" / "LICENSE.txt", sources / "LICENSE_FMI.txt")
        (sources / "model_table.c").write_text(
            model_table_c(table, config, identifier, guid), "utf-8"
        )
        c_files = sorted(p.name for p in sources.glob("*.c"))
        (sources / "buildDescription.xml").write_bytes(build_description(identifier, c_files))
        binary = root / "binaries" / PLATFORM[fmi_version] / f"{identifier}.so"
        binary.parent.mkdir(parents=True)
        compile_binary(sources, c_files, binary)
        (root / "modelDescription.xml").write_bytes(
            fmi2_model_description(table, config, identifier, guid, c_files)
            if fmi_version == 2
            else fmi3_model_description(table, config, identifier, guid)
        )
        bundle = root / "resources" / "scenario"
        bundle.mkdir(parents=True)
        shutil.copy2(scenario, bundle / scenario.name)
        for relative in referenced_files(scenario):
            (bundle / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(scenario.parent / relative, bundle / relative)
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as fmu:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    fmu.write(path, path.relative_to(root).as_posix())
    return output


def with_exchange(table: VariableTable, side) -> VariableTable:
    """The remote table plus, numbered after it (so that every other variable keeps the Python
    remote FMU's value reference), embedded mode's exchange variables that the session protocol
    carries: each point's accelerations ``P.ax`` .. ``P.alz`` (outputs; start: the scenario's
    initial accelerations), the first and second time derivatives of its wrench ``P.dfx`` ..
    ``P.d2mz`` (inputs) and its added mass ``P.added_mass[i,j]`` with ``P.added_mass_frame``
    (parameters)."""
    rows = []
    for point, values in zip(side.point_names, side.point_accelerations()):
        for index, (comp, unit, text) in enumerate(ACCELERATION_COMPONENTS):
            rows.append(variable_row(f"{point}.{comp}", "acceleration", "output",
                                     float(values[index]), unit,
                                     f"{point}: {text}, at the session's current time", point,
                                     index))
        for index, (comp, unit, text) in enumerate(WRENCH_COMPONENTS):
            for kind, prefix, suffix, what in WRENCH_DERIVATIVES[:2]:
                rows.append(variable_row(f"{point}.{prefix}{comp}", kind, "input", 0.0,
                                         unit + suffix, f"{point}: {what} {text}", point, index))
        for i in range(6):
            for j in range(6):
                rows.append(variable_row(
                    f"{point}.added_mass[{i + 1},{j + 1}]", "added_mass", "parameter", 0.0,
                    ADDED_MASS_UNITS[i // 3][j // 3],
                    f"{point}: flexible side's added mass on [a; alpha], row {i + 1}, column "
                    f"{j + 1}, in the axes of {point}.added_mass_frame; the wrench inputs then "
                    "exclude its part", point, 6 * i + j, variability="fixed"))
        rows.append(variable_row(
            f"{point}.added_mass_frame", "added_mass_frame", "parameter", "point", None,
            f"{point}: axes of {point}.added_mass: 'point' (turn with the point) or 'inertial'",
            point, variability="fixed"))
    first = len(table.variables)
    extra = tuple(Variable(vr=first + n, **row) for n, row in enumerate(rows))
    return replace(table, variables=table.variables + extra)


def compile_binary(sources: Path, c_files: list[str], binary: Path) -> None:
    """Compile and link the FMU's shared object (``CC``, else cc or gcc from PATH)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise NativeBuildError("no C compiler: install gcc (or set CC) to export --native")
    msgpack = subprocess.run([cc, "-print-file-name=libmsgpackc.a"], capture_output=True,
                             text=True, check=False).stdout.strip()
    msgpack_link = [msgpack] if os.path.isabs(msgpack) else ["-lmsgpackc"]
    command = [cc, "-std=c99", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
               "-Wall", "-Wextra", "-I", str(sources), "-o", str(binary),
               *(str(sources / f) for f in c_files), *msgpack_link, "-lzmq", "-lm",
               "-Wl,-z,defs", "-Wl,--exclude-libs,ALL"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NativeBuildError(
            f"compiling the native FMU failed ({' '.join(command)}):\n{done.stderr[-4000:]}"
            "\n(needs libzmq3-dev and libmsgpack-dev)"
        )
