"""The generated files of a native FMU: its FMI 2.0 modelDescription.xml and the C table
(``model_table.c``) the C sources in fmu/native read, both from one VariableTable, so names
and value references are the same on both sides and the same as the Python remote FMU's."""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement, indent, tostring

import numpy as np

from rbcosim import __version__
from rbcosim.fmu_export.runtime.modeldescription import (
    feedthrough,
    unit_definitions,
    write_model_structure,
)
from rbcosim.fmu_export.table import VariableTable
from rbcosim.joint_coordinates import FIELDS

#: Table kind -> the rbf_kind of fmu/native/rbcosim_fmu.h.
C_KINDS = {
    "wrench": "RBF_WRENCH",
    "wrench_rate": "RBF_WRENCH_RATE",
    "wrench_rate2": "RBF_WRENCH_RATE2",
    "added_mass": "RBF_ADDED_MASS",
    "added_mass_frame": "RBF_ADDED_MASS_FRAME",
    "point": "RBF_POINT",
    "acceleration": "RBF_ACCELERATION",
    "flex": "RBF_FLEX",
    "gap": "RBF_GAP",
    "parameter": "RBF_PARAMETER",
    "vector_parameter": "RBF_VECTOR_PARAMETER",
    "server": "RBF_SERVER",
    "body": "RBF_BODY",
    "actuator": "RBF_ACTUATOR",
    "joint_coordinate": "RBF_JOINT",
}
#: Joint kinds with relative coordinates -> the rbf_joint_kind of fmu/native/rbcosim_fmu.h.
C_JOINT_KINDS = {"revolute": "RBF_REVOLUTE", "prismatic": "RBF_PRISMATIC",
                 "cylindrical": "RBF_CYLINDRICAL", "universal": "RBF_UNIVERSAL",
                 "spherical": "RBF_SPHERICAL"}
#: Variable.type -> the rbf_type of fmu/native/rbcosim_fmu.h.
C_TYPES = {"Real": "RBF_REAL", "Integer": "RBF_INTEGER", "Boolean": "RBF_BOOLEAN",
           "String": "RBF_STRING"}
#: Variable.type (FMI 2's ScalarVariable child) -> its FMI 3 element.
FMI3_TYPES = {"Real": "Float64", "Integer": "Int32", "Boolean": "Boolean", "String": "String"}


