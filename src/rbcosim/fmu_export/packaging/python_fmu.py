"""Export a scenario as an FMI 2.0 or FMI 3.0 co-simulation FMU with pythonfmu / pythonfmu3."""

from __future__ import annotations

import json
import keyword
import re
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass, replace
from importlib import resources as importlib_resources
from pathlib import Path

import numpy as np

from rbcosim import __version__
from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.errors import ScenarioError
from rbcosim.fmu_export.flex_table import build_flex_table
from rbcosim.fmu_export.packaging.body_points import point_name, with_body_points
from rbcosim.fmu_export.packaging.dependencies import EXTERNAL_DEPENDENCIES, python_fmu_dependencies
from rbcosim.fmu_export.packaging.parameter_info import (
    describe_parameter,
    fmu_parameters,
    initial_states,
)
from rbcosim.fmu_export.packaging.shim import install_shim
from rbcosim.fmu_export.runtime.actuators import actuator_specs
from rbcosim.fmu_export.runtime.core import CONFIG_FILE, RESOURCE_DIR, SCENARIO_DIR, TABLE_FILE
from rbcosim.fmu_export.runtime.joint_outputs import JointCoordinates, coordinate_info
from rbcosim.fmu_export.table import VariableTable, numbered_table
from rbcosim.fmu_export.table_rows import (
    actuator_rows,
    body_rows,
    coordinate_rows,
    joint_rows,
    parameter_rows,
    point_rows,
    selected,
    server_rows,
    vector_parameter_rows,
)

#: Identity pose, zero velocity: the flexible node's kinematics when nothing better is known.
_REST_KINEMATICS = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
_SLAVE_SOURCES = {2: "fmi2_slave.py", 3: "fmi3_slave.py"}
#: The slave class's name in the sources; the export renames it to the modelIdentifier, which
#: pythonfmu takes from the class name (modelName, modelIdentifier, binaries' file name).
_SLAVE_CLASS = "RbcosimRigid"
#: Scenario keys of parts outside the FMU (the flexible bodies run in the master's other
#: slaves): not FMU parameters.
_OUTSIDE_KEYS = ("flex_bodies.",)
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

DEFAULT_ADDRESS = "tcp://127.0.0.1:5555"
#: doStep takes whole multiples of the macro step, done as that many macro steps
#: (rbcosim.fmu_export.runtime.lifecycle); the FMU still declares
#: canHandleVariableCommunicationStepSize="false": it cannot take any other size.
VARIABLE_STEPS = True


@dataclass(frozen=True)
class ExportOptions:
    """How to export: FMI version (2 or 3), ``embedded`` or ``remote`` mode, for remote
    mode the defaults of the FMU parameters ``server.address`` and ``server.timeout`` (s),
    the FMU's modelIdentifier (default: the scenario file's stem, see model_identifier),
    ``flex``: export that flexible body of the scenario instead of the rigid side, and
    ``derivatives``: provide directional derivatives (embedded mode, also --flex; needs a C
    compiler, and the FMU then runs on Linux x86-64 only, see shim.py), ``outputs``: fnmatch
    patterns of the body and joint outputs to keep (embedded rigid side; default all),
    ``inputs``: fnmatch patterns of the joints that get actuator inputs (``J.torque``,
    ``J.force``; embedded rigid side; rbcosim.fmu_export.runtime.actuators)."""

    fmi_version: int = 2
    mode: str = "embedded"
    address: str = DEFAULT_ADDRESS
    timeout: float = 30.0
    name: str | None = None
    flex: str | None = None
    derivatives: bool = False
    outputs: tuple[str, ...] | None = None
    inputs: tuple[str, ...] = ()
    #: (variable name, start value) of inputs and parameters whose start is not the
    #: scenario's (export-ssp: the start values of the connected outputs), and of
    #: acceleration outputs (their value in Initialization Mode, see with_starts)
    starts: tuple[tuple[str, float | str], ...] = ()

    def __post_init__(self) -> None:
        if self.fmi_version not in _SLAVE_SOURCES:
            raise ValueError(f"fmi_version must be 2 or 3, got {self.fmi_version!r}")
        if self.mode not in ("embedded", "remote"):
            raise ValueError(f"mode must be 'embedded' or 'remote', got {self.mode!r}")
        if self.flex is not None and self.mode != "embedded":
            raise ValueError("a flexible-body FMU runs its body inside: embedded mode only")
        if self.derivatives and self.mode != "embedded":
            raise ValueError("directional derivatives re-run the step inside the FMU: "
                             "embedded mode only (not remote)")
        if self.outputs is not None and (self.flex is not None or self.mode != "embedded"):
            raise ValueError("--outputs selects body and joint outputs, which embedded rigid-side "
                             "FMUs have only (not remote, not --flex)")
        if self.inputs and (self.flex is not None or self.mode != "embedded"):
            raise ValueError("--inputs (joint actuators) needs the rigid solver in the FMU: "
                             "embedded rigid-side FMUs only (not remote, not --flex)")


