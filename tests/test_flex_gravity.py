"""Gravity on grounded flexible bodies: a rigid block resting on the tip of an imported cantilever.

The structure is a steel cantilever (L = 1 m, 20 mm square, 10 planar Hermite elements)
clamped to the ground at its root (those DOFs removed), exported as plain matrices with the
tip's vertical translation as the only boundary DOF, with its gravity load case. A 5 kg block
on a vertical slider sits on the tip. At rest the tip sags by the superposed static deflections of the tip load and of the beam's own weight,
``m g L³ / (3 E I) + ρ A g L⁴ / (8 E I)`` (5.84 mm + 1.38 mm = 7.21 mm; Hermite elements are
nodally exact for both loads). Without gravity on the structure the block would stop at 5.84 mm.
"""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim.cosim.master import run_cosimulation
from rbcosim.flex.modelling.beam import euler_bernoulli_beam
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.scenarios

L, E, RHO, W, BLOCK, G = 1.0, 2.1e11, 7850.0, 0.02, 5.0, 9.81
AREA, I_SEC = W * W, W**4 / 12

SCENARIO = f"""
[world]
gravity = [0.0, 0.0, {-G}]

[bodies.block]
mass = {BLOCK}
inertia = [0.01, 0.01, 0.01]
position = [{L}, 0.0, 0.0]

[joints.slider]
type = "prismatic"
body1 = "ground"
body2 = "block"
at = [{L}, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]

[interface_points.tip]
body = "block"
position = [0.0, 0.0, 0.0]

[flex_bodies.cantilever]
kind = "matrices"
file = "cantilever.npz"
damping = {{ rayleigh = [0.0, 0.01] }}

[couplings.rest]
point = "tip"
flex_body = "cantilever"
grounded_reference = [{L}, 0.0, 0.0]

[cosim]
macro_step = 1e-3
micro_steps = 2
scheme = "jacobi"
extrapolation = 1

[solver]
integrator = "rk4"
t_end = 2.0
output_every = 2000
"""


def _write_cantilever(path):
    """The cantilever's matrices without the root node, the tip's u_z first (the boundary),
    and its gravity load case: the full beam's mass on unit rigid translations (including the
    share of the clamped root's mass), restricted to the kept DOFs."""
    beam = euler_bernoulli_beam(L, E, RHO, AREA, I_SEC, n_elements=10, planar=True)
    nodes, comps = beam.dof_map[:, 0], beam.dof_map[:, 1]
    tip_z = int(np.flatnonzero((nodes == nodes.max()) & (comps == 2))[0])
    free = [tip_z] + [i for i in np.flatnonzero(nodes > 0) if i != tip_z]
    m, k = beam.mass[np.ix_(free, free)], beam.stiffness[np.ix_(free, free)]
    translations = (comps[:, None] == np.arange(3)[None, :]).astype(float)
    load = (beam.mass @ translations)[free]
    np.savez(path, M=m, K=k, n_boundary=np.int64(1), boundary_dofs=np.array(["z"]),
             gravity_load=load)


def test_block_on_an_imported_cantilever_sags_by_the_load_plus_own_weight(tmp_path):
    _write_cantilever(tmp_path / "cantilever.npz")
    (tmp_path / "block.toml").write_text(SCENARIO)
    results = run_cosimulation(load_scenario(tmp_path / "block.toml"), progress=False)
    z = results["block.z"][-1]
    ei = E * I_SEC
    expected = BLOCK * G * L**3 / (3 * ei) + RHO * AREA * G * L**4 / (8 * ei)
    assert expected == pytest.approx(7.21e-3, abs=1e-5)
    assert -z == pytest.approx(expected, rel=1e-6)
