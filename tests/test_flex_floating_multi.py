"""Floating bodies with several interface nodes in 3D (rbcosim.flex.modelling.floating_multi): the 3D
flexible slider-crank (scenarios/flexible_slider_crank_3d.toml), its rod a 3D beam floating at
two pins, against a nonlinear reference written here; its stiff limit against the rigid
mechanism; the rod imported from CalculiX; the frame and the wrenches against a prescribed
rigid motion (finite differences of an analytic motion, Newton–Euler of a rigid rod).

Reference (second formulation): the rod as a planar chain of N rigid uniform links of length
l = L/N (mass ρA l, centroidal inertia ρA l³/12) joined by rotational springs EI/l at the N − 1
interior joints, its first end at the crank pin r (cos Ωt, sin Ωt) (prescribed), its last end
carrying the slider's mass and held on the X axis by a Lagrange multiplier; Lagrange's
equations, nothing linearised (axial-force stiffening and foreshortening included), DOP853,
N = 4 and 8 Richardson-extrapolated (error ∝ N⁻²). The mid-span deflection is the middle
joint's signed distance from the chord (the same reference as tests/test_flexible_slider_crank.py,
here with the section and the speed as parameters).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fe_cantilever import c3d20_deck
from native_build import native_unavailable
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from rbcosim.cosim.master import run_cosimulation
from rbcosim.flex.modelling.interface_nodes import Interface
from rbcosim.flex.modelling.model import FlexModel
from rbcosim.flex.runtime.floating_multi_body import FloatingMultiBody
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.scenario.loader import load_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "flexible_slider_crank_3d.toml"
L, R, OMEGA, E, RHO, D = 0.30, 0.15, 150.0, 2.0e11, 7870.0, 6e-3
AREA, I_SEC = math.pi * D**2 / 4, math.pi * D**4 / 64


def chain_mid_deflection(n: int, times: np.ndarray, *, omega=OMEGA, ei=E * I_SEC,
                         rho_a=RHO * AREA, m_slider=RHO * AREA * L / 2) -> np.ndarray:
    """Mid-span deflection (m) from the chord of the N-link chain at ``times``."""
    ell = L / n
    me = rho_a * ell
    i = np.arange(n)
    c_mat = me * ((n - 1 - np.maximum.outer(i, i)) + 0.5)
    c_mat[i, i] = me * ((n - 1 - i) + 0.25)
    c_mat += m_slider
    s_vec = me * ((n - 1 - i) + 0.5) + m_slider
    j_seg, k, a = me * ell**2 / 12, ei / ell, 500.0  # a: Baumgarte, 1/s

    def crank(t):
        c, s = math.cos(omega * t), math.sin(omega * t)
        return np.array([[R * c, R * s], [-R * omega * s, R * omega * c],
                         [-R * omega**2 * c, -R * omega**2 * s]])

    def rhs(t, y):
        phi, rate = y[:n], y[n:]
        p = crank(t)
        c, s = np.cos(phi), np.sin(phi)
        diff = phi[:, None] - phi[None, :]
        kkt = np.zeros((n + 1, n + 1))
        kkt[:n, :n] = ell**2 * c_mat * np.cos(diff) + j_seg * np.eye(n)
        kkt[:n, n] = kkt[n, :n] = ell * c
        f = -ell**2 * (c_mat * np.sin(diff)) @ rate**2 - ell * s_vec * (c * p[2, 1] - s * p[2, 0])
        bend = k * np.diff(phi)
        f[:-1] += bend
        f[1:] -= bend
        gap, gap_rate = ell * s.sum() + p[0, 1], ell * c @ rate + p[1, 1]
        rc = ell * s @ rate**2 - p[2, 1] - 2 * a * gap_rate - a * a * gap
        return np.concatenate((rate, np.linalg.solve(kkt, np.append(f, rc))[:n]))

    y0 = np.concatenate((np.zeros(n), np.full(n, -R * omega / L)))  # rigid rotation about E
    sol = solve_ivp(rhs, (0.0, times[-1]), y0, method="DOP853", rtol=1e-8, atol=1e-12,
                    t_eval=times)
    assert sol.success, sol.message
    phi = sol.y[:n]
    x = np.vstack([np.zeros(times.size), np.cumsum(ell * np.cos(phi), axis=0)])
    z = np.vstack([np.zeros(times.size), np.cumsum(ell * np.sin(phi), axis=0)])
    return (-z[-1] * x[n // 2] + x[-1] * z[n // 2]) / np.hypot(x[-1], z[-1])


def chain_reference(times, **kw) -> np.ndarray:
    """The chain's mid-span deflection, N = 4 and 8 Richardson-extrapolated."""
    return (4 * chain_mid_deflection(8, times, **kw) - chain_mid_deflection(4, times, **kw)) / 3


