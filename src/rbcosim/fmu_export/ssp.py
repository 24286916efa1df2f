"""`rbcosim export-ssp`: both sides of a co-simulation as FMUs in an SSP 1.0 package.

The package holds ``SystemStructure.ssd`` and, in ``resources/``, the scenario's rigid-side FMU
(``rigid.fmu``, embedded mode) and one flexible-body FMU per flexible body
(``<body>.fmu``, ``export-fmu --flex``). The system connects, per coupling with interface point
P and joint J, equal names: the rigid FMU's outputs ``P.x`` .. ``P.wz``, ``P.ax`` .. ``P.alz``
to the flexible FMU's inputs; the flexible FMU's wrench ``P.fx`` .. ``P.mz`` and its
derivatives ``P.dfx`` .. ``P.d3mz``, its node ``J.flex.x`` .. ``J.flex.wz`` and
``J.flex_energy`` to the rigid FMU's inputs. A master that steps both FMUs from t_n with the
values exchanged at t_n (a Jacobi master, such as libcosim's fixed-step algorithm) at the
scenario's macro step runs ``cosim.scheme = "jacobi"`` with its extrapolation.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from xml.etree.ElementTree import Element, SubElement, indent, register_namespace, tostring

from rbcosim.errors import ScenarioError
from rbcosim.fmu_export.build import ExportOptions, export_fmu
from rbcosim.fmu_export.table import (
    ACCELERATION_COMPONENTS,
    POINT_COMPONENTS,
    WRENCH_COMPONENTS,
    WRENCH_DERIVATIVES,
)

SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
register_namespace("ssd", SSD)
register_namespace("ssc", SSC)
#: The rigid side's component name in the system (flexible bodies keep their scenario names).
RIGID = "rigid"


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


def system_structure(name: str, components: list[str], links, start: float, stop: float) -> bytes:
    """The SystemStructure.ssd document: components ``resources/<name>.fmu`` with the
    connectors the ``links`` use, the links, and the default experiment."""
    root = Element(f"{{{SSD}}}SystemStructureDescription", {"version": "1.0", "name": name})
    system = SubElement(root, f"{{{SSD}}}System", {"name": name})
    elements = SubElement(system, f"{{{SSD}}}Elements")
    for component in components:
        element = SubElement(elements, f"{{{SSD}}}Component", {
            "name": component, "type": "application/x-fmu-sharedlibrary",
            "source": f"resources/{component}.fmu"})
        connectors = SubElement(element, f"{{{SSD}}}Connectors")
        for a, a_name, b, b_name in links:
            for owner, connector, kind in ((a, a_name, "output"), (b, b_name, "input")):
                if owner == component:
                    node = SubElement(connectors, f"{{{SSD}}}Connector",
                                      {"name": connector, "kind": kind})
                    SubElement(node, f"{{{SSC}}}Real")
    wires = SubElement(system, f"{{{SSD}}}Connections")
    for a, a_name, b, b_name in links:
        SubElement(wires, f"{{{SSD}}}Connection", {
            "startElement": a, "startConnector": a_name, "endElement": b, "endConnector": b_name})
    SubElement(root, f"{{{SSD}}}DefaultExperiment",
               {"startTime": repr(start), "stopTime": repr(stop)})
    indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="utf-8")


def export_ssp(scenario: str | Path, output: str | Path, fmi_version: int = 2) -> Path:
    """Write ``output`` (``.ssp``): the rigid-side FMU, the flexible-body FMUs and their
    connections (module docstring). ScenarioError when the scenario has no flexible body."""
    from rbcosim.scenario import load_scenario

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
    with tempfile.TemporaryDirectory(prefix="rbcosim_ssp_") as tmp:
        fmus = {RIGID: export_fmu(scenario, Path(tmp) / f"{RIGID}.fmu",
                                  ExportOptions(fmi_version=fmi_version, name=RIGID))}
        for body in bodies:
            fmus[body] = export_fmu(scenario, Path(tmp) / f"{body}.fmu",
                                    ExportOptions(fmi_version=fmi_version, name=body, flex=body))
        ssd = system_structure(scenario.stem, list(fmus), links, 0.0, parsed.solver.t_end)
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as package:
            package.writestr("SystemStructure.ssd", ssd)
            for component, path in fmus.items():
                package.write(path, f"resources/{component}.fmu")
    return output
