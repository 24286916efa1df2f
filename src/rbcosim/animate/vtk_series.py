"""The Scene as a ParaView time series: one VTK ``.vtu`` per written row and a ``.pvd``
collection naming each file with its time (s). Written through meshio (the ``animate`` extra)."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from rbcosim.animate.scene import KINDS, Scene
from rbcosim.errors import RbcosimError


def check_meshio():
    """The meshio module (RbcosimError naming the extra when it is missing)."""
    try:
        import meshio
    except ImportError:
        raise RbcosimError("animate needs meshio: pip install 'rbcosim[animate]'") from None
    return meshio


def write_series(scene: Scene, directory: Path, stem: str, rows: np.ndarray) -> Path:
    """Write ``<stem>_<k>.vtu`` for each row index in `rows` and ``<stem>.pvd`` into
    `directory`; returns the .pvd path."""
    meshio = check_meshio()
    directory.mkdir(parents=True, exist_ok=True)
    lines = np.array([c[:2] for c in scene.lines], dtype=np.int64).reshape(-1, 2)
    verts = np.array([c[0] for c in scene.vertices], dtype=np.int64).reshape(-1, 1)
    cells, part, kind = [], [], []
    for block, spec in (("line", scene.lines), ("vertex", scene.vertices)):
        if spec:
            cells.append((block, lines if block == "line" else verts))
            part.append(np.array([c[-2] for c in spec], dtype=np.int32))
            kind.append(np.array([c[-1] for c in spec], dtype=np.int32))
    t = scene.results.t
    entries = []
    for k, i in enumerate(rows):
        pos, disp = scene.points(int(i))
        name = f"{stem}_{k:05d}.vtu"
        mesh = meshio.Mesh(pos, cells, point_data={"displacement": disp},
                           cell_data={"part": part, "kind": kind})
        mesh.write(directory / name, binary=True)
        entries.append(f'    <DataSet timestep="{float(t[i])!r}" part="0" file={quoteattr(name)}/>')
    legend = "; ".join(f"{j} = {p}" for j, p in enumerate(scene.parts))
    kinds = "; ".join(f"{j} = {k}" for j, k in enumerate(KINDS))
    pvd = directory / f"{stem}.pvd"
    pvd.write_text(
        '<?xml version="1.0"?>\n'
        f"<!-- cell data part: {legend} -->\n<!-- cell data kind: {kinds} -->\n"
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        "  <Collection>\n" + "\n".join(entries) + "\n  </Collection>\n</VTKFile>\n")
    return pvd
