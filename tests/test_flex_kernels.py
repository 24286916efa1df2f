"""The compiled flexible-body routes against independent ones.

- grounded: the exact discrete propagator vs scipy's DOP853 on the reduced equations written
  out here from M, C, K (a rotated 'point'-axes beam, quadratic interface accelerations), and
  its conservation of the modal energy of an undamped structure at a step where RK4 is lossy;
- floating: the compiled RK4 step vs DOP853 on the floating modal ODE with the frame's
  inputs computed here in closed form; the frame's pose vs the closed-form rotation; the
  rigid limit of the wrench (eta = 0) vs rigid-body dynamics;
- the polynomial through exchanged values vs a Vandermonde solve.
"""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from rbcosim.flex import FlexBody, FlexModel, InterfaceMotion
from rbcosim.flex.runtime.polynomial import polynomial_through
from rbcosim.spatial.quaternion import (
    from_rotation_vector as quat_from_rotation_vector,
)
from rbcosim.spatial.quaternion import (
    rotation_matrix,
)

pytestmark = pytest.mark.unit

L, E, RHO, W = 1.0, 2.1e11, 7850.0, 0.01
AREA, I_SEC = W * W, W**4 / 12
MASS = RHO * AREA * L
G = np.array([0.0, 0.0, -9.81])


def _beam(attachment, modes=4, **kw):
    return FlexModel.from_beam(L, E, RHO, AREA, I_SEC, n_elements=10, n_modes=modes,
                               planar=False, attachment=attachment, **kw)


def _motion(r, q, v, w, a, al, time=None):
    return InterfaceMotion(*(np.asarray(x, dtype=float) for x in (r, q, v, w, a, al)), time=time)


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


# ------------------------------------------------------------------------------ grounded


def test_grounded_propagator_matches_the_reduced_equations_solved_by_dop853():
    """One macro step with quadratic accelerations (through two past motions) from a deformed,
    moving state, under gravity, on a beam whose structure axes are the point's rotated
    initial frame."""
    model = _beam("grounded", modal_damping_ratio=0.02)
    body = FlexBody(model, micro_steps=8)
    q0 = quat_from_rotation_vector([0.2, -0.5, 0.3])
    body.initialize(0.0, _motion([0.1, 0.2, 0.3], q0, [0] * 3, [0] * 3, [0] * 3, [0] * 3))
    k, nb = model.n_modes, model.n_boundary
    eta0 = np.array([1e-3, -2e-4, 5e-5, 1e-5])
    etad0 = np.array([0.05, 0.02, -0.01, 0.004])
    body.set_modal_state(eta0, etad0)
    H = 4e-3
    # The point at the step's start (moved from the reference) and two past accelerations.
    r, v = np.array([0.102, 0.199, 0.303]), np.array([0.3, -0.2, 0.1])
    q = quat_from_rotation_vector([0.21, -0.52, 0.31])
    w = np.array([0.4, 0.7, -0.2])
    acc = [np.array([1.0, -2.0, 0.5]), np.array([0.6, -1.5, 0.9]), np.array([0.1, -1.2, 1.6])]
    alp = [np.array([3.0, 1.0, -2.0]), np.array([2.0, 1.5, -1.0]), np.array([0.5, 2.5, 0.5])]
    taus = [0.0, -H, -2 * H]
    past = [_motion(r, q, v, w, acc[i], alp[i], time=taus[i]) for i in (1, 2)]
    # Boundary at the start, as the body re-synchronises to it (interior held physically).
    r0 = rotation_matrix(q0) @ model.axis_rotation
    comps = list(model.boundary_components)
    ref_ub = lambda x6: x6[comps]

    def rotvec(qa, qb):  # rotation vector of qa * conj(qb)
        qr = np.array([qa[0] * qb[0] + qa[1:] @ qb[1:],
                       *(qb[0] * qa[1:] - qa[0] * qb[1:] - np.cross(qa[1:], qb[1:]))])
        s = np.linalg.norm(qr[1:])
        return qr[1:] * (2 * math.atan2(s, qr[0]) / s)

    d6 = np.concatenate([r0.T @ (r - [0.1, 0.2, 0.3]), r0.T @ rotvec(q, q0)])
    v6 = np.concatenate([r0.T @ v, r0.T @ w])
    m, c, kk = model.mass, model.damping, model.stiffness
    shift = np.linalg.solve(m[nb:, nb:], m[nb:, :nb])
    eta_start = eta0 - shift @ ref_ub(d6)  # boundary moved from 0 (reference) to d6
    etad_start = etad0 - shift @ ref_ub(v6)
    ca = np.polyfit(taus, np.array(acc), 2)[::-1]  # a(tau) = sum ca_j tau^j
    cal = np.polyfit(taus, np.array(alp), 2)[::-1]
    cs = [np.concatenate([r0.T @ ca[j], r0.T @ cal[j]]) for j in range(3)]

    def boundary(tau):
        ub = d6 + v6 * tau + sum(cs[j] * tau ** (j + 2) / ((j + 1) * (j + 2)) for j in range(3))
        ubd = v6 + sum(cs[j] * tau ** (j + 1) / (j + 1) for j in range(3))
        ubdd = sum(cs[j] * tau**j for j in range(3))
        return ref_ub(ub), ref_ub(ubd), ref_ub(ubdd)

    def rhs(tau, y):
        ub, ubd, ubdd = boundary(tau)
        f = -(m[nb:, :nb] @ ubdd + c[nb:, :nb] @ ubd + kk[nb:, :nb] @ ub)
        f -= c[nb:, nb:] @ y[k:] + kk[nb:, nb:] @ y[:k]
        f += model.gravity_load[nb:] @ (r0.T @ G)  # gravity, constant in structure axes
        return np.concatenate([y[k:], np.linalg.solve(m[nb:, nb:], f)])

    ref = solve_ivp(rhs, (0.0, H), np.concatenate([eta_start, etad_start]), method="DOP853",
                    rtol=1e-13, atol=1e-16).y[:, -1]
    body.step(0.0, H, _motion(r, q, v, w, acc[0], alp[0], time=0.0), past)
    # Exact up to round-off (measured 5e-15 of the largest value).
    np.testing.assert_allclose(body.modal_coordinates, ref[:k], rtol=1e-11, atol=1e-13 * 1e-3)
    np.testing.assert_allclose(body.modal_velocities, ref[k:], rtol=1e-11, atol=1e-13)


