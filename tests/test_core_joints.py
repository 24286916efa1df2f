"""Joint constraints: the Jacobian and γ against finite differences, and every joint type in
motion — what it must allow happens, what it must forbid stays at zero."""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim.maximal.constraints import Constraints, JacobianAssembler
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.maximal.simulate import simulate
from rbcosim.model import JOINT_KINDS, Body, Joint, Marker, Model, Motion, frozen_array
from rbcosim.scenario.contact import CONTACT_KINDS
from rbcosim.scenario.loader import load_scenario_text
from rbcosim.settings import SolverSettings
from rbcosim.spatial import quaternion as quat
from rbcosim.state import State

# --- Jacobian and γ by finite differences (a unit test of constraints.py) -----------------------


def random_frame(rng):
    return quat.to_matrix(quat.normalize(rng.normal(size=4)))


def random_model(rng, kind: str, body1_is_ground: bool) -> Model:
    """Two bodies at random poses and velocities; one joint of `kind` between random markers.

    The joint need not be satisfied: the Jacobian identity holds anywhere.
    """
    bodies = tuple(
        Body(
            f"b{k}",
            1.0,
            frozen_array(np.eye(3)),
            frozen_array(rng.normal(size=3)),
            frozen_array(quat.normalize(rng.normal(size=4))),
            frozen_array(rng.normal(size=3)),
            frozen_array(rng.normal(size=3)),
        )
        for k in (1, 2)
    )
    m1 = Marker(
        0 if body1_is_ground else 1,
        frozen_array(rng.normal(size=3)),
        frozen_array(random_frame(rng)),
    )
    m2 = Marker(2, frozen_array(rng.normal(size=3)), frozen_array(random_frame(rng)))
    if kind != "driver":
        return Model(bodies, (Joint("j", kind, m1, m2, length=0.7),))
    joints = []
    for target, motion in (
        ("revolute", Motion("harmonic", (0.2, 0.5, 0.8, 0.3))),
        ("prismatic", Motion("polynomial", (0.1, -0.4, 0.9, 0.5))),
    ):
        joints.append(Joint(f"t_{target}", target, m1, m2))
        joints.append(
            Joint(f"d_{target}", "driver", m1, m2, driven_joint=len(joints) - 1, motion=motion)
        )
    return Model(bodies, tuple(joints))


def evaluate(constraints: Constraints, state: State):
    values = constraints.evaluate(Kinematics.of(state))
    n = state.r.shape[0]
    J = JacobianAssembler(values.a, values.b, n, sparse=False).assemble(values)
    return values, J


def moved(state: State, k: int, eps: float) -> State:
    """`state` with generalized coordinate k moved by eps: position, or a body-frame rotation."""
    s = state.copy()
    body, comp = divmod(k, 6)
    if comp < 3:
        s.r[body, comp] += eps
    else:
        s.q[body] = quat.rotate_by_vector(s.q[body], eps * np.eye(3)[comp - 3])
    return s


def advanced(state: State, tau: float) -> State:
    """`state` carried along for tau seconds at constant ν = [v, ω^b] (exact for constant ν)."""
    s = state.copy()
    s.t += tau
    s.r = s.r + tau * s.v
    s.q = quat.rotate_by_vector(s.q, tau * s.w)
    return s


@pytest.mark.unit
@pytest.mark.parametrize("body1_is_ground", [False, True], ids=["body-body", "ground-body"])
@pytest.mark.parametrize("kind", [k for k in JOINT_KINDS if k not in CONTACT_KINDS])
def test_jacobian_and_gamma_match_finite_differences(kind, body1_is_ground):
    rng = np.random.default_rng(2 * JOINT_KINDS.index(kind) + int(body1_is_ground))
    model = random_model(rng, kind, body1_is_ground)
    constraints = Constraints(model)
    state = State.initial(model)
    state.t = 0.37
    values, J = evaluate(constraints, state)
    nu = state.velocities
    eps = 1e-5
    # J columns: ∂Φ/∂(position) and ∂Φ/∂(body-frame rotation) by central differences
    fd = np.column_stack(
        [
            (
                evaluate(constraints, moved(state, k, eps))[0].phi
                - evaluate(constraints, moved(state, k, -eps))[0].phi
            )
            / (2 * eps)
            for k in range(J.shape[1])
        ]
    )
    np.testing.assert_allclose(J, fd, atol=1e-8, rtol=1e-7)
    # Φ_t at fixed positions
    later, earlier = state.copy(), state.copy()
    later.t += eps
    earlier.t -= eps
    phi_t = (evaluate(constraints, later)[0].phi - evaluate(constraints, earlier)[0].phi) / (
        2 * eps
    )
    np.testing.assert_allclose(values.phi_t, phi_t, atol=1e-8, rtol=1e-7)

    # γ: Φ̈ = J ν̇ − γ along the motion, so with ν̇ = 0, γ = −dΦ̇/dt (Φ̇ = J ν + Φ_t)
    def phidot(s):
        v, jac = evaluate(constraints, s)
        return jac @ s.velocities + v.phi_t

    gamma_fd = -(phidot(advanced(state, eps)) - phidot(advanced(state, -eps))) / (2 * eps)
    np.testing.assert_allclose(values.gamma, gamma_fd, atol=1e-7, rtol=1e-6)
    # and Φ̇ itself is dΦ/dt along the motion
    dphi = (
        evaluate(constraints, advanced(state, eps))[0].phi
        - evaluate(constraints, advanced(state, -eps))[0].phi
    ) / (2 * eps)
    np.testing.assert_allclose(J @ nu + values.phi_t, dphi, atol=1e-8, rtol=1e-7)


