"""The compiled maximal-coordinate core (`rbcosim.maximal.kernels`) against independent formulations
written here in plain numpy/scipy: a dense KKT solve with forces computed from the model data,
a sparse Schur-complement solve, interface wrenches and added mass written into the equations
by hand, the closed-form velocity projection, an adaptive integrator, energy conservation, and
a bitwise save/restore round trip.

Only Constraints.evaluate and JacobianAssembler (Φ, Φ_t, γ, J: checked against finite
differences in test_core_joints) are shared with the code under test.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from rbcosim.cosim.rigid_side import RigidSide
from rbcosim.errors import SimulationError
from rbcosim.maximal.constraints import Constraints, JacobianAssembler
from rbcosim.maximal.dynamics import MaximalSystem
from rbcosim.maximal.integrators import RK4
from rbcosim.maximal.kernels import multipliers
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import (
    Body,
    BodyLoad,
    InterfacePoint,
    Joint,
    Marker,
    Model,
    Motion,
    SpringDamper,
    TorsionalSpringDamper,
    frozen_array,
)
from rbcosim.scenario.loader import load_scenario
from rbcosim.state import State

pytestmark = pytest.mark.unit

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
KINDS = ("revolute", "spherical", "universal", "cylindrical", "prismatic", "planar", "distance",
         "fixed")

# --- small independent helpers --------------------------------------------------------------


def skew(a):
    """[a]× with [a]× b = a × b."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def rotation(q):
    """Rotation matrix (body -> inertial) of a quaternion, scalar first (normalised here)."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def random_rotation(rng):
    return Rotation.random(random_state=rng).as_matrix()


def random_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_inertia(rng, mass):
    """A full SPD inertia: principal moments obeying the triangle inequality, random axes."""
    principal = mass * rng.uniform(0.02, 0.2) * rng.uniform(0.5, 1.0, 3)
    Q = random_rotation(rng)
    return Q @ np.diag(principal) @ Q.T


def random_spd(rng, size, scale):
    A = rng.normal(size=(size, size))
    return scale * (A @ A.T / size + 0.2 * np.eye(size))


def random_model(rng, n, *, consistent=False, points=0) -> Model:
    """n bodies (random masses, full inertias, poses, velocities), a tree of joints of random
    kinds (each body to a random earlier body or the ground) closed by one distance joint,
    drivers on some revolute/prismatic joints, a 3-row body load, a spring–damper, a torsion
    spring on a revolute joint, random gravity and `points` interface points.

    consistent=False: random markers (the joints are not satisfied, fine for accelerations);
    consistent=True: markers built from common inertial points and frames at the initial
    poses, so every joint is satisfied (velocities still need projecting)."""
    bodies = []
    for k in range(n):
        mass = rng.uniform(0.5, 3.0)
        bodies.append(Body(f"b{k + 1}", mass, frozen_array(random_inertia(rng, mass)),
                           frozen_array(rng.normal(size=3)), frozen_array(random_quaternion(rng)),
                           frozen_array(rng.normal(size=3)), frozen_array(rng.normal(size=3))))
    pose = [(np.zeros(3), np.eye(3))] + [(b.position, rotation(b.quaternion)) for b in bodies]

    def marker(body, point, axes):
        r, R = pose[body]
        return Marker(body, frozen_array(R.T @ (point - r)), frozen_array(R.T @ axes))

    def markers(b1, b2, offset=None):
        if not consistent:
            return (Marker(b1, frozen_array(0.5 * rng.normal(size=3)),
                           frozen_array(random_rotation(rng))),
                    Marker(b2, frozen_array(0.5 * rng.normal(size=3)),
                           frozen_array(random_rotation(rng))))
        P = 0.5 * (pose[b1][0] + pose[b2][0]) + 0.2 * rng.normal(size=3)
        A = random_rotation(rng)
        P2 = P if offset is None else P + offset
        return marker(b1, P, A), marker(b2, P2, A)

    def length_of(m1, m2):
        p = [pose[m.body][0] + pose[m.body][1] @ m.position for m in (m1, m2)]
        return float(np.linalg.norm(p[1] - p[0]))

    kinds = [str(k) for k in rng.permutation(KINDS)[:n]]
    if "revolute" not in kinds:
        kinds[int(rng.integers(n))] = "revolute"
    joints, driven = [], 0
    for k, kind in enumerate(kinds, start=1):
        parent = int(rng.integers(0, k))
        offset = 0.4 * rng.normal(size=3) if kind == "distance" else None
        m1, m2 = markers(parent, k, offset)
        length = length_of(m1, m2) if consistent else 0.7
        joints.append(Joint(f"j{k}", kind, m1, m2, length=length))
        if kind in ("revolute", "prismatic") and (rng.random() < 0.5 or not driven):
            # f(0) = 0 so that a consistent joint's driver is satisfied at t = 0
            motion = (Motion("polynomial", (0.0, 0.3, -0.5, 0.2)) if kind == "prismatic"
                      else Motion("harmonic", (0.0, 0.4, 0.7, 0.0)))
            joints.append(Joint(f"d{k}", "driver", m1, m2, driven_joint=len(joints) - 1,
                                motion=motion))
            driven += 1
    a, b = rng.choice(np.arange(1, n + 1), size=2, replace=False)
    m1, m2 = markers(int(a), int(b), 0.4 * rng.normal(size=3))
    joints.append(Joint("loop", "distance", m1, m2,
                        length=length_of(m1, m2) if consistent else 0.9))
    revolute = next(i for i, j in enumerate(joints) if j.kind == "revolute")
    load_body = int(rng.integers(1, n + 1))
    loads = (BodyLoad("push", load_body, frozen_array(0.3 * rng.normal(size=3)),
                      frozen_array([0.0, 0.3, 0.6]), frozen_array(rng.normal(size=(3, 6)))),)
    s1, s2 = markers(0, int(rng.integers(1, n + 1)), 0.5 * rng.normal(size=3))
    springs = (SpringDamper("spring", s1, s2, stiffness=rng.uniform(5, 50),
                            damping=rng.uniform(0.1, 2.0), free_length=0.3),)
    torsion = (TorsionalSpringDamper("torsion", revolute, stiffness=rng.uniform(1, 10),
                                     damping=rng.uniform(0.1, 1.0), rest_angle=0.2),)
    pts = tuple(InterfacePoint(f"p{k}", int(rng.integers(1, n + 1)),
                               frozen_array(0.4 * rng.normal(size=3)),
                               frozen_array(random_rotation(rng))) for k in range(points))
    return Model(tuple(bodies), tuple(joints), loads, springs, torsion, pts,
                 gravity=frozen_array(rng.normal(size=3) * 5))


# --- the independent reference: Newton–Euler + joints as one dense KKT system ----------------


def frames(state):
    """Ground-prepended r, R, v, inertial ω (lists) of a state."""
    R = [np.eye(3)] + [rotation(q) for q in state.q]
    r = [np.zeros(3)] + list(state.r)
    v = [np.zeros(3)] + list(state.v)
    wi = [np.zeros(3)] + [R[i + 1] @ state.w[i] for i in range(len(state.w))]
    return r, R, v, wi


def applied_loads(model, state):
    """Force and torque (n+1, 3) inertial at the centres of mass, ground row 0, from the model
    data: gravity m g; load f at a body point plus torque; spring tension k (ℓ − ℓ0) + c ℓ̇
    pulling marker 1 towards marker 2; torsion −k (θ − θ0) − c θ̇ about marker 1's z."""
    n = model.n_bodies
    r, R, v, wi = frames(state)
    F, T = np.zeros((n + 1, 3)), np.zeros((n + 1, 3))
    for i, b in enumerate(model.bodies):
        F[i + 1] += b.mass * np.asarray(model.gravity)
    for load in model.loads:
        fv = np.array([np.interp(state.t, load.times, load.values[:, k]) for k in range(6)])
        F[load.body] += fv[:3]
        T[load.body] += fv[3:] + np.cross(R[load.body] @ load.point, fv[:3])
    for s in model.springs:
        b1, b2 = s.marker1.body, s.marker2.body
        rho1, rho2 = R[b1] @ s.marker1.position, R[b2] @ s.marker2.position
        d = (r[b2] + rho2) - (r[b1] + rho1)
        length = np.linalg.norm(d)
        e = d / length
        rate = e @ ((v[b2] + np.cross(wi[b2], rho2)) - (v[b1] + np.cross(wi[b1], rho1)))
        pull = (s.stiffness * (length - s.free_length) + s.damping * rate) * e
        F[b1] += pull
        T[b1] += np.cross(rho1, pull)
        F[b2] -= pull
        T[b2] -= np.cross(rho2, pull)
    for ts in model.torsion_springs:
        j = model.joints[ts.joint]
        b1, b2 = j.marker1.body, j.marker2.body
        x1, y1, z1 = (R[b1] @ j.marker1.axes).T
        x2 = R[b2] @ j.marker2.axes[:, 0]
        theta = np.arctan2(x2 @ y1, x2 @ x1)
        moment = -ts.stiffness * (theta - ts.rest_angle) - ts.damping * ((wi[b2] - wi[b1]) @ z1)
        T[b2] += moment * z1
        T[b1] -= moment * z1
    return F, T


