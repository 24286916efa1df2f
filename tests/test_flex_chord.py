"""The chord-frame beam (rbcosim.flex.modelling.chord) alone: its modes, statics, geometric stiffness
and pin forces against hand-derived solutions, with the pins' motions prescribed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rbcosim.errors import ScenarioError
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.runtime.chord_body import ChordBody
from rbcosim.flex.runtime.chord_kernels import frame_inputs, modal_acceleration
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.scenario.flex_chord_config import chord_model_from_config

L, E, RHO, D = 0.30, 2.0e11, 7870.0, 6e-3
AREA, I_SEC = math.pi * D**2 / 4, math.pi * D**4 / 64
R, OMEGA = 0.15, 150.0  # crank m, rad/s


def _model(e=E, modes=4, stiffening=False):
    return ChordModel.from_beam(L, e, RHO, AREA, I_SEC, n_elements=8, n_modes=modes,
                                output_nodes={"mid": L / 2}, geometric_stiffening=stiffening)


def _static_modes(model, inputs):
    """eta with eta'' = 0 at rest (the modal ODE is affine in eta)."""
    k = model.n_modes
    minv = np.linalg.inv(model.mass[1:, 1:])
    acc = lambda eta: modal_acceleration(model.modal_rows, minv, model.params, inputs, eta,
                                         np.zeros(k))
    base = acc(np.zeros(k))
    jac = np.column_stack([acc(np.eye(k)[i]) - base for i in range(k)])
    return np.linalg.solve(jac, -base), jac


def _inputs(ell=L, b=(0.0, 0.0)):
    """Frame inputs of a chord along +x at rest, length ell, frame acceleration b (x, z)."""
    return np.array([1.0, 0.0, ell, 0.0, 0.0, 0.0, 0.0, b[0], b[1]])


def test_pinned_pinned_frequencies_are_the_sine_modes():
    """f_n = n² π √(EI/ρA) / (2 L²): the pinned–pinned rod's natural modes (8 elements)."""
    f1 = math.pi * math.sqrt(E * I_SEC / (RHO * AREA)) / (2 * L**2)
    assert np.allclose(_model().frequencies_hz / (f1 * np.arange(1, 5) ** 2), 1.0, rtol=5e-3)
    assert _model().frequencies_hz[0] == pytest.approx(f1, rel=1e-4)


def test_uniform_transverse_load_gives_the_simply_supported_deflection():
    """A frame accelerating by b_z loads the beam by −ρA b_z: mid-span 5 q L⁴ / (384 EI)."""
    model = _model()
    eta, _ = _static_modes(model, _inputs(b=(0.0, 100.0)))
    mid = model.output_rows[0] @ np.concatenate(([0.0], eta))
    expected = -5 * RHO * AREA * 100.0 * L**4 / (384 * E * I_SEC)
    assert mid[1] == pytest.approx(expected, rel=1e-3)
    assert abs(mid[0]) < 1e-12


def test_stretch_tension_stiffens_the_first_mode():
    """A chord held stretched by s carries N = EA s / L: ω² = ω1² (1 + N L² / (π² EI))."""
    model = _model(stiffening=True)
    s = 2e-5
    _, jac = _static_modes(model, _inputs(ell=L + s))
    w2 = np.sort(-np.linalg.eigvals(jac).real)[0]
    n = E * AREA * s / L
    w1 = 2 * math.pi * model.frequencies_hz[0]
    assert w2 == pytest.approx(w1**2 * (1 + n * L**2 / (math.pi**2 * E * I_SEC)), rel=2e-4)
    _, plain = _static_modes(_model(), _inputs(ell=L + s))
    assert np.sort(-np.linalg.eigvals(plain).real)[0] == pytest.approx(w1**2, rel=1e-9)