@pytest.mark.unit
def test_sparse_and_dense_jacobians_agree():
    rng = np.random.default_rng(7)
    model = random_model(rng, "driver", False)
    values = Constraints(model).evaluate(Kinematics.of(State.initial(model)))
    dense = JacobianAssembler(values.a, values.b, 2, sparse=False).assemble(values)
    sparse = JacobianAssembler(values.a, values.b, 2, sparse=True).assemble(values)
    np.testing.assert_array_equal(sparse.toarray(), dense)


# --- each joint type in motion --------------------------------------------------------------------

JOINT_AT = [0.3, -0.2, 0.1]
JOINT_AXIS = [1.0, 2.0, 2.0]
JOINT_X = [0.0, 1.0, -1.0]  # becomes the marker x axis (made orthogonal to the axis)

SCENARIO = """
[world]
gravity = [0.0, 0.0, 0.0]

[bodies.a]
mass = 2.0
inertia = [0.02, 0.03, 0.04]
position = [-0.1, 0.05, 0.0]
orientation = {{ axis = [1.0, 1.0, 0.0], angle = 0.3 }}
[bodies.a.markers.m]
position = [0.1, 0.0, 0.05]

[bodies.b]
mass = 1.0
inertia = [0.01, 0.015, 0.02]
position = [0.5, 0.2, -0.3]
orientation = {{ axis = [0.0, 1.0, 1.0], angle = 0.7 }}
[bodies.b.markers.m]
position = [0.0, 0.1, 0.0]

# generic loads: no symmetry for a wrong constraint to hide behind
[forces.push_a]
type = "load"
body = "a"
point = [0.05, -0.02, 0.03]
force = [1.0, -2.0, 0.5]
torque = [0.3, 0.1, -0.2]

[forces.push_b]
type = "load"
body = "b"
point = [0.02, 0.04, -0.01]
force = [-1.5, 0.7, 2.0]
torque = [-0.1, 0.25, 0.15]

[joints.j]
{joint}
{driver}
[solver]
dt = 1e-3
t_end = 0.3
"""


def joint_scenario(kind: str):
    if kind == "distance":
        joint = 'type = "distance"\nmarker1 = "a.m"\nmarker2 = "b.m"'
    else:
        target = {"driver_revolute": "revolute", "driver_prismatic": "prismatic"}.get(kind, kind)
        joint = (
            f'type = "{target}"\nbody1 = "a"\nbody2 = "b"\nat = {JOINT_AT}\n'
            f"axis = {JOINT_AXIS}\nx_axis = {JOINT_X}"
        )
    driver = ""
    if kind == "driver_revolute":  # θ = 3 t² rad (consistent at rest: f(0) = ḟ(0) = 0)
        driver = (
            '[joints.d]\ntype = "driver"\njoint = "j"\nmotion = { polynomial = [0.0, 0.0, 3.0] }'
        )
    if kind == "driver_prismatic":  # s = 0.1 (1 − cos 2π t) m
        driver = (
            '[joints.d]\ntype = "driver"\njoint = "j"\nmotion = { harmonic = '
            "{ offset = 0.1, amplitude = 0.1, frequency = 1.0, phase = -1.5707963267948966 } }"
        )
    return load_scenario_text(SCENARIO.format(joint=joint, driver=driver), source=f"<{kind}>")


def relative_motion(scenario, results):
    """Marker 2 relative to marker 1, in marker 1's axes, at every output time.

    d (k,3) position, Rrel (k,3,3) = A1ᵀ A2, w (k,3) relative angular velocity, v (k,3) rate of d.
    """
    model = scenario.model
    joint = model.joints[0]
    out = {}
    per_body = []
    for marker in (joint.marker1, joint.marker2):
        name = model.body_names[marker.body - 1]
        cols = results.body(name)
        r = np.column_stack([cols["x"], cols["y"], cols["z"]])
        q = np.column_stack([cols[f"q{k}"] for k in range(4)])
        v = np.column_stack([cols["vx"], cols["vy"], cols["vz"]])
        R = quat.to_matrix(q)
        w = np.einsum("kij,kj->ki", R, np.column_stack([cols["wx"], cols["wy"], cols["wz"]]))
        rho = R @ marker.position
        per_body.append((r + rho, v + np.cross(w, rho), w, R @ marker.axes))
    (p1, v1, w1, A1), (p2, v2, w2, A2) = per_body

    def to1(x):
        """A1ᵀ x, row by row: inertial vectors in marker 1's axes."""
        return np.einsum("kji,kj->ki", A1, x)

    out["d"] = to1(p2 - p1)
    out["v"] = to1(v2 - v1 - np.cross(w1, p2 - p1))
    out["w"] = to1(w2 - w1)
    out["R"] = np.einsum("kji,kjl->kil", A1, A2)
    return out