def generalized(model, state, F, T):
    """[F_i, R_iᵀ τ_i − ω_i × I_i ω_i] per body (6n,): Newton–Euler right-hand sides."""
    _, R, _, _ = frames(state)
    out = np.zeros((model.n_bodies, 6))
    for i, b in enumerate(model.bodies):
        w = state.w[i]
        out[i, :3] = F[i + 1]
        out[i, 3:] = R[i + 1].T @ T[i + 1] - np.cross(w, b.inertia @ w)
    return out.ravel()


def mass_matrix(model):
    return sp.block_diag([np.block([[b.mass * np.eye(3), np.zeros((3, 3))],
                                    [np.zeros((3, 3)), b.inertia]]) for b in model.bodies],
                         format="csr")


def constraint_terms(model, state, sparse=False):
    """J, Φ, Φ̇ = J ν + Φ_t, Φ_t, γ at `state` (shared with the code under test, FD-checked)."""
    values = Constraints(model).evaluate(Kinematics.of(state))
    J = JacobianAssembler(values.a, values.b, model.n_bodies, sparse=sparse).assemble(values)
    J = J.copy()
    return J, values.phi, J @ state.velocities + values.phi_t, values.phi_t, values.gamma


def kkt_reference(model, state, baumgarte, *, M=None, f=None):
    """(ν̇ (n, 6), λ) of [[M, Jᵀ], [J, 0]] [ν̇; λ] = [f; γ − 2αΦ̇ − β²Φ], dense solve."""
    alpha, beta = baumgarte
    M = mass_matrix(model).toarray() if M is None else M
    f = generalized(model, state, *applied_loads(model, state)) if f is None else f
    J, phi, phidot, _, gamma = constraint_terms(model, state)
    m = J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([f, gamma - 2 * alpha * phidot - beta**2 * phi]))
    return sol[: M.shape[0]].reshape(-1, 6), sol[M.shape[0]:]