def _slider_crank(t):
    """Pins (3, 3) of the rigid slider-crank: crank pin r(cos θ, 0, sin θ), θ = Ω t, slider
    on x at r cos θ + √(L² − r² sin² θ); rows position, velocity, acceleration (closed form)."""
    th = OMEGA * t
    c, s = math.cos(th), math.sin(th)
    f = math.sqrt(L**2 - R**2 * s**2)
    pa = np.array([[R * c, 0, R * s], [-R * OMEGA * s, 0, R * OMEGA * c],
                   [-R * OMEGA**2 * c, 0, -R * OMEGA**2 * s]])
    dx = -R * s - R**2 * s * c / f
    ddx = -R * c - R**2 * math.cos(2 * th) / f - R**4 * s**2 * c**2 / f**3
    pb = np.array([[R * c + f, 0, 0], [OMEGA * dx, 0, 0], [OMEGA**2 * ddx, 0, 0]])
    return pa, pb


def _motion(p, t):
    return InterfaceMotion(p[0], np.array([1.0, 0, 0, 0]), p[1], np.zeros(3), p[2], np.zeros(3), t)


def test_frame_reproduces_both_pins_kinematics():
    """The chord field v_A + w e_y × p + s' e_x and a_A + alpha e_y × p − w² p + 2 w e_y ×
    s' e_x + s'' e_x (p = l e_x) give pin B's velocity and acceleration."""
    e = np.array([[0.0, 1.0], [-1.0, 0.0]])
    for t in (0.001, 0.004, 0.011):
        pa, pb = _slider_crank(t)
        pb = pb + np.array([[0, 0, 1e-4], [0.3, 0, -0.2], [40.0, 0, 25.0]])  # not rigid: s ≠ 0
        f = frame_inputs(pa, pb, np.zeros(3))
        ex, ez = f[0:2], np.array([-f[1], f[0]])
        rot = np.column_stack((ex, ez))
        p = np.array([f[2], 0.0])
        acc_b = (f[7:9] + f[6] * e @ p - f[5] ** 2 * p + 2 * f[5] * e @ np.array([f[3], 0.0])
                 + np.array([f[4], 0.0]))
        assert np.allclose(rot @ acc_b, pb[2, [0, 2]], rtol=1e-12, atol=1e-9)
        vel_b = rot.T @ pa[1, [0, 2]] + f[5] * e @ p + np.array([f[3], 0.0])
        assert np.allclose(rot @ vel_b, pb[1, [0, 2]], rtol=1e-12, atol=1e-12)
        assert f[2] == pytest.approx(np.linalg.norm(pb[0] - pa[0]), rel=1e-15)


def test_stiff_rod_on_the_rigid_slider_crank_takes_the_lever_rule_forces():
    """E × 1000: the rod moves rigidly, and the pins carry its inertia by the lever rule of a
    uniform bar held at both ends, F_A = −m (a_A/3 + a_B/6), F_B = −m (a_A/6 + a_B/3). What
    is left is the vibration of the rod started undeformed (its amplitude, and the force it
    carries, scale with the quasi-static deflection: 1/E)."""
    model = _model(e=1000 * E, modes=2)
    body = ChordBody(model, gravity=(0.0, 0.0, 0.0))
    m = RHO * AREA * L
    H = 1e-5
    body.initialize(0.0, [_motion(p, 0.0) for p in _slider_crank(0.0)])
    past = []
    worst, deflection = 0.0, 0.0
    for i in range(2100):  # half a revolution
        t = i * H
        now = [_motion(p, t) for p in _slider_crank(t)]
        body.step(t, H, now, past)
        past = [now, *past[:1]]
        if i % 100 == 99:
            pa, pb = _slider_crank(t + H)
            body.set_motion([_motion(pa, t + H), _motion(pb, t + H)])
            lever = -m * np.array([pa[2] / 3 + pb[2] / 6, pa[2] / 6 + pb[2] / 3])
            worst = max(worst, np.abs(body.pin_forces() - lever).max() / (m * R * OMEGA**2))
            deflection = max(deflection, abs(body.output_displacements()["mid"][2]))
    assert worst < 5e-3
    assert deflection < 2e-5 * L
    assert np.all(body.wrenches()[:, 3:] == 0.0)


