"""Additions to the modelDescription.xml that pythonfmu and pythonfmu3 write (units, the
ModelStructure with each output's dependencies, derivative flags), and the ModelStructure of
the native FMU's (native_files.py)."""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

from rbcosim.fmu_export.runtime.derivatives import KNOWN_ORDERS, UNKNOWN_KINDS
from rbcosim.fmu_export.table import VariableTable

#: CoSimulation attributes of an FMU with derivatives, by FMI version.
_DERIVATIVE_FLAGS = {
    2: ("providesDirectionalDerivative",),
    3: ("providesDirectionalDerivatives", "providesAdjointDerivatives"),
}


#: Outputs whose value depends on the state only: inputs set after a doStep change them only
#: through the next doStep (no direct feedthrough). The accelerations are the last step's (under
#: the wrench it was given, at its end), so a master's transfer order cannot change them; a
#: flexible-body FMU publishes all its outputs at the end of a doStep (or of initialization).
STATE_KINDS = ("point", "body", "joint_coordinate", "acceleration", "flex_wrench",
               "flex_wrench_rate", "flex_wrench_rate2", "flex_wrench_rate3", "flex_node",
               "flex_energy", "flex_output", "flex_added_mass")


def feedthrough(table: VariableTable) -> dict[str, list]:
    """Each output's direct feedthrough: the inputs whose new value changes it before the
    next doStep. Kinematics, accelerations and a flexible body's outputs (STATE_KINDS): none;
    a joint's gaps: its ``J.flex.*`` inputs; its energy residual: ``J.flex_energy``."""
    variables = table.variables
    of_joint = {"gap": "flex", "energy_residual": "flex_energy"}
    deps: dict[str, list] = {}
    for v in variables:
        if v.causality != "output":
            continue
        if v.kind in STATE_KINDS:
            deps[v.name] = []
        elif v.kind in of_joint:
            deps[v.name] = [u for u in variables
                            if u.kind == of_joint[v.kind] and u.owner == v.owner]
    return deps


def derivative_dependencies(table: VariableTable) -> dict[str, list]:
    """With directional derivatives: each output with derivatives (point kinematics, body
    states, accelerations) on every wrench input and its time derivatives (rbcosim's J is
    the step's sensitivity, see derivatives.py); the others left out."""
    knowns = [v for v in table.variables if v.kind in KNOWN_ORDERS]
    return {v.name: knowns for v in table.variables
            if v.causality == "output" and v.kind in UNKNOWN_KINDS}


def write_model_structure(root: Element, table: VariableTable, fmi_version: int,
                          dependencies: dict[str, list]) -> None:
    """Replace ``root``'s ModelStructure: every output as an output and an initial unknown
    (outputs are ``initial="calculated"``), with ``dependencies`` (name -> inputs) where
    given; FMI 2 refers to variables by their 1-based index in ModelVariables, FMI 3 by value
    reference."""
    old = root.find("ModelStructure")
    position = list(root).index(old)
    root.remove(old)
    structure = Element("ModelStructure")
    root.insert(position, structure)
    outputs = [v for v in table.variables if v.causality == "output"]
    if fmi_version == 2:
        index = {node.get("name"): str(i)
                 for i, node in enumerate(root.find("ModelVariables"), 1)}
        ref = lambda v: index[v.name]
        groups = [(SubElement(structure, "Outputs"), "Unknown", "index"),
                  (SubElement(structure, "InitialUnknowns"), "Unknown", "index")]
    else:
        ref = lambda v: str(v.vr)
        groups = [(structure, "Output", "valueReference"),
                  (structure, "InitialUnknown", "valueReference")]
    outputs.sort(key=lambda v: int(ref(v)))
    for group, (parent, tag, key) in enumerate(groups):
        for v in outputs:
            node = SubElement(parent, tag, {key: ref(v)})
            if group == 0 and v.name in dependencies:
                node.set("dependencies", " ".join(ref(u) for u in dependencies[v.name]))
                if dependencies[v.name]:
                    node.set("dependenciesKind",
                             " ".join(["dependent"] * len(dependencies[v.name])))


def decorate_model_description(
    root: Element, table: VariableTable, *, fmi_version: int, macro_step: float,
    derivatives: bool = False,
) -> None:
    """Add UnitDefinitions, each variable's ``unit`` attribute, the ModelStructure with the
    outputs' dependencies (:func:`feedthrough`, or with ``derivatives`` the derivative flags
    and :func:`derivative_dependencies`), in place.

    pythonfmu 0.7 writes no units; FMPy's validation wants every unit used to be defined.
    UnitDefinitions goes right after the CoSimulation element, as both schemas order it.
    FMI 3 also gets ``fixedInternalStepSize``, the macro step (``macro_step``, s): the FMU
    steps only whole multiples of it (canHandleVariableCommunicationStepSize is false).
    """
    cosim = root.find("CoSimulation")
    if fmi_version == 3:
        cosim.set("fixedInternalStepSize", repr(float(macro_step)))
    if derivatives:
        for flag in _DERIVATIVE_FLAGS[fmi_version]:
            cosim.set(flag, "true")
        write_model_structure(root, table, fmi_version, derivative_dependencies(table))
    else:
        write_model_structure(root, table, fmi_version, feedthrough(table))
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