def compiled(system, state):
    """(ν̇ (n, 6), λ) from MaximalSystem.accelerations."""
    vdot, wdot, lam = system.accelerations(state)
    return np.hstack([vdot, wdot]), lam


def close(actual, expected, rel):
    """Agreement to `rel` of the reference's magnitude (a relative max-norm test)."""
    scale = max(1.0, np.max(np.abs(expected)))
    err = np.max(np.abs(actual - expected))
    assert err <= rel * scale, f"max error {err:.3g} > {rel:.1e} × {scale:.3g}"
    return err / scale


# --- 1. accelerations against a dense KKT solve ------------------------------------------------


#: seeds of well-conditioned draws: a random state can sit near a kinematic singularity (seed
#: 106 gives cond(J M⁻¹ Jᵀ) ≈ 3e9 and, rightly, only ~1e-7 agreement), seed 109 has a
#: redundant row; both are left out rather than loosening the tolerance for all.
KKT_SEEDS = (100, 101, 102, 103, 104, 105, 107, 108)


def scaled_condition(J, M):
    """cond(D S D) of S = J M⁻¹ Jᵀ with the Jacobi scaling D = diag(S)^-½."""
    S = J @ np.linalg.solve(M, J.T)
    d = 1 / np.sqrt(np.diag(S))
    return np.linalg.cond(d[:, None] * S * d[None, :])


