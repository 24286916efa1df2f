"""Order of accuracy of each coupling scheme on the two-mass oscillator, against its exact
solution (matrix exponential of the linear 4-state system, computed here).

Model (scenarios/two_mass_oscillator.toml + two_mass_flex.npz): m1 = m2 = 1 kg, k1 = 10 N/m,
k2 = 1000 N/m, coupling spring kc = 100 N/m with damper dc = 1 N·s/m; x1(0) = 0.1 m, all else at
rest. Error: max over the run of |x1 − x1_exact| (column `mass1.x`), for macro steps
H = 1e-2, 5e-3, 2.5e-3, 1.25e-3 with one rigid micro step per macro step; horizon 0.3 s (two
periods of the fast mode) to keep the run short. Observed order = log2 of successive ratios.

Figures (measured with this file's settings):

    scheme                    extrapolation   orders (3 halvings)   error at H = 1.25e-3
    jacobi                    0               1.00 1.00 1.00        7.9e-4
    jacobi                    1               1.97 1.99 1.99        4.0e-6
    jacobi                    2               2.20 2.12 2.06        1.6e-6   (startup-limited)
    gauss_seidel_rigid_first  0               1.01 1.01 1.00        7.9e-4
    gauss_seidel_rigid_first  1               1.98 1.99 2.00        4.0e-6
    gauss_seidel_flex_first   0               2.12 2.07 2.03        1.5e-6
    iterative                 0               3.93 3.95 3.98        1.7e-12
    interface_jacobian        0               0.97 0.99 0.99        6.9e-5

Iterative coupling exchanges the wrench and the motion at mid-step and at the end of every
pass and interpolates cubically (through the previous macro value as well), so it reaches the
inner RK4's order 4. Jacobi with quadratic extrapolation stays at order 2: its first macro
step has only one exchanged value (a hold) and its second only two.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from rbcosim.cosim.master import run_cosimulation
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.scenarios

M1 = M2 = 1.0
K1, K2, KC, DC = 10.0, 1000.0, 100.0, 1.0
X1_0 = 0.1
MACRO_STEPS = (1e-2, 5e-3, 2.5e-3, 1.25e-3)
T_END = 0.3


def exact_x1(t: np.ndarray) -> np.ndarray:
    """x1(t) of m1 x1'' = −k1 x1 − kc (x1 − x2) − dc (x1' − x2'),
    m2 x2'' = −k2 x2 − kc (x2 − x1) − dc (x2' − x1'), by the matrix exponential."""
    a = np.array([
        [0.0, 1.0, 0.0, 0.0],
        [-(K1 + KC) / M1, -DC / M1, KC / M1, DC / M1],
        [0.0, 0.0, 0.0, 1.0],
        [KC / M2, DC / M2, -(K2 + KC) / M2, -DC / M2],
    ])
    y0 = np.array([X1_0, 0.0, 0.0, 0.0])
    return np.array([(scipy.linalg.expm(a * ti) @ y0)[0] for ti in t])


def errors(scenarios_dir, scheme: str, extrapolation: int) -> tuple[np.ndarray, list[dict]]:
    out, diagnostics = [], []
    for H in MACRO_STEPS:
        scenario = load_scenario(scenarios_dir / "two_mass_oscillator.toml", [
            f"cosim.macro_step={H!r}", "cosim.micro_steps=1", f'cosim.scheme="{scheme}"',
            f"cosim.extrapolation={extrapolation}", f"solver.t_end={T_END!r}",
            "solver.output_every=1",
        ])
        r = run_cosimulation(scenario, progress=False)
        assert r.t[-1] == pytest.approx(T_END) and len(r.t) == round(T_END / H) + 1
        out.append(np.max(np.abs(r["mass1.x"] - exact_x1(r.t))))
        diagnostics.append(r.diagnostics)
    return np.array(out), diagnostics


FIRST, SECOND, FOURTH = (0.85, 1.3), (1.75, 2.3), (3.6, 4.4)


@pytest.mark.parametrize(("scheme", "extrapolation", "band"), [
    ("jacobi", 0, FIRST),
    ("jacobi", 1, SECOND),
    ("jacobi", 2, (1.75, 2.4)),
    ("gauss_seidel_rigid_first", 0, FIRST),
    ("gauss_seidel_rigid_first", 1, SECOND),
    ("gauss_seidel_flex_first", 0, SECOND),
    pytest.param("iterative", 0, FOURTH, marks=pytest.mark.slow),
    ("interface_jacobian", 0, FIRST),
], ids=lambda v: v if isinstance(v, str) else None)
def test_observed_order_of_each_scheme(scenarios_dir, scheme, extrapolation, band):
    err, diagnostics = errors(scenarios_dir, scheme, extrapolation)
    orders = np.log2(err[:-1] / err[1:])
    assert np.all((orders > band[0]) & (orders < band[1])), (scheme, extrapolation, orders, err)
    if scheme == "iterative":
        # It really iterates (more than one pass per step) and converges within the limit.
        for d in diagnostics:
            assert d["macro_steps"] < d["iterations_total"]
            assert d["iterations_max"] < 20


def test_errors_rank_as_the_schemes_promise(scenarios_dir):
    """At one H the higher-order options are more accurate by large factors (H = 2.5e-3)."""
    def err(scheme, extrapolation):
        scenario = load_scenario(scenarios_dir / "two_mass_oscillator.toml", [
            "cosim.macro_step=2.5e-3", "cosim.micro_steps=1", f'cosim.scheme="{scheme}"',
            f"cosim.extrapolation={extrapolation}", f"solver.t_end={T_END!r}",
            "solver.output_every=1",
        ])
        r = run_cosimulation(scenario, progress=False)
        return np.max(np.abs(r["mass1.x"] - exact_x1(r.t)))

    hold, linear, iterated = err("jacobi", 0), err("jacobi", 1), err("iterative", 2)
    assert linear < hold / 30
    assert iterated < linear / 30
