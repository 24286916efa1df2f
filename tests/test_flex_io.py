"""Import of structure matrices (.npz, .mtx) and scenario tables for flexible bodies."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io

from rbcosim.errors import ScenarioError
from rbcosim.flex import (
    FlexModel,
    StructureMatrices,
    load_mtx,
    load_npz,
    save_npz,
)
from rbcosim.flex.io.matrices_io import validate_structure
from rbcosim.scenario.flex_config import flex_model_from_config

pytestmark = pytest.mark.unit

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
M2 = np.diag([0.0, 1.0])
K2 = np.array([[100.0, -100.0], [-100.0, 1100.0]])
C2 = np.array([[1.0, -1.0], [-1.0, 1.0]])


def _structure():
    rows = np.zeros((1, 3, 2))
    rows[0, 0, 1] = 1.0
    return StructureMatrices(M2, K2, C2, 1, ("x",), ("m2",), rows, np.array([[0.5, 0, 0]]))


def test_two_mass_data_file_holds_the_two_mass_oscillator():
    s = load_npz(SCENARIOS / "two_mass_flex.npz")
    np.testing.assert_array_equal(s.mass, M2)
    np.testing.assert_array_equal(s.stiffness, K2)
    np.testing.assert_array_equal(s.damping, C2)
    assert s.n_boundary == 1 and s.boundary_dofs == ("x",) and s.output_names == ("m2",)
    np.testing.assert_array_equal(s.output_rows[0] @ np.array([0.1, 0.2]), [0.2, 0, 0])


def test_npz_round_trip(tmp_path):
    save_npz(tmp_path / "s.npz", _structure())
    s = load_npz(tmp_path / "s.npz")
    ref = _structure()
    for name in ("mass", "stiffness", "damping", "output_rows", "output_positions"):
        np.testing.assert_array_equal(getattr(s, name), getattr(ref, name))
    assert (s.n_boundary, s.boundary_dofs, s.output_names) == (1, ("x",), ("m2",))


def test_mtx_round_trip(tmp_path):
    for name, a in (("m", M2), ("k", K2), ("c", C2)):
        scipy.io.mmwrite(tmp_path / f"{name}.mtx", a)
    s = load_mtx(
        {"M": tmp_path / "m.mtx", "K": tmp_path / "k.mtx", "C": tmp_path / "c.mtx"}, 1, ["x"]
    )
    np.testing.assert_array_equal(s.mass, M2)
    np.testing.assert_array_equal(s.stiffness, K2)
    np.testing.assert_array_equal(s.damping, C2)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"K": np.ones((2, 3))}, "bad.npz: K: expected a square 2x2 matrix, got shape (2, 3)"),
        ({"K": None}, "bad.npz: K: missing"),
        ({"M": np.array([[1.0, 0.5], [0.0, 1.0]])}, "bad.npz: M: expected a symmetric matrix"),
        (
            {"K": np.array([[1.0, 0.0], [0.0, -1.0]])},
            "bad.npz: K: expected a positive semi-definite matrix",
        ),
        ({"C": np.array([[1.0, np.nan], [np.nan, 1.0]])}, "bad.npz: C: contains non-finite"),
        ({"n_boundary": np.float64(1.0)}, "bad.npz: n_boundary: expected an integer scalar"),
        ({"n_boundary": np.int64(2)}, "bad.npz: n_boundary: expected 1..1"),
        ({"boundary_dofs": np.array(["q"])}, "bad.npz: boundary_dofs: expected distinct names"),
        ({"stiffness": K2}, "bad.npz: unknown keys ['stiffness']"),
        ({"gravity_load": np.ones((3, 3))},
         "bad.npz: gravity_load: expected finite numbers of shape (2, 3)"),
    ],
)
def test_bad_npz_names_file_and_key(tmp_path, change, message):
    content = {
        "M": M2,
        "K": K2,
        "C": C2,
        "n_boundary": np.int64(1),
        "boundary_dofs": np.array(["x"]),
    }
    content.update(change)
    content = {k: v for k, v in content.items() if v is not None}
    np.savez(tmp_path / "bad.npz", **content)
    with pytest.raises(ScenarioError) as info:
        load_npz(tmp_path / "bad.npz")
    assert str(info.value).startswith(message)


def test_bad_mtx_names_file_and_key(tmp_path):
    scipy.io.mmwrite(tmp_path / "m.mtx", M2)
    scipy.io.mmwrite(tmp_path / "k.mtx", np.ones((2, 3)))
    with pytest.raises(ScenarioError, match=r"k\.mtx: K: expected a square 2x2 matrix"):
        load_mtx({"M": tmp_path / "m.mtx", "K": tmp_path / "k.mtx"}, 1)
    with pytest.raises(ScenarioError, match=r"nope\.mtx: M: file not found"):
        load_mtx({"M": tmp_path / "nope.mtx", "K": tmp_path / "k.mtx"}, 1)
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ScenarioError, match=r"junk\.npz: not a readable"):
        load_npz(tmp_path / "junk.npz")


BEAM = {
    "kind": "beam",
    "attachment": "floating",
    "length": 1.0,
    "youngs_modulus": 2.1e11,
    "density": 7850.0,
    "section": "square",
    "width": 0.01,
    "elements": 10,
    "modes": 4,
    "planar": True,
    "damping": {"modal_ratio": 0.0},
    "output_nodes": {"tip": "end"},
}
WHERE = "scenarios/x.toml: flex_bodies.beam"


def test_config_beam_builds_the_pendulum_beam():
    model = flex_model_from_config(dict(BEAM), SCENARIOS, WHERE)
    assert isinstance(model, FlexModel)
    assert model.attachment == "floating" and model.n_modes == 4 and model.n_boundary == 3
    assert model.output_names == ("tip",)
    np.testing.assert_allclose(model.output_positions[0], [1.0, 0.0, 0.0])
    assert model.floating.total_mass == pytest.approx(7850.0 * 1e-4)


def test_config_matrices_file_relative_to_scenario():
    cfg = {"kind": "matrices", "attachment": "grounded", "file": "two_mass_flex.npz"}
    model = flex_model_from_config(cfg, SCENARIOS, WHERE)
    assert model.attachment == "grounded" and model.n_modes == 1
    assert model.boundary_components == (0,)
    # Static (Guyan) boundary stiffness of the two-mass structure: kc k2 / (kc + k2).
    assert model.stiffness[0, 0] == pytest.approx(100.0 * 1000.0 / 1100.0, rel=1e-12)


def test_config_matrices_mtx_files(tmp_path):
    for name, a in (("m", M2), ("k", K2), ("c", C2)):
        scipy.io.mmwrite(tmp_path / f"{name}.mtx", a)
    cfg = {
        "kind": "matrices",
        "files": {"M": "m.mtx", "K": "k.mtx", "C": "c.mtx"},
        "n_boundary": 1,
        "boundary_dofs": ["x"],
    }
    model = flex_model_from_config(cfg, tmp_path, WHERE)
    assert model.stiffness[0, 0] == pytest.approx(100.0 * 1000.0 / 1100.0, rel=1e-12)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, f"{WHERE}.colour: unknown key"),
        ({"length": "long"},
         f"{WHERE}.length: expected a finite number of magnitude at most 1e+100, got 'long'"),
        ({"length": None}, f"{WHERE}.length: missing"),
        ({"elements": 2.5}, (f"{WHERE}.elements: expected an integer from 1 to 100000 "
                             "(written without a decimal point), got 2.5")),
        ({"modes": 99}, f"{WHERE}.modes: expected at most 30"),
        ({"planar": "yes"}, f"{WHERE}.planar: expected true or false"),
        ({"attachment": "glued"}, f"{WHERE}.attachment: expected 'grounded' or 'floating'"),
        ({"section": "hexagon"}, f"{WHERE}.section: expected 'square'"),
        ({"damping": {"modal_ratio": -1}}, f"{WHERE}.damping.modal_ratio: expected"),
        ({"damping": {"viscous": 1}}, f"{WHERE}.damping.viscous: unknown key"),
        ({"output_nodes": {"tip": "middle"}}, f"{WHERE}.output_nodes.tip: expected 'end'"),
        ({"kind": "shell"}, f"{WHERE}.kind: expected 'beam' or 'matrices', got 'shell'"),
        ({"geometric_stiffening": 1}, f"{WHERE}.geometric_stiffening: expected true or false"),
        ({"geometric_stiffening": True, "attachment": "grounded"},
         f"{WHERE}.geometric_stiffening: only for attachment = 'floating'"),
    ],
)
def test_config_errors_name_the_key(change, message):
    cfg = dict(BEAM)
    cfg.update(change)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    with pytest.raises(ScenarioError) as info:
        flex_model_from_config(cfg, SCENARIOS, WHERE)
    assert str(info.value).startswith(message)


def test_config_matrices_errors(tmp_path):
    cfg = {"kind": "matrices", "file": "missing.npz"}
    # Issue 27: the key (.file) and the resolved path are shown.
    with pytest.raises(ScenarioError, match=rf"^{WHERE}\.file: missing\.npz: file not found "
                                            rf"\(/.*missing\.npz\)$"):
        flex_model_from_config(cfg, tmp_path, WHERE)
    cfg = {"kind": "matrices", "attachment": "floating", "file": "two_mass_flex.npz"}
    with pytest.raises(ScenarioError,
                       match=rf"^{WHERE}: two_mass_flex\.npz: node_positions: missing"):
        flex_model_from_config(cfg, SCENARIOS, WHERE)
    cfg = {"kind": "matrices", "file": "two_mass_flex.npz", "n_boundary": 2}
    with pytest.raises(ScenarioError, match=rf"^{WHERE}\.n_boundary: 2 disagrees"):
        flex_model_from_config(cfg, SCENARIOS, WHERE)


def _spectrum_matrix(smallest: float, n: int = 40) -> np.ndarray:
    """Q diag(smallest, 1..10) Q^T, Q a fixed random orthogonal matrix."""
    q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((n, n)))
    d = np.linspace(1.0, 10.0, n)
    d[0] = smallest
    return (q * d) @ q.T


def test_semi_definiteness_limit_is_the_smallest_eigenvalue():
    """A matrix of known spectrum: smallest eigenvalue -0.5 tol passes (round-off of a singular
    matrix), -2 tol is refused naming it, tol = 1e-9 max|A| n."""
    tol = 1e-9 * float(np.abs(_spectrum_matrix(0.0)).max()) * 40
    ok = _spectrum_matrix(-0.5 * tol)
    s = validate_structure("k.npz", np.eye(40), ok, None, 1, None, None, None, None)
    assert s.stiffness.shape == (40, 40)
    with pytest.raises(ScenarioError) as info:
        validate_structure("k.npz", np.eye(40), _spectrum_matrix(-2 * tol), None, 1, None,
                           None, None, None)
    message = str(info.value)
    assert message.startswith("k.npz: K: expected a positive semi-definite matrix, smallest "
                              "eigenvalue ")
    assert float(message.rsplit(" ", 1)[1]) == pytest.approx(-2 * tol, rel=1e-5)


def test_semi_definiteness_of_a_valid_matrix_computes_no_eigenvalues(monkeypatch):
    """A large PSD structure (singular, as a free one) is checked without an eigenvalue
    decomposition (a dense one of a 600-node solid's matrices took minutes)."""
    import scipy.linalg

    def refused(*args, **kwargs):
        raise AssertionError("eigenvalue decomposition")

    for module in (np.linalg, scipy.linalg):
        for name in ("eigvalsh", "eigh", "eigvals", "eig"):
            monkeypatch.setattr(module, name, refused)
    b = np.random.default_rng(4).standard_normal((300, 250))
    k = b @ b.T  # PSD, rank 250
    s = validate_structure("big.npz", np.eye(300), k, k, 6, None, None, None, None)
    assert s.damping.shape == (300, 300)
