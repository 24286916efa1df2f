"""Floating Craig–Bampton beam on a moving interface frame: balance laws and statics."""

import math

import numpy as np
import pytest

from rbcosim.flex import FlexBody, FlexModel, InterfaceMotion
from rbcosim.flex.modelling.model import _nodal_operator
from rbcosim.flex.modelling.nodal import field_nodal as _field_nodal
from rbcosim.spatial.quaternion import (
    from_rotation_vector as quat_from_rotation_vector,
)
from rbcosim.spatial.quaternion import (
    rotation_matrix,
)

pytestmark = pytest.mark.unit

# rigid_flex_pendulum beam: steel, 1 m, square 10 mm.
L, E, RHO, W = 1.0, 2.1e11, 7850.0, 0.01
AREA, I_SEC = W * W, W**4 / 12
MASS = RHO * AREA * L
G = np.array([0.0, 0.0, -9.81])


def _model(modes=4, planar=True, **kw):
    return FlexModel.from_beam(
        L,
        E,
        RHO,
        AREA,
        I_SEC,
        n_elements=10,
        n_modes=modes,
        planar=planar,
        attachment="floating",
        output_nodes={"tip": "end"},
        **kw,
    )


def _motion(r, q, v, w, a, al, time=None):
    return InterfaceMotion(*(np.asarray(x, dtype=float) for x in (r, q, v, w, a, al)), time=time)


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _rigid_reference(q, w, a, al, gravity=G):
    """Wrench on the rigid body from a rigid rod of the model's inertia (closed form)."""
    rot = rotation_matrix(q)
    r_cm = rot @ np.array([L / 2, 0.0, 0.0])
    # Euler–Bernoulli line mass: m L²/3 about transverse axes; sections' polar inertia about
    # the rod axis (torsional mass rho (I_y + I_z) L).
    i_body = np.diag([RHO * 2 * I_SEC * L, MASS * L**2 / 3, MASS * L**2 / 3])
    i_p = rot @ i_body @ rot.T
    a_cm = a + np.cross(al, r_cm) + np.cross(w, np.cross(w, r_cm))
    force = -MASS * (a_cm - gravity)
    moment = -(MASS * np.cross(r_cm, a - gravity) + i_p @ al + np.cross(w, i_p @ w))
    return np.concatenate((force, moment))


@pytest.mark.parametrize("planar", [True, False])
def test_rigid_beam_in_general_motion_matches_rigid_body_dynamics(planar):
    q = quat_from_rotation_vector([0.3, -0.7, 0.4])
    w, a, al = [0.9, -1.3, 2.1], [0.5, -2.0, 3.0], [4.0, 1.5, -2.5]
    body = FlexBody(_model(modes=0, planar=planar))
    body.initialize(0.0, _motion([1.0, 2.0, -0.5], q, [0.1, 0.2, 0.3], w, a, al))
    expect = _rigid_reference(q, np.array(w), np.array(a), np.array(al))
    np.testing.assert_allclose(body.wrench(), expect, rtol=1e-12, atol=1e-12 * MASS * 10)


