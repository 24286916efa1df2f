"""A C3D20 cantilever written as CalculiX, Abaqus and Nastran input (for the FE import tests).

The beam runs along x from 0 to L, section b (y) x h (z); node set FIX is the face x = 0.
Steel in SI. The writers of the Abaqus and Nastran matrix files take a model's K and M and its
DOF labels and write them in each code's format, independently of the readers under test."""

from __future__ import annotations

import numpy as np

STEEL = "*MATERIAL, NAME=STEEL\n*ELASTIC\n210000e6, 0.3\n*DENSITY\n7850.\n"


def c3d20_deck(nx: int, ny: int, nz: int, length: float, b: float, h: float,
               step: str) -> tuple[str, np.ndarray, np.ndarray]:
    """(deck text, node numbers, positions) of the structured C3D20 mesh and ``step``."""
    ids = {}
    lines = ["*NODE"]
    for k in range(2 * nz + 1):
        for j in range(2 * ny + 1):
            for i in range(2 * nx + 1):
                if i % 2 + j % 2 + k % 2 > 1:
                    continue
                ids[i, j, k] = len(ids) + 1
                lines.append(f"{ids[i, j, k]}, {length * i / (2 * nx):.17g}, "
                             f"{b * j / (2 * ny):.17g}, {h * k / (2 * nz):.17g}")
    lines.append("*ELEMENT, TYPE=C3D20, ELSET=EALL")
    e = 0
    for ez in range(nz):
        for ey in range(ny):
            for ex in range(nx):
                i, j, k = 2 * ex, 2 * ey, 2 * ez
                corners = [(i, j, k), (i + 2, j, k), (i + 2, j + 2, k), (i, j + 2, k),
                           (i, j, k + 2), (i + 2, j, k + 2), (i + 2, j + 2, k + 2),
                           (i, j + 2, k + 2)]
                mids = [(i + 1, j, k), (i + 2, j + 1, k), (i + 1, j + 2, k), (i, j + 1, k),
                        (i + 1, j, k + 2), (i + 2, j + 1, k + 2), (i + 1, j + 2, k + 2),
                        (i, j + 1, k + 2), (i, j, k + 1), (i + 2, j, k + 1),
                        (i + 2, j + 2, k + 1), (i, j + 2, k + 1)]
                e += 1
                nn = [ids[p] for p in corners + mids]
                lines.append(f"{e}, " + ", ".join(map(str, nn[:15])) + ",")
                lines.append(", ".join(map(str, nn[15:])))
    fix = [n for (i, _, _), n in ids.items() if i == 0]
    lines.append("*NSET, NSET=FIX")
    lines += [", ".join(map(str, fix[a:a + 8])) for a in range(0, len(fix), 8)]
    lines.append(STEEL + "*SOLID SECTION, ELSET=EALL, MATERIAL=STEEL")
    numbers = np.array(list(ids.values()))
    pos = np.array([[length * i / (2 * nx), b * j / (2 * ny), h * k / (2 * nz)]
                    for (i, j, k) in ids])
    return "\n".join(lines) + "\n" + step, numbers, pos


def write_abaqus_mtx(path, matrix, labels) -> None:
    """Abaqus FORMAT=MATRIX INPUT: 'node, dof, node, dof, value', the lower triangle."""
    a = matrix.tocoo()
    keep = a.row >= a.col
    with open(path, "w") as f:
        f.writelines(f"{labels[r][0]},{labels[r][1]}, {labels[c][0]},{labels[c][1]}, {float(v)!r}\n" for r, c, v in zip(a.row[keep], a.col[keep], a.data[keep], strict=True))


def write_nastran(bdf, pch, numbers, positions, k, m, labels) -> None:
    """GRID cards and DMIG columns (free field, full precision: a punch's 10 digits spoil the
    rigid-body null space at 1e-10), the DMIG header in small field, upper triangle."""
    with open(bdf, "w") as f:
        f.write("$ grids\nBEGIN BULK\n")
        f.writelines(f"GRID,{n},,{float(x)!r},{float(y)!r},{float(z)!r}\n" for n, (x, y, z) in zip(numbers, positions, strict=True))
        f.write("ENDDATA\n")
    with open(pch, "w") as f:
        for name, a in (("KAAX", k), ("MAAX", m)):
            f.write(f"DMIG    {name:<8s}       0       6       2       0        "
                    f"{a.shape[0]:8d}\n")
            upper = a.tocsc()
            for col in range(a.shape[1]):
                gj, cj = labels[col]
                f.write(f"DMIG,{name},{gj},{cj}\n")
                for ptr in range(upper.indptr[col], upper.indptr[col + 1]):
                    row = upper.indices[ptr]
                    if row > col:
                        continue
                    gi, ci = labels[row]
                    f.write(f"+,{gi},{ci},{float(upper.data[ptr])!r}\n")


def eigenvalues_from_dat(text: str) -> np.ndarray:
    """The EIGENVALUE column of CalculiX's .dat eigenvalue output."""
    lines = text.split("E I G E N V A L U E   O U T P U T")[1].splitlines()
    out = []
    for line in lines[6:]:
        parts = line.split()
        if len(parts) != 5:
            break
        out.append(float(parts[1]))
    return np.array(out)