def test_generated_3d_rod_matches_the_nonlinear_chain():
    """The 3D rod (bending in both planes, torsion, stretch; geometric stiffening) within 2 %
    of the chain's mid-span extremes over three revolutions; out of the plane it stays at
    round-off."""
    results = run_cosimulation(load_scenario(SCENARIO, {"solver.output_every": "2"}),
                               progress=False)
    t, mid = results["t"], results["rod.mid.uz"]
    reference = chain_reference(np.linspace(0.0, t[-1], 4001))
    assert 4.5e-3 < reference.max() < 4.8e-3 and -4.8e-3 < reference.min() < -4.5e-3
    assert abs(mid.max() / reference.max() - 1) < 0.02
    assert abs(mid.min() / reference.min() - 1) < 0.02
    assert np.abs(results["rod.mid.uy"]).max() < 1e-12
    assert np.abs(results["rod.mid.y"]).max() < 1e-12


def test_stiff_rod_follows_the_rigid_slider_crank():
    """E × 100 over one revolution: the slider at r cos θ + √(L² − r² sin² θ) to 1 µm, and
    the mid-span deflection 100 times smaller than the flexible rod's."""
    overrides = {"flex_bodies.rod.youngs_modulus": repr(100 * E), "solver.t_end": "2*pi/Omega",
                 "cosim.macro_step": "2*pi/Omega/6400"}
    results = run_cosimulation(load_scenario(SCENARIO, overrides), progress=False)
    theta = OMEGA * results["t"]
    rigid = R * np.cos(theta) + np.sqrt(L**2 - R**2 * np.sin(theta) ** 2)
    assert np.abs(results["slider.x"] - rigid).max() < 1e-6
    assert np.abs(results["rod.mid.uz"]).max() < 0.02 * 4.7e-3


def _rod_model(**kw) -> FlexModel:
    """The scenario's rod as a 3D beam pinned about y at both ends (8 elements, 4 modes)."""
    return FlexModel.from_beam(L, E, RHO, AREA, I_SEC, n_elements=8, n_modes=4,
                               second_moment_z=I_SEC, torsion_constant=2 * I_SEC,
                               shear_modulus=E / 2.6, planar=False, attachment="floating",
                               interfaces=(Interface(0, (4,), "a"), Interface("end", (4,), "b")),
                               output_nodes={"mid": 0.15}, **kw)


def _rod(t):
    """An analytic rigid motion of the rod: orientation (3, 3) and the position of its end A."""
    rv = np.array([0.3 * np.sin(2 * t), 0.5 * t + 0.2 * t * t, 0.4 * np.cos(3 * t)])
    return (Rotation.from_rotvec(rv).as_matrix(),
            np.array([0.1 * np.cos(5 * t), 0.05 * t, 0.1 * np.sin(5 * t)]))


def _point(i, t):
    """Pin i's point: on the rod's end, turned about the rod's y (the pin) by its own angle."""
    rot, p0 = _rod(t)
    phi = 2.0 * t + 0.7 * t * t if i == 0 else -1.3 * t
    return (p0 + (rot @ [L, 0.0, 0.0] if i else 0.0),
            rot @ Rotation.from_rotvec([0.0, phi, 0.0]).as_matrix())


def _rates(f, t, h=1e-4):
    """Central first and second differences of f at t."""
    return (f(t + h) - f(t - h)) / (2 * h), (f(t + h) - 2 * f(t) + f(t - h)) / h**2


