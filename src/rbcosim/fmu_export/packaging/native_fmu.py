"""`rbcosim export-fmu --native`: an FMI 2.0 or 3.0 co-simulation FMU whose binary is C, compiled
here with the system compiler, in one of two forms:

- self-contained (the default, ``self_contained=True`` / no ``--address``): the binary holds the
  rigid core of librbcosim (``rbcosim/librbcosim/rbc_array.h`` and ``rigid/``, shipped as package
  data) and the FMU's own backend ``fmu/native/fmu_local.c``; the model (the rigid system's
  arrays, in the member order of the C struct, and its initial state) is
  ``resources/model.bin`` (``model_bytes``). It needs neither Python, nor a server, nor
  rbcosim, nor libzmq on the machine that runs it. The scenario cannot be rebuilt there, so its
  parameters (scenario keys) are not variables of this FMU; the interface points' inputs and
  outputs, their added mass, the joints' gaps and every body's state (``rod1.x`` ..
  ``rod1.wz``, angular velocity in the body frame) are.
- server-client (``--address``): a thin client of `rbcosim serve` (below), where the scenario's
  parameters can be changed per instance.

The server-client binary is fmu/native/*.c (FMI API, state machine, session, FMU states) with the C client
library interfaces/c/*.c and a generated table of the variables (``native_files``). It links
msgpack-c statically when its static library is installed and libzmq dynamically (Debian's
libzmq.a is not position-independent code, so it cannot go into a shared object). The FMU
carries the same C sources under sources/ (listed in modelDescription's SourceFiles) and the
scenario with its data files under resources/scenario/.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import uuid
import zipfile
from dataclasses import replace
from pathlib import Path

from rbcosim.errors import RbcosimError, ScenarioError
from rbcosim.fmu_export.packaging.body_points import point_name, with_body_points
from rbcosim.fmu_export.packaging.dependencies import (
    EXTERNAL_DEPENDENCIES,
    native_server_dependencies,
)
from rbcosim.fmu_export.packaging.native_files import (
    build_description,
    fmi2_model_description,
    fmi3_model_description,
    model_table_c,
)
from rbcosim.fmu_export.packaging.python_fmu import (
    ExportOptions,
    describe,
    model_identifier,
    referenced_files,
)
from rbcosim.fmu_export.runtime.actuators import actuator_specs, unit_wrench
from rbcosim.fmu_export.table import (
    WRENCH_COMPONENTS,
    WRENCH_DERIVATIVES,
    Variable,
    VariableTable,
    variable_row,
)
from rbcosim.fmu_export.table_rows import acceleration_rows, added_mass_rows
from rbcosim.model_file import array_records

_CHECKOUT = Path(__file__).resolve().parents[4]
NATIVE_SOURCES = _CHECKOUT / "fmu" / "native"
CLIENT_SOURCES = _CHECKOUT / "interfaces" / "c"
#: The C core's sources (package data): rbc_array.h and the rigid maximal route.
CORE_SOURCES = Path(__file__).resolve().parents[2] / "librbcosim"
#: Table kinds a self-contained FMU cannot serve (they need the scenario rebuilt or a server).
SERVER_ONLY_KINDS = ("parameter", "vector_parameter", "server")
#: The FMI headers the binaries are compiled with; not shipped in sources/ (FMI 3: the
#: importer brings its own).
FMI_HEADERS = NATIVE_SOURCES / "include"
#: Libraries placed next to the binary are found there (the FMU's binaries/<platform>/).
RPATH_ORIGIN = "-Wl,-rpath,$ORIGIN"
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
    self_contained: bool = False,
    inputs: tuple[str, ...] = (),
) -> Path:
    """Build ``output`` (``.fmu``): scenario's rigid side as a native FMI ``fmi_version``
    (2 or 3) co-simulation FMU; ``self_contained``: the core and the model inside (module
    docstring; ``address`` and ``timeout`` then do not apply), else a client of a server.

    ``address`` is the default of the parameter ``server.address`` (empty: the FMU starts a
    local ``rbcosim serve`` itself), ``timeout`` the default of ``server.timeout`` (s, per
    reply). Raises ScenarioError for a scenario that does not build, NativeBuildError when
    the binary cannot be compiled. ``inputs``: fnmatch patterns of the joints that get
    actuator inputs (self-contained only; rbcosim.fmu_export.runtime.actuators).
    """
    from rbcosim.cosim.rigid_side import RigidSide

    if self_contained:
        return export_self_contained_fmu(scenario, output, fmi_version=fmi_version, name=name,
                                         inputs=inputs)
    if inputs:
        raise ValueError("--inputs (joint actuators) needs the rigid solver in the FMU: not "
                         "with --address (the session protocol carries point wrenches only)")
    scenario, output = _checked_request(fmi_version, scenario, output,
                                        CLIENT_SOURCES / "rbcosim_client.c")
    identifier = model_identifier(scenario, name)
    side = RigidSide.from_scenario(scenario)
    options = ExportOptions(mode="remote", address=address, timeout=timeout, name=identifier)
    table, config = describe(scenario, options, side=side)
    table = with_exchange(table, side)
    bodies = tuple(side.scenario.model.body_names)
    config["description"] = config["description"].replace("(remote)", "(native)")
    config["needs_server"] = True
    guid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"rbcosim-native:{identifier}:{table.to_json()}"))

    with tempfile.TemporaryDirectory(prefix="rbcosim_native_") as tmp:
        root = Path(tmp) / "fmu"
        sources = root / "sources"
        sources.mkdir(parents=True)
        _copy_native_sources(sources, fmi_version, backend="fmu_session.c")
        for path in sorted(CLIENT_SOURCES.glob("*.[ch]")):
            shutil.copy2(path, sources / path.name)
        documentation = root / "documentation"
        documentation.mkdir()
        (documentation / EXTERNAL_DEPENDENCIES).write_text(native_server_dependencies(), "utf-8")
        (sources / "model_table.c").write_text(
            model_table_c(table, config, identifier, guid, body_names=bodies,
                          body_points=tuple(point_name(b) for b in bodies),
                          model=side.scenario.model), "utf-8"
        )
        c_files = sorted(p.name for p in sources.glob("*.c"))
        (sources / "buildDescription.xml").write_bytes(build_description(identifier, c_files))
        _binary_and_description(root, sources, c_files, compile_binary, fmi_version,
                                (table, config, identifier, guid))
        bundle = root / "resources" / "scenario"
        bundle.mkdir(parents=True)
        (bundle / scenario.name).write_text(
            with_body_points(scenario.read_text("utf-8"), scenario.parent, bodies), "utf-8")
        for relative in referenced_files(scenario):
            (bundle / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(scenario.parent / relative, bundle / relative)
        _zip_folder(root, output)
    return output


def _binary_and_description(root: Path, sources: Path, c_files: list[str], compile_fn,
                            fmi_version: int, described: tuple) -> None:
    """Compile `c_files` of `sources` with `compile_fn` into the FMU folder `root`'s binary
    and write its modelDescription.xml; `described` = (table, config, identifier, guid)."""
    table, config, identifier, guid = described
    binary = root / "binaries" / PLATFORM[fmi_version] / f"{identifier}.so"
    binary.parent.mkdir(parents=True)
    compile_fn(sources, c_files, binary)
    (root / "modelDescription.xml").write_bytes(
        fmi2_model_description(table, config, identifier, guid, c_files)
        if fmi_version == 2
        else fmi3_model_description(table, config, identifier, guid)
    )


def _checked_request(fmi_version, scenario, output, sources: Path) -> tuple[Path, Path]:
    """(scenario, output) as absolute paths once the FMI version, the platform, the C sources
    (`sources` and the FMI layer) and the output's suffix are fine; else ValueError or
    NativeBuildError saying which."""
    if fmi_version not in PLATFORM:
        raise ValueError(f"fmi_version must be 2 or 3, got {fmi_version!r}")
    if sys.platform != "linux":
        raise NativeBuildError(f"--native builds Linux FMUs only, not on {sys.platform}")
    for needed in (NATIVE_SOURCES / "fmu_core.c", sources):
        if not needed.is_file():
            raise NativeBuildError(f"--native compiles the C sources of a source checkout; "
                                   f"{needed} is missing")
    output = Path(output).resolve()
    if output.suffix != ".fmu":
        raise ValueError(f"output must end in .fmu: {output}")
    return Path(scenario).resolve(), output


def export_self_contained_fmu(scenario: str | Path, output: str | Path, *, fmi_version: int = 2,
                              name: str | None = None, inputs: tuple[str, ...] = ()) -> Path:
    """The self-contained native FMU of ``scenario``'s rigid side (module docstring), with
    actuator inputs for the joints matching ``inputs``."""
    from rbcosim.cosim.rigid_side import RigidSide
    from rbcosim.fmu_export.runtime.core import build_embedded

    scenario, output = _checked_request(fmi_version, scenario, output,
                                        CORE_SOURCES / "rigid" / "macro.c")
    identifier = model_identifier(scenario, name)
    side = RigidSide.from_scenario(scenario)
    try:
        if side.scenario.solver.formulation == "minimal":
            raise ValueError("solver.formulation = \"minimal\": the native FMU's C core steps "
                             "the maximal formulation; use solver.formulation = \"maximal\"")
        specs = actuator_specs(side.scenario, inputs, float(side.time))
        if any("driver" in spec for spec in specs):
            raise ValueError("--inputs: driver targets are inputs of the Python FMU only (the "
                             "native FMU's C core has no slot for them)")
    except ValueError as exc:
        raise ScenarioError(f"{scenario}: cannot export as FMU: {exc}") from exc
    table, config = describe(scenario, ExportOptions(mode="remote", name=identifier), side=side)
    table = local_table(with_exchange(table, side), scenario, identifier, side, specs)
    # the model with the actuators' own points after the FMU's (side: the table's)
    actuated = build_embedded(scenario, {}, specs) if specs else side
    by_name = {v.name: v.vr for v in table.variables}
    actuations = tuple((by_name[spec["inputs"][0]], actuated.points.index(p["name"]),
                        unit_wrench(spec, p).tolist())
                       for spec in specs for p in spec["points"])
    config["description"] = config["description"].replace("(remote)", "(native, self-contained)")
    config["needs_server"] = False
    guid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"rbcosim-local:{identifier}:{table.to_json()}"))
    with tempfile.TemporaryDirectory(prefix="rbcosim_native_") as tmp:
        root = Path(tmp) / "fmu"
        sources = root / "sources"
        sources.mkdir(parents=True)
        _copy_native_sources(sources, fmi_version, backend="fmu_local.c")
        core = sources / "librbcosim"
        (core / "rigid").mkdir(parents=True)
        for file_name in ("rbc_array.h", "rbc_vec.h", "model_file.h", "model_file.c"):
            shutil.copy2(CORE_SOURCES / file_name, core / file_name)
        for path in sorted((CORE_SOURCES / "rigid").glob("*.[ch]")):
            shutil.copy2(path, core / "rigid" / path.name)
        (sources / "model_table.c").write_text(
            model_table_c(table, config, identifier, guid,
                          body_names=side.scenario.model.body_names, actuations=actuations,
                          model=side.scenario.model),
            "utf-8")
        c_files = sorted(p.relative_to(sources).as_posix() for p in sources.rglob("*.c"))
        (sources / "buildDescription.xml").write_bytes(
            build_description(identifier, c_files, libraries=("m",), language="C11"))
        _binary_and_description(root, sources, c_files, compile_local_binary, fmi_version,
                                (table, config, identifier, guid))
        resources = root / "resources"
        resources.mkdir()
        (resources / "model.bin").write_bytes(model_bytes(actuated))
        _zip_folder(root, output)
    return output


def _copy_native_sources(sources: Path, fmi_version: int, backend: str) -> None:
    """Copy fmu/native's C files into `sources`: the FMI `fmi_version` API, the common core
    and one `backend` (``fmu_session.c``: a client of a server; ``fmu_local.c``:
    self-contained), not the other one."""
    backends = {"fmu_session.c", "fmu_local.c"}
    skip = {f"fmi{5 - fmi_version}_native.c"} | (backends - {backend})
    for path in sorted(NATIVE_SOURCES.glob("*.[ch]")):
        if path.name not in skip:
            shutil.copy2(path, sources / path.name)


def _zip_folder(root: Path, output: Path) -> None:
    """The FMU file `output`: every file under `root`, by its path relative to it."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as fmu:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                fmu.write(path, path.relative_to(root).as_posix())


