"""Joint-coordinate kernels: ABA against CRBA, both against the maximal route's equations."""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.minimal import coordinate_names, is_tree
from rbcosim.minimal.system import TreeSystem
from rbcosim.minimal.tree import build_tree
from rbcosim.model import Body, Joint, Marker, Model, frozen_array
from rbcosim.scenario.loader import load_scenario_text
from rbcosim.spatial import quaternion as quat

pytestmark = pytest.mark.unit

KINDS = ("revolute", "prismatic", "cylindrical", "universal", "planar", "spherical", "fixed")


def _rotation(rng) -> np.ndarray:
    return quat.to_matrix(quat.normalize(rng.normal(size=4)))


def random_tree(seed: int, n: int, kinds=KINDS, free_bodies: bool = True) -> Model:
    """n bodies; body k hangs from a random earlier body (or the ground) by a random joint
    type, written parent-first or child-first at random; some bodies get no joint (free)."""
    rng = np.random.default_rng(seed)
    bodies, joints = [], []
    for k in range(1, n + 1):
        a = rng.uniform(0.2, 1.0, 3)
        inertia = np.diag([a[1] + a[2], a[0] + a[2], a[0] + a[1]])  # a valid principal set
        R = _rotation(rng)
        inertia = R @ inertia @ R.T  # non-diagonal in body axes
        bodies.append(Body(f"b{k}", float(rng.uniform(0.5, 2.0)), frozen_array(inertia),
                           frozen_array(rng.normal(size=3)),
                           frozen_array(quat.normalize(rng.normal(size=4))),
                           frozen_array(np.zeros(3)), frozen_array(np.zeros(3))))
        if free_bodies and rng.uniform() < 0.12:
            continue
        parent = int(rng.integers(0, k))
        kind = kinds[int(rng.integers(len(kinds)))]
        mp = Marker(parent, frozen_array(rng.normal(size=3) * 0.3), frozen_array(_rotation(rng)))
        mc = Marker(k, frozen_array(rng.normal(size=3) * 0.3), frozen_array(_rotation(rng)))
        m1, m2 = (mc, mp) if rng.uniform() < 0.4 else (mp, mc)
        joints.append(Joint(f"j{k}", kind, m1, m2))
    return Model(tuple(bodies), tuple(joints), gravity=frozen_array([0.3, -0.2, -9.81]))


def random_state(system: TreeSystem, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.normal(size=system.nq), rng.normal(size=system.nv)])
    system.normalize(y)
    return y


@pytest.mark.parametrize("seed", range(6))
def test_aba_equals_crba_on_random_trees(seed):
    model = random_tree(seed, 12)
    assert is_tree(model)
    aba = TreeSystem(model, solver="aba")
    crba = TreeSystem(model, solver="crba")
    kinds = {j.kind for j in aba.tree.joints}
    assert len(kinds) >= 4, kinds
    rng = np.random.default_rng(100 + seed)
    for trial in range(3):
        y = random_state(aba, 1000 * seed + trial)
        a = aba.derivative(0.0, y)
        c = crba.derivative(0.0, y)
        scale = np.max(np.abs(c[aba.nq :]))
        assert np.max(np.abs(a - c)) <= 1e-10 * scale
        # with joint forces and external spatial forces on every body
        kin = aba.kinematics(y)
        tau = rng.normal(size=aba.nv)
        f_ext = [None] + [tuple(rng.normal(size=6)) for _ in range(model.n_bodies)]
        vdot_aba = np.array(aba.dyn.aba(kin, tau, f_ext))
        M = crba.dyn.mass_matrix(kin)
        C = crba.dyn.bias(kin, f_ext)
        vdot_crba = np.linalg.solve(M, tau - C)
        assert np.allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())
        assert np.all(np.linalg.eigvalsh(M) > 0)
        assert np.max(np.abs(vdot_aba - vdot_crba)) <= 1e-10 * np.max(np.abs(vdot_crba))


@pytest.mark.parametrize("seed", range(4))
def test_joint_coordinates_reproduce_maximal_equations(seed):
    """Poses from q satisfy every joint constraint; velocities satisfy Φ_q ν = 0; body
    accelerations equal the maximal route's multiplier solution at the same state."""
    model = random_tree(seed, 8)
    system = TreeSystem(model)
    y = random_state(system, seed)
    state = system.body_state(0.0, system.kinematics(y))
    maximal = MaximalSystem(model)
    phi, phidot = maximal.drift(state)
    assert phi < 1e-12 and phidot < 1e-12
    vdot_max, wdot_max, _ = maximal.accelerations(state)
    vdot_min, wdot_min = system.body_accelerations(0.0, y)
    scale = max(np.abs(vdot_max).max(), np.abs(wdot_max).max())
    assert np.max(np.abs(vdot_min - vdot_max)) <= 1e-9 * scale
    assert np.max(np.abs(wdot_min - wdot_max)) <= 1e-9 * scale


def test_initial_coordinates_reproduce_the_initial_poses():
    text = """
[bodies.a]
mass = 1.0
inertia = [0.1, 0.2, 0.25]
position = [0.3, 0.1, -0.2]
orientation = { axis = [1.0, 2.0, 0.5], angle_deg = 40.0 }
[bodies.b]
mass = 2.0
inertia = [0.3, 0.2, 0.4]
position = [0.5, -0.4, 0.1]
orientation = { axis = [0.0, 1.0, 1.0], angle_deg = -70.0 }
[joints.ja]
type = "universal"
body1 = "a"
body2 = "ground"
at = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
[joints.jb]
type = "cylindrical"
body1 = "b"
body2 = "a"
at = [0.4, -0.2, 0.0]
axis = [1.0, 1.0, 0.0]
"""
    model = load_scenario_text(text).model
    system = TreeSystem(model)
    state = system.body_state(0.0, system.kinematics(system.initial()))
    assert np.allclose(state.r, [b.position for b in model.bodies], atol=1e-14)
    assert np.allclose(state.q, [b.quaternion for b in model.bodies], atol=1e-14)
    assert coordinate_names(model) == ["ja.angle2", "ja.angle1", "jb.angle", "jb.displacement"]


def _chain_ops(n: int, solver: str) -> int:
    model = load_scenario_text(f"[generators.chain]\nlinks = {n}\n").model
    system = TreeSystem(model, solver=solver)
    y = system.initial()
    y[system.nq :] = np.linspace(-1.0, 1.0, system.nv)
    system.dyn.ops = 0
    system.derivative(0.0, y)
    return system.dyn.ops


def test_aba_operation_count_grows_linearly():
    """Multiplications per evaluation (kinematics + dynamics), counted as the loops run."""
    aba = {n: _chain_ops(n, "aba") for n in (50, 100, 200, 400)}
    crba = {n: _chain_ops(n, "crba") for n in (50, 100, 200)}
    for n in (100, 200, 400):
        assert aba[n] / aba[n // 2] == pytest.approx(2.0, rel=0.02)
    # the composite-rigid-body route grows faster: its mass matrix costs n·depth = n² on a chain
    assert crba[200] / crba[100] > 2.8 and crba[100] / crba[50] > 2.6
    assert aba[400] / 400 == pytest.approx(aba[50] / 50, rel=0.02)


def test_tree_detection_and_free_bodies():
    model = random_tree(3, 6)
    tree = build_tree(model)
    free = [j for j in tree.joints if j.kind == "free"]
    assert tree.is_tree and tree.nv == sum(j.nv for j in tree.joints)
    for j in free:
        assert j.position_names[0] == f"{model.bodies[j.body - 1].name}.free.x"