def _angular_velocity(orient, t, h=1e-5):
    w = (orient(t + h) - orient(t - h)) / (2 * h) @ orient(t).T
    return np.array([w[2, 1], w[0, 2], w[1, 0]])


def _motion(i, t) -> InterfaceMotion:
    p, rot = _point(i, t)
    v, a = _rates(lambda s: _point(i, s)[0], t)
    w = _angular_velocity(lambda s: _point(i, s)[1], t)
    al = (_angular_velocity(lambda s: _point(i, s)[1], t + 1e-4)
          - _angular_velocity(lambda s: _point(i, s)[1], t - 1e-4)) / 2e-4
    return InterfaceMotion(p, Rotation.from_matrix(rot).as_quat()[[3, 0, 1, 2]], v, w, a, al)


def test_frame_and_wrenches_follow_a_rigid_rod_in_space():
    """Two pins moving as the ends of a rigid rod tumbling in space (each point also turning
    about its pin): the frame is the rod's (orientation to 1e-12, angular velocity and
    acceleration and b = a_A − g to the finite differences' 1e-6), the boundary coordinates
    vanish, and with the modes at their quasi-static state (eta'' = 0) the wrenches' resultant
    is minus the rigid rod's rate of momentum less its weight: force m (a_cm − g), moment
    dH/dt + r_cm × m (a_cm − g) about A, H from the uniform rod's inertia (m L²/12 across,
    rho J L about its axis), to 1e-5."""
    model, g, t = _rod_model(), np.array([0.0, 0.0, -9.81]), 0.37
    body = FloatingMultiBody(model, gravity=g)
    body.initialize(0.0, [_motion(0, 0.0), _motion(1, 0.0)])
    body.set_motion([_motion(0, t), _motion(1, t)])
    st = body._state_now(body._motions)
    rot = _rod(t)[0]
    w = _angular_velocity(lambda s: _rod(s)[0], t)
    al = (_angular_velocity(lambda s: _rod(s)[0], t + 1e-4)
          - _angular_velocity(lambda s: _rod(s)[0], t - 1e-4)) / 2e-4
    a0 = _rates(lambda s: _rod(s)[1], t)[1]
    assert np.abs(st.rot - rot).max() < 1e-12
    assert np.abs(st.w - rot.T @ w).max() < 1e-6 * np.abs(w).max()
    assert np.abs(st.alpha - rot.T @ al).max() < 1e-6 * np.abs(al).max()
    assert np.abs(st.b - rot.T @ (a0 - g)).max() < 1e-6 * np.abs(a0 - g).max()
    assert np.abs(st.ub).max() < 1e-15 and np.abs(st.ubd).max() < 1e-7
    k = model.n_modes  # the quasi-static modes: eta'' is affine in eta
    base = body._eta_dd(st, np.zeros(k), np.zeros(k))
    slope = np.column_stack([body._eta_dd(st, e, np.zeros(k)) - base for e in np.eye(k)])
    body.set_modal_state(np.linalg.solve(slope, -base), np.zeros(k))
    wr = body.wrenches()
    mass = RHO * AREA * L
    j_rod = np.diag([RHO * 2 * I_SEC * L, mass * L**2 / 12 + RHO * I_SEC * L,
                     mass * L**2 / 12 + RHO * I_SEC * L])

    def momentum(s):
        r = _rod(s)[0]
        return r @ j_rod @ r.T @ _angular_velocity(lambda u: _rod(u)[0], s)

    def centre(s):
        r, p0 = _rod(s)
        return p0 + r @ [L / 2, 0.0, 0.0]

    a_cm = _rates(centre, t)[1]
    force = mass * (a_cm - g)
    moment = (momentum(t + 1e-4) - momentum(t - 1e-4)) / 2e-4 + np.cross(
        rot @ [L / 2, 0.0, 0.0], force)
    arm = rot @ [L, 0.0, 0.0]
    assert np.abs(wr[:, :3].sum(axis=0) + force).max() < 1e-5 * np.abs(force).max()
    total = wr[0, 3:] + wr[1, 3:] + np.cross(arm, wr[1, :3])
    assert np.abs(total + moment).max() < 1e-5 * np.abs(moment).max()
    # the pins carry no moment about their axis (the rod's y)
    assert np.abs(wr[:, 3:] @ rot[:, 1]).max() < 1e-12 * np.abs(wr).max()


