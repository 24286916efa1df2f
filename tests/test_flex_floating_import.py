"""Floating imported structures (kind = "matrices", attachment = "floating").

Independent checks:
- a point mass m on a spring of stiffness (k_x, k_y, k_z), written in the documented .npz
  format (node positions, DOF labels), clamped to a hub spinning at Omega: the steady radial
  stretch solves k_x x = m Omega² (r0 + x) (r0 the mass's undeformed radius), and the wrench
  on the hub is the spring force, m Omega² (r0 + x) radially outward;
- the same structure hanging from a body at rest, its axes tilted 30°: static sag
  m g_s,i / k_i along each structure axis (g_s gravity in those axes), and the wrench on the
  body is the weight m g at the deformed lever arm — gravity from the mass matrix alone;
- a second producer of the same model: the beam generator's 3D beam written out as plain M
  (Matrix Market), K (.npy) and node coordinates (CSV), run through `rbcosim
  convert-structure` and imported, gives the generated floating beam's pendulum run;
- an imported floating cantilever (3D, and planar with x, z, ry only): the static equilibrium
  of its modal equations under gravity against Euler–Bernoulli's tip deflections;
- bad files and converter inputs: errors name the file and the key.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from rbcosim.cli.main import main
from rbcosim.cosim.master import run_cosimulation
from rbcosim.errors import ScenarioError
from rbcosim.flex.io.convert import convert_structure, read_nodes_csv, uniform_dof_labels
from rbcosim.flex.io.matrices_io import load_npz
from rbcosim.flex.modelling.beam import euler_bernoulli_beam
from rbcosim.flex.modelling.interface_nodes import Interface
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.scenario.flex_config import flex_model_from_config
from rbcosim.scenario.loader import load_scenario, load_scenario_text

pytestmark = pytest.mark.scenarios

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "scenarios"
MASS, ARM, STIFF = 1.0, 0.5, (400.0, 900.0, 1600.0)
COMPONENTS = ["x", "y", "z", "rx", "ry", "rz", "x", "y", "z"]


def _spring_mass(d=ARM, k=STIFF, coupled=True):
    """(M, K) of a point mass at (d, 0, 0) tied to node 0 (6 DOFs, massless) by springs along
    x, y, z acting on the relative displacement u1 - (u0 + theta0 x d e_x); rigid motions of
    both nodes leave them unstretched (``coupled = False`` drops the theta0 term)."""
    dx = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, -d], [0.0, d, 0.0]])  # [d e_x]x
    b = np.hstack([-np.eye(3), dx if coupled else np.zeros((3, 3)), np.eye(3)])
    mass = np.zeros((9, 9))
    mass[6:, 6:] = MASS * np.eye(3)
    return mass, b.T @ np.diag(k) @ b


def _write(path, **change):
    mass, stiffness = _spring_mass()
    content = {"M": mass, "K": stiffness, "n_boundary": np.int64(6),
               "node_positions": np.array([[0.0, 0.0, 0.0], [ARM, 0.0, 0.0]]),
               "dof_nodes": np.array([0] * 6 + [1] * 3),
               "dof_components": np.array(COMPONENTS),
               "output_names": np.array(["mass"]), "output_nodes": np.array([1])}
    content.update(change)
    np.savez(path, **{k: v for k, v in content.items() if v is not None})


HUB = """
[world]
gravity = [0.0, 0.0, {g}]

[bodies.hub]
mass = 1.0
inertia = [1.0, 1.0, 1.0]
angular_velocity = [0.0, 0.0, {omega}]

{joints}

[interface_points.p]
body = "hub"
position = [{r}, 0.0, 0.0]
axis = [{zx}, 0.0, {zz}]
x_axis = [{zz}, 0.0, {xz}]

[flex_bodies.sm]
kind = "matrices"
attachment = "floating"
file = "sm.npz"
damping = {{ modal_ratio = 1.0 }}

[couplings.c]
point = "p"
flex_body = "sm"

[cosim]
macro_step = 1e-3
micro_steps = 1
scheme = "gauss_seidel_flex_first"
extrapolation = 2

