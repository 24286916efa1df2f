"""Interface-Jacobian coupling stays stable on a stiff joint where plain Jacobi diverges.

Stiff variant of the two-mass oscillator, written here: m1 = 1 kg on k1 = 10 N/m (rigid side)
joined by a stiff joint spring kc = 1e5 N/m (dc = 1 N·s/m) to a heavy structure m2 = 100 kg on
k2 = 1000 N/m. The fast mode (318 rad/s, period 20 ms) is m1 bouncing on kc; with H = 1 ms
(ωH = 0.32, four rigid micro steps) the explicit force–displacement exchange of Jacobi blows up,
while the interface Jacobian (∂F/∂x = −kc, ∂F/∂v = −dc) lets the rigid side update the joint
force from its own motion inside the step. Exact solution by matrix exponential.

Figures (0.5 s, H = 1 ms):        max |x1 − exact|     max |x1|
    jacobi, hold                    5.7e3 m              5.7e3 m      (x1(0) = 0.1 m)
    jacobi, linear extrapolation    0.22 m               0.14 m       (growing)
    interface_jacobian, hold        1.0e-2 m             0.100 m
At H = 2 ms: jacobi hold 6.6e7 m, interface_jacobian 2.2e-2 m.
With m2 = 1 kg instead, the fast mode moves both masses and the part of the force that
depends on m2's motion stays explicit: interface-Jacobian coupling diverges there too (measured
at H = 1 ms); the Jacobian makes the joint's own stiffness implicit, nothing more.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from rbcosim.cosim.master import run_cosimulation
from rbcosim.errors import SimulationError
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.scenarios

M1, K1 = 1.0, 10.0
M2, K2, KC, DC = 100.0, 1000.0, 1e5, 1.0
T_END = 0.5
H = 1e-3


@pytest.fixture(scope="module")
def stiff_structure(tmp_path_factory):
    """The flexible side's matrices, in the layout of scenarios/two_mass_flex.npz."""
    path = tmp_path_factory.mktemp("stiff") / "stiff_joint.npz"
    rows = np.zeros((1, 3, 2))
    rows[0, 0, 1] = 1.0
    np.savez(path, M=np.diag([0.0, M2]), K=np.array([[KC, -KC], [-KC, KC + K2]]),
             C=np.array([[DC, -DC], [-DC, DC]]), n_boundary=np.int64(1),
             boundary_dofs=np.array(["x"]), output_names=np.array(["m2"]), output_rows=rows,
             output_positions=np.zeros((1, 3)))
    return path


def exact_x1(t):
    a = np.array([[0.0, 1.0, 0.0, 0.0],
                  [-(K1 + KC) / M1, -DC / M1, KC / M1, DC / M1],
                  [0.0, 0.0, 0.0, 1.0],
                  [KC / M2, DC / M2, -(K2 + KC) / M2, -DC / M2]])
    return np.array([(scipy.linalg.expm(a * ti) @ [0.1, 0.0, 0.0, 0.0])[0] for ti in t])


def run(scenarios_dir, structure, scheme, extrapolation=0):
    scenario = load_scenario(scenarios_dir / "two_mass_oscillator.toml", [
        f"flex_bodies.structure.file={str(structure)!r}", f"cosim.macro_step={H!r}",
        "cosim.micro_steps=4", f'cosim.scheme="{scheme}"', f"cosim.extrapolation={extrapolation}",
        f"solver.t_end={T_END!r}", "solver.output_every=1",
    ])
    return run_cosimulation(scenario, progress=False)


def test_jacobi_diverges_on_the_stiff_joint(scenarios_dir, stiff_structure):
    try:
        r = run(scenarios_dir, stiff_structure, "jacobi")
    except SimulationError:
        return  # non-finite state: diverged
    assert np.abs(r["mass1.x"]).max() > 100 * 0.1


def test_interface_jacobian_stays_bounded_and_close_to_exact(scenarios_dir, stiff_structure):
    r = run(scenarios_dir, stiff_structure, "interface_jacobian")
    x1 = r["mass1.x"]
    assert np.abs(x1).max() < 0.1 * 1.01  # no energy gained
    assert np.max(np.abs(x1 - exact_x1(r.t))) < 0.02  # 20 % of the amplitude at ωH = 0.32
    # The last 10 % of the run is as close as the first: bounded, not slowly growing.
    tail = np.abs(x1 - exact_x1(r.t))[-len(x1) // 10:]
    assert tail.max() < 0.02
