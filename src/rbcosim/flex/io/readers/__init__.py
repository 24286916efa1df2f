"""Readers of FE codes' exported models: one module per code, each giving an :class:`FEModel`.

| format | files | module |
|---|---|---|
| ``calculix`` | ``.inp`` (``*NODE``, ``*NSET``), ``.sti``, ``.mas``, ``.dof`` | :mod:`.calculix` |
| ``abaqus`` | ``.inp`` (``*NODE``, ``*NSET``), ``*MATRIX GENERATE`` ``.mtx`` | :mod:`.abaqus` |
| ``nastran`` | ``.bdf`` (``GRID``, ``SET1``), punch ``DMIG`` | :mod:`.nastran` |
| ``ansys`` | ``.full`` (ansys-mapdl-reader), nodes from ``.cdb`` or ``.rst`` | :mod:`.ansys` |

Every problem raises :class:`rbcosim.errors.ScenarioError` naming the file, and the line or
key where one is known.
"""

from __future__ import annotations

from pathlib import Path

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.model import FEModel

#: The formats and the files each reads (keys of ``files``); the first is required.
FORMATS = {
    "calculix": ("inp", "stiffness", "mass", "dofs"),
    "abaqus": ("inp", "stiffness", "mass"),
    "nastran": ("bdf", "stiffness", "mass"),
    "ansys": ("full", "nodes"),
}


def read_fe_model(fmt: str, files: dict[str, Path], where: str = "from") -> FEModel:
    """The FE model of format ``fmt`` from ``files`` (keys of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ScenarioError(f"{where}: expected one of {list(FORMATS)}, got {fmt!r}")
    unknown = sorted(set(files) - set(FORMATS[fmt]))
    if unknown:
        raise ScenarioError(f"{where}: {fmt} reads the files {list(FORMATS[fmt])}, got "
                            f"{unknown[0]!r}")
    if fmt == "calculix":
        from rbcosim.flex.io.readers.calculix import read_calculix

        return read_calculix(**files)
    if fmt == "abaqus":
        from rbcosim.flex.io.readers.abaqus import read_abaqus

        return read_abaqus(**files)
    if fmt == "nastran":
        from rbcosim.flex.io.readers.nastran import read_nastran

        return read_nastran(**files)
    from rbcosim.flex.io.readers.ansys import read_ansys

    return read_ansys(**files)


__all__ = ["FORMATS", "FEModel", "read_fe_model"]
