"""The flexible slider-crank (scenarios/flexible_slider_crank.toml) against a nonlinear
reference built here, and its rigid-rod limit against the rigid mechanism's kinematics.

Reference: the rod as a planar chain of N rigid uniform links of length l = L/N (mass ρA l,
centroidal inertia ρA l³/12) joined by rotational springs k = EI/l at the N − 1 interior joints
(none at the pins), absolute link angles φ_i from +X towards +Z, its first end at the crank pin
P(t) = r (cos Ωt, sin Ωt) (prescribed), its last end E = P + l Σ (cos φ_i, sin φ_i) carrying
the slider's mass m_s and held on the X axis (E_z = 0) by a Lagrange multiplier. Lagrange's
equations (nothing linearised, so the axial-force stiffening and the foreshortening are in):

    Σ_j C_ij l² [cos(φ_i − φ_j) φ̈_j + sin(φ_i − φ_j) φ̇_j²] + J φ̈_i + s_i l (u_i^⊥ · P̈)
        + ∂V/∂φ_i = λ l cos φ_i,      l Σ (cos φ_i φ̈_i − sin φ_i φ̇_i²) + P̈_z = 0 (stabilised),
    C_ij = ρA l (N − max(i, j) − 1/2) + m_s (i ≠ j), ρA l (N − i − 3/4) + m_s (i = j)
    (0-based), s_i = ρA l (N − i − 1/2) + m_s, u^⊥ = (−sin φ, cos φ), J = ρA l³/12,

integrated by scipy's DOP853 for N = 4 and 8, Richardson-extrapolated (error ∝ N⁻²) — the
extrapolation from N = 10, 20 agrees to 1.2e-4. The mid-span deflection is the middle joint's
signed distance from the chord P–E (positive along e_z = (−e_x,z, e_x,x) of the chord e_x).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from rbcosim.cosim.master import run_cosimulation
from rbcosim.scenario.loader import load_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "flexible_slider_crank.toml"

L, R, OMEGA, E, RHO, D = 0.30, 0.15, 150.0, 2.0e11, 7870.0, 6e-3
AREA, I_SEC = math.pi * D**2 / 4, math.pi * D**4 / 64
M_SLIDER = RHO * AREA * L / 2
T_END = 6 * math.pi / OMEGA  # 3 revolutions


def _crank(t: float) -> np.ndarray:
    """Crank pin (x, z): rows position, velocity, acceleration."""
    c, s = math.cos(OMEGA * t), math.sin(OMEGA * t)
    return np.array([[R * c, R * s], [-R * OMEGA * s, R * OMEGA * c],
                     [-R * OMEGA**2 * c, -R * OMEGA**2 * s]])


def chain_mid_deflection(n: int, times: np.ndarray) -> np.ndarray:
    """Mid-span deflection (m) from the chord of the N-link chain at ``times``."""
    ell = L / n
    me = RHO * AREA * ell
    i = np.arange(n)
    c_mat = me * ((n - 1 - np.maximum.outer(i, i)) + 0.5)
    c_mat[i, i] = me * ((n - 1 - i) + 0.25)
    c_mat += M_SLIDER
    s_vec = me * ((n - 1 - i) + 0.5) + M_SLIDER
    j_seg = me * ell**2 / 12
    k = E * I_SEC / ell
    a = 500.0  # Baumgarte, 1/s

    def rhs(t, y):
        phi, rate = y[:n], y[n:]
        p = _crank(t)
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

    y0 = np.concatenate((np.zeros(n), np.full(n, -R * OMEGA / L)))  # rigid rotation about E
    sol = solve_ivp(rhs, (0.0, times[-1]), y0, method="DOP853", rtol=1e-8, atol=1e-12,
                    t_eval=times)
    assert sol.success, sol.message
    phi = sol.y[:n]
    x = np.vstack([np.zeros(times.size), np.cumsum(ell * np.cos(phi), axis=0)])
    z = np.vstack([np.zeros(times.size), np.cumsum(ell * np.sin(phi), axis=0)])
    length = np.hypot(x[-1], z[-1])
    return (-z[-1] * x[n // 2] + x[-1] * z[n // 2]) / length


def test_mid_span_extremes_match_the_nonlinear_chain():
    """Within 2 % (the issue's target) of the Richardson-extrapolated chain; measured 1e-5
    (max, 4.618 mm) and 0.4 % (min, −4.642 mm against −4.659 mm)."""
    results = run_cosimulation(load_scenario(SCENARIO, {"solver.output_every": "2"}),
                               progress=False)
    t, mid = results["t"], results["rod.mid.uz"]
    assert t[-1] == np.float64(T_END) or abs(t[-1] - T_END) < 1e-12
    times = np.linspace(0.0, T_END, 4001)
    coarse, fine = chain_mid_deflection(4, times), chain_mid_deflection(8, times)
    reference = (4 * fine - coarse) / 3
    assert 4.5e-3 < reference.max() < 4.8e-3  # the chain itself: ~1.5 % of L
    assert abs(mid.max() / reference.max() - 1) < 0.02
    assert abs(mid.min() / reference.min() - 1) < 0.02
    # and the time history, not only the extremes (the co-simulation's rows interpolated onto
    # the reference's times): 1.2 % of the peak over the first revolution, a phase drift
    # growing to 5.6 % by the third
    gap = np.abs(np.interp(times, t, mid) - reference)
    assert gap[: times.size // 3].max() < 0.02 * reference.max()
    assert gap.max() < 0.08 * reference.max()


def test_stiff_rod_follows_the_rigid_slider_crank():
    """E × 100 over one revolution: the slider at r cos θ + √(L² − r² sin² θ) to 1 µm, and
    the mid-span deflection 100 times smaller."""
    overrides = {"flex_bodies.rod.youngs_modulus": repr(100 * E), "solver.t_end": "2*pi/Omega",
                 "cosim.macro_step": "2*pi/Omega/6400"}  # omega H = 1.2 on the stiffer stretch
    results = run_cosimulation(load_scenario(SCENARIO, overrides), progress=False)
    theta = OMEGA * results["t"]
    rigid = R * np.cos(theta) + np.sqrt(L**2 - R**2 * np.sin(theta) ** 2)
    assert np.abs(results["slider.x"] - rigid).max() < 1e-6
    assert np.abs(results["rod.mid.uz"]).max() < 0.02 * 4.7e-3


def test_restored_state_re_steps_to_the_same_bits():
    """CosimMaster.get_state / set_state with the chord body: re-stepping gives the same row."""
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