@pytest.mark.parametrize("seed", KKT_SEEDS)
def test_accelerations_match_dense_kkt(seed):
    """Reference: the dense KKT system [[M, Jᵀ], [J, 0]] [ν̇; λ] = [F; γ − 2αΦ̇ − β²Φ] solved
    with numpy, F from gravity, load, spring and torsion spring computed from the model data,
    on a random 3–8 body model at a random state (joints not satisfied, t inside the load
    table and the drivers' motions)."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, int(rng.integers(3, 9)))
    system = MaximalSystem(model, baumgarte=(3.0, 4.0))
    assert not system.redundant_rows
    state = State.initial(model)
    state.t = 0.37
    J = constraint_terms(model, state)[0]
    assert scaled_condition(J, mass_matrix(model).toarray()) < 1e5  # error ≲ cond · 1e-16
    # the applied forces alone, then the whole solve
    F, T = system.applied(state.t, Kinematics.of(state))
    F_ref, T_ref = applied_loads(model, state)
    close(np.hstack([F, T]), np.hstack([F_ref, T_ref])[1:], 1e-13)
    acc, lam = compiled(system, state)
    acc_ref, lam_ref = kkt_reference(model, state, (3.0, 4.0))
    close(acc, acc_ref, 1e-10)
    close(lam, lam_ref, 1e-10)


def test_random_models_cover_every_joint_kind():
    """The seeds of the KKT test between them use every joint kind and a driver of each
    target kind (so none is left out by the random draw)."""
    seen = set()
    for seed in KKT_SEEDS:
        rng = np.random.default_rng(seed)
        model = random_model(rng, int(rng.integers(3, 9)))
        for j in model.joints:
            seen.add(j.kind if j.kind != "driver"
                     else "driver-" + model.joints[j.driven_joint].kind)
    assert seen >= set(KINDS) | {"driver-revolute", "driver-prismatic"}


def quaternion_rate(q, w):
    """½ q ⊗ [0, ω^b], the Hamilton product written out."""
    q0, q1, q2, q3 = q
    return 0.5 * np.array([-q1 * w[0] - q2 * w[1] - q3 * w[2],
                           q0 * w[0] + q2 * w[2] - q3 * w[1],
                           q0 * w[1] + q3 * w[0] - q1 * w[2],
                           q0 * w[2] + q1 * w[1] - q2 * w[0]])


@pytest.mark.parametrize("seed", KKT_SEEDS[:3])
def test_derivative_and_energy_match_hand_computed(seed):
    """References: ẏ = [v, ½ q ⊗ [0, ω^b], ν̇ of the dense KKT solve] assembled here in the
    State.to_vector layout; the energy ½ m v² + ½ ωᵀ I ω − m g·r + ½ k (ℓ − ℓ0)² (spring)
    + ½ k (θ − θ0)² (torsion spring), computed here."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, int(rng.integers(3, 9)))
    system = MaximalSystem(model)
    state = State.initial(model)
    state.t = 0.37
    acc_ref, _ = kkt_reference(model, state, (system.alpha, system.beta))
    expected = np.concatenate([state.v.ravel(),
                               np.concatenate([quaternion_rate(q, w)
                                               for q, w in zip(state.q, state.w)]),
                               acc_ref[:, :3].ravel(), acc_ref[:, 3:].ravel()])
    close(system.derivative(state.t, state.to_vector()), expected, 1e-10)
    r, R, _, _ = frames(state)
    energy = independent_energy(model, state)
    for s in model.springs:
        ends = [r[m.body] + R[m.body] @ m.position for m in (s.marker1, s.marker2)]
        energy += 0.5 * s.stiffness * (np.linalg.norm(ends[1] - ends[0]) - s.free_length) ** 2
    for ts in model.torsion_springs:
        j = model.joints[ts.joint]
        x1, y1, _ = (R[j.marker1.body] @ j.marker1.axes).T
        x2 = R[j.marker2.body] @ j.marker2.axes[:, 0]
        energy += 0.5 * ts.stiffness * (np.arctan2(x2 @ y1, x2 @ x1) - ts.rest_angle) ** 2
    assert system.energy(state) == pytest.approx(energy, rel=1e-13, abs=1e-13)


# --- 2. the banded multiplier solve at scale --------------------------------------------------


@pytest.fixture(scope="module", params=["thin", "thick"])
def chain300(request):
    """The 300-link chain at a perturbed state: as shipped (thin rods, axial inertia 1e-6 of
    the transverse one: cond(D J M⁻¹ Jᵀ D) ≈ 1e12, inherent to the rods), and with thick rods
    (axial inertia 0.3 of the transverse one: cond ≈ 4e6)."""
    model = load_scenario(SCENARIOS / "chain.toml", {"generators.chain.links": "300"}).model
    if request.param == "thick":
        model = dataclasses.replace(model, bodies=tuple(
            dataclasses.replace(b, inertia=frozen_array(np.diag(b.inertia.diagonal()[[0, 1, 0]]
                                                                * [1, 1, 0.3])))
            for b in model.bodies))
    # drop_redundant=False: the chain has no redundant row (S is invertible below), and the
    # dense pivoted QR that looks for them costs seconds at this size
    system = MaximalSystem(model, drop_redundant=False)
    rng = np.random.default_rng(3)
    state = State.initial(model)
    state.t = 0.1
    state.r += 1e-3 * rng.normal(size=state.r.shape)
    state.q += 1e-3 * rng.normal(size=state.q.shape)
    state.q /= np.linalg.norm(state.q, axis=1)[:, None]
    state.v += 0.3 * rng.normal(size=state.v.shape)
    state.w += 0.3 * rng.normal(size=state.w.shape)
    return request.param, model, system, state


def backward_error(S, x, b):
    """Normwise backward error ‖S x − b‖∞ / (‖S‖∞ ‖x‖∞ + ‖b‖∞) of a solution x of S x = b."""
    return np.max(np.abs(S @ x - b)) / (spla.norm(S, np.inf) * np.max(np.abs(x))
                                        + np.max(np.abs(b)))


