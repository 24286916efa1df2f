"""The modes' sign convention (flex/craig_bampton.py, mode_signs): each fixed-interface mode's
largest output-node displacement is positive (then its largest translation, then its largest
coordinate; round-off ties go to the first index), whatever sign the eigensolver returned and
whatever the mesh, so eta means the same on two meshes and two LAPACK builds."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg

from rbcosim.flex.io.matrices_io import StructureMatrices
from rbcosim.flex.modelling.beam import euler_bernoulli_beam
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.modelling.craig_bampton import SIGN_TIE, craig_bampton, mode_signs
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario, split_overrides

cb_module = importlib.import_module("rbcosim.flex.modelling.craig_bampton")  # the package shadows it
REPO = Path(__file__).resolve().parents[1]
STEEL = {"length": 1.0, "youngs_modulus": 2.1e11, "density": 7850.0, "area": 1e-4,
         "second_moment_y": 1e-8 / 12}


def _first_largest(values: np.ndarray) -> float:
    """The entry the convention makes positive: the first within SIGN_TIE of the largest."""
    big = np.abs(values).max()
    return values[np.flatnonzero(np.abs(values) >= (1.0 - SIGN_TIE) * big)[0]]


@pytest.fixture
def flipping(monkeypatch):
    """craig_bampton's eigensolver returning -v for every other mode (mode 1, 3, ...): an
    equally valid LAPACK output."""
    def eigh(*args, **kwargs):
        lam, phi = scipy.linalg.eigh(*args, **kwargs)
        return lam, phi * np.where(np.arange(phi.shape[1]) % 2 == 0, -1.0, 1.0)
    linalg = SimpleNamespace(eigh=eigh, cho_factor=scipy.linalg.cho_factor,
                             cho_solve=scipy.linalg.cho_solve)
    def apply():
        monkeypatch.setattr(cb_module, "scipy", SimpleNamespace(linalg=linalg))
    return apply


def _cantilever(elements=8):
    """A planar steel cantilever's physical matrices and the tip's (x, y, z) displacement rows."""
    beam = euler_bernoulli_beam(**STEEL, n_elements=elements, planar=True)
    rows = np.zeros((1, 3, beam.mass.shape[0]))
    rows[0, 0, -3] = rows[0, 2, -2] = 1.0  # the tip's u_x, u_z (DOFs x, z, ry per node)
    return beam, rows


def test_v_and_minus_v_give_the_same_basis(flipping):
    beam, rows = _cantilever()
    args = (beam.mass, beam.stiffness, [0, 1, 2], 5)
    plain = craig_bampton(*args, sign_references=(rows,))
    flipping()
    flipped = craig_bampton(*args, sign_references=(rows,))
    for name in ("transformation", "mass", "stiffness", "frequencies_hz"):
        assert np.array_equal(getattr(plain, name), getattr(flipped, name)), name
    assert np.all(rows[0, 2] @ plain.transformation[:, 3:] > 0)


def test_an_imported_structure_takes_its_output_rows_and_the_same_basis(flipping):
    """Imported matrices (a file's M, K and output rows): each mode's tip u_z is positive, and
    an eigensolver returning -v gives the same reduced model to the bit."""
    beam, rows = _cantilever()
    structure = StructureMatrices(beam.mass, beam.stiffness, None, 3, ("x", "z", "ry"),
                                  ("tip",), rows, np.array([[1.0, 0.0, 0.0]]),
                                  boundary_nodes=np.zeros(3, dtype=np.int64))
    plain = FlexModel.from_matrices(structure, n_modes=4)
    assert np.all(plain.output_rows[0, 2, 3:] > 0)
    flipping()
    flipped = FlexModel.from_matrices(structure, n_modes=4)
    for name in ("mass", "stiffness", "damping", "output_rows", "gravity_load"):
        assert np.array_equal(getattr(plain, name), getattr(flipped, name)), name


def test_mode_signs_is_odd_and_breaks_ties_by_the_first_index():
    rng = np.random.default_rng(7)
    modes = rng.standard_normal((12, 5))
    refs = (rng.standard_normal((2, 12)),)
    signs = mode_signs(modes, refs)
    assert np.array_equal(mode_signs(-modes, refs), -signs)
    for j in range(5):
        assert _first_largest((refs[0] @ (modes * signs))[:, j]) > 0
    # A mirror-symmetric mode: equal magnitudes (to round-off) of opposite sign; the first wins.
    tie = np.array([[0.0], [1.0], [0.5], [-1.0 + 1e-15], [0.0]])
    assert mode_signs(tie)[0] == 1.0 and mode_signs(-tie)[0] == -1.0
    # A mode with nothing at the output (below 1e-9 of its largest component) falls back to the
    # next block, here every coordinate.
    out = np.array([[0.0, 0.0, 1.0, 0.0, 0.0]])
    antisym = np.array([[0.0], [-1.0], [1e-17], [0.7], [0.0]])
    assert mode_signs(antisym, (out,))[0] == -1.0


@pytest.mark.parametrize("elements", [5, 6, 7, 10, 16])
def test_cantilever_modes_have_a_positive_tip_on_every_mesh(elements):
    """Planar: every bending mode's tip u_z is positive; 3D: each mode's largest tip component
    (the first on a tie) is positive."""
    for planar in (True, False):
        model = FlexModel.from_beam(**STEEL, n_elements=elements, n_modes=4, planar=planar,
                                    output_nodes={"tip": "end"})
        tip = model.output_rows[0][:, model.n_boundary:]  # (3, k): x, y, z per mode
        for j in range(model.n_modes):
            assert _first_largest(tip[:, j]) > 0, (planar, j)
        if planar:
            assert np.all(tip[2] > 0)
            # The first moment of each mode (what the frame's acceleration drives) keeps its
            # sign from mesh to mesh: +, -, +, - for the cantilever.
            moment = model.floating.modal_first_moment[2]
            assert np.array_equal(np.sign(moment), [1.0, -1.0, 1.0, -1.0])


def test_chord_modes_at_their_output_or_first_largest_translation():
    """The pinned-pinned rod with a mid-span output: symmetric modes have a positive
    mid-span deflection; antisymmetric ones (zero there) their first largest translation."""
    for elements in (6, 8, 10):
        model = ChordModel.from_beam(**STEEL, n_elements=elements, n_modes=4,
                                     output_nodes={"mid": 0.5})
        mid = model.output_rows[0][1, 1:]  # u_z at mid-span per mode
        assert mid[0] > 0 and mid[2] > 0
        assert abs(mid[1]) < 1e-9 * abs(mid[0]) and abs(mid[3]) < 1e-9 * abs(mid[0])
        # Antisymmetric modes: positive on the first half of the rod (the first largest node).
        quarter = ChordModel.from_beam(**STEEL, n_elements=elements, n_modes=4,
                                       output_nodes={"mid": 0.5, "q": 0.25})
        assert quarter.output_rows[1][1, 2] > 0


def test_two_meshes_give_etas_of_the_same_sign():
    """The rigid–flexible pendulum for 20 macro steps with 6 and with 10 elements: every modal
    coordinate agrees in sign and to the mesh's effect (below 0.1 of its amplitude)."""
    scenario = REPO / "scenarios" / "rigid_flex_pendulum.toml"
    runs = []
    for elements in (6, 10):
        overrides = split_overrides([f"flex_bodies.beam.elements={elements}"], str(scenario))
        overrides.update({"solver.t_end": "5e-3", "solver.output_every": "1"})
        runs.append(run_scenario(load_scenario(scenario, overrides), progress=False))
    for j in range(1, 5):
        a, b = (r[f"beam.eta{j}"] for r in runs)
        scale = np.abs(b).max()
        # 6 elements move the 4th frequency by 5.5e-3: its phase drifts (measured 2.6e-2 of
        # its amplitude; 9e-4 or less for modes 1-3); a flipped sign would give 2.
        assert 0 < np.abs(a - b).max() < 0.1 * scale, j
        moving = np.abs(b) > 0.2 * scale
        assert np.array_equal(np.sign(a[moving]), np.sign(b[moving])), j