def export_fmu(
    scenario: str | Path, output: str | Path, options: ExportOptions = ExportOptions()
) -> Path:
    """Build ``output`` (an ``.fmu`` file) from the scenario file; returns its path.

    Raises ScenarioError if the scenario does not build or references data files that cannot
    be bundled.
    """
    scenario = Path(scenario).resolve()
    output = Path(output).resolve()
    if output.suffix != ".fmu":
        raise ValueError(f"output must end in .fmu: {output}")
    identifier = model_identifier(scenario, options.name)
    if options.flex is None:
        table, config = describe(scenario, options)
    else:
        table, config = describe_flex(scenario, options.flex)
    config["derivatives"] = options.derivatives
    table = with_starts(table, dict(options.starts))
    data_files = referenced_files(scenario)
    config["data_files"] = [p.as_posix() for p in data_files]

    with tempfile.TemporaryDirectory(prefix="rbcosim_fmu_") as tmp:
        tmp = Path(tmp)
        # The wrapper imports the script by module name into the host's Python and looks the
        # class up by modelIdentifier: one module name per identifier, so that FMUs of other
        # names loaded before in the same process do not stand in for it.
        script = tmp / "src" / f"rbcosim_fmi{options.fmi_version}_{identifier}.py"
        script.parent.mkdir()
        source = (
            importlib_resources.files("rbcosim.fmu_export.runtime") / _SLAVE_SOURCES[options.fmi_version]
        )
        script.write_text(
            re.sub(rf"\bclass {_SLAVE_CLASS}\(", f"class {identifier}(", source.read_text("utf-8")),
            "utf-8",
        )

        bundle = tmp / RESOURCE_DIR
        (bundle / SCENARIO_DIR).mkdir(parents=True)
        (bundle / CONFIG_FILE).write_text(json.dumps(config, indent=1), "utf-8")
        (bundle / TABLE_FILE).write_text(table.to_json(), "utf-8")
        if options.mode == "remote" and options.flex is None:  # the bodies' own points
            (bundle / SCENARIO_DIR / scenario.name).write_text(with_body_points(
                scenario.read_text("utf-8"), scenario.parent, tuple(config["body_points"])),
                "utf-8")
        else:
            shutil.copy2(scenario, bundle / SCENARIO_DIR / scenario.name)
        for relative in data_files:
            target = bundle / SCENARIO_DIR / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(scenario.parent / relative, target)

        documentation = tmp / "documentation"
        documentation.mkdir()
        (documentation / EXTERNAL_DEPENDENCIES).write_text(
            python_fmu_dependencies(config["mode"]), "utf-8")
        built = _run_builder(options.fmi_version, script, bundle, tmp / "out", documentation)
        install_shim(built, options.fmi_version, identifier, tmp, options.derivatives)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(built, output)
    return output


def with_starts(table: VariableTable, starts: dict[str, float | str]) -> VariableTable:
    """``table`` with these start values of inputs and parameters, and of acceleration
    outputs: the values they hold in Initialization Mode, before the model is built at its
    end (export-ssp: those under the package's start wrench). ValueError naming a variable that
    is none of these, or a value of another type."""
    if not starts:
        return table
    by_name = table.by_name()
    for name, value in starts.items():
        v = by_name.get(name)
        if v is None or not (v.causality in ("input", "parameter") or v.kind == "acceleration"):
            raise ValueError(f"start value for {name!r}: not an input, parameter or "
                             "acceleration output of the FMU")
        if type(value) is not type(v.start):
            raise ValueError(f"start value for {name!r}: {value!r} is not a {v.type}")
    return replace(table, variables=tuple(
        replace(v, start=starts[v.name]) if v.name in starts else v for v in table.variables))