def test_state_round_trip_and_added_mass_of_a_rigid_bar():
    """get/set_state restores bits; along the chord the added mass is the bar's consistent
    mass m [[1/3, 1/6], [1/6, 1/3]]."""
    model = _model()
    body = ChordBody(model, gravity=(0.0, 0.0, 0.0))
    body.initialize(0.0, [_motion(p, 0.0) for p in _slider_crank(0.0)])
    body.step(0.0, 1e-5, [_motion(p, 0.0) for p in _slider_crank(0.0)])
    blob = body.get_state()
    body.step(1e-5, 1e-5, [_motion(p, 1e-5) for p in _slider_crank(1e-5)])
    first = body.get_state()
    body.set_state(blob)
    body.step(1e-5, 1e-5, [_motion(p, 1e-5) for p in _slider_crank(1e-5)])
    assert body.get_state() == first
    added = body.added_mass()
    m = RHO * AREA * L
    ex = frame_inputs(*_slider_crank(2e-5), np.zeros(3))[0:2]
    along = np.array([[ex @ added[np.ix_([6 * i, 6 * i + 2], [6 * j, 6 * j + 2])] @ ex
                       for j in range(2)] for i in range(2)])
    assert np.allclose(along, m * np.array([[1 / 3, 1 / 6], [1 / 6, 1 / 3]]), rtol=1e-6)


def test_config_errors_name_the_key():
    cfg = {"kind": "beam", "attachment": "floating", "frame": "chord", "length": L,
           "youngs_modulus": E, "density": RHO, "section": "circle", "diameter": D,
           "elements": 8, "modes": 4, "output_nodes": {"mid": 0.15}}
    assert chord_model_from_config(cfg, "s.toml: flex_bodies.rod").n_modes == 4
    for key, value, message in (("planar", False, "flex_bodies.rod.planar"),
                                ("modes", 30, "flex_bodies.rod.modes"),
                                ("damping", {"modal_ratio": 0.01}, "flex_bodies.rod.damping"),
                                ("output_nodes", {"mid": 0.5}, "output_nodes.mid")):
        with pytest.raises(ScenarioError, match=message):
            chord_model_from_config({**cfg, key: value}, "s.toml: flex_bodies.rod")


def test_scenario_refuses_a_chord_body_without_its_two_pins():
    from pathlib import Path

    from rbcosim.scenario.loader import load_scenario_text

    text = (Path(__file__).resolve().parent.parent / "scenarios"
            / "flexible_slider_crank.toml").read_text()
    with pytest.raises(ScenarioError, match=r"^s\.toml: couplings\.pin_wrist: a chord-frame"):
        load_scenario_text(text.replace('node = "end"', "node = 4"), source="s.toml")
    with pytest.raises(ScenarioError, match=r"^s\.toml: couplings\.pin_crank\.wrench_frame: not"):
        load_scenario_text(text.replace("node = 0\n", 'node = 0\nwrench_frame = "body"\n'),
                           source="s.toml")
    with pytest.raises(ScenarioError, match=r"^s\.toml: flex_bodies\.rod\.frame: expected one"):
        load_scenario_text(text.replace('frame = "chord"', 'frame = "mean"'), source="s.toml")
    scenario = load_scenario_text(text, source="s.toml", base_dir=".")
    spring = next(s for s in scenario.model.springs if s.name == "rod.stretch")
    assert spring.stiffness == pytest.approx(E * AREA / L, rel=1e-12)
    assert spring.free_length == L


def test_check_lists_the_chord_body(capsys):
    """`rbcosim check` names both pins and the rod's first frequency, π √(EI/ρA) / (2 L²)."""
    from pathlib import Path

    from rbcosim.cli.main import main

    path = Path(__file__).resolve().parent.parent / "scenarios" / "flexible_slider_crank.toml"
    main(["check", str(path)])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("coupling pin_")]
    assert len(lines) == 2 and "over 2 interface nodes, 4 modes" in lines[1]
    first = float(lines[0].split("frequencies ")[1].split(",")[0])
    f1 = math.pi * math.sqrt(E * I_SEC / (RHO * AREA)) / (2 * L**2)
    assert first == pytest.approx(f1, rel=1e-4)
