"""Export a scenario's rigid side as an FMI 2.0 / FMI 3.0 co-simulation FMU.

``export_fmu(scenario, "x.fmu", ExportOptions(fmi_version=3))``; the FMU runs
``rbcosim.fmu_export.runtime.core.FmuCore`` inside the importer's Python (see fmu/README.md).
"""

from rbcosim.fmu_export.packaging.python_fmu import ExportOptions, export_fmu

__all__ = ["ExportOptions", "export_fmu"]