ROD_TABLE = """[flex_bodies.rod]
kind = "matrices"
attachment = "floating"
source = { from = "calculix", inp = "rod.inp" }
interfaces = [{ tie = "rigid", set = "FIX" }, { tie = "rigid", set = "END" }]
modes = 4
output_nodes = { mid = MID }

"""


@pytest.fixture(scope="module")
def calculix_rod(tmp_path_factory):
    """The rod as 20 C3D20 solids (6 mm square section, steel: 210 GPa, 7850 kg/m³) exported
    free–free by CalculiX, its end faces FIX (x = 0) and END (x = L) as node sets, and the 3D
    slider-crank scenario with that rod tied rigidly at both faces, pinned about y."""
    if shutil.which("ccx") is None:
        native_unavailable("CalculiX (ccx, Debian's calculix-ccx) is not installed")
    tmp = tmp_path_factory.mktemp("ccx_rod")
    deck, numbers, pos = c3d20_deck(20, 1, 1, L, 6e-3, 6e-3, "")
    end = numbers[np.isclose(pos[:, 0], L)]
    mid = numbers[np.isclose(pos[:, 0], L / 2) & np.isclose(pos[:, 1], 3e-3) & (pos[:, 2] == 0)]
    deck += ("*NSET, NSET=END\n" + ", ".join(map(str, end))
             + "\n*STEP\n*FREQUENCY, SOLVER=MATRIXSTORAGE\n*END STEP\n")
    (tmp / "rod.inp").write_text(deck)
    subprocess.run(["ccx", "-i", "rod"], cwd=tmp, check=True, capture_output=True, timeout=120)
    text = SCENARIO.read_text()
    text = (text[:text.index("[flex_bodies.rod]")] + ROD_TABLE.replace("MID", str(mid[0]))
            + text[text.index("[couplings.pin_crank]"):]).replace('node = "end"', "node = 1")
    (tmp / "rod.toml").write_text(text)
    return tmp / "rod.toml"


def test_calculix_rod_matches_the_nonlinear_chain(calculix_rod):
    """The rod imported from CalculiX (physical matrices, end faces tied rigidly to two 6-DOF
    interface nodes, pins about y) runs the slider-crank at Ω = 30 rad/s for one revolution,
    where the axial force's stiffening (not modelled for imported structures) is about 0.6 %:
    its first fixed-interface frequency is the pinned–pinned rod's (π / 2L²) √(EI/ρA) =
    156.3 Hz to 1 %, and the mid-span extremes are within 2 % of the chain's (measured
    +0.6 %, +0.6 %: 0.1108 / −0.1115 mm against 0.1102 / −0.1108 mm)."""
    omega, side = 30.0, 6e-3
    ei, rho_a = 210e9 * side**4 / 12, 7850.0 * side**2
    scenario = load_scenario(calculix_rod, {
        "parameters.Omega": repr(omega), "solver.t_end": "2*pi/Omega",
        "cosim.macro_step": "2*pi/Omega/5000", "solver.output_every": "5"})
    from rbcosim.cosim.flex_bodies import build_endpoints

    model = build_endpoints(scenario, scenario.cosim.macro_step)["rod"].body.model
    assert abs(model.frequencies_hz[0] / (math.pi / (2 * L**2) * math.sqrt(ei / rho_a)) - 1) < 0.01
    # the same body through `rbcosim convert-structure` (two --interface ties) and a file
    from rbcosim.cli.main import main
    from rbcosim.flex.io.matrices_io import load_npz

    base = calculix_rod.parent
    assert main(["convert-structure", "--from", "calculix", "--inp", str(base / "rod.inp"),
                 "--interface", "rigid=FIX", "--interface", "rigid=END",
                 "--out", str(base / "rod.npz")]) == 0
    pins = (Interface(0, (4,), "a"), Interface(1, (4,), "b"))
    converted = FlexModel.from_matrices(load_npz(base / "rod.npz"), n_modes=4,
                                        attachment="floating", interfaces=pins)
    assert np.allclose(converted.frequencies_hz, model.frequencies_hz, rtol=1e-9, atol=0)
    assert np.allclose(converted.mass, model.mass, rtol=0, atol=1e-9 * np.abs(model.mass).max())
    results = run_cosimulation(scenario, progress=False)
    t, mid = results["t"], results["rod.mid.uz"]
    reference = chain_reference(np.linspace(0.0, t[-1], 2001), omega=omega, ei=ei, rho_a=rho_a)
    assert 1.0e-4 < reference.max() < 1.2e-4
    assert abs(mid.max() / reference.max() - 1) < 0.02
    assert abs(mid.min() / reference.min() - 1) < 0.02