def test_chain300_accelerations_match_sparse_schur(chain300):
    """Reference: the Schur complement (J M⁻¹ Jᵀ) μ = J M⁻¹ f − (γ − 2αΦ̇ − β²Φ) assembled
    with scipy.sparse and solved by spsolve, ν̇ = M⁻¹ (f − Jᵀ μ), for a perturbed 300-link
    chain (1500 rows). The kernel's μ must be as backward stable as spsolve's (both ≲ 1e-15);
    its ν̇ must be M⁻¹ (f − Jᵀ μ) of its own μ to rounding; and both must agree with the reference
    to what the conditioning allows, ~10 cond · ε: 1e-8 for thick rods (cond ≈ 4e6), 1e-3 for
    the shipped thin rods (cond ≈ 1e12: any two backward-stable solvers — dense LU, sparse LU,
    Cholesky, this LDLᵀ — differ by up to ~1e-5 there)."""
    rods, model, system, state = chain300
    assert system.rows.size == 1500
    J, phi, phidot, _, gamma = constraint_terms(model, state, sparse=True)
    Minv = sp.csr_matrix(spla.inv(mass_matrix(model).tocsc()))
    f = generalized(model, state, *applied_loads(model, state))
    S = (J @ Minv @ J.T).tocsc()
    b = J @ (Minv @ f) - (gamma - 2 * system.alpha * phidot - system.beta**2 * phi)
    mu = spla.spsolve(S, b)
    acc_ref = (Minv @ (f - J.T @ mu)).reshape(-1, 6)
    acc, lam = compiled(system, state)
    assert backward_error(S, lam, b) < 1e-15
    assert backward_error(S, mu, b) < 1e-15
    # ν̇ = M⁻¹ (f − Jᵀ λ) of the kernel's own λ, to a componentwise rounding bound (the thin
    # rods' axial M⁻¹ ≈ 1e10 magnifies the cancellation in f − Jᵀ λ)
    bound = 1e-13 * (abs(Minv) @ (np.abs(f) + abs(J).T @ np.abs(lam)))
    assert np.all(np.abs(acc.ravel() - Minv @ (f - J.T @ lam)) <= bound)
    close(lam, mu, 1e-8 if rods == "thick" else 1e-3)
    close(acc, acc_ref, 1e-8 if rods == "thick" else 1e-3)


def test_banded_ldlt_solves_like_spsolve(chain300):
    """Reference: scipy spsolve of J M⁻¹ Jᵀ (in the kernel's band order) with random
    right-hand sides, against the kernel's own factor and solve: backward errors alike
    (≲ 1e-15), forward agreement as the conditioning allows (see above)."""
    rods, model, system, state = chain300
    system.accelerations(state)  # leaves the factor of J M⁻¹ Jᵀ at `state` in the workspace
    pattern, work = system.tables.pattern, system.work
    J, *_ = constraint_terms(model, state, sparse=True)
    order = pattern.rows[:, 0]
    Minv = sp.csr_matrix(spla.inv(mass_matrix(model).tocsc()))
    S = (J[order] @ Minv @ J[order].T).tocsc()
    assert pattern.width < 20  # banded: the RCM ordering keeps a chain's band narrow
    rng = np.random.default_rng(4)
    for _ in range(3):
        rhs = rng.normal(size=order.size) * np.sqrt(S.diagonal())
        out = np.empty_like(rhs)
        multipliers.solve(pattern, work.band, work.solve[2], rhs, out)
        ref = spla.spsolve(S, rhs)
        assert backward_error(S, out, rhs) < 1e-15
        assert backward_error(S, ref, rhs) < 1e-15
        close(out, ref, 1e-8 if rods == "thick" else 1e-3)


# --- 3. interface-point inputs -------------------------------------------------------------


def point_geometry(model, state, k):
    """(body, ρ inertial, R body, R point axes) of interface point k."""
    p = model.points[k]
    _, R, _, _ = frames(state)
    return p.body, R[p.body] @ p.position, R[p.body], R[p.body] @ p.axes


def polynomial_wrenches(model, state, poly, t0, body_frame):
    """(k, 6) inertial wrenches Σ c_j (t − t0)^j, turned by the body's attitude where the
    input is in the body frame."""
    tau = state.t - t0
    out = np.einsum("kjc,j->kc", poly, tau ** np.arange(poly.shape[1]))
    for k in range(len(model.points)):
        if body_frame[k]:
            _, _, R, _ = point_geometry(model, state, k)
            out[k] = np.concatenate([R @ out[k, :3], R @ out[k, 3:]])
    return out


def with_point_wrenches(model, state, wrenches):
    """Applied loads plus the point wrenches: F at the centre of mass, τ = M + ρ × F."""
    F, T = applied_loads(model, state)
    for k in range(len(model.points)):
        body, rho, _, _ = point_geometry(model, state, k)
        F[body] += wrenches[k, :3]
        T[body] += wrenches[k, 3:] + np.cross(rho, wrenches[k, :3])
    return F, T


def interface_model(seed):
    rng = np.random.default_rng(200 + seed)
    model = random_model(rng, 4, points=3)
    state = State.initial(model)
    state.t = 0.37
    return rng, model, state