def model_identifier(scenario: Path, name: str | None = None) -> str:
    """The FMU's modelIdentifier: ``name``, or the scenario file's stem with every character
    that may not appear in a C identifier replaced by ``_`` (``_`` in front of a leading digit).

    FMI wants a C identifier (it prefixes the binary's functions and names the binary file);
    it is also the slave's Python class name, so Python keywords and names the slave sources
    use are refused (ValueError).
    """
    if name is None:
        name = re.sub(r"[^A-Za-z0-9_]", "_", scenario.stem)
        if not name or name[0].isdigit():
            name = "_" + name
    if not _C_IDENTIFIER.fullmatch(name):
        raise ValueError(f"FMU name {name!r} is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)")
    sources = importlib_resources.files("rbcosim.fmu_export.runtime")
    used = any(
        re.search(rf"\b{name}\b", sources.joinpath(f).read_text("utf-8"))
        for f in _SLAVE_SOURCES.values()
    )
    if keyword.iskeyword(name) or (used and name != _SLAVE_CLASS):
        raise ValueError(f"FMU name {name!r} is taken by Python or the FMU's sources; pick another")
    return name


def describe(scenario: Path, options: ExportOptions, side=None) -> tuple[VariableTable, dict]:
    """The variable table and the FMU configuration of a scenario, from ``side`` (its freshly
    built RigidSide; built here when None)."""
    from rbcosim.cosim.rigid_side import RigidSide

    if side is None:
        side = RigidSide.from_scenario(scenario)
    parameters = {
        key: value
        for key, value in fmu_parameters(side.scenario).items()
        if not key.startswith(_OUTSIDE_KEYS)
    }
    try:
        specs = actuator_specs(side.scenario, options.inputs, float(side.time))
        table = numbered_table(_rows(side, options, parameters, specs), side.point_names,
                               side.joint_names)
    except ValueError as exc:
        raise ScenarioError(f"{scenario}: cannot export as FMU: {exc}") from exc
    config = {
        "mode": options.mode,
        "scenario_file": scenario.name,
        "description": f"rbcosim rigid side of scenario {scenario.stem} ({options.mode})",
        "start_time": float(side.time),
        "stop_time": float(side.scenario.solver.t_end),
        "macro_step": float(side.macro_step),
        "variable_steps": VARIABLE_STEPS,
        "joint_points": {joint: side.joint_point(joint) for joint in side.joint_names},
        # remote mode: each body's point at its centre of mass (body_points.py)
        "body_points": ({body: point_name(body) for body in side.scenario.model.body_names}
                        if options.mode == "remote" else {}),
        "actuators": specs,
        "rbcosim_version": __version__,
    }
    return table, config


def _rows(side, options: ExportOptions, parameters: dict, specs: list) -> list[dict]:
    """The table rows of the rigid side ``side`` (table_rows) for ``options``: the exchange
    variables need the solver in the FMU (embedded mode), the server settings are remote
    mode's; bodies and joint coordinates are in every mode (remote: from the bodies' own
    points, body_points.py)."""
    embedded = options.mode == "embedded"
    outputs = side.point_outputs()
    accelerations = dict(zip(side.point_names, side.point_accelerations())) if embedded else {}
    gaps = side.gaps()
    rows = [row for point in side.point_names
            for row in point_rows(point, outputs[point], accelerations.get(point))]
    rows += [row for joint in side.joint_names
             for row in joint_rows(joint, _REST_KINEMATICS, gaps[joint], embedded)]
    rows += actuator_rows(specs)
    rows += body_rows(side.body_outputs()) + coordinate_rows(_joint_coordinates(side))
    rows = selected(rows, options.outputs)
    rows += parameter_rows(parameters, {key: describe_parameter(key, side.scenario.raw)
                                        for key in parameters})
    rows += vector_parameter_rows(initial_states(side.scenario.raw))
    if not embedded:
        rows += server_rows({"address": options.address, "session": "",
                             "timeout": options.timeout})
    return rows


def _joint_coordinates(side) -> dict[str, tuple[float, str, str]]:
    """The joints' coordinates at the start (JointCoordinates), with units and descriptions."""
    values, _ = JointCoordinates(side.scenario.model).advance(None, side.time, side.body_row())
    return {column: (value, *coordinate_info(column)) for column, value in values.items()}