def test_energy_delivered_by_the_pins_is_the_rods_energy():
    """Power balance over one revolution (linear floating frame, no geometric stiffening,
    whose quasi-static axial force is not conservative): the work the two pins' wrenches do
    on the rod (minus the endpoint's ledger, ∫ W·v on the rigid side, trapezoid) equals the
    change of the rod's kinetic and strain energy from its state (its energy swings by up to 13.8 J)
    to 2e-3 of the swing at every macro step (measured 1.3e-3, and 3.8e-4 at H/2: the
    exchange's error, O(H²))."""
    from rbcosim.cosim.master import CosimMaster

    master = CosimMaster(load_scenario(SCENARIO, {
        "solver.t_end": "2*pi/Omega", "cosim.macro_step": "2*pi/Omega/2133",
        "flex_bodies.rod.geometric_stiffening": "false"}))
    endpoint = master.endpoints["rod"]
    start, gaps, swing = endpoint.body.energy(), [], []
    for _ in range(2133):
        master.step()
        change = endpoint.body.energy() - start
        gaps.append(change + endpoint.energy.sum())
        swing.append(change)
    assert 10.0 < max(swing) < 15.0
    assert np.abs(gaps).max() < 2e-3 * max(swing)


def test_restored_state_re_steps_to_the_same_bits():
    """CosimMaster.get_state / set_state with the 3D rod: re-stepping gives the same row."""
    from rbcosim.cosim.master import CosimMaster

    master = CosimMaster(load_scenario(SCENARIO))
    for _ in range(20):
        master.step()
    blob = master.get_state()
    for _ in range(10):
        master.step()
    first = master.row()
    master.set_state(blob)
    for _ in range(10):
        master.step()
    assert master.row().tobytes() == first.tobytes()
    assert np.any(master.row() != 0.0)


@pytest.mark.parametrize(("change", "message"), [
    ({"flex_bodies.rod.planar": "true"},
     ("couplings.pin_wrist: a floating beam with several couplings is 3D: set planar = false in "
      "its flex_bodies table")),
    ({"couplings.pin_crank.axis": "'z'"},
     ("couplings.pin_crank.type: the first coupling of a floating body with several interface "
      "nodes must be a clamp or a pin about y (its frame takes the twist about the line to the "
      "second interface node from it)")),
    ({"couplings.pin_crank.node": "'end'", "couplings.pin_wrist.node": "0"},
     ("couplings.pin_wrist.node: a floating body with several interface nodes needs its second "
      "interface node on the structure's +x axis from the first, got the offset [-0.3, 0.0, "
      "0.0] m")),
])
def test_bad_couplings_of_a_floating_rod_name_the_key(change, message):
    """Each refusal names the scenario file and the coupling's key, checked at load."""
    from rbcosim.errors import ScenarioError

    with pytest.raises(ScenarioError) as err:
        load_scenario(SCENARIO, change)
    assert str(err.value).startswith(f"{SCENARIO}: {message}")