[solver]
integrator = "rk4"
t_end = {t_end}
output_every = 100
"""

SPIN = """
[joints.spin]
type = "revolute"
body1 = "ground"
body2 = "hub"
at = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]

[joints.drive]
type = "driver"
joint = "spin"
motion = {{ polynomial = [0.0, {omega}] }}
"""

HOLD = """
[joints.hold]
type = "fixed"
body1 = "ground"
body2 = "hub"
at = [0.0, 0.0, 0.0]
"""


def _last(results, *columns):
    return np.array([results[c][-1] for c in columns])


def test_point_mass_on_a_spinning_hub_stretches_by_the_centrifugal_force(tmp_path):
    omega, r_hub = 10.0, 0.5
    _write(tmp_path / "sm.npz")
    text = HUB.format(g=0.0, omega=omega, joints=SPIN.format(omega=omega), r=r_hub,
                      zx=0.0, zz=1.0, xz=0.0, t_end=3.0)
    results = run_cosimulation(load_scenario_text(text, base_dir=tmp_path), progress=False)
    r0 = r_hub + ARM
    stretch = MASS * omega**2 * r0 / (STIFF[0] - MASS * omega**2)  # k x = m W² (r0 + x)
    u = _last(results, "sm.mass.ux", "sm.mass.uy", "sm.mass.uz")
    assert stretch == pytest.approx(1.0 / 3.0)
    assert u[0] == pytest.approx(stretch, rel=1e-8)
    # Tangential: 7e-8 of the stretch, the order-2 extrapolation of the rotating interface
    # acceleration over a step, O((Omega H)^3).
    assert np.abs(u[1:]).max() < 2e-7 * stretch
    # The wrench on the hub at the point: the spring's pull, outward along the arm.
    angle = omega * results.t[-1]
    outward = np.array([math.cos(angle), math.sin(angle), 0.0])
    wrench = _last(results, "p.fx", "p.fy", "p.fz", "p.mx", "p.my", "p.mz")
    pull = STIFF[0] * stretch
    # 1e-6: the frame accelerations the wrench uses are the same extrapolation, (Omega H)^3.
    assert wrench[:3] == pytest.approx(pull * outward, abs=5e-6 * pull)
    assert np.abs(wrench[3:]).max() < 5e-6 * pull * r0  # along the arm, through the point


def test_point_mass_hanging_from_a_tilted_body_sags_by_its_weight(tmp_path):
    g, s, c = 9.81, 0.5, math.sqrt(3.0) / 2.0
    _write(tmp_path / "sm.npz")
    text = HUB.format(g=-g, omega=0.0, joints=HOLD, r=0.0, zx=s, zz=c, xz=-s, t_end=1.5)
    results = run_cosimulation(load_scenario_text(text, base_dir=tmp_path), progress=False)
    axes = np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]]).T  # columns x_p, y_p, z_p
    gravity = np.array([0.0, 0.0, -g])
    sag = MASS * (axes.T @ gravity) / np.array(STIFF)  # k_i u_i = m g_s,i
    u = _last(results, "sm.mass.ux", "sm.mass.uy", "sm.mass.uz")
    assert u == pytest.approx(sag, abs=1e-9 * np.abs(sag).max())
    lever = axes @ (np.array([ARM, 0.0, 0.0]) + sag)
    wrench = _last(results, "p.fx", "p.fy", "p.fz", "p.mx", "p.my", "p.mz")
    weight = MASS * gravity
    assert wrench[:3] == pytest.approx(weight, abs=1e-9 * MASS * g)
    assert wrench[3:] == pytest.approx(np.cross(lever, weight), abs=1e-9 * MASS * g * ARM)


PENDULUM_BEAM = """
[flex_bodies.beam]
kind = "beam"
attachment = "floating"
length = 1.0
youngs_modulus = 2.1e11
density = 7850.0
section = "rectangle"
width = 0.01
height = 0.02
elements = 6
modes = 4
planar = false
output_nodes = { tip = "end" }
"""

PENDULUM_IMPORT = """
[flex_bodies.beam]
kind = "matrices"
attachment = "floating"
file = "beam.npz"
modes = 4
"""


def _pendulum(tmp_path, flex_table):
    text = (SCENARIOS_DIR / "rigid_flex_pendulum.toml").read_text()
    start = text.index("[flex_bodies.beam]")
    end = text.index("[couplings.clamp]")
    path = tmp_path / "pendulum.toml"
    path.write_text(text[:start] + flex_table + "\n" + text[end:])
    return run_cosimulation(load_scenario(path, ["solver.t_end=0.05"]), progress=False)


def test_converted_beam_runs_the_pendulum_like_the_generated_beam(tmp_path):
    beam = euler_bernoulli_beam(1.0, 2.1e11, 7850.0, 0.01 * 0.02, 0.01 * 0.02**3 / 12, n_elements=6,
                                second_moment_z=0.02 * 0.01**3 / 12,
                                torsion_constant=_rectangle_torsion(0.02, 0.01),
                                shear_modulus=2.1e11 / 2.6, planar=False)
    scipy.io.mmwrite(tmp_path / "m.mtx", beam.mass)
    np.save(tmp_path / "k.npy", beam.stiffness)
    # Node coordinates shifted (any origin): the converter makes them relative to node 0.
    np.savetxt(tmp_path / "nodes.csv", beam.nodes + [2.0, -1.0, 0.5], delimiter=",",
               header="x,y,z", comments="")
    assert main(["convert-structure", "--mass", str(tmp_path / "m.mtx"),
                 "--stiffness", str(tmp_path / "k.npy"), "--nodes", str(tmp_path / "nodes.csv"),
                 "--output-node", "tip=6", "--out", str(tmp_path / "beam.npz")]) == 0
    generated = _pendulum(tmp_path, PENDULUM_BEAM)
    imported = _pendulum(tmp_path, PENDULUM_IMPORT)
    assert generated.columns == imported.columns
    for column in generated.columns:
        a, b = generated[column], imported[column]
        assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, np.max(np.abs(a))), column
    assert np.max(np.abs(generated["beam.tip.uz"])) > 1e-5  # the beam did bend


def _rectangle_torsion(long_side, short_side):
    """St-Venant constant of a solid rectangle as the scenario's section = "rectangle" takes
    it (Roark's approximation), so that both producers build the same beam."""
    ratio = short_side / long_side
    return long_side * short_side**3 * (1 / 3 - 0.21 * ratio * (1 - ratio**4 / 12))


def _load_error(tmp_path, **change):
    _write(tmp_path / "sm.npz", **change)
    cfg = {"kind": "matrices", "attachment": "floating", "file": "sm.npz"}
    with pytest.raises(ScenarioError) as info:
        flex_model_from_config(cfg, tmp_path, "flex_bodies.sm")
    return str(info.value)


@pytest.mark.parametrize(("change", "message"), [
    ({"dof_nodes": np.array([0] * 6 + [1] * 2)}, "sm.npz: dof_nodes: expected 9 integers"),
    ({"dof_nodes": np.array([0] * 6 + [1, 1, 2])},
     "sm.npz: dof_nodes: coordinate 8 names node 2, not in node_positions"),
    ({"dof_components": None}, "sm.npz: dof_components: missing"),
    ({"dof_components": np.array(COMPONENTS[:8] + ["w"])}, "sm.npz: dof_components: expected 9"),
    ({"dof_components": np.array(COMPONENTS[:8] + ["y"])},
     "sm.npz: dof_components: coordinates 7 and 8 are both y of node 1"),
    ({"node_positions": np.array([[0.1, 0.0, 0.0], [ARM, 0.0, 0.0]])},
     "sm.npz: node_positions: the interface node 0 must be at the origin"),
    ({"node_positions": np.zeros((2, 2))}, "sm.npz: node_positions: expected finite numbers of magnitude"),
    ({"n_boundary": np.int64(5)},
     "sm.npz: dof_nodes: the first n_boundary = 5 coordinates must be all the DOFs"),
    ({"K": _spring_mass(coupled=False)[1]},
     ("sm.npz: K: the rigid rotation about y (from node_positions and the DOF labels) is not "
      "in the null space of K")),
    ({"node_positions": np.array([[0.0, 0.0, 0.0], [2 * ARM, 0.0, 0.0]])},
     "sm.npz: K: the rigid rotation about y"),
    ({"gravity_load": np.ones((9, 3))}, "sm.npz: gravity_load: differs from M R"),
    ({"output_nodes": np.array([4])}, "sm.npz: output_nodes: expected 1 node indices"),
    ({"output_rows": np.zeros((1, 3, 9))}, "sm.npz: output_nodes: needs output_names"),
])
def test_bad_floating_files_name_the_file_and_the_key(tmp_path, change, message):
    assert _load_error(tmp_path, **change).startswith(f"flex_bodies.sm: {message}")


def test_floating_matrices_need_a_file_with_nodes(tmp_path):
    np.savez(tmp_path / "plain.npz", M=np.eye(2), K=np.eye(2), n_boundary=np.int64(1))
    cfg = {"kind": "matrices", "attachment": "floating", "file": "plain.npz"}
    with pytest.raises(ScenarioError, match=r"^flex_bodies\.b: plain\.npz: node_positions: "
                                            r"missing \(a floating body needs"):
        flex_model_from_config(cfg, tmp_path, "flex_bodies.b")
    cfg = {"kind": "matrices", "attachment": "floating", "files": {"M": "m.mtx", "K": "k.mtx"}}
    with pytest.raises(ScenarioError, match=r"^flex_bodies\.b\.files: a floating body needs"):
        flex_model_from_config(cfg, tmp_path, "flex_bodies.b")


def test_converter_errors_name_the_file_and_the_key(tmp_path):
    mass, stiffness = _spring_mass()
    nodes = np.array([[1.0, 2.0, 3.0], [1.0 + ARM, 2.0, 3.0]])
    labels = np.array([(0, c) for c in range(6)] + [(1, c) for c in range(3)])
    # The interface node may be listed anywhere: its DOFs go first, positions become relative.
    order = [6, 7, 8, 0, 1, 2, 3, 4, 5]
    s = convert_structure(mass[np.ix_(order, order)], stiffness[np.ix_(order, order)], nodes,
                          labels[order], damping=1e-3 * stiffness[np.ix_(order, order)],
                          output_nodes={"mass": 1}, label="sm.mtx")
    assert np.array_equal(s.mass, mass) and np.array_equal(s.stiffness, stiffness)
    assert np.array_equal(s.damping, 1e-3 * stiffness)
    assert s.layout.positions.tolist() == [[0.0, 0.0, 0.0], [ARM, 0.0, 0.0]]
    assert s.output_rows[0].tolist() == np.hstack([np.zeros((3, 6)), np.eye(3)]).tolist()
    with pytest.raises(ScenarioError, match=r"^sm\.mtx: K: expected a 9x9 matrix"):
        convert_structure(mass, stiffness[:8, :8], nodes, labels, label="sm.mtx")
    with pytest.raises(ScenarioError, match=r"^sm\.mtx: K: the rigid rotation about y"):
        convert_structure(mass, _spring_mass(coupled=False)[1], nodes, labels, label="sm.mtx")
    with pytest.raises(ScenarioError, match=r"^sm\.mtx: interface_node: expected a node index"):
        convert_structure(mass, stiffness, nodes, labels, interface_node=2, label="sm.mtx")
    (tmp_path / "nodes.csv").write_text("x,y,z\n0,0,0\n0.5,0\n")
    with pytest.raises(ScenarioError, match=r"^nodes\.csv: nodes: line 3: expected 3 "):
        read_nodes_csv(tmp_path / "nodes.csv")
    np.save(tmp_path / "m.npy", mass)
    (tmp_path / "nodes.csv").write_text("0,0,0\n0.5,0,0\n")
    code = main(["convert-structure", "--mass", str(tmp_path / "m.npy"), "--stiffness",
                 str(tmp_path / "missing.mtx"), "--nodes", str(tmp_path / "nodes.csv"),
                 "--dofs-per-node", "x,y,z", "--out", str(tmp_path / "o.npz")])
    assert code == 1 and not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("planar", [True, False])
def test_imported_floating_cantilever_sags_statically_like_euler_bernoulli(planar):
    """The static equilibrium of the imported floating cantilever's modal equations under
    gravity, all modes kept (Craig–Bampton then statically exact): tip deflections
    rho A g_i L^4 / (8 E I) in bending and rho g_x L² / (2 E) along the axis (Hermite and
    linear elements are nodally exact for uniform loads), gravity g_s in structure axes. The
    planar copy keeps only x, z, ry per node (--dofs-per-node x,z,ry)."""
    length, e, rho, b, h = 1.2, 7.0e10, 2700.0, 0.02, 0.03
    area, i_y, i_z = b * h, b * h**3 / 12, h * b**3 / 12
    beam = euler_bernoulli_beam(length, e, rho, area, i_y, n_elements=5, second_moment_z=i_z,
                                planar=planar)
    comps = "x,z,ry" if planar else "x,y,z,rx,ry,rz"
    dof_map = uniform_dof_labels(beam.nodes.shape[0], comps.split(","))
    structure = convert_structure(beam.mass, beam.stiffness, beam.nodes + [0.3, 0.2, 0.1],
                                  dof_map, output_nodes={"tip": 5}, label="cantilever")
    model = FlexModel.from_matrices(structure, attachment="floating")
    k = model.n_modes
    w = model.floating.ode_matrix
    g_s = np.array([-2.0, 0.0 if planar else 5.0, -9.81])
    eta = -np.linalg.solve(w[:, :k], w[:, 2 * k:2 * k + 3] @ -g_s)  # at rest: b = -g_s
    tip = model.output_rows[0] @ np.concatenate((np.zeros(model.n_boundary), eta))
    expected = [rho * g_s[0] * length**2 / (2 * e),
                rho * area * g_s[1] * length**4 / (8 * e * i_z),
                rho * area * g_s[2] * length**4 / (8 * e * i_y)]
    assert tip == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert model.floating.total_mass == pytest.approx(rho * area * length, rel=1e-12)


def test_converter_command_reads_dof_labels_and_npz_matrices(tmp_path):
    """--dof-labels (node,component rows, the interface node listed last) and a .npz matrix
    give the file the Python converter writes for the same structure."""
    mass, stiffness = _spring_mass()
    order = [6, 7, 8, 0, 1, 2, 3, 4, 5]
    np.save(tmp_path / "m.npy", mass[np.ix_(order, order)])
    np.savez(tmp_path / "k.npz", K=stiffness[np.ix_(order, order)], other=np.eye(2))
    (tmp_path / "nodes.csv").write_text("# x, y, z in m\nx,y,z\n0,0,0\n0.5,0,0\n")
    labels = [(1, c) for c in COMPONENTS[6:]] + [(0, c) for c in COMPONENTS[:6]]
    (tmp_path / "dofs.csv").write_text("node,component\n"
                                       + "".join(f"{n},{c}\n" for n, c in labels))
    assert main(["convert-structure", "--mass", str(tmp_path / "m.npy"), "--stiffness",
                 str(tmp_path / "k.npz"), "--nodes", str(tmp_path / "nodes.csv"),
                 "--dof-labels", str(tmp_path / "dofs.csv"), "--output-node", "mass=1",
                 "--out", str(tmp_path / "sm.npz")]) == 0
    written = load_npz(tmp_path / "sm.npz")
    assert np.array_equal(written.mass, mass) and np.array_equal(written.stiffness, stiffness)
    assert written.layout.dof_map.tolist() == [[0, c] for c in range(6)] + [[1, c]
                                                                            for c in range(3)]
    assert written.boundary_dofs == tuple(COMPONENTS[:6])
    assert written.output_positions.tolist() == [[ARM, 0.0, 0.0]]


def test_a_pinned_floating_import_is_refused_with_what_is_missing(tmp_path):
    """A floating imported body with one coupling takes a clamp; the refusal says what runs
    instead (grounded, or a second interface node: rbcosim.flex.modelling.floating_multi)."""
    _write(tmp_path / "sm.npz")
    structure = load_npz(tmp_path / "sm.npz")
    with pytest.raises(ValueError) as err:
        FlexModel.from_matrices(structure, attachment="floating",
                                interfaces=(Interface(0, (5,), "s.toml: couplings.p"),))
    assert str(err.value) == (
        "attachment 'floating' with one coupling: a clamp at the file's interface node 0 "
        "(released rotations need attachment = 'grounded' or a second interface node)")
