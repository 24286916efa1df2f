"""Additions to the modelDescription.xml that pythonfmu and pythonfmu3 write: units and, for
an FMU exported with directional derivatives, their capability flags and the outputs'
dependencies on the wrench inputs (rbcosim.fmu_export.derivatives)."""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

from rbcosim.fmu_export.derivatives import KNOWN_ORDERS, UNKNOWN_KINDS
from rbcosim.fmu_export.table import VariableTable

#: CoSimulation attributes of an FMU with derivatives, by FMI version.
_DERIVATIVE_FLAGS = {
    2: ("providesDirectionalDerivative",),
    3: ("providesDirectionalDerivatives", "providesAdjointDerivatives"),
}


def decorate_model_description(
    root: Element, table: VariableTable, *, fmi_version: int, derivatives: bool = False
) -> None:
    """Add UnitDefinitions, each variable's ``unit`` attribute and, with ``derivatives``,
    the derivative flags and dependencies (:func:`declare_derivatives`), in place.

    pythonfmu 0.7 writes neither; FMPy's validation wants every unit used to be defined.
    UnitDefinitions goes right after the CoSimulation element, as both schemas order it.
    """
    if derivatives:
        declare_derivatives(root, table, fmi_version)
    units = table.units()
    if not units:
        return
    position = list(root).index(root.find("CoSimulation")) + 1
    root.insert(position, unit_definitions(units))

    unit_of = {v.name: v.unit for v in table.variables if v.unit is not None}
    for node in root.find("ModelVariables"):
        unit = unit_of.get(node.get("name"))
        if unit is None:
            continue
        typed = node.find("Real") if fmi_version == 2 else node
        typed.set("unit", unit)


def unit_definitions(units: dict[str, dict[str, int]]) -> Element:
    """The UnitDefinitions element (FMI 2 and 3 alike) of ``units``: name -> SI base-unit
    exponents (VariableTable.units)."""
    definitions = Element("UnitDefinitions")
    for name, exponents in units.items():
        unit = SubElement(definitions, "Unit", {"name": name})
        SubElement(unit, "BaseUnit", {k: str(v) for k, v in exponents.items()})
    return definitions


def declare_derivatives(root: Element, table: VariableTable, fmi_version: int) -> None:
    """Set the CoSimulation derivative flags, and make each output with derivatives (point
    kinematics, body states, accelerations) depend on every wrench input ("dependent"); the
    other outputs keep no dependencies attribute (FMI: unknown, may depend on all inputs)."""
    cosim = root.find("CoSimulation")
    for flag in _DERIVATIVE_FLAGS[fmi_version]:
        cosim.set(flag, "true")
    kinds = {v.name: v.kind for v in table.variables}
    knowns = [v for v in table.variables if v.kind in KNOWN_ORDERS]
    structure = root.find("ModelStructure")
    if fmi_version == 2:
        index = {node.get("name"): i for i, node in enumerate(root.find("ModelVariables"), 1)}
        names = list(index)
        refs = " ".join(str(index[v.name]) for v in knowns)
        of = {node: names[int(node.get("index")) - 1] for node in structure.iter("Unknown")}
    else:
        refs = " ".join(str(v.vr) for v in knowns)
        name_of = {v.vr: v.name for v in table.variables}
        of = {node: name_of[int(node.get("valueReference"))]
              for node in structure.findall("Output")}
    for node, name in of.items():
        if kinds[name] in UNKNOWN_KINDS:
            node.set("dependencies", refs)
            node.set("dependenciesKind", " ".join(["dependent"] * len(knowns)))