def test_rigid_beam_spinning_about_the_interface_pulls_with_the_centripetal_force():
    omega = 3.0
    body = FlexBody(_model(modes=0), gravity=(0.0, 0.0, 0.0))
    body.initialize(
        0.0, _motion([0, 0, 0], [1, 0, 0, 0], [0, 0, 0], [0, omega, 0], [0, 0, 0], [0, 0, 0])
    )
    h = 0.01
    for i in range(50):  # rotate the frame; the beam follows rigidly
        nk = body.node_kinematics()
        body.step(i * h, h, _motion(nk[:3], nk[3:7], nk[7:10], nk[10:13], [0, 0, 0], [0, 0, 0]))
    r_cm = rotation_matrix(body.node_kinematics()[3:7]) @ np.array([L / 2, 0, 0])
    np.testing.assert_allclose(body.wrench()[:3], MASS * omega**2 * r_cm, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(body.wrench()[3:], 0.0, atol=1e-12)
    # The frame turned by omega t about +y (RK4 quaternion integration).
    angle = omega * 0.5
    np.testing.assert_allclose(
        body.node_kinematics()[3:7], [math.cos(angle / 2), 0, math.sin(angle / 2), 0], atol=1e-10
    )


def test_gravity_on_a_frame_at_rest_gives_the_beam_weight():
    rigid = FlexBody(_model(modes=0))
    rigid.initialize(0.0, InterfaceMotion.at_rest())
    weight = MASS * 9.81
    np.testing.assert_allclose(
        rigid.wrench(), [0, 0, -weight, 0, weight * L / 2, 0], rtol=1e-13, atol=1e-13
    )
    # Elastic beam, critically damped modes: settles on the static deflection.
    body = FlexBody(_model(modes=4, modal_damping_ratio=1.0))
    body.initialize(0.0, InterfaceMotion.at_rest())
    h = 2e-3
    for i in range(500):
        body.step(i * h, h, InterfaceMotion.at_rest())
    np.testing.assert_allclose(
        body.wrench(), [0, 0, -weight, 0, weight * L / 2, 0], rtol=1e-9, atol=1e-9 * weight
    )
    # Static tip deflection of a cantilever under its weight: q L^4 / (8 E I). Four
    # fixed-interface modes leave out the static contribution of the higher modes.
    tip = body.output_nodes()["tip"]
    w_exact = weight / L * L**4 / (8 * E * I_SEC)
    assert tip[2] == pytest.approx(-w_exact, rel=1e-4)  # measured 4.2e-5
    assert tip[0] == pytest.approx(L, abs=1e-15)


def test_hanging_beam_along_gravity_carries_its_weight_without_bending():
    q_down = quat_from_rotation_vector([0.0, math.pi / 2, 0.0])  # point +x -> inertial -z
    body = FlexBody(_model(modes=4))
    body.initialize(0.0, _motion([0, 0, -0.5], q_down, [0] * 3, [0] * 3, [0] * 3, [0] * 3))
    for i in range(20):
        body.step(i * 1e-3, 1e-3, _motion([0, 0, -0.5], q_down, [0] * 3, [0] * 3, [0] * 3, [0] * 3))
    np.testing.assert_allclose(body.wrench(), [0, 0, -MASS * 9.81, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(body.output_nodes()["tip"], [0, 0, -0.5 - L], atol=1e-12)
    np.testing.assert_allclose(body.modal_coordinates, 0.0, atol=1e-14)


def _prescribed(t):
    """Frame pose: swing about +y, phi = 0.6 sin(2 t), while the point translates in x and z."""
    phi, dphi, ddphi = 0.6 * math.sin(2 * t), 1.2 * math.cos(2 * t), -2.4 * math.sin(2 * t)
    r = [0.3 * math.sin(3 * t), 0.0, 0.2 * math.cos(t)]
    v = [0.9 * math.cos(3 * t), 0.0, -0.2 * math.sin(t)]
    a = [-2.7 * math.sin(3 * t), 0.0, -0.2 * math.cos(t)]
    return _motion(
        r, quat_from_rotation_vector([0, phi, 0]), v, [0, dphi, 0], a, [0, ddphi, 0], time=t
    )


def _momenta(body):
    """Linear and angular (about the inertial origin) momentum of the beam, from its state."""
    fl = body.model.floating
    k = body.model.n_modes
    nk = body.node_kinematics()
    rot = rotation_matrix(nk[3:7]) @ body.model.axis_rotation
    ws = rot.T @ nk[10:13]
    vs = rot.T @ nk[7:10]
    eta, etad = body.modal_coordinates, body.modal_velocities
    n_nodes = fl.nodes.shape[0]
    vel = (
        _field_nodal(fl.nodes, vs, _skew(ws))
        + fl.modes @ etad
        + _nodal_operator(_skew(ws), n_nodes) @ fl.modes @ eta
    )
    p_nodal = (fl.mass @ vel).reshape(-1, 6)
    pos = fl.nodes + (fl.modes @ eta).reshape(-1, 6)[:, :3] if k else fl.nodes
    # Linear momentum of the continuum: m v_p + w x (m r_cm + S eta) + S eta'.
    s_e = fl.modal_first_moment
    lin = rot @ (fl.total_mass * vs + np.cross(ws, fl.first_moment + s_e @ eta) + s_e @ etad)
    r_p = nk[:3]
    ang_p = rot @ (np.cross(pos, p_nodal[:, :3]).sum(axis=0) + p_nodal[:, 3:].sum(axis=0))
    # Centre of mass: first moment of the deformed position field, tested with translations.
    x_field = _field_nodal(fl.nodes, np.zeros(3), np.eye(3)) + fl.modes @ eta
    r_cm = r_p + rot @ (fl.mass @ x_field).reshape(-1, 6)[:, :3].sum(axis=0) / fl.total_mass
    return lin, ang_p + np.cross(r_p, lin), r_cm


@pytest.mark.parametrize("modes", [0, 4])
def test_momentum_balance_under_prescribed_motion(modes):
    """dP/dt = -F + m g and dH_O/dt = -(r_p x F + M) + r_cm x m g (central differences)."""
    h = 1e-4
    body = FlexBody(_model(modes=modes, planar=False), micro_steps=4)
    body.initialize(0.0, _prescribed(0.0))
    rows = []
    for i in range(1200):
        t = i * h
        body.step(t, h, _prescribed(t), [_prescribed(t - h), _prescribed(t - 2 * h)])
        body.set_motion(_prescribed(t + h))
        lin, ang, r_cm = _momenta(body)
        rows.append(
            (lin, ang, body.wrench(), body.node_kinematics()[:3], r_cm, body.output_nodes()["tip"])
        )
    lin = np.array([r[0] for r in rows])
    ang = np.array([r[1] for r in rows])
    # Five-point central differences (error ~ h^4 w^5: the 52 Hz modes need it).
    dlin = (-lin[4:] + 8 * lin[3:-1] - 8 * lin[1:-3] + lin[:-4]) / (12 * h)
    dang = (-ang[4:] + 8 * ang[3:-1] - 8 * ang[1:-3] + ang[:-4]) / (12 * h)
    err_lin, err_ang = [], []
    for j in range(2, len(rows) - 2):
        _, _, f, r_p, r_cm, _ = rows[j]
        err_lin.append(dlin[j - 2] - (-f[:3] + MASS * G))
        err_ang.append(dang[j - 2] - (-(np.cross(r_p, f[:3]) + f[3:]) + np.cross(r_cm, MASS * G)))
    f_scale = np.max(np.abs([r[2][:3] for r in rows]))
    m_scale = np.max(np.abs([r[2][3:] for r in rows]))
    assert np.max(np.abs(err_lin)) < 1e-7 * f_scale
    # The moment's elastic Coriolis/centrifugal terms use the nodal map D (axial strain of
    # rotated bending fields dropped): measured 4.2e-5 of the moment scale with 4 modes here;
    # exact (round-off) for the rigid beam.
    assert np.max(np.abs(err_ang)) < (1e-4 if modes else 1e-9) * m_scale
    assert np.ptp([r[5][2] for r in rows]) > 0.1  # the tip really moved


def test_state_round_trip_is_bitwise():
    body = FlexBody(_model(modes=4, planar=False))
    body.initialize(0.0, _prescribed(0.0))
    h = 1e-3
    for i in range(5):
        body.step(i * h, h, _prescribed(i * h))
    blob = body.get_state()
    body.step(5 * h, h, _prescribed(5 * h), [_prescribed(4 * h), _prescribed(3 * h)])
    first = (body.get_state(), body.wrench().tobytes(), body.node_kinematics().tobytes())
    other = FlexBody(_model(modes=4, planar=False))
    other.set_state(blob)
    other.step(5 * h, h, _prescribed(5 * h), [_prescribed(4 * h), _prescribed(3 * h)])
    assert (other.get_state(), other.wrench().tobytes(), other.node_kinematics().tobytes()) == first


def test_interface_jacobian_of_a_rigid_beam():
    """dM/d(rotation) from the weight's lever arm; dF/d(omega) from the centripetal force."""
    omega = np.array([0.0, 2.0, 0.0])
    body = FlexBody(_model(modes=0))
    body.initialize(0.0, _motion([0, 0, 0], [1, 0, 0, 0], [0] * 3, omega, [0] * 3, [0] * 3))
    dfdx, dfdv = body.interface_jacobian()
    r_cm = np.array([L / 2, 0.0, 0.0])
    expect_x = np.zeros((6, 6))
    expect_v = np.zeros((6, 6))
    for j, e in enumerate(np.eye(3)):
        # Rotating the frame by d(phi) about e: r_cm -> r_cm + e x r_cm; F = -m(w x (w x r) - g).
        dr = np.cross(e, r_cm)
        expect_x[:3, 3 + j] = -MASS * np.cross(omega, np.cross(omega, dr))
        expect_v[:3, 3 + j] = -MASS * (
            np.cross(e, np.cross(omega, r_cm)) + np.cross(omega, np.cross(e, r_cm))
        )
    np.testing.assert_allclose(dfdx[:3], expect_x[:3], atol=1e-7)
    np.testing.assert_allclose(dfdv[:3], expect_v[:3], atol=1e-7)
    np.testing.assert_allclose(dfdx[:, :3], 0.0, atol=0)
    np.testing.assert_allclose(dfdv[:, :3], 0.0, atol=0)
    # At rest: only the weight's moment r_cm x m g turns with the frame.
    body.initialize(0.0, InterfaceMotion.at_rest())
    dfdx, dfdv = body.interface_jacobian()
    expect = np.zeros((6, 6))
    for j, e in enumerate(np.eye(3)):
        expect[3:, 3 + j] = np.cross(np.cross(e, r_cm), MASS * G)
    np.testing.assert_allclose(dfdx, expect, atol=1e-8)
    np.testing.assert_allclose(dfdv, 0.0, atol=1e-8)
