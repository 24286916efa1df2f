"""Flexible bodies at several interface nodes, with clamp, pin and ball couplings, each against
an independent solution: beam statics by hand (clamped–clamped and propped cantilever under
gravity) and a monolithic linear model assembled in the test from hand-written Hermite elements.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from rbcosim.cosim.master import CosimMaster, build_endpoints
from rbcosim.distributed.flex_solver import check_distributed
from rbcosim.errors import ScenarioError
from rbcosim.scenario.loader import build_scenario

L, E, RHO, B, G = 1.0, 2.1e11, 7850.0, 0.01, 9.81
AREA, INERTIA = B * B, B**4 / 12
W = RHO * AREA * G  # N/m: the beam's weight per length
SLIDERS = Path(__file__).parent.parent / "scenarios" / "pinned_beam_two_sliders.toml"


def _scenario(couplings: str, *, joints="fixed", planar=True, extra="", cosim="", body="",
              gravity=G, attachment="grounded", source="multi.toml"):
    """Two 1 kg bodies at x = 0 and x = L (each held by `joints`), a 10-element steel beam
    between them (grounded, all interior modes), and `couplings`."""
    held = {"fixed": "", "slider": 'type = "prismatic"\naxis = [0.0, 0.0, 1.0]'}
    text = f"""