def test_grounded_propagator_conserves_the_modal_energy_of_an_undamped_structure():
    """Boundary held still, no gravity, modes released from a deformation: E = (eta'^2 + omega^2 eta^2)/2
    (mass-normalised modes) stays put over 2000 steps at omega_max H = 1.2, where classic RK4
    would lose 3.4 % of the top mode's energy per step."""
    model = _beam("grounded")
    body = FlexBody(model, gravity=(0.0, 0.0, 0.0), micro_steps=1)
    body.initialize(0.0, InterfaceMotion.at_rest())
    nb = model.n_boundary
    k_ee = model.stiffness[nb:, nb:]
    omega = math.sqrt(np.max(np.linalg.eigvalsh(k_ee)))
    H = 1.2 / omega
    body.set_modal_state([1e-3, 1e-4, 1e-5, 1e-6], [0.0, 0.1, 0.0, 0.01])

    def energy():
        eta, etad = body.modal_coordinates, body.modal_velocities
        return 0.5 * (etad @ model.mass[nb:, nb:] @ etad + eta @ k_ee @ eta)

    e0 = energy()
    for i in range(2000):
        body.step(i * H, H, InterfaceMotion.at_rest())
    assert energy() == pytest.approx(e0, rel=1e-11)
    assert np.linalg.norm(body.wrench()) > 0.0  # the modes still load the boundary


# ------------------------------------------------------------------------------ floating

PHI0, W0, ALPHA = 0.3, 1.5, -2.0  # swing about +y: phi = PHI0 + W0 t + ALPHA t^2 / 2
A_LIN = np.array([0.7, 0.0, -1.1])  # constant linear acceleration of the point, m/s²


def _swing(t):
    """Closed-form frame: constant angular acceleration about +y, constant a_p."""
    phi = PHI0 + W0 * t + 0.5 * ALPHA * t * t
    return _motion(A_LIN * t * t / 2, quat_from_rotation_vector([0, phi, 0]), A_LIN * t,
                   [0, W0 + ALPHA * t, 0], A_LIN, [0, ALPHA, 0], time=t)