def start_text(value: float | bool | str) -> str:
    """A start value as the modelDescription writes it (xs:double, xs:int, xs:boolean)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else repr(float(value))


#: The log categories fmi2_native.c uses.
LOG_CATEGORIES = (
    ("logStatusWarning", "warnings (a session that could not be closed, ...)"),
    ("logStatusError", "refused calls and failed steps, with the reason"),
    ("logAll", "everything, including connection messages"),
)


def c_string(text: str) -> str:
    """A C string literal of ``text`` (UTF-8, non-printable bytes as octal escapes)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def model_table_c(table: VariableTable, config: dict, identifier: str, guid: str,
                  body_names: tuple[str, ...] = (),
                  actuations: tuple[tuple[int, int, list[float]], ...] = (),
                  body_points: tuple[str, ...] = (), model=None) -> str:
    """The C source defining RBF_MODEL: every variable by value reference (0 is time);
    ``body_names``: the model's bodies in state order (RBF_BODY outputs, self-contained);
    ``actuations``: (value reference, model point index, unit wrench (6,)) of each body's
    share of an actuator input (self-contained, rbf_actuation); ``body_points``: the
    server-client FMU's own points at the bodies' centres of mass (body_points.py), in
    ``body_names`` order, attached after the table's points; ``model``: the scenario's
    rbcosim.model.Model, whose joints own the ``joint_coordinate`` outputs (rbf_joint)."""
    points = {name: i for i, name in enumerate(table.point_names)}
    coordinate_joints, fields = joint_geometry(
        model, {v.owner: v.vr for v in table.variables if v.kind == "joint_coordinate"})
    bodies = {name: i for i, name in enumerate(body_names)}
    joints = {name: i for i, name in enumerate(table.joint_names)}
    rows = []
    for vr, v in enumerate(table.variables):
        if v.vr != vr:
            raise ValueError(f"variable {v.name}: value reference {v.vr}, expected {vr}")
        if v.kind == "time":
            rows.append('    {"time", RBF_TIME, 0, 0, RBF_REAL, 0.0, "", ""},')
            continue
        kind = C_KINDS[v.kind]
        owner = (joints[v.owner] if v.kind in ("flex", "gap")
                 else bodies[v.owner] if v.kind == "body" else points.get(v.owner, 0))
        index = v.index
        if v.kind == "joint_coordinate":
            owner, index = fields[v.owner]
        key = v.owner if v.kind in ("parameter", "vector_parameter", "server") else ""
        string = v.type == "String"
        start = 0.0 if string else float(v.start)
        rows.append(
            f"    {{{c_string(v.name)}, {kind}, {owner}, {index}, {C_TYPES[v.type]}, "
            f"{start!r}, {c_string(v.start if string else '')}, {c_string(key)}}},"
        )
    joint_point = ", ".join(str(points[config["joint_points"][j]]) for j in table.joint_names)
    shares = [f"    {{{vr}, {point}, {{{', '.join(repr(float(x)) for x in unit)}}}}},"
              for vr, point, unit in actuations]
    names = ", ".join(c_string(p) for p in (*table.point_names, *body_points)) or "NULL"
    first_body_point = len(table.point_names) if body_points else -1
    joint_names = ", ".join(c_string(j) for j in table.joint_names) or "NULL"
    return "\n".join(
        [
            f"/* Generated by rbcosim {__version__} export-fmu --native: the variable table",
            " * of this FMU (the same as modelDescription.xml). Do not edit. */",
            '#include "rbcosim_fmu.h"',
            "",
            f"static const char *const POINTS[] = {{{names}}};",
            f"static const char *const JOINTS[] = {{{joint_names}}};",
            f"static const int JOINT_POINT[] = {{{joint_point or '-1'}}};",
            "static const rbf_var VARS[] = {",
            *rows,
            "};",
            "static const rbf_joint COORDINATE_JOINTS[] = {",
            *(coordinate_joints or ["    {RBF_REVOLUTE, 0, 0, {0.0}, {0.0}, {0.0}, {0.0}, {0}},"]),
            "};",
            "static const rbf_actuation ACTUATIONS[] = {",
            *(shares or ["    {0, 0, {0.0}},"]),
            "};",
            "",
            "const rbf_model RBF_MODEL = {",
            f"    {c_string(identifier)}, {c_string(guid)}, {c_string(config['scenario_file'])},",
            f"    {float(config['start_time'])!r}, {float(config['macro_step'])!r},",
            f"    {len(table.point_names) + len(body_points)}, {len(table.joint_names)}, "
            f"{len(table.variables)}, "
            + f"{len(body_names)},",
            "    POINTS, JOINTS, JOINT_POINT, VARS,",
            f"    {len(shares)}, ACTUATIONS, {first_body_point},",
            f"    {len(coordinate_joints)}, COORDINATE_JOINTS,",
            "};",
            "",
        ]
    )


