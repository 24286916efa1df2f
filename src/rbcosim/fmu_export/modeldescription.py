"""Additions to the modelDescription.xml that pythonfmu and pythonfmu3 write: units."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from rbcosim.fmu_export.table import VariableTable


def decorate_model_description(root: Element, table: VariableTable, *, fmi_version: int) -> None:
    """Add UnitDefinitions and each variable's ``unit`` attribute, in place.

    pythonfmu 0.7 writes neither; FMPy's validation wants every unit used to be defined.
    UnitDefinitions goes right after the CoSimulation element, as both schemas order it.
    """
    units = table.units()
    if not units:
        return
    definitions = Element("UnitDefinitions")
    for name, exponents in units.items():
        unit = Element("Unit", {"name": name})
        unit.append(Element("BaseUnit", {k: str(v) for k, v in exponents.items()}))
        definitions.append(unit)
    position = list(root).index(root.find("CoSimulation")) + 1
    root.insert(position, definitions)

    unit_of = {v.name: v.unit for v in table.variables if v.unit is not None}
    for node in root.find("ModelVariables"):
        unit = unit_of.get(node.get("name"))
        if unit is None:
            continue
        typed = node.find("Real") if fmi_version == 2 else node
        typed.set("unit", unit)