def local_table(table: VariableTable, scenario: Path, identifier: str, side,
                specs=()) -> VariableTable:
    """The server-client table without what needs the scenario rebuilt or a server (scenario
    parameters, server settings), plus the actuator inputs of ``specs`` (the embedded FMU's
    names), numbered from 0 again; `side` is the scenario's RigidSide, built once."""
    kept = [v for v in table.variables if v.kind not in SERVER_ONLY_KINDS]
    if specs:
        embedded, _ = describe(scenario, ExportOptions(mode="embedded", name=identifier,
                                                       inputs=tuple(s["joint"] for s in specs)),
                               side=side)
        kept += embedded.by_kind("actuator")
    variables = tuple(replace(v, vr=vr) for vr, v in enumerate(kept))
    return replace(table, variables=variables)


def model_bytes(side) -> bytes:
    """resources/model.bin of a self-contained FMU (a model file, :mod:`rbcosim.model_file`;
    the header is fmu/native/fmu_local.c's):
    the integrator settings, the rigid system's arrays in the member order of its C struct
    (the handle's leaves: MaximalTables, Workspace), and the initial state vector."""
    from rbcosim.maximal.integrators import SDIRK2

    sim = side.sim
    integrator = sim.integrator
    leaves = [*sim.system.handle.leaves, sim.state.vector]
    sdirk2 = isinstance(integrator, SDIRK2)
    out = [b"RBCMODL1", struct.pack("=Iiiiqqdd", len(leaves), int(sdirk2),
                                    int(bool(integrator.project)), 0,
                                    int(side.scenario.cosim.micro_steps),
                                    int(getattr(integrator, "max_newton", 0)),
                                    float(getattr(integrator, "tol", 0.0)), float(sim.state.t))]
    out.append(array_records(leaves))
    return b"".join(out)