@pytest.mark.parametrize("seed", range(3))
def test_wrench_polynomials_match_hand_computed_loads(seed):
    """References: (a) the KKT solve with F and M + ρ × F of each point's polynomial added by
    hand (point 1 given in the body frame); (b) the same model with the evaluated wrenches as
    constant BodyLoad entries at the points (inertial), solved by the compiled core."""
    rng, model, state = interface_model(seed)
    system = MaximalSystem(model)
    pts = system.points
    pts.poly[:] = rng.normal(size=pts.poly.shape) * np.array([3, 3, 3, 1, 1, 1])
    pts.t0[0] = 0.2
    pts.flags[:, 0] = [0, 1, 0]
    W = polynomial_wrenches(model, state, pts.poly, 0.2, pts.flags[:, 0])
    close(system.point_wrenches(state.t, Kinematics.of(state)), W, 1e-13)
    f = generalized(model, state, *with_point_wrenches(model, state, W))
    acc_ref, lam_ref = kkt_reference(model, state, (system.alpha, system.beta), f=f)
    acc, lam = compiled(system, state)
    close(acc, acc_ref, 1e-10)
    close(lam, lam_ref, 1e-10)
    # (b) the same wrenches as body loads on a model without interface points
    loads = model.loads + tuple(
        BodyLoad(f"w{k}", p.body, p.position, frozen_array([0.0]), frozen_array(W[k:k + 1]))
        for k, p in enumerate(model.points))
    other = MaximalSystem(dataclasses.replace(model, loads=loads, points=()))
    acc_b, lam_b = compiled(other, state)
    close(acc, acc_b, 1e-12)
    close(lam, lam_b, 1e-12)