def test_cosim_runs_the_3d_rod_in_its_own_process(tmp_path):
    """`rbcosim cosim`: the 3D rod (two pins, one body) as one client in its own process gives
    `rbcosim run`'s numbers bit for bit (200 of the 6400 macro steps)."""
    from rbcosim.cli.main import main
    from rbcosim.distributed.driver import CosimOptions, run_distributed
    from rbcosim.results import Results

    sets = ['solver.t_end="6*pi/Omega/32"']
    out = tmp_path / "crank.csv"
    assert main(["run", str(SCENARIO), "--out", str(out), "--quiet", "--set", sets[0]]) == 0
    reference = Results.read_csv(out)
    assert np.abs(reference.data[:, reference.columns.index("rod.mid.uz")]).max() > 1e-5
    run = run_distributed(SCENARIO, sets, CosimOptions(progress=False, log=lambda _: None))
    assert len(run.processes) == 2 and len(set(run.processes.values())) == 1
    assert run.results.columns == reference.columns
    assert run.results.data.tobytes() == reference.data.tobytes()


def test_animation_places_the_3d_rod_where_the_run_put_its_output_node(tmp_path):
    """`rbcosim animate`'s shape of the 3D rod (rebuilt from the results' point poses and
    modal coordinates) puts its middle FE node where the run's output node `mid` was (to the
    joints' position gap, 1e-7 m), the rod's ends at the pins."""
    from rbcosim.animate.flex_shapes import beam_shapes
    from rbcosim.cli.main import main
    from rbcosim.results import Results

    out = tmp_path / "crank.csv"
    assert main(["run", str(SCENARIO), "--out", str(out), "--quiet", "--set",
                 'solver.t_end="6*pi/Omega/8"']) == 0
    results = Results.read_csv(out)
    shape = beam_shapes(load_scenario(SCENARIO), results, 1.0)["rod"]
    mid = np.column_stack([results[f"rod.mid.{c}"] for c in "xyz"])
    pins = [np.column_stack([results[f"{p}.{c}"] for c in "xyz"]) for p in ("crank_pin", "wrist")]
    for i in range(0, len(results.t), 20):
        nodes, _ = shape.nodes(i)
        assert np.abs(nodes[4] - mid[i]).max() < 1e-7
        assert np.abs(nodes[0] - pins[0][i]).max() < 1e-12
        assert np.abs(nodes[-1] - pins[1][i]).max() < 1e-12


def test_a_converted_two_node_file_runs_as_the_generated_rod(tmp_path):
    """The 3D beam's physical M and K written with two interface nodes (convert_structure with
    interface_node = [0, 8], save_npz) and coupled by `file = "rod.npz"`, `node = 0` / `1`:
    the mid-span deflection of the generated rod (without stiffening) over 200 macro steps to
    1e-9 of its peak."""
    from rbcosim.cli.main import main
    from rbcosim.flex.io.convert import convert_structure
    from rbcosim.flex.io.matrices_io import save_npz
    from rbcosim.flex.modelling.beam import euler_bernoulli_beam
    from rbcosim.results import Results

    beam = euler_bernoulli_beam(L, E, RHO, AREA, I_SEC, n_elements=8, second_moment_z=I_SEC,
                                torsion_constant=2 * I_SEC, shear_modulus=E / 2.6,
                                planar=False)
    save_npz(tmp_path / "rod.npz", convert_structure(
        beam.mass, beam.stiffness, beam.nodes, beam.dof_map, interface_node=[0, 8],
        output_nodes={"mid": 4}))
    text = SCENARIO.read_text()
    text = (text[:text.index("[flex_bodies.rod]")] + '[flex_bodies.rod]\nkind = "matrices"\n'
            'attachment = "floating"\nfile = "rod.npz"\nmodes = 4\n\n'
            + text[text.index("[couplings.pin_crank]"):]).replace('node = "end"', "node = 1")
    (tmp_path / "rod.toml").write_text(text)
    runs = []
    for path, sets in ((tmp_path / "rod.toml", []),
                       (SCENARIO, ["flex_bodies.rod.geometric_stiffening=false"])):
        out = tmp_path / f"{len(runs)}.csv"
        args = ["run", str(path), "--out", str(out), "--quiet", "--set",
                'solver.t_end="6*pi/Omega/32"']
        assert main(args + [a for s in sets for a in ("--set", s)]) == 0
        runs.append(Results.read_csv(out)["rod.mid.uz"])
    assert np.abs(runs[1]).max() > 1e-4
    assert np.abs(runs[0] - runs[1]).max() < 1e-9 * np.abs(runs[1]).max()
