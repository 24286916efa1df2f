"""The flexible side's C kernels (librbcosim/flex) against independent references: exact
integrals and finite differences of the frame polynomial, the closed-form rotation at constant
angular velocity, dense numpy products, a solved residual, closed-form joint gaps, and the
one-call macro step against the same step taken call by call."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from rbcosim import _core
from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.flex import FlexBody, FlexModel, InterfaceMotion
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.modelling.model import _nodal_operator
from rbcosim.flex.modelling.nodal import field_nodal
from rbcosim.flex.runtime.chord_kernels import contiguous_rows
from rbcosim.flex.runtime.frame import acceleration_polynomial, end_of_step, frame_at, set_frame
from rbcosim.flex.runtime.grounded import boundary, to_structure
from rbcosim.flex.runtime.layout import AL, ETA, QREF, Q, R, V, W
from rbcosim.flex.runtime.layout import A as ACC
from rbcosim.settings import CosimSettings, Coupling
from rbcosim.spatial.quaternion import (
    from_rotation_vector as quat_from_rotation_vector,
)
from rbcosim.spatial.quaternion import (
    multiply as quat_multiply,
)
from rbcosim.spatial.quaternion import (
    rotation_matrix,
)

pytestmark = pytest.mark.unit

RNG = np.random.default_rng(25)
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_floating_import.py"


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _state(k=0):
    s = np.zeros(ETA + 2 * k)
    motion = RNG.normal(size=19)
    set_frame(s, motion)
    return s


def test_acceleration_polynomial_passes_through_its_samples():
    motion = RNG.normal(size=19)
    past = RNG.normal(size=(2, 19))
    taus = np.array([-1e-3, -2e-3])
    coeff = acceleration_polynomial(motion, taus, past)
    for tau, row in zip([0.0, *taus], [motion, *past]):
        value = sum(coeff[j] * tau**j for j in range(3))
        np.testing.assert_allclose(value, row[13:19], rtol=1e-9, atol=1e-12)


def test_frame_at_is_the_exact_integral_of_its_accelerations():
    s = _state()
    coeff = RNG.normal(size=(3, 6))
    out, plus, minus = np.empty(18), np.empty(18), np.empty(18)
    tau, d = 0.37, 1e-5
    frame_at(s, coeff, tau, out)
    frame_at(s, coeff, tau + d, plus)
    frame_at(s, coeff, tau - d, minus)
    rate = (plus - minus) / (2 * d)
    np.testing.assert_allclose(rate[0:3], out[3:6], rtol=1e-8)      # r' = v
    np.testing.assert_allclose(rate[3:6], out[6:9], rtol=1e-8)      # v' = a
    np.testing.assert_allclose(rate[9:12], out[12:15], rtol=1e-8)   # theta' = w
    np.testing.assert_allclose(rate[12:15], out[15:18], rtol=1e-8)  # w' = alpha
    frame_at(s, coeff, 0.0, out)
    np.testing.assert_array_equal(out[0:3], s[R:R + 3])
    np.testing.assert_array_equal(out[3:6], s[V:V + 3])
    np.testing.assert_array_equal(out[12:15], s[W:W + 3])


def test_end_of_step_at_constant_angular_velocity_is_the_closed_form_rotation():
    s = _state()
    coeff = np.zeros((1, 6))  # no angular acceleration: w constant
    H = 0.8
    q = end_of_step(s, coeff, H, 200)
    exact = quat_multiply(quat_from_rotation_vector(s[W:W + 3] * H), s[Q:Q + 4])
    if exact @ q < 0:
        exact = -exact
    np.testing.assert_allclose(q, exact, atol=1e-11)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-15


def test_boundary_is_the_rotated_offset_and_rotation_vector():
    s = _state()
    s[QREF:QREF + 4] = quat_from_rotation_vector([0.0, 0.0, 0.0])
    s[Q:Q + 4] = quat_from_rotation_vector([0.1, -0.2, 0.05])
    r0 = rotation_matrix(quat_from_rotation_vector([0.3, 0.1, -0.4]))
    comps = np.arange(6, dtype=np.int64)
    rows = boundary(s, r0, comps)
    np.testing.assert_allclose(rows[0, :3], r0.T @ s[R:R + 3], rtol=1e-14)
    np.testing.assert_allclose(rows[0, 3:], r0.T @ np.array([0.1, -0.2, 0.05]), rtol=1e-12)
    out = np.empty(2)
    to_structure(r0, np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]),
                 np.array([1, 5], dtype=np.int64), out)
    np.testing.assert_allclose(out, [(r0.T @ [1, 2, 3])[1], (r0.T @ [4, 5, 6])[2]], rtol=1e-14)


def test_joint_gaps_in_closed_form():
    rigid = np.concatenate([[1.0, 2.0, 3.0], quat_from_rotation_vector([0.0, 0.3, 0.0]),
                            [0.1, 0.2, 0.3], [1.0, 0.0, 0.0]])
    flex = rigid.copy()
    flex[0:3] += [3e-3, 4e-3, 0.0]
    flex[3:7] = quat_multiply(quat_from_rotation_vector([0.0, 0.0, 2e-4]), rigid[3:7])
    flex[7:10] += [0.0, 0.0, 0.5]
    flex[10:13] += [0.0, 1.2, -0.5]
    gaps = np.empty(4)
    _core.joint_gaps(rigid, flex, gaps)
    np.testing.assert_allclose(gaps, [5e-3, 2e-4, 0.5, 1.3], rtol=1e-10)


def test_point_frame_mass_is_the_dense_product():
    m = RNG.normal(size=(6, 6))
    q = quat_from_rotation_vector([0.4, -0.1, 0.7])
    t6 = np.kron(np.eye(2), rotation_matrix(q))
    out = np.empty((6, 6))
    _core.point_frame_mass(m, q, False, out)
    np.testing.assert_allclose(out, t6.T @ m @ t6, rtol=1e-13, atol=1e-14)
    _core.point_frame_mass(m, q, True, out)
    np.testing.assert_allclose(out, t6 @ m @ t6.T, rtol=1e-13, atol=1e-14)


def _chord():
    return ChordModel.from_beam(0.6, 2.1e11, 7850.0, 1e-4, 1e-4**2 / 12, n_elements=8,
                                n_modes=3)


def test_chord_modal_acceleration_solves_its_residual():
    model = _chord()
    k = model.n_modes
    rows = contiguous_rows(model.modal_rows)
    minv = np.linalg.inv(model.mass[1:, 1:])
    inputs = np.array([1.0, 0.0, 0.6001, 0.02, 0.3, 1.5, -2.0, 0.4, 9.81])
    eta, etad = RNG.normal(size=k) * 1e-3, RNG.normal(size=k) * 1e-2
    etadd = np.empty(k)
    _core.chord_modal_acceleration(*rows, minv, model.params, inputs, eta, etad, etadd)
    r = np.empty(k)
    _core.chord_residual(*rows, model.params, inputs, eta, etad, etadd, r)
    scale = np.abs(model.mass[1:, 1:] @ etadd).max()
    assert np.abs(r).max() <= 1e-12 * scale


def _floating(planar=True, **kw):
    return FlexModel.from_beam(1.0, 2.1e11, 7850.0, 1e-4, 1e-4**2 / 12, n_elements=10,
                               n_modes=4, planar=planar, attachment="floating",
                               output_nodes={"tip": "end"}, **kw)


def _nodal_wrench(model, s, gravity):
    """The floating wrench evaluated on the mesh in numpy (rbcosim.flex.runtime.body's formulas):
    force from the first-moment invariants, moment as the nodal sum of
    ``(X_i + u_i) x f_t,i + f_r,i`` with ``f = M_phys acc``, minus ``w x J w``."""
    fl, k = model.floating, model.n_modes
    rs = rotation_matrix(s[Q:Q + 4]) @ model.axis_rotation
    ws, als = rs.T @ s[W:W + 3], rs.T @ s[AL:AL + 3]
    bs = rs.T @ (s[ACC:ACC + 3] - gravity)
    eta, etad = s[ETA:ETA + k], s[ETA + k:]
    big_a = _skew(als) + _skew(ws) @ _skew(ws)
    z = np.concatenate([eta, etad, bs, als, np.kron(ws, ws), np.kron(ws, etad),
                        np.kron(als, eta), np.kron(np.kron(ws, ws), eta), np.kron(bs, eta)])
    etadd = fl.ode_matrix @ z
    n_nodes = fl.nodes.shape[0]
    acc = (field_nodal(fl.nodes, bs, big_a) + fl.modes @ etadd
           + 2.0 * _nodal_operator(_skew(ws), n_nodes) @ fl.modes @ etad
           + _nodal_operator(big_a, n_nodes) @ fl.modes @ eta)
    f = (fl.mass @ acc).reshape(-1, 6)
    lever = fl.nodes + (fl.modes @ eta).reshape(-1, 6)[:, :3]
    first = fl.first_moment + fl.modal_first_moment @ eta
    force = -(fl.total_mass * bs + big_a @ first + fl.modal_first_moment @ etadd
              + 2.0 * np.cross(ws, fl.modal_first_moment @ etad))
    moment = -(np.cross(lever, f[:, :3]).sum(axis=0) + f[:, 3:].sum(axis=0)
               + np.cross(ws, fl.spin_inertia @ ws))
    return np.concatenate([rs @ force, rs @ moment])


def _lattice(nx, ny, nz):
    """A floating hex-block lattice of 3D beams (benchmarks/bench_floating_import.py)."""
    spec = importlib.util.spec_from_file_location("bench_floating_import", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return FlexModel.from_matrices(bench.lattice_structure(nx, ny, nz), n_modes=5,
                                   attachment="floating")


@pytest.mark.parametrize("which", ["planar", "3d", "lattice"])
def test_floating_wrench_from_invariants_is_the_nodal_sum(which):
    """The C kernel's wrench from the precomputed inertia invariants equals the mesh's nodal
    sum (numpy, above) at general states: frame rotated and spinning, modes deformed."""
    if which == "lattice":
        model = _lattice(5, 3, 2)
    else:
        model = _floating(planar=which == "planar", geometric_stiffening=which == "3d")
    body = FlexBody(model, micro_steps=2)
    k = model.n_modes
    for _ in range(5):
        q = quat_from_rotation_vector(RNG.normal(size=3))
        m = InterfaceMotion(np.zeros(3), q, RNG.normal(size=3), 3.0 * RNG.normal(size=3),
                            10.0 * RNG.normal(size=3), 20.0 * RNG.normal(size=3))
        body.initialize(0.0, m)
        body.set_modal_state(RNG.normal(size=k) * 1e-3, RNG.normal(size=k) * 1e-1)
        reference = _nodal_wrench(model, body._state, body.gravity)
        assert np.abs(body.wrench() - reference).max() <= 1e-12 * np.abs(reference).max()


def test_floating_kernel_arrays_do_not_grow_with_the_mesh():
    """A step's cost depends on the modes, not on the FE mesh: the body's C arrays (what a
    body file carries) are the same size for a 10- and a 40-element beam with 4 modes."""
    def sizes(elements):
        model = FlexModel.from_beam(1.0, 2.1e11, 7850.0, 1e-4, 1e-4**2 / 12,
                                    n_elements=elements, n_modes=4, planar=True,
                                    attachment="floating")
        return [a.size for a in FlexBody(model)._handle.leaves]
    assert sizes(10) == sizes(40)


def _swing(t):
    a = 0.3 * math.sin(3.0 * t)
    q = quat_from_rotation_vector([0.0, a, 0.0])
    w = np.array([0.0, 0.9 * math.cos(3.0 * t), 0.0])
    al = np.array([0.0, -2.7 * math.sin(3.0 * t), 0.0])
    p = rotation_matrix(q) @ np.array([0.5, 0.0, 0.0])
    v, acc = np.cross(w, p), np.cross(al, p) + np.cross(w, np.cross(w, p))
    return np.concatenate([p, q, v, w, acc, al])


@pytest.mark.parametrize("attachment", ["floating", "grounded"])
@pytest.mark.parametrize("scheme", ["gauss_seidel_flex_first", "jacobi"])
def test_one_call_macro_step_is_the_call_by_call_step(attachment, scheme):
    """FlexEndpoint's one C call (step, wrench, rigid input with the added mass, polynomial,
    energy, history) gives the bits of advance() + polynomial() + commit() in Python."""
    def endpoint():
        if attachment == "floating":
            model = _floating()
        else:
            model = FlexModel.from_beam(1.0, 2.1e11, 7850.0, 1e-4, 1e-4**2 / 12, n_elements=6,
                                        n_modes=3, planar=True, attachment="grounded",
                                        output_nodes={"tip": "end"})
        settings = CosimSettings(macro_step=1e-3, micro_steps=2, scheme=scheme,
                                 extrapolation=2)
        coupling = Coupling(name="j", point="p", flex_body="b", tolerances=np.ones(4))
        return FlexEndpoint(coupling, FlexBody(model, micro_steps=2), settings, 1e-3)

    fused, manual = endpoint(), endpoint()
    for ep in (fused, manual):
        ep.initialize(0.0, motion_of(_swing(0.0), 0.0))
    assert fused.implicit_mass
    for i in range(6):
        t = i * 1e-3
        m = motion_of(_swing(t), t)
        poly, _ = fused.inputs_for_rigid(t, m)
        fused.finish(t, m)
        manual.advance(t, m)
        if scheme == "gauss_seidel_flex_first":
            expect = manual.polynomial(t, manual.rigid_input())
            assert poly.tobytes() == expect.tobytes()
        manual.commit(m)
        assert fused.get_state() == manual.get_state()
    assert fused.energy == manual.energy != 0.0


def test_kernels_refuse_wrong_sizes():
    s = np.zeros(ETA + 2)
    with pytest.raises(ValueError, match="motion"):
        _core.set_frame(s, np.zeros(18))
    with pytest.raises(ValueError, match="coeff"):
        _core.frame_at(s, np.zeros((5, 6)), 0.0, np.empty(18))
    with pytest.raises(ValueError, match="comps"):
        _core.boundary(s, np.eye(3), np.array([0, 7], dtype=np.int64), np.empty(6))
    with pytest.raises(ValueError, match="state"):
        _core.regrounded_frame(np.zeros(ETA + 1), np.zeros(19), np.eye(3),
                               np.zeros(0, dtype=np.int64), np.zeros(0))
    with pytest.raises(TypeError):
        _core.joint_gaps(np.zeros(13, dtype=np.float32), np.zeros(13), np.empty(4))