def describe_flex(scenario: Path, body: str) -> tuple[VariableTable, dict]:
    """The variable table and configuration of flexible body ``body``'s FMU: its start values
    are the body placed at the rigid side's initial motion (``flex_core``)."""
    from rbcosim.cosim.rigid_side import RigidSide
    from rbcosim.fmu_export.runtime.flex_core import (
        FMU_SCHEME,
        build_flex_endpoints,
        wrench_derivatives,
    )

    parsed, endpoints = build_flex_endpoints(scenario, body, {})
    if body not in parsed.flex_bodies:
        raise ScenarioError(f"{scenario}: --flex {body!r}: no such flexible body; the scenario "
                            f"has {sorted(parsed.flex_bodies) or 'none'}")
    side = RigidSide.from_scenario(scenario)
    motions = dict(zip(side.point_names, side.motions_array()))
    starts, nodes, masses, frames, outputs = {}, {}, {}, {}, []
    for endpoint in endpoints.values():  # (one: the body's, with one or several couplings)
        handovers = endpoint.initialize(side.time, {
            c.name: motion_of(motions[c.point], side.time) for c in endpoint.couplings})
        starts.update(wrench_derivatives(endpoint, side.time))
        reports = endpoint.report()
        for c in endpoint.couplings:
            handover = handovers[c.name]
            masses[c.name] = np.zeros((6, 6)) if handover is None else handover[0]
            frames[c.point] = "point" if handover is None else handover[1]
            nodes[c.name] = reports[c.name][0]
        for name, value in zip(endpoint.columns(), endpoint.row().tolist()):
            outputs.append((name, None if ".eta" in name else "m", value))
    couplings = [(c.name, c.point) for ep in endpoints.values() for c in ep.couplings]
    parameters = fmu_parameters(side.scenario, f"flex_bodies.{body}.")
    try:
        table = build_flex_table(
            couplings=couplings,
            motions={j: motions[point] for j, point in couplings},
            wrenches=starts,
            nodes=nodes,
            added_mass=masses,
            outputs=outputs,
            parameters=parameters,
            parameter_info={key: describe_parameter(key, parsed.raw) for key in parameters},
        )
    except ValueError as exc:
        raise ScenarioError(f"{scenario}: cannot export flexible body {body!r}: {exc}") from exc
    config = {
        "kind": "flex",
        "flex_body": body,
        "mode": "embedded",
        "scenario_file": scenario.name,
        "description": f"rbcosim flexible body {body} of scenario {scenario.stem} "
                       f"({FMU_SCHEME} coupling with its rigid-side FMU)",
        "start_time": float(side.time),
        "stop_time": float(parsed.solver.t_end),
        "macro_step": float(parsed.cosim.macro_step),
        "variable_steps": False,
        # axes of each point's added-mass outputs (the rigid FMU's P.added_mass_frame)
        "added_mass_frames": frames,
        "rbcosim_version": __version__,
    }
    return table, config


def referenced_files(scenario: Path) -> list[Path]:
    """Data files the scenario names: string values that are paths of existing files, relative
    to the scenario's folder. They go into the FMU at the same relative place."""
    try:
        data = tomllib.loads(scenario.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{scenario}: {exc}") from exc
    base = scenario.parent
    found: list[Path] = []

    def walk(node: object, key: str) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                walk(value, f"{key}.{name}" if key else name)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{key}[{index}]")
        elif isinstance(node, str) and node and (base / node).is_file():
            path = (base / node).resolve()
            if not path.is_relative_to(base):
                raise ScenarioError(
                    f"{scenario}: {key} = {node!r} lies outside the scenario's folder; "
                    "keep data files next to the scenario or below it to export an FMU"
                )
            found.append(path.relative_to(base))

    walk(data, "")
    return sorted(set(found))


def _run_builder(
    fmi_version: int, script: Path, bundle: Path, dest: Path, documentation: Path
) -> Path:
    options = {
        "needsExecutionTool": True,  # a Python with rbcosim (documentation/)
        "canHandleVariableCommunicationStepSize": False,
        "canGetAndSetFMUstate": True,
        "canSerializeFMUstate": True,
    }
    if fmi_version == 2:
        from pythonfmu import FmuBuilder
    else:
        options = {k.replace("FMUstate", "FMUState"): v for k, v in options.items()}
        from pythonfmu3 import FmuBuilder
    saved_path = list(sys.path)
    # pythonfmu imports the script by module name: a module of that name left by an FMU run in
    # this process (the wrapper imports it too) must not stand in for it.
    sys.modules.pop(script.stem, None)
    try:
        return Path(FmuBuilder.build_FMU(script, dest=dest, project_files=[bundle],
                                         documentation_folder=documentation, **options))
    finally:
        # pythonfmu leaves the script's folder on sys.path and the script in sys.modules.
        sys.path[:] = saved_path
        sys.modules.pop(script.stem, None)