def compile_local_binary(sources: Path, c_files: list[str], binary: Path) -> None:
    """Compile and link the self-contained FMU's shared object (``CC``, else cc or gcc): the
    core's flags (setup.py: C11, no FMA contraction, so its arithmetic is the Python
    package's), libm only."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise NativeBuildError("no C compiler: install gcc (or set CC) to export --native")
    command = [cc, "-std=c11", "-O2", "-ffp-contract=off", "-fPIC", "-shared",
               "-fvisibility=hidden", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra",
               "-I", str(sources), "-I", str(FMI_HEADERS), "-o", str(binary),
               *(str(sources / f) for f in c_files), "-lm", "-Wl,-z,defs", RPATH_ORIGIN]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NativeBuildError(
            f"compiling the native FMU failed ({' '.join(command)}):\n{done.stderr[-4000:]}")


def with_exchange(table: VariableTable, side) -> VariableTable:
    """The remote table plus, numbered after it (so that every other variable keeps the Python
    remote FMU's value reference), embedded mode's exchange variables that the session protocol
    carries: each point's accelerations ``P.ax`` .. ``P.alz`` (outputs; start: the scenario's
    initial accelerations), the first and second time derivatives of its wrench ``P.dfx`` ..
    ``P.d2mz`` (inputs) and its added mass ``P.added_mass[i,j]`` with ``P.added_mass_frame``
    (parameters)."""
    rows = []
    for point, values in zip(side.point_names, side.point_accelerations()):
        rows += acceleration_rows(point, values, "at the session's current time")
        for index, (comp, unit, text) in enumerate(WRENCH_COMPONENTS):
            for kind, prefix, suffix, what in WRENCH_DERIVATIVES[:2]:
                rows.append(variable_row(f"{point}.{prefix}{comp}", kind, "input", 0.0,
                                         unit + suffix, f"{point}: {what} {text}", point, index))
        rows += added_mass_rows(point)
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
               "-Wall", "-Wextra", "-I", str(sources), "-I", str(FMI_HEADERS), "-o", str(binary),
               *(str(sources / f) for f in c_files), *msgpack_link, "-lzmq", "-lm",
               "-Wl,-z,defs", "-Wl,--exclude-libs,ALL", RPATH_ORIGIN]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NativeBuildError(
            f"compiling the native FMU failed ({' '.join(command)}):\n{done.stderr[-4000:]}"
            "\n(needs libzmq3-dev and libmsgpack-dev)"
        )
