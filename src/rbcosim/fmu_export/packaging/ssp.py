"""`rbcosim export-ssp`: both sides of a co-simulation as FMUs in an SSP 1.0 package.

The package holds ``SystemStructure.ssd`` and, in ``resources/``, the scenario's rigid-side FMU
(``rigid.fmu``, embedded mode) and one flexible-body FMU per flexible body
(``<body>.fmu``, ``export-fmu --flex``). The system connects, per coupling with interface point
P and joint J, equal names: the rigid FMU's outputs ``P.x`` .. ``P.wz``, ``P.ax`` .. ``P.alz``
to the flexible FMU's inputs; the flexible FMU's wrench ``P.fx`` .. ``P.mz`` and its
derivatives ``P.dfx`` .. ``P.d3mz``, its node ``J.flex.x`` .. ``J.flex.wz`` and
``J.flex_energy`` to the rigid FMU's inputs. The flexible body's added mass (its outputs
``P.added_mass[i,j]``, constant) reaches the rigid FMU's parameters of that name as start
values (FMI parameters take no connections; libcosim refuses one). A master that steps both
FMUs from t_n with the values exchanged at t_n (a Jacobi master, such as libcosim's fixed-step algorithm) at
the scenario's macro step runs ``cosim.scheme = "jacobi"`` with its extrapolation. No output
depends on an input set since the last doStep, so the order in which a master transfers the
values does not matter.

Every connected input starts (in its FMU and in the ``.ssd``'s parameter bindings) at the
value its source has when the first macro step begins in ``rbcosim run``: the flexible FMU's
initial wrench, node and added mass for the rigid FMU, the rigid point's motion with the
accelerations under that wrench and added mass for the flexible FMU. So a master that
exchanges nothing before its first step (fmpy.ssp given these start values) starts as one that
does. Every connected output read in Initialization Mode already has the value
initialization ends with (the rigid FMU's accelerations are built at its end: the package
gives it their values under the start wrench), so a master that solves the initialization
loop there (PyFMI's Master, OMSimulator) finds these start values as its solution. The ``.ssd`` carries the default experiment (start, stop) and OMSimulator's
annotation for a weakly coupled system with a fixed macro step.

The ``.ssd`` binds Real values only: OMSimulator imports no String connector or parameter
binding, so the added mass's frame (a String parameter) reaches the rigid FMU as its own start
value alone, which every master uses.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path
from xml.etree.ElementTree import Element, SubElement, indent, register_namespace, tostring

from rbcosim.errors import ScenarioError
from rbcosim.fmu_export.packaging.python_fmu import ExportOptions, export_fmu
from rbcosim.fmu_export.runtime.values import CONFIG_FILE, RESOURCE_DIR, TABLE_FILE
from rbcosim.fmu_export.table import (
    ACCELERATION_COMPONENTS,
    POINT_COMPONENTS,
    WRENCH_COMPONENTS,
    WRENCH_DERIVATIVES,
    VariableTable,
)

SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
SSV = "http://ssp-standard.org/SSP1/SystemStructureParameterValues"
#: OMSimulator's annotation namespace (its oms.xsd) and annotation type
OMS = "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"
OMS_TYPE = "org.openmodelica"
for _prefix, _uri in (("ssd", SSD), ("ssc", SSC), ("ssv", SSV), ("oms", OMS)):
    register_namespace(_prefix, _uri)
#: The rigid side's component name in the system (flexible bodies keep their scenario names).
RIGID = "rigid"
#: The acceleration components of a point's motion (``P.ax`` .. ``P.alz``).
ACCELERATIONS = frozenset(c for c, _, _ in ACCELERATION_COMPONENTS)


def connections(couplings: list[tuple[str, str, str]]) -> list[tuple[str, str, str, str]]:
    """(start element, start connector, end element, end connector) of every connection, for
    couplings given as (joint, point, flexible body)."""
    motion = [c for c, _, _ in POINT_COMPONENTS + ACCELERATION_COMPONENTS]
    wrench = [p + c for p in ("", *(d[1] for d in WRENCH_DERIVATIVES)) for c, _, _ in
              WRENCH_COMPONENTS]
    node = [f"flex.{c}" for c, _, _ in POINT_COMPONENTS] + ["flex_energy"]
    out = []
    for joint, point, body in couplings:
        out += [(RIGID, f"{point}.{c}", body, f"{point}.{c}") for c in motion]
        out += [(body, f"{point}.{c}", RIGID, f"{point}.{c}") for c in wrench]
        out += [(body, f"{joint}.{c}", RIGID, f"{joint}.{c}") for c in node]
    return out


def _annotation(parent: Element, tag: str, attributes: dict[str, str]) -> None:
    """An ``ssd:Annotations`` with OMSimulator's ``oms:SimulationInformation`` holding
    ``tag`` (or, for an empty tag, the attributes on SimulationInformation itself)."""
    annotation = SubElement(SubElement(parent, f"{{{SSD}}}Annotations"), f"{{{SSC}}}Annotation",
                            {"type": OMS_TYPE})
    holder = SubElement(annotation, f"{{{OMS}}}Annotations")
    if tag:
        SubElement(SubElement(holder, f"{{{OMS}}}SimulationInformation"), f"{{{OMS}}}{tag}",
                   attributes)
    else:
        SubElement(holder, f"{{{OMS}}}SimulationInformation", attributes)


def system_structure(name: str, tables: dict[str, VariableTable], links,
                     bindings: dict[str, dict[str, float]], start: float, stop: float,
                     step: float) -> bytes:
    """The SystemStructure.ssd document: components ``resources/<name>.fmu`` with the
    connectors the ``links`` and ``bindings`` use (kinds from each FMU's variable
    ``tables``), each component's ``bindings`` (connector -> start value) as inline parameter
    values, the links, OMSimulator's system annotation (weakly coupled, fixed step ``step``
    s) and the default experiment [start, stop] s."""
    root = Element(f"{{{SSD}}}SystemStructureDescription", {"version": "1.0", "name": name})
    system = SubElement(root, f"{{{SSD}}}System", {"name": name})
    elements = SubElement(system, f"{{{SSD}}}Elements")
    for component, table in tables.items():
        variables = table.by_name()
        element = SubElement(elements, f"{{{SSD}}}Component", {
            "name": component, "type": "application/x-fmu-sharedlibrary",
            "source": f"resources/{component}.fmu"})
        connectors = SubElement(element, f"{{{SSD}}}Connectors")
        used = [a_name for a, a_name, _, _ in links if a == component]
        used += [b_name for _, _, b, b_name in links if b == component]
        for connector in dict.fromkeys(used + list(bindings.get(component, {}))):
            v = variables[connector]
            node = SubElement(connectors, f"{{{SSD}}}Connector",
                              {"name": connector, "kind": v.causality})
            SubElement(node, f"{{{SSC}}}{v.type}")
        if bindings.get(component):
            _parameter_values(element, bindings[component])
    wires = SubElement(system, f"{{{SSD}}}Connections")
    for a, a_name, b, b_name in links:
        SubElement(wires, f"{{{SSD}}}Connection", {
            "startElement": a, "startConnector": a_name, "endElement": b, "endConnector": b_name})
    _annotation(system, "FixedStepMaster", {"description": "oms-ma", "stepSize": repr(step)})
    experiment = SubElement(root, f"{{{SSD}}}DefaultExperiment",
                            {"startTime": repr(start), "stopTime": repr(stop)})
    _annotation(experiment, "", {"resultFile": f"{name}_res.mat", "loggingInterval": "0.0"})
    indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="utf-8")


def _parameter_values(element: Element, values: dict[str, float]) -> None:
    """An inline ``ssd:ParameterBindings`` of ``element`` giving these (Real) start values."""
    holder = SubElement(SubElement(SubElement(element, f"{{{SSD}}}ParameterBindings"),
                                   f"{{{SSD}}}ParameterBinding"), f"{{{SSD}}}ParameterValues")
    parameters = SubElement(SubElement(holder, f"{{{SSV}}}ParameterSet",
                                       {"version": "1.0", "name": "start values"}),
                            f"{{{SSV}}}Parameters")
    for connector, value in values.items():
        SubElement(SubElement(parameters, f"{{{SSV}}}Parameter", {"name": connector}),
                   f"{{{SSV}}}Real", {"value": repr(float(value))})


def fmu_table(path: Path) -> tuple[VariableTable, dict]:
    """The variable table and configuration inside an exported FMU."""
    with zipfile.ZipFile(path) as z:
        table = VariableTable.from_json(z.read(f"resources/{RESOURCE_DIR}/{TABLE_FILE}").decode())
        config = json.loads(z.read(f"resources/{RESOURCE_DIR}/{CONFIG_FILE}"))
    return table, config


def rigid_starts(links, flex: dict[str, tuple[VariableTable, dict]]) -> dict[str, float | str]:
    """The rigid FMU's start values in the package: each input the flexible FMUs feed starts
    at the feeding output's start, and each point's added mass (parameters) is the one its
    flexible body hands over, in the axes it hands it over in."""
    starts: dict[str, float | str] = {}
    for a, a_name, b, b_name in links:
        if b == RIGID:
            starts[b_name] = float(flex[a][0].by_name()[a_name].start)
    for table, config in flex.values():
        for v in table.by_kind("flex_added_mass"):
            starts[v.name] = float(v.start)
        for point, frame in config.get("added_mass_frames", {}).items():
            starts[f"{point}.added_mass_frame"] = frame
    return starts


def first_motions(scenario) -> dict[str, dict[str, float]]:
    """Each point's motion at the start as ``rbcosim run`` hands it to the flexible side in
    the first macro step (accelerations under the flexible side's initial wrench and added
    mass), by connector name: the start values of the flexible FMUs' motion inputs."""
    from rbcosim.cosim.master import CosimMaster

    master = CosimMaster(scenario)  # initialization only: no step is taken
    names = [c for c, _, _ in POINT_COMPONENTS + ACCELERATION_COMPONENTS]
    return {f"{point}.{c}": float(x) for point, row in
            zip(master.rigid.point_names, master.rigid.motions_array()) for c, x in zip(names, row)}