[world]
gravity = [0.0, 0.0, {-gravity}]
[bodies.a]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
position = [0.0, 0.0, 0.0]
{body}
[bodies.b]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
position = [{L}, 0.0, 0.0]
[joints.ja]
{held[joints] or 'type = "fixed"'}
body1 = "ground"
body2 = "a"
at = [0.0, 0.0, 0.0]
[joints.jb]
{held[joints] or 'type = "fixed"'}
body1 = "ground"
body2 = "b"
at = [{L}, 0.0, 0.0]
[interface_points.pa]
body = "a"
[interface_points.pb]
body = "b"
[flex_bodies.beam]
kind = "beam"
attachment = "{attachment}"
length = {L}
youngs_modulus = {E}
density = {RHO}
section = "square"
width = {B}
elements = 10
modes = {27 if planar else 54}
planar = {"true" if planar else "false"}
output_nodes = {{ mid = 0.5 }}
{extra}
{couplings}
[cosim]
macro_step = 1e-4
{cosim}
[solver]
t_end = 0.1
"""
    return build_scenario(tomllib.loads(text), source=source)


TWO_CLAMPS = """
[couplings.left]
point = "pa"
flex_body = "beam"
[couplings.right]
point = "pb"
flex_body = "beam"
node = "end"
"""


def _settle(master: CosimMaster, steps: int = 1000):
    for _ in range(steps):
        master.step()
    return master.endpoints["beam"].body


@pytest.mark.parametrize("scheme", ["jacobi", "iterative"])
def test_clamped_clamped_beam_sags_by_its_static_deflection(scheme):
    """Clamped at both ends to fixed bodies, damped to rest: mid-span w L⁴/(384 EI), each end
    carries w L / 2 and the fixed-end moment w L² / 12 (opposite signs about y)."""
    sc = _scenario(TWO_CLAMPS, extra="damping = { modal_ratio = 0.7 }",
                   cosim=f'scheme = "{scheme}"')
    body = _settle(CosimMaster(sc))
    mid = body.output_nodes()["mid"][2]
    assert mid == pytest.approx(-W * L**4 / (384 * E * INERTIA), rel=1e-9)
    wrenches = body.wrenches()
    assert wrenches[:, 2] == pytest.approx([-W * L / 2] * 2, rel=1e-9)
    assert wrenches[:, 4] == pytest.approx([W * L**2 / 12, -W * L**2 / 12], rel=1e-9)


def test_ball_end_propped_cantilever():
    """3D beam clamped at x = 0, ball-jointed at x = L (all rotations released): the propped
    cantilever, w L⁴/(192 EI) at mid-span, end reactions 5/8 and 3/8 w L, clamp moment
    w L²/8, and no moment at all at the ball."""
    couplings = TWO_CLAMPS.replace('node = "end"', 'node = "end"\ntype = "ball"')
    sc = _scenario(couplings, planar=False, extra="damping = { modal_ratio = 0.7 }")
    body = _settle(CosimMaster(sc), 2000)  # its lowest mode (~37 Hz) decays more slowly
    assert body.model.n_boundary == 9  # 6 at the clamp, 3 translations at the ball
    assert body.output_nodes()["mid"][2] == pytest.approx(-W * L**4 / (192 * E * INERTIA),
                                                           rel=1e-9)
    wr = body.wrenches()
    assert wr[:, 2] == pytest.approx([-5 * W * L / 8, -3 * W * L / 8], rel=1e-9)
    assert wr[0, 4] == pytest.approx(W * L**2 / 8, rel=1e-9)
    assert np.all(wr[1, 3:] == 0.0)


def _hermite_beam(n_el: int):
    """Planar Euler–Bernoulli beam by hand, DOFs per node (u, w, w'): bar + Hermite bending,
    consistent mass."""
    le = L / n_el
    ea, ei, m = E * AREA, E * INERTIA, RHO * AREA
    kb = ei / le**3 * np.array([[12, 6 * le, -12, 6 * le], [6 * le, 4 * le**2, -6 * le, 2 * le**2],
                                [-12, -6 * le, 12, -6 * le], [6 * le, 2 * le**2, -6 * le, 4 * le**2]])
    mb = m * le / 420 * np.array([[156, 22 * le, 54, -13 * le], [22 * le, 4 * le**2, 13 * le, -3 * le**2],
                                  [54, 13 * le, 156, -22 * le], [-13 * le, -3 * le**2, -22 * le, 4 * le**2]])
    ka = ea / le * np.array([[1, -1], [-1, 1]])
    ma = m * le / 6 * np.array([[2, 1], [1, 2]])
    n = 3 * (n_el + 1)
    K, M = np.zeros((n, n)), np.zeros((n, n))
    for e in range(n_el):
        bend = [3 * e + 1, 3 * e + 2, 3 * e + 4, 3 * e + 5]
        axial = [3 * e, 3 * e + 3]
        K[np.ix_(bend, bend)] += kb
        M[np.ix_(bend, bend)] += mb
        K[np.ix_(axial, axial)] += ka
        M[np.ix_(axial, axial)] += ma
    return K, M


@pytest.mark.parametrize(("scheme", "extrapolation", "tolerance"), [
    ("jacobi", 1, 2e-5), ("gauss_seidel_rigid_first", 2, 3e-7),
    ("gauss_seidel_flex_first", 2, 3e-7), ("iterative", 2, 3e-7)])
def test_free_free_beam_pinned_to_two_sprung_bodies_matches_the_monolithic_model(
        scheme, extrapolation, tolerance):
    """scenarios/pinned_beam_two_sliders.toml: a free–free beam pinned at both ends (rotations
    about y released) to two 1 kg bodies on vertical sliders with 1e4 N/m springs; body a
    starts at 0.1 m/s. Against the monolithic model (hand-assembled FE + the two masses and
    springs, ends held axially, solved modally, from the same initial velocity field): body a's
    height over 20 ms agrees to `tolerance` of its amplitude (H = 0.1 ms; 8 of the 27 interior
    modes: the Gauss–Seidel and iterated schemes reach the truncation error, ~1e-7), each
    joint's energy residual stays below 2e-4 of the initial kinetic energy, and
    the pins pass no moment."""
    raw = tomllib.loads(SLIDERS.read_text())
    raw["cosim"].update(scheme=scheme, extrapolation=extrapolation)
    k, v0 = raw["forces"]["spring_a"]["stiffness"], raw["bodies"]["a"]["velocity"][2]
    sc = build_scenario(raw, source=SLIDERS.name)
    master = CosimMaster(sc)
    body = master.endpoints["beam"].body
    assert body.model.n_boundary == 4
    times, za = [], []
    for _ in range(200):
        master.step()
        times.append(master.rigid.time)
        za.append(master.motions()["left"].position[2])
        assert np.all(body.wrenches()[:, 4] == 0.0)
    # Monolithic (all FE DOFs): beam + masses on w_0, w_N + springs; u_0 = u_N = 0.
    K, M = _hermite_beam(10)
    n = K.shape[0]
    ends = [1, n - 2]
    K[ends, ends] += k
    M[ends, ends] += 1.0
    keep = [i for i in range(n) if i not in (0, n - 3)]
    K, M = K[np.ix_(keep, keep)], M[np.ix_(keep, keep)]
    lam, phi = scipy.linalg.eigh(K, M)
    omega = np.sqrt(lam)
    # The flexible side starts with eta = 0 (at rest relative to its boundary's constraint
    # modes): with both end rotations free that is the beam turning rigidly about end b,
    # w' = v0 (1 - x/L), slope rate -v0/L.
    x = np.linspace(0.0, L, 11)
    full = np.zeros(n)
    full[1::3], full[2::3] = v0 * (1 - x / L), -v0 / L
    x0dot = full[keep]
    q = (phi.T @ M @ x0dot) / omega
    t = np.array(times)
    ref = (phi[keep.index(1)] * q) @ np.sin(np.outer(omega, t))
    assert np.max(np.abs(np.array(za) - ref)) < tolerance * np.max(np.abs(ref))
    for joint in ("left", "right"):  # per joint: what the beam delivered = what the body took
        assert abs(master.rigid.energy_residual(joint)) < 2e-4 * 0.5 * v0**2


def test_save_restore_repeats_the_same_bits():
    """A master state saved mid-run and restored gives the same steps bit for bit."""
    master = CosimMaster(_scenario(TWO_CLAMPS, cosim='extrapolation = 2'))
    for _ in range(5):
        master.step()
    saved = master.get_state()
    rows = []
    for _ in range(5):
        master.step()
        rows.append(master.row())
    master.set_state(saved)
    for row in rows:
        master.step()
        assert np.array_equal(master.row(), row)


@pytest.mark.parametrize(("couplings", "kwargs", "message"), [
    (TWO_CLAMPS.replace('node = "end"', 'node = "end"\ntype = "hinge"'), {},
     "multi.toml: couplings.right.type: expected one of ['clamp', 'pin', 'ball']"),
    (TWO_CLAMPS.replace('node = "end"', 'node = "end"\ntype = "pin"'), {},
     "multi.toml: couplings.right.axis: missing: a pin needs the released axis"),
    (TWO_CLAMPS.replace('node = "end"', 'node = "end"\ntype = "pin"\naxis = [1.0, 1.0, 0.0]'),
     {}, "multi.toml: couplings.right.axis: expected a vector along the structure's x, y or z"),
    (TWO_CLAMPS.replace('node = "end"', 'node = "end"\naxis = "y"'), {},
     "multi.toml: couplings.right.axis: only for type = 'pin'"),
    (TWO_CLAMPS.replace('node = "end"', "node = 11"), {},
     "multi.toml: couplings.right.node: node index out of range 0..10, got 11"),
    (TWO_CLAMPS.replace('node = "end"', "node = 0.55"), {},
     "multi.toml: couplings.right.node: 0.55 m is not at a node"),
    (TWO_CLAMPS.replace('node = "end"', "node = 0.0"), {},
     "multi.toml: couplings.right.node: node 0 is already coupled by couplings.left"),
    (TWO_CLAMPS.split("[couplings.right]")[0].replace('"beam"', '"beam"\ntype = "ball"'), {},
     "multi.toml: flex_bodies.beam.stiffness: the interior block K_ii is not positive definite"),
    (TWO_CLAMPS, {"cosim": 'scheme = "interface_jacobian"'},
     ("multi.toml: cosim.scheme: 'interface_jacobian' couples one point per flexible body; "
      "'beam' has 2 couplings (left, right)")),
    (TWO_CLAMPS, {"attachment": "floating"},  # several couplings float in 3D only
     "multi.toml: couplings.right: a floating beam with several couplings is 3D: set planar = "
     "false in its flex_bodies table"),
])
def test_bad_couplings_name_file_and_key(couplings, kwargs, message):
    with pytest.raises(ScenarioError) as err:
        CosimMaster(_scenario(couplings, **kwargs))
    assert message in str(err.value)


def test_one_endpoint_serves_every_node_of_a_multi_node_body():
    """The in-process master, the flexible solver and the FMU build the same endpoints: one
    per body, its couplings in order (the FMU export and the distributed run take multi-node
    bodies: tests/test_fmu_multinode.py, tests/test_distributed_multi.py)."""
    sc = _scenario(TWO_CLAMPS)
    endpoints = build_endpoints(sc, sc.cosim.macro_step)
    assert list(endpoints) == ["beam"] and endpoints["beam"].joints == ("left", "right")
    check_distributed(sc)  # accepted: one client drives both joints


def _imported_beam(path):
    """The hand-assembled planar beam as an imported structure: boundary (x, z, ry) at both
    ends (interface nodes 0 and 1), rotations as theta_y = -w', gravity load M R, the
    mid-span node's z as output."""
    K, M = _hermite_beam(10)
    n = K.shape[0]
    flip = np.ones(n)
    flip[2::3] = -1.0  # w' -> theta_y = -w'
    K, M = flip[:, None] * K * flip, flip[:, None] * M * flip
    boundary = [0, 1, 2, n - 3, n - 2, n - 1]
    order = boundary + [i for i in range(n) if i not in boundary]
    K, M = K[np.ix_(order, order)], M[np.ix_(order, order)]
    rigid = np.zeros((n, 3))
    rigid[0::3, 0], rigid[1::3, 2] = 1.0, 1.0
    rows = np.zeros((1, 3, n))
    rows[0, 2, order.index(3 * 5 + 1)] = 1.0
    np.savez(path, M=M, K=K, n_boundary=np.int64(6),
             boundary_dofs=np.array(["x", "z", "ry"] * 2), boundary_nodes=np.array([0, 0, 0, 1, 1, 1]),
             interface_positions=np.array([[0.0, 0.0, 0.0], [L, 0.0, 0.0]]),
             gravity_load=M @ rigid[order], output_names=np.array(["mid"]), output_rows=rows,
             output_positions=np.array([[0.5, 0.0, 0.0]]))


@pytest.mark.parametrize(("kind", "mid", "moment"), [
    ("clamp", W * L**4 / (384 * E * INERTIA), W * L**2 / 12),
    ("pin", 5 * W * L**4 / (384 * E * INERTIA), 0.0)])
def test_imported_two_node_structure(tmp_path, kind, mid, moment):
    """The same beam imported from a two-interface-node .npz: clamped at both nodes it sags by
    w L⁴/(384 EI) with end moments ±w L²/12; pinned about y (the file's ry boundary coordinates
    released into the interior) by 5 w L⁴/(384 EI) with no end moments."""
    _imported_beam(tmp_path / "beam.npz")
    axis = '\ntype = "pin"\naxis = "y"' if kind == "pin" else ""
    text = f"""
[couplings.left]
point = "pa"
flex_body = "beam"{axis}
[couplings.right]
point = "pb"
flex_body = "beam"
node = 1{axis}
"""
    sc = _scenario(text)
    raw = dict(sc.raw)
    raw["flex_bodies"] = {"beam": {"kind": "matrices", "file": "beam.npz",
                                   "damping": {"modal_ratio": 0.7}}}
    sc = build_scenario(raw, source="multi.toml", base_dir=tmp_path)
    body = _settle(CosimMaster(sc), 2000 if kind == "pin" else 1000)
    assert body.model.n_boundary == (6 if kind == "clamp" else 4)
    assert body.output_nodes()["mid"][2] == pytest.approx(-mid, rel=1e-8)
    wr = body.wrenches()
    assert wr[:, 2] == pytest.approx([-W * L / 2] * 2, rel=1e-8)
    assert wr[:, 4] == pytest.approx([moment, -moment], rel=1e-8, abs=1e-12)


@pytest.mark.parametrize(("change", "node", "message"), [
    ({}, 2, ("multi.toml: couplings.right.node: imported matrices: expected an interface "
             "index 0..1 (the file's boundary_nodes), got 2")),
    ({"boundary_nodes": np.array([0, 1, 0, 1, 0, 1])}, 1,
     "beam.npz: boundary_nodes: expected 6 integers (n_boundary), non-decreasing from 0"),
    ({"interface_positions": np.zeros((3, 3))}, 1,
     "beam.npz: interface_positions: expected finite numbers of shape (2, 3)"),
    ({"boundary_dofs": np.array(["x", "z", "z", "x", "z", "ry"])}, 1,
     "beam.npz: boundary_dofs: expected distinct names out of"),
])
def test_bad_imported_interfaces_name_file_and_key(tmp_path, change, node, message):
    _imported_beam(tmp_path / "beam.npz")
    with np.load(tmp_path / "beam.npz") as data:
        content = {**{k: data[k] for k in data.files}, **change}
    np.savez(tmp_path / "beam.npz", **content)
    sc = _scenario(TWO_CLAMPS.replace('node = "end"', f"node = {node}"))
    raw = dict(sc.raw)
    raw["flex_bodies"] = {"beam": {"kind": "matrices", "file": "beam.npz"}}
    with pytest.raises(ScenarioError) as err:
        CosimMaster(build_scenario(raw, source="multi.toml", base_dir=tmp_path))
    assert message in str(err.value)


def test_grounded_reference_of_one_joint_prestresses_the_beam():
    """Body b sits 1 mm below where the clamped–clamped beam is unstressed (`grounded_reference`
    of its coupling), no gravity: at rest the beam's end is displaced by δ = 1 mm with both
    ends clamped, so it pushes b up by 12 EI δ / L³ and loads both ends with 6 EI δ / L²."""
    delta = 1e-3
    couplings = TWO_CLAMPS.replace('node = "end"',
                                   f'node = "end"\ngrounded_reference = [{L}, 0.0, {delta}]')
    sc = _scenario(couplings, gravity=0.0, extra="damping = { modal_ratio = 0.7 }")
    wr = _settle(CosimMaster(sc)).wrenches()
    ei = E * INERTIA
    assert wr[:, 2] == pytest.approx([-12 * ei * delta / L**3, 12 * ei * delta / L**3], rel=1e-8)
    assert wr[:, 4] == pytest.approx([6 * ei * delta / L**2] * 2, rel=1e-8)


def test_imported_structure_held_at_its_second_node_only(tmp_path):
    """One coupling at interface node 1 (x = L) of the two-node file: node 0's boundary
    coordinates become interior, the one-node body is a cantilever from x = L. Mid-span
    (0.5 m from the clamp) sags by 17 w L⁴/(384 EI), positioned from node 1's point."""
    _imported_beam(tmp_path / "beam.npz")
    sc = _scenario('[couplings.right]\npoint = "pb"\nflex_body = "beam"\nnode = 1\n')
    raw = dict(sc.raw)
    raw["flex_bodies"] = {"beam": {"kind": "matrices", "file": "beam.npz",
                                   "damping": {"modal_ratio": 0.7}}}
    master = CosimMaster(build_scenario(raw, source="multi.toml", base_dir=tmp_path))
    for _ in range(8000):  # 0.8 s: its first mode (8 Hz, 70 % damped) decays by e^-29
        master.step()
    body = master.endpoints["right"].body
    assert body.model.n_boundary == 3
    mid = body.output_nodes()["mid"]
    assert mid[0] == pytest.approx(0.5, abs=1e-12)
    assert mid[2] == pytest.approx(-17 * W * L**4 / (384 * E * INERTIA), rel=1e-7)
    assert body.wrench()[[2, 4]] == pytest.approx([-W * L, -W * L**2 / 2], rel=1e-7)


def test_one_pin_on_a_structure_with_its_own_ground_spring(tmp_path):
    """One-coupling body with a pin (the one-node FlexBody path): the imported beam with a
    ground spring k in the file at x = 0, pinned about y at node 1 (x = L). Statics: the spring
    and the pin each carry w L / 2, the pin no moment; mid-span sags by the simply supported
    5 w L⁴/(384 EI) plus half the spring's compression w L/(2k)."""
    k = 2.0e3
    _imported_beam(tmp_path / "beam.npz")
    with np.load(tmp_path / "beam.npz") as data:
        content = {name: data[name] for name in data.files}
    content["K"][1, 1] += k  # coordinate 1: z at interface node 0
    np.savez(tmp_path / "beam.npz", **content)
    sc = _scenario('[couplings.right]\npoint = "pb"\nflex_body = "beam"\nnode = 1\n'
                   'type = "pin"\naxis = "y"\n')
    raw = dict(sc.raw)
    raw["flex_bodies"] = {"beam": {"kind": "matrices", "file": "beam.npz",
                                   "damping": {"modal_ratio": 0.7}}}
    master = CosimMaster(build_scenario(raw, source="multi.toml", base_dir=tmp_path))
    for _ in range(8000):
        master.step()
    body = master.endpoints["right"].body
    assert body.model.boundary_components == (0, 2)
    expected = 5 * W * L**4 / (384 * E * INERTIA) + W * L / (4 * k)
    assert body.output_nodes()["mid"][2] == pytest.approx(-expected, rel=1e-7)
    wrench = body.wrench()
    assert wrench[2] == pytest.approx(-W * L / 2, rel=1e-7)
    assert wrench[4] == 0.0