def test_interface_jacobian_feedback_matches_hand_computed_wrench():
    """Reference: W = poly + K_x Δx + K_v Δv computed here, Δx = [p − p_ref, 2 sin(θ/2) e]
    of the inertial rotation R_p R_refᵀ (scipy Rotation), Δv = [v_p − v_ref, ω − ω_ref],
    then the KKT solve with it."""
    rng, model, state = interface_model(7)
    system = MaximalSystem(model)
    pts = system.points
    pts.poly[:, 0] = rng.normal(size=(3, 6))
    pts.t0[0] = 0.3
    pts.switches[0] = 1
    pts.gains[:] = rng.normal(size=pts.gains.shape)
    r, _, v, wi = frames(state)
    dx, dv = np.zeros((3, 6)), np.zeros((3, 6))
    for k in range(3):
        body, rho, _, Rp = point_geometry(model, state, k)
        turn = Rotation.from_rotvec(0.2 * rng.normal(size=3))
        ref_pos, ref_vel = r[body] + rho + 0.1 * rng.normal(size=3), rng.normal(size=3)
        ref_w = rng.normal(size=3)
        q_ref = (turn * Rotation.from_matrix(Rp)).as_quat()  # scalar last
        pts.reference[k] = np.concatenate([ref_pos, np.roll(q_ref, 1), ref_vel, ref_w])
        rotvec = Rotation.from_matrix(Rp @ Rotation.from_quat(q_ref).as_matrix().T).as_rotvec()
        angle = np.linalg.norm(rotvec)
        dx[k] = np.concatenate([r[body] + rho - ref_pos, 2 * np.sin(angle / 2) * rotvec / angle])
        dv[k] = np.concatenate([v[body] + np.cross(wi[body], rho) - ref_vel, wi[body] - ref_w])
    W = pts.poly[:, 0] + np.einsum("kij,kj->ki", pts.gains[:, 0], dx) + np.einsum(
        "kij,kj->ki", pts.gains[:, 1], dv)
    close(system.point_wrenches(state.t, Kinematics.of(state)), W, 1e-12)
    f = generalized(model, state, *with_point_wrenches(model, state, W))
    acc_ref, lam_ref = kkt_reference(model, state, (system.alpha, system.beta), f=f)
    acc, lam = compiled(system, state)
    close(acc, acc_ref, 1e-10)
    close(lam, lam_ref, 1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_added_mass_matches_explicit_mass_matrix(seed):
    """Reference: the KKT solve with the points' wrench −M_a [a_p; α_p] written into the
    equations, [a_p; α_p] = G ν̇_body + [ω × (ω × ρ); 0] with G = [[I, −[ρ]× R], [0, R]]
    (α = R ω̇^b; a_p = v̇ + α × ρ + ω × (ω × ρ)): M + Gᵀ M_a G on the left, −Gᵀ M_a c and the
    polynomial wrench on the right. M_a in the point frame (T M_a Tᵀ, T = diag(R_p, R_p)) for
    points 0 and 2, inertial for point 1."""
    rng, model, state = interface_model(seed)
    system = MaximalSystem(model)
    pts = system.points
    pts.poly[:, 0] = rng.normal(size=(3, 6))
    pts.t0[0] = state.t
    pts.flags[:, 1] = [1, 0, 1]
    for k in range(3):
        pts.added[k] = random_spd(rng, 6, rng.uniform(0.3, 2.0))
    pts.switches[1] = 1
    n = model.n_bodies
    M = mass_matrix(model).toarray()
    f = generalized(model, state, *with_point_wrenches(model, state, pts.poly[:, 0]))
    _, _, _, wi = frames(state)
    for k in range(3):
        body, rho, R, Rp = point_geometry(model, state, k)
        G = np.zeros((6, 6 * n))
        cols = slice(6 * (body - 1), 6 * body)
        G[:, cols] = np.block([[np.eye(3), -skew(rho) @ R], [np.zeros((3, 3)), R]])
        T = np.kron(np.eye(2), Rp) if pts.flags[k, 1] else np.eye(6)
        Ma = T @ pts.added[k] @ T.T
        c = np.concatenate([np.cross(wi[body], np.cross(wi[body], rho)), np.zeros(3)])
        M += G.T @ Ma @ G
        f -= G.T @ Ma @ c
    acc_ref, lam_ref = kkt_reference(model, state, (system.alpha, system.beta), M=M, f=f)
    acc, lam = compiled(system, state)
    close(acc, acc_ref, 1e-10)
    close(lam, lam_ref, 1e-10)


# --- 4. projection ---------------------------------------------------------------------------


def projection_model(name):
    if name == "slider_crank":
        return load_scenario(SCENARIOS / "slider_crank.toml").model
    return random_model(np.random.default_rng(12), 5, consistent=True)


@pytest.mark.parametrize("name", ["slider_crank", "random_with_drivers"])
def test_projection_reaches_the_manifold_with_minimum_norm_velocity_correction(name):
    """Reference: Φ and J ν + Φ_t evaluated here after MaximalSystem.project on a perturbed
    state, and the closed-form mass-weighted minimum-norm velocity correction
    ν0 − M⁻¹Jᵀ (J M⁻¹ Jᵀ)⁻¹ (J ν0 + Φ_t) at the projected positions. Models: the slider-crank
    (closed loop, 1 dof) and a random 5-body tree closed by a distance joint with drivers
    (Φ_t ≠ 0), consistent at t = 0 and evaluated at t = 0.25."""
    model = projection_model(name)
    system = MaximalSystem(model)
    assert not system.redundant_rows
    rng = np.random.default_rng(5)
    state = State.initial(model)
    state.t = 0.25
    state.r += 1e-2 * rng.normal(size=state.r.shape)
    state.q += 1e-2 * rng.normal(size=state.q.shape)
    state.q /= np.linalg.norm(state.q, axis=1)[:, None]
    state.v += 0.5 * rng.normal(size=state.v.shape)
    state.w += 0.5 * rng.normal(size=state.w.shape)
    nu0 = state.velocities
    before, _ = system.drift(state)
    assert before > 1e-3  # the perturbation left the manifold
    system.project(state)
    J, phi, phidot, phi_t, _ = constraint_terms(model, state)
    assert J.shape[0] < J.shape[1]  # degrees of freedom left: the weighting matters
    assert name == "slider_crank" or np.max(np.abs(phi_t)) > 0.1
    assert np.max(np.abs(phi)) <= 1e-12
    assert np.max(np.abs(phidot)) <= 1e-10
    Minv = np.linalg.inv(mass_matrix(model).toarray())
    nu_ref = nu0 - Minv @ J.T @ np.linalg.solve(J @ Minv @ J.T, J @ nu0 + phi_t)
    close(state.velocities, nu_ref, 1e-11)  # seen 2e-13: the rods' 1e-6 axial inertia


# --- 5. integration ------------------------------------------------------------------------


def integrate_rk4(system, state, t_end, h):
    s = state.copy()
    RK4(system, project=False).advance(s, s.t + h * np.arange(round((t_end - s.t) / h) + 1), h)
    return s


def comparable(state):
    """[r, q (sign fixed, unit), v, ω^b] of a state."""
    q = state.q / np.linalg.norm(state.q, axis=1)[:, None]
    q = q * np.sign(q[:, :1])
    return np.concatenate([state.r.ravel(), q.ravel(), state.v.ravel(), state.w.ravel()])


def test_rk4_matches_dop853_with_fourth_order_error():
    """Reference: scipy solve_ivp (DOP853, rtol = atol = 1e-12) of MaximalSystem.derivative on a
    consistent random 4-body model with every force kind, 0.3 s. RK4's error at h = 4 ms must be
    small and shrink by ~2⁴ at h = 2 ms (global error C h⁴)."""
    rng = np.random.default_rng(11)
    model = random_model(rng, 4, consistent=True)
    system = MaximalSystem(model)
    state = State.initial(model)
    assert system.drift(state)[0] < 1e-12  # the markers really are consistent
    system.project(state)
    sol = solve_ivp(system.derivative, (0.0, 0.3), state.to_vector(), method="DOP853",
                    rtol=1e-12, atol=1e-12)
    assert sol.success
    ref = comparable(State.from_vector(0.3, sol.y[:, -1]))
    errors = [np.max(np.abs(comparable(integrate_rk4(system, state, 0.3, h)) - ref))
              for h in (4e-3, 2e-3)]
    assert errors[0] < 1e-6, errors
    assert 10 < errors[0] / errors[1] < 24, errors


def independent_energy(model, state):
    """½ m v² + ½ ωᵀ I ω − m g·r, summed over bodies."""
    e = 0.0
    for i, b in enumerate(model.bodies):
        w = state.w[i]
        e += 0.5 * b.mass * state.v[i] @ state.v[i] + 0.5 * w @ b.inertia @ w
        e -= b.mass * np.asarray(model.gravity) @ state.r[i]
    return e


def test_double_pendulum_conserves_energy():
    """Reference: the mechanical energy computed here, which must stay at its initial value
    along 2 s of RK4 (h = 1 ms, with projection) of the conservative double pendulum; and
    MaximalSystem.energy must equal it at every sample."""
    model = load_scenario(SCENARIOS / "double_pendulum.toml").model
    assert model.is_conservative
    system = MaximalSystem(model)
    state = State.initial(model)
    system.project(state)
    integrator = RK4(system, project=True)
    e0 = independent_energy(model, state)
    worst = 0.0
    for _ in range(20):
        integrator.advance(state, state.t + 1e-3 * np.arange(101), 1e-3)
        e = independent_energy(model, state)
        assert abs(system.energy(state) - e) <= 1e-12 * max(1.0, abs(e))
        worst = max(worst, abs(e - e0))
    assert worst < 1e-7, worst  # E0 ≈ −5.8 J; the drift seen is 1.2e-9 J (RK4's h⁴)
    assert state.t == pytest.approx(2.0)


def free_bodies(n):
    """n unjointed bodies side by side, moving slowly."""
    return tuple(Body(f"b{k + 1}", 0.5, frozen_array(np.eye(3) * 0.1),
                        frozen_array([k, 0.0, 0.0]), frozen_array([1.0, 0, 0, 0]),
                        frozen_array([0.1, 0, 0]), frozen_array([0, 0.2, 0])) for k in range(n))


def test_non_finite_state_names_the_body():
    """Reference: which body we spoiled. A NaN in b2's initial velocity, or a 1e308 N load on
    b3 (its acceleration overflows), must raise SimulationError naming that body, leaving the state
    at the last good step."""
    bodies = free_bodies(3)
    spoiled = list(bodies)
    spoiled[1] = dataclasses.replace(bodies[1], velocity=frozen_array([0.0, np.nan, 0.0]))
    model = Model(tuple(spoiled))
    state = State.initial(model)
    with pytest.raises(SimulationError, match="'b2'"):
        RK4(MaximalSystem(model), project=False).advance(state, np.array([0.0, 1e-3]), 1e-3)
    huge = BodyLoad("huge", 3, frozen_array(np.zeros(3)), frozen_array([0.0]),
                    frozen_array([[1e308, 0, 0, 0, 0, 0]]))
    model = Model(bodies, loads=(huge,))
    state = State.initial(model)
    with pytest.raises(SimulationError, match="'b3'"):
        RK4(MaximalSystem(model), project=False).advance(state, 1e-3 * np.arange(5), 1e-3)
    assert state.t == 0.0 and state.is_finite()


# --- 6. save / restore ------------------------------------------------------------------------


def drive(side, k, rng_seed):
    """Inputs of macro step k: a cubic wrench polynomial, an interface Jacobian, an added mass
    (point frame), all derived from k alone."""
    rng = np.random.default_rng(rng_seed + k)
    for point in side.point_names:
        side.set_wrench_polynomial(point, 0.1 * rng.normal(size=(4, 6)))
        side.set_interface_jacobian(point, -np.diag(rng.uniform(1, 5, 6)),
                                    -np.diag(rng.uniform(0, 0.1, 6)))
        side.set_added_mass(point, random_spd(rng, 6, 0.05))


@pytest.mark.parametrize("scenario", ["two_mass_oscillator.toml", "rigid_flex_pendulum.toml"])
def test_save_restore_is_bitwise(scenario):
    """Reference: an uninterrupted run. A runs 10 macro steps; B restores A's get_state()
    taken after 5 steps with step 6's inputs already set, then runs the last 5: the final
    states (and the whole saved state) are bitwise equal."""
    a = RigidSide.from_scenario(SCENARIOS / scenario)
    b = RigidSide.from_scenario(SCENARIOS / scenario)
    H = a.macro_step
    blob = None
    for k in range(10):
        drive(a, k, 17)
        if k == 5:
            blob = a.get_state()
        a.step(H)
    b.set_state(blob)
    b.step(H)  # step 6's inputs come from the restored state
    for k in range(6, 10):
        drive(b, k, 17)
        b.step(H)
    sa, sb = a.sim.state, b.sim.state
    assert sa.t == sb.t
    for name in ("r", "q", "v", "w"):
        assert getattr(sa, name).tobytes() == getattr(sb, name).tobytes(), name
    assert a.get_state() == b.get_state()
    assert np.any(sa.r != State.initial(a.scenario.model).r)  # it did move