def flex_starts(links, motions: dict[str, float], body: str) -> dict[str, float]:
    """Start values of flexible body ``body``'s inputs: the rigid side's ``motions`` feeding
    them (first_motions)."""
    return {b_name: motions[a_name] for a, a_name, b, b_name in links if a == RIGID and b == body}


def export_ssp(scenario: str | Path, output: str | Path, fmi_version: int = 2) -> Path:
    """Write ``output`` (``.ssp``): the rigid-side FMU, the flexible-body FMUs and their
    connections (module docstring). ScenarioError when the scenario has no flexible body."""
    from rbcosim.scenario.loader import load_scenario

    scenario, output = Path(scenario).resolve(), Path(output).resolve()
    if output.suffix != ".ssp":
        raise ValueError(f"output must end in .ssp: {output}")
    parsed = load_scenario(scenario)
    if not parsed.couplings:
        raise ScenarioError(f"{scenario}: no [couplings]: an SSP needs a flexible body to "
                            "couple; export the rigid side alone with export-fmu")
    bodies = sorted(parsed.flex_bodies)
    if RIGID in bodies:
        raise ScenarioError(f"{scenario}: flex_bodies.{RIGID}: the name is the rigid side's "
                            "component in the SSP; rename the flexible body")
    links = connections([(c.name, c.point, c.flex_body) for c in parsed.couplings])
    motions = first_motions(parsed)
    bindings = {body: flex_starts(links, motions, body) for body in bodies}
    with tempfile.TemporaryDirectory(prefix="rbcosim_ssp_") as tmp:
        fmus = {}
        for body in bodies:
            fmus[body] = export_fmu(scenario, Path(tmp) / f"{body}.fmu", ExportOptions(
                fmi_version=fmi_version, name=body, flex=body,
                starts=tuple(bindings[body].items())))
        flex = {body: fmu_table(path) for body, path in fmus.items()}
        bindings[RIGID] = rigid_starts(links, flex)
        # The accelerations' values in Initialization Mode: those under the start wrench.
        accelerations = {k: x for k, x in motions.items() if k.rsplit(".", 1)[1] in ACCELERATIONS}
        fmus = {RIGID: export_fmu(scenario, Path(tmp) / f"{RIGID}.fmu", ExportOptions(
            fmi_version=fmi_version, name=RIGID,
            starts=tuple({**bindings[RIGID], **accelerations}.items()))), **fmus}
        tables = {RIGID: fmu_table(fmus[RIGID])[0], **{b: t for b, (t, _) in flex.items()}}
        reals = {c: {k: v for k, v in b.items() if not isinstance(v, str)}
                 for c, b in bindings.items()}  # the frame stays the FMU's own start
        ssd = system_structure(scenario.stem, tables, links, reals, 0.0,
                               parsed.solver.t_end, parsed.cosim.macro_step)
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as package:
            package.writestr("SystemStructure.ssd", ssd)
            for component, path in fmus.items():
                package.write(path, f"resources/{component}.fmu")
    return output
