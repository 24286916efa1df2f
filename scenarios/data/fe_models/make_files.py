"""Write the small FE exports the flexible-body docs run their commands on (this folder).

- ``cantilever.inp``: a steel C3D20 cantilever, 0.4 m x 0.04 m x 0.02 m (x along it), 4 x 1 x 1
  elements, SI units, node set FIX = the face x = 0, tip node 9 at (0.4, 0, 0), ending with the
  step ``*FREQUENCY, SOLVER=MATRIXSTORAGE`` (no ``*BOUNDARY``: the part is free);
- ``cantilever.sti``, ``.mas``, ``.dof``: what ``ccx -i cantilever`` writes from it (CalculiX
  2.20, Debian's calculix-ccx; its other output files are removed);
- the same K and M as Abaqus writes them (``*MATRIX GENERATE``: ``cantilever_STIF2.mtx``,
  ``cantilever_MASS2.mtx``, ``node, dof, node, dof, value`` lines) and as Nastran punches them
  (``cantilever.bdf``: GRID cards, SET1 1 = the face x = 0; ``cantilever.pch``: DMIG KAAX and MAAX), written here by
  ``tests/fe_cantilever.py``'s writers (Abaqus and Nastran are not at hand);
- ``beam_m.mtx``, ``beam_k.mtx`` (Matrix Market) and ``beam_nodes.csv`` (x,y,z per node): a
  steel 3D Euler–Bernoulli beam, 1 m, section 0.01 m x 0.02 m, 6 elements, six DOFs per node
  (``rbcosim.flex.modelling.beam``; the beam of ``tests/test_flex_floating_import.py``).

Run: ``python scenarios/data/fe_models/make_files.py`` (needs ``ccx`` on the PATH).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy.io

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tests"))

from fe_cantilever import c3d20_deck, write_abaqus_mtx, write_nastran

from rbcosim.flex.modelling.beam import euler_bernoulli_beam
from rbcosim.flex.io.readers import read_fe_model

STEP = "*STEP\n*FREQUENCY, SOLVER=MATRIXSTORAGE\n*END STEP\n"


def main() -> None:
    deck, numbers, positions = c3d20_deck(4, 1, 1, 0.4, 0.04, 0.02, STEP)
    (HERE / "cantilever.inp").write_text(deck)
    subprocess.run(["ccx", "-i", "cantilever"], cwd=HERE, check=True, capture_output=True)
    for suffix in (".12d", ".cvg", ".dat", ".frd", ".sta"):
        (HERE / f"cantilever{suffix}").unlink(missing_ok=True)
    fe = read_fe_model("calculix", {"inp": HERE / "cantilever.inp"})
    labels = [(int(fe.node_ids[node]), int(comp) + 1) for node, comp in fe.dof_map]
    write_abaqus_mtx(HERE / "cantilever_STIF2.mtx", fe.stiffness, labels)
    write_abaqus_mtx(HERE / "cantilever_MASS2.mtx", fe.mass, labels)
    write_nastran(HERE / "cantilever.bdf", HERE / "cantilever.pch", numbers, positions,
                  fe.stiffness, fe.mass, labels)
    fix = fe.node_ids[fe.node_sets["FIX"]].tolist()  # SET1 1: the clamp face, as a pre-processor writes it
    bdf = (HERE / "cantilever.bdf").read_text().replace(
        "ENDDATA", "SET1,1," + ",".join(map(str, fix[:6])) + "".join(
            f"\n+,{','.join(map(str, fix[a:a + 8]))}" for a in range(6, len(fix), 8))
        + "\nENDDATA")
    (HERE / "cantilever.bdf").write_text(bdf)
    beam = euler_bernoulli_beam(1.0, 2.1e11, 7850.0, 0.01 * 0.02, 0.01 * 0.02**3 / 12,
                                n_elements=6, second_moment_z=0.02 * 0.01**3 / 12,
                                shear_modulus=2.1e11 / 2.6, planar=False)
    scipy.io.mmwrite(HERE / "beam_m.mtx", beam.mass)
    scipy.io.mmwrite(HERE / "beam_k.mtx", beam.stiffness)
    np.savetxt(HERE / "beam_nodes.csv", beam.nodes, delimiter=",", header="x,y,z", comments="")


if __name__ == "__main__":
    main()