def angle_about_z(R):
    return np.arctan2(R[:, 1, 0], R[:, 0, 0])


def rotation_angle(R):
    return np.arccos(np.clip((np.trace(R, axis1=1, axis2=2) - 1) / 2, -1, 1))


TOL = 1e-9  # forbidden relative displacements/rotations (projection keeps them ~1e-12)
MOVED = 1e-2  # allowed motions must exceed this over 0.3 s under the loads above


def forbid(*values):
    for v in values:
        assert np.max(np.abs(v)) < TOL, f"forbidden motion {np.max(np.abs(v)):.3g}"


def allow(*values):
    for v in values:
        assert np.ptp(v) > MOVED, f"allowed motion only {np.ptp(v):.3g}"


@pytest.fixture(scope="module")
def joint_runs():
    cache = {}

    def run(kind):
        if kind not in cache:
            scenario = joint_scenario(kind)
            results = simulate(
                scenario.model, SolverSettings(dt=1e-3, t_end=0.3, output_every=10), progress=False
            )
            cache[kind] = (scenario, results, relative_motion(scenario, results))
        return cache[kind]

    return run


@pytest.mark.scenarios
def test_fixed_joint_forbids_everything(joint_runs):
    _, _, m = joint_runs("fixed")
    forbid(m["d"], m["v"], m["w"], m["R"] - np.eye(3))


@pytest.mark.scenarios
def test_revolute_turns_about_z_only(joint_runs):
    _, _, m = joint_runs("revolute")
    forbid(m["d"], m["v"], m["w"][:, :2], m["R"][:, :2, 2], m["R"][:, 2, :2])
    allow(angle_about_z(m["R"]), m["w"][:, 2])


@pytest.mark.scenarios
def test_prismatic_slides_along_z_only(joint_runs):
    _, _, m = joint_runs("prismatic")
    forbid(m["d"][:, :2], m["v"][:, :2], m["w"], m["R"] - np.eye(3))
    allow(m["d"][:, 2], m["v"][:, 2])


@pytest.mark.scenarios
def test_spherical_keeps_the_point_and_turns_freely(joint_runs):
    _, _, m = joint_runs("spherical")
    forbid(m["d"], m["v"])
    allow(m["w"][:, 0], m["w"][:, 1], m["w"][:, 2], rotation_angle(m["R"]))


@pytest.mark.scenarios
def test_universal_turns_about_x1_and_y2(joint_runs):
    _, _, m = joint_runs("universal")
    x1 = np.array([1.0, 0.0, 0.0])
    y2 = m["R"][:, :, 1]
    # x1 ⟂ y2 holds, and the relative rotation rate has no part along x1 × y2
    forbid(m["d"], m["v"], y2 @ x1, np.einsum("ki,ki->k", m["w"], np.cross(x1, y2)))
    allow(m["w"] @ x1, np.einsum("ki,ki->k", m["w"], y2))


@pytest.mark.scenarios
def test_cylindrical_turns_about_and_slides_along_z(joint_runs):
    _, _, m = joint_runs("cylindrical")
    forbid(m["d"][:, :2], m["v"][:, :2], m["w"][:, :2], m["R"][:, :2, 2])
    allow(m["d"][:, 2], angle_about_z(m["R"]))


@pytest.mark.scenarios
def test_planar_stays_in_the_xy_plane(joint_runs):
    _, _, m = joint_runs("planar")
    forbid(m["d"][:, 2], m["v"][:, 2], m["w"][:, :2], m["R"][:, :2, 2])
    allow(m["d"][:, 0], m["d"][:, 1], angle_about_z(m["R"]))


@pytest.mark.scenarios
def test_distance_keeps_the_length(joint_runs):
    scenario, _, m = joint_runs("distance")
    length = scenario.model.joints[0].length
    assert length > 0.1
    dist = np.linalg.norm(m["d"], axis=1)
    forbid(dist - length, np.einsum("ki,ki->k", m["d"], m["v"]))
    allow(m["d"][:, 0], m["d"][:, 1], m["d"][:, 2], rotation_angle(m["R"]))


@pytest.mark.scenarios
def test_driver_prescribes_a_revolute_angle(joint_runs):
    _, results, m = joint_runs("driver_revolute")
    t = results.t
    forbid(m["d"], m["w"][:, :2], angle_about_z(m["R"]) - 3 * t**2, m["w"][:, 2] - 6 * t)
    assert not results.diagnostics["energy_conservative"]


@pytest.mark.scenarios
def test_driver_prescribes_a_prismatic_stroke(joint_runs):
    _, results, m = joint_runs("driver_prismatic")
    t = results.t
    stroke = 0.1 * (1 - np.cos(2 * np.pi * t))
    forbid(
        m["d"][:, :2],
        m["w"],
        m["d"][:, 2] - stroke,
        m["v"][:, 2] - 0.2 * np.pi * np.sin(2 * np.pi * t),
    )
    assert np.ptp(stroke) > 0.05