@pytest.mark.parametrize("stiffening", [False, True])
def test_floating_rk4_step_matches_the_modal_ode_solved_by_dop853(stiffening):
    """300 macro steps of 1 ms; the error is RK4's: fourth order in the micro step. With
    geometric stiffening the ODE has the kron(b, eta) block as well (b_x != 0 here)."""
    model = _beam("floating", modal_damping_ratio=0.01, geometric_stiffening=stiffening)
    fl = model.floating
    k = model.n_modes
    H, n = 1e-3, 300

    def rhs(t, y):
        rs = rotation_matrix(_swing(t).quaternion) @ model.axis_rotation
        ws = rs.T @ np.array([0, W0 + ALPHA * t, 0])
        als = rs.T @ np.array([0, ALPHA, 0])
        bs = rs.T @ (A_LIN - G)
        eta, etad = y[:k], y[k:]
        ww = np.outer(ws, ws).ravel()
        z = np.concatenate([eta, etad, bs, als, ww, np.outer(ws, etad).ravel(),
                            np.outer(als, eta).ravel(), np.outer(ww, eta).ravel(),
                            np.outer(bs, eta).ravel()])
        return np.concatenate([etad, fl.ode_matrix @ z])

    ref = solve_ivp(rhs, (0.0, n * H), np.zeros(2 * k), method="DOP853", rtol=1e-12,
                    atol=1e-18).y[:k, -1]
    scale = np.max(np.abs(ref))
    assert scale > 1e-5  # the swing really bends the beam
    errors = []
    for micro_steps in (4, 8):
        body = FlexBody(model, micro_steps=micro_steps)
        body.initialize(0.0, _swing(0.0))
        for i in range(n):
            body.step(i * H, H, _swing(i * H), [_swing((i - 1) * H)])
        errors.append(np.max(np.abs(body.modal_coordinates - ref)) / scale)
    assert errors[0] < 5e-7  # measured 9.8e-8
    assert 12.0 < errors[0] / errors[1] < 20.0  # measured 15.9 (2^4 = 16)
    # The frame's pose and rates: the closed form (RK4 orientation, exact polynomial integrals).
    end = _swing(n * H)
    nk = body.node_kinematics()
    np.testing.assert_allclose(nk[:3], end.position, rtol=0, atol=1e-15)
    np.testing.assert_allclose(nk[3:7], end.quaternion, rtol=0, atol=1e-12)
    np.testing.assert_allclose(nk[7:13], np.concatenate([end.velocity, end.angular_velocity]),
                               rtol=0, atol=1e-14)


def test_floating_wrench_at_zero_deformation_is_the_rigid_beams():
    """eta = eta' = 0 and a frame at rest relative to the point: with the modes kept, the force
    is -(m (a_p + A r_cm - g) + S eta'') with eta'' from the modal equations; with them
    dropped (rigid model) it is exactly -m (a_p + A r_cm - g)."""
    q = quat_from_rotation_vector([0.3, -0.7, 0.4])
    w, a, al = np.array([0.9, -1.3, 2.1]), np.array([0.5, -2.0, 3.0]), np.array([4.0, 1.5, -2.5])
    motion = _motion([1.0, 2.0, -0.5], q, [0.1, 0.2, 0.3], w, a, al)
    rot = rotation_matrix(q)
    r_cm = rot @ np.array([L / 2, 0.0, 0.0])
    big_a = _skew(al) + _skew(w) @ _skew(w)
    rigid_force = -MASS * (a + big_a @ r_cm - G)
    rigid = FlexBody(_beam("floating", modes=0))
    rigid.initialize(0.0, motion)
    np.testing.assert_allclose(rigid.wrench()[:3], rigid_force, rtol=1e-12, atol=1e-12)
    model = _beam("floating")
    body = FlexBody(model)
    body.initialize(0.0, motion)
    fl, k = model.floating, model.n_modes
    ws, als, bs = rot.T @ w, rot.T @ al, rot.T @ (a - G)  # axis_rotation = I (beam along x)
    ww = np.outer(ws, ws).ravel()
    z = np.concatenate([np.zeros(2 * k), bs, als, ww, np.zeros(18 * k)])
    etadd = fl.ode_matrix @ z
    np.testing.assert_allclose(body.wrench()[:3], rigid_force - rot @ fl.modal_first_moment @ etadd,
                               rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ polynomial


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_polynomial_through_points_is_the_vandermonde_solution(m):
    rng = np.random.default_rng(m)
    taus = np.array([0.0, -2.5e-4, 2.5e-4, -5e-4][:m])
    values = rng.normal(size=(m, 6))
    expect = np.linalg.solve(np.vander(taus, increasing=True), values)
    got = polynomial_through(taus, values)
    np.testing.assert_allclose(got, expect, rtol=1e-9, atol=1e-12)
    for tau, row in zip(taus, values):
        np.testing.assert_allclose(sum(c * tau**j for j, c in enumerate(got)), row, rtol=1e-12,
                                   atol=1e-12)
