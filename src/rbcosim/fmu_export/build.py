"""Export a scenario as an FMI 2.0 or FMI 3.0 co-simulation FMU with pythonfmu / pythonfmu3."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from importlib import resources as importlib_resources
from pathlib import Path

import numpy as np

from rbcosim import __version__
from rbcosim.errors import ScenarioError
from rbcosim.fmu_export.core import CONFIG_FILE, RESOURCE_DIR, SCENARIO_DIR, TABLE_FILE
from rbcosim.fmu_export.table import VariableTable, build_table

#: Identity pose, zero velocity: the flexible node's kinematics when nothing better is known.
_REST_KINEMATICS = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
_SLAVE_SOURCES = {2: "fmi2_slave.py", 3: "fmi3_slave.py"}

DEFAULT_ADDRESS = "tcp://127.0.0.1:5555"
#: canHandleVariableCommunicationStepSize: doStep takes whole multiples of the macro step,
#: done as that many macro steps (rbcosim.fmu_export.lifecycle).
VARIABLE_STEPS = True


@dataclass(frozen=True)
class ExportOptions:
    """How to export: FMI version (2 or 3), ``embedded`` or ``remote`` mode, and for remote
    mode the defaults of the FMU parameters ``server.address`` and ``server.timeout`` (s)."""

    fmi_version: int = 2
    mode: str = "embedded"
    address: str = DEFAULT_ADDRESS
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.fmi_version not in _SLAVE_SOURCES:
            raise ValueError(f"fmi_version must be 2 or 3, got {self.fmi_version!r}")
        if self.mode not in ("embedded", "remote"):
            raise ValueError(f"mode must be 'embedded' or 'remote', got {self.mode!r}")


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
    table, config = describe(scenario, options)
    data_files = referenced_files(scenario)
    config["data_files"] = [p.as_posix() for p in data_files]

    with tempfile.TemporaryDirectory(prefix="rbcosim_fmu_") as tmp:
        tmp = Path(tmp)
        script = tmp / "src" / f"rbcosim_fmi{options.fmi_version}_slave.py"
        script.parent.mkdir()
        source = (
            importlib_resources.files("rbcosim.fmu_export") / _SLAVE_SOURCES[options.fmi_version]
        )
        script.write_text(source.read_text("utf-8"), "utf-8")

        bundle = tmp / RESOURCE_DIR
        (bundle / SCENARIO_DIR).mkdir(parents=True)
        (bundle / CONFIG_FILE).write_text(json.dumps(config, indent=1), "utf-8")
        (bundle / TABLE_FILE).write_text(table.to_json(), "utf-8")
        shutil.copy2(scenario, bundle / SCENARIO_DIR / scenario.name)
        for relative in data_files:
            target = bundle / SCENARIO_DIR / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(scenario.parent / relative, target)

        built = _run_builder(options.fmi_version, script, bundle, tmp / "out")
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(built, output)
    return output


def describe(scenario: Path, options: ExportOptions) -> tuple[VariableTable, dict]:
    """The variable table and the FMU configuration of a scenario, from a fresh build of it."""
    from rbcosim.cosim.rigid_side import RigidSide

    side = RigidSide.from_scenario(scenario)
    outputs = side.point_outputs()
    # The exchange variables need the solver in the FMU: embedded mode only.
    accelerations = (
        dict(zip(side.point_names, side.point_accelerations()))
        if options.mode == "embedded"
        else None
    )
    try:
        table = build_table(
            point_names=side.point_names,
            joint_names=side.joint_names,
            parameters=side.parameters(),
            point_outputs=outputs,
            gaps=side.gaps(),
            flex_start={joint: _REST_KINEMATICS for joint in side.joint_names},
            point_accelerations=accelerations,
            server=(
                {"address": options.address, "session": "", "timeout": options.timeout}
                if options.mode == "remote"
                else None
            ),
        )
    except ValueError as exc:
        raise ScenarioError(f"{scenario}: cannot export as FMU: {exc}") from exc
    config = {
        "mode": options.mode,
        "scenario_file": scenario.name,
        "description": f"rbcosim rigid side of scenario {scenario.stem} ({options.mode})",
        "start_time": float(side.time),
        "macro_step": float(side.macro_step),
        "variable_steps": VARIABLE_STEPS,
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


def _run_builder(fmi_version: int, script: Path, bundle: Path, dest: Path) -> Path:
    options = {
        "needsExecutionTool": False,
        "canHandleVariableCommunicationStepSize": VARIABLE_STEPS,
        "canGetAndSetFMUstate": True,
        "canSerializeFMUstate": True,
    }
    if fmi_version == 2:
        from pythonfmu import FmuBuilder
    else:
        options = {k.replace("FMUstate", "FMUState"): v for k, v in options.items()}
        from pythonfmu3 import FmuBuilder
    saved_path = list(sys.path)
    try:
        return Path(FmuBuilder.build_FMU(script, dest=dest, project_files=[bundle], **options))
    finally:
        # pythonfmu leaves the script's folder on sys.path and the script in sys.modules.
        sys.path[:] = saved_path
        sys.modules.pop(script.stem, None)