def joint_geometry(model, vrs: dict[str, int]) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The rbf_joint rows (C initializers) of ``model``'s joints whose coordinate outputs are in
    ``vrs`` (column ``JOINT.<field>`` -> value reference), in model order, and per column its
    (row, field index); none without a model. Marker positions in m from the body's origin,
    axes as columns, body frame."""
    rows, fields = [], {}
    joints = [j for j in model.joints if j.kind in FIELDS] if model is not None else []
    for joint in (j for j in joints if f"{j.name}.{FIELDS[j.kind][0]}" in vrs):
        numbers = [
            ", ".join(repr(float(x)) for x in values)
            for m in (joint.marker1, joint.marker2)
            for values in (np.asarray(m.position).ravel(), np.asarray(m.axes).ravel())
        ]
        columns = [f"{joint.name}.{field}" for field in FIELDS[joint.kind]]
        rows.append(f"    {{{C_JOINT_KINDS[joint.kind]}, {joint.marker1.body}, "
                    f"{joint.marker2.body}, " + ", ".join(f"{{{n}}}" for n in numbers)
                    + f", {{{', '.join(str(vrs[c]) for c in columns)}}}}},")
        for index, column in enumerate(columns):
            fields[column] = (len(rows) - 1, index)
    return rows, fields


def _shared_sections(root: Element, table: VariableTable, config: dict) -> None:
    """Append what both versions' modelDescription.xml carry alike after CoSimulation: the
    units, the log categories and the default experiment (start and stop time, macro step)."""
    root.append(unit_definitions(table.units()))
    categories = SubElement(root, "LogCategories")
    for name, what in LOG_CATEGORIES:
        SubElement(categories, "Category", {"name": name, "description": what})
    SubElement(
        root,
        "DefaultExperiment",
        {"startTime": repr(float(config["start_time"])),
         "stopTime": repr(float(config["stop_time"])),
         "stepSize": repr(float(config["macro_step"]))},
    )


def fmi2_model_description(
    table: VariableTable, config: dict, identifier: str, guid: str, sources: list[str]
) -> bytes:
    """modelDescription.xml (FMI 2.0 co-simulation) of the native FMU; ``sources``: the C
    files under sources/ a host compiles to rebuild the binary."""
    root = Element(
        "fmiModelDescription",
        {
            "fmiVersion": "2.0",
            "modelName": identifier,
            "guid": guid,
            "description": config["description"] + ", native client",
            "author": "rbcosim",
            "version": __version__,
            "generationTool": f"rbcosim {__version__} (export-fmu --native)",
            "variableNamingConvention": "structured",
            "numberOfEventIndicators": "0",
        },
    )
    cosim = SubElement(
        root,
        "CoSimulation",
        {
            "modelIdentifier": identifier,
            "needsExecutionTool": "true" if config["needs_server"] else "false",
            "canHandleVariableCommunicationStepSize": "false",
            "canInterpolateInputs": "false",
            "canBeInstantiatedOnlyOncePerProcess": "false",
            "canNotUseMemoryManagementFunctions": "true",
            "canGetAndSetFMUstate": "true",
            "canSerializeFMUstate": "true",
            "providesDirectionalDerivative": "false",
        },
    )
    files = SubElement(cosim, "SourceFiles")
    for name in sources:
        SubElement(files, "File", {"name": name})
    _shared_sections(root, table, config)
    variables = SubElement(root, "ModelVariables")
    for v in table.variables[1:]:
        attributes = {
            "name": v.name,
            "valueReference": str(v.vr),
            "description": v.description,
            "causality": v.causality,
            "variability": v.variability,
        }
        if v.initial is not None:
            attributes["initial"] = v.initial
        node = SubElement(variables, "ScalarVariable", attributes)
        typed = {} if v.initial == "calculated" else {
            "start": v.start if v.type == "String" else start_text(v.start)}
        if v.unit is not None:
            typed["unit"] = v.unit
        SubElement(node, v.type, typed)
    SubElement(root, "ModelStructure")
    write_model_structure(root, table, 2, feedthrough(table))
    indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="utf-8") + b"\n"


def fmi3_model_description(table: VariableTable, config: dict, identifier: str,
                           guid: str) -> bytes:
    """modelDescription.xml (FMI 3.0 co-simulation) of the native FMU; time is value
    reference 0, the independent variable."""
    root = Element(
        "fmiModelDescription",
        {
            "fmiVersion": "3.0",
            "modelName": identifier,
            "instantiationToken": guid,
            "description": config["description"] + ", native client",
            "author": "rbcosim",
            "version": __version__,
            "generationTool": f"rbcosim {__version__} (export-fmu --native)",
            "variableNamingConvention": "structured",
        },
    )
    SubElement(
        root,
        "CoSimulation",
        {
            "modelIdentifier": identifier,
            "needsExecutionTool": "true" if config["needs_server"] else "false",
            "canHandleVariableCommunicationStepSize": "false",
            "fixedInternalStepSize": repr(float(config["macro_step"])),
            "canBeInstantiatedOnlyOncePerProcess": "false",
            "canGetAndSetFMUState": "true",
            "canSerializeFMUState": "true",
            "providesDirectionalDerivatives": "false",
            "providesAdjointDerivatives": "false",
            "hasEventMode": "false",
            "providesIntermediateUpdate": "false",
        },
    )
    _shared_sections(root, table, config)
    variables = SubElement(root, "ModelVariables")
    for v in table.variables:
        attributes = {"name": v.name, "valueReference": str(v.vr), "description": v.description,
                      "causality": v.causality, "variability": v.variability}
        if v.initial is not None:
            attributes["initial"] = v.initial
        if v.type == "String":
            node = SubElement(variables, "String", attributes)
            SubElement(node, "Start", {"value": v.start})
            continue
        if v.start is not None and v.initial != "calculated":
            attributes["start"] = start_text(v.start)
        if v.unit is not None:
            attributes["unit"] = v.unit
        SubElement(variables, FMI3_TYPES[v.type], attributes)
    SubElement(root, "ModelStructure")
    write_model_structure(root, table, 3, feedthrough(table))
    indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="utf-8") + b"\n"


def build_description(identifier: str, sources: list[str],
                      libraries: tuple[str, ...] = ("msgpackc", "zmq", "m"),
                      language: str = "C99") -> bytes:
    """sources/buildDescription.xml (the FMI 3.0 schema; FMI 2.0 FMUs list the same files in
    the modelDescription's SourceFiles): the C files, C99, and the libraries to link."""
    root = Element("fmiBuildDescription", {"fmiVersion": "3.0"})
    config = SubElement(root, "BuildConfiguration", {"modelIdentifier": identifier})
    files = SubElement(config, "SourceFileSet", {"language": language})
    for name in sources:
        SubElement(files, "SourceFile", {"name": name})
    for library in libraries:
        SubElement(config, "Library", {"name": library})
    indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="utf-8") + b"\n"
