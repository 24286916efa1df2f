"""Directional derivatives of FMUs exported with ``derivatives=True`` (the derivative shim),
through FMPy's low-level API: a free body against the analytic step response, a hinged arm
against finite differences taken by the host with FMU states, FMI 3's adjoint against the
transpose, the modelDescription, and the trajectory unchanged by derivative calls."""

from __future__ import annotations

import zipfile
from xml.etree import ElementTree

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu
from test_fmu_support import REPO, TIP_PENDULUM, bits, open_fmu

from rbcosim.fmu_export import ExportOptions, export_fmu

pytestmark = pytest.mark.fmu

MASS, INERTIA, H = 2.0, 0.4, 0.01
#: A sphere-like body in gravity with an interface point at its centre of mass: over a step of
#: H with W(τ) = F + Ḟ τ its velocity changes by (F H + Ḟ H²/2)/m + g H, its position by
#: (F H²/2 + Ḟ H³/6)/m + ..., its angular velocity by (M H + Ṁ H²/2)/J (ω × Jω = 0).
FREE_BODY = f"""
[bodies.ball]
mass = {MASS}
inertia = [{INERTIA}, {INERTIA}, {INERTIA}]
position = [0.0, 0.0, 1.0]
velocity = [0.3, 0.0, 0.0]

[interface_points.c]
body = "ball"

[cosim]
macro_step = {H}
micro_steps = 4
"""
KIN = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
WRENCH = ("fx", "fy", "fz", "mx", "my", "mz")


def derivative(fmu, unknowns, knowns, seed):
    return np.array(fmu.slave.getDirectionalDerivative(fmu.vr(*unknowns), fmu.vr(*knowns),
                                                       list(seed)))


def jacobian(fmu, unknowns, knowns):
    """Columns from the FMU, one seed e_j at a time."""
    return np.column_stack([derivative(fmu, unknowns, knowns, np.eye(len(knowns))[j])
                            for j in range(len(knowns))])


@pytest.fixture(scope="module", params=[2, 3])
def free_body(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"free{request.param}")
    scenario = tmp / "ball.toml"
    scenario.write_text(FREE_BODY)
    return export_fmu(scenario, tmp / "ball.fmu",
                      ExportOptions(fmi_version=request.param, derivatives=True)), tmp


@pytest.fixture(scope="module", params=[2, 3])
def arm(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"arm{request.param}")
    scenario = tmp / "arm.toml"
    scenario.write_text(TIP_PENDULUM)
    return export_fmu(scenario, tmp / "arm.fmu",
                      ExportOptions(fmi_version=request.param, derivatives=True)), tmp


def test_free_body_derivatives_are_the_analytic_step_response(free_body):
    path, tmp = free_body
    fmu = open_fmu(path, tmp / "u")
    try:
        fmu.set([f"c.{w}" for w in WRENCH] + [f"c.d{w}" for w in WRENCH],
                [1.0, -2.0, 3.0, 0.1, 0.2, -0.3] + [5.0] * 6)
        fmu.do_step(0.0, H)
        outputs = [f"c.{k}" for k in ("x", "y", "z", "vx", "vy", "vz", "wx", "wy", "wz")]
        forces = ["c.fx", "c.fy", "c.fz"]
        rates = ["c.dfx", "c.dfy", "c.dfz"]
        moments, moment_rates = ["c.mx", "c.my", "c.mz"], ["c.dmx", "c.dmy", "c.dmz"]
        got = jacobian(fmu, outputs, forces + rates + moments + moment_rates)
        eye, zero = np.eye(3), np.zeros((3, 3))
        expected = np.block([
            [H**2 / (2 * MASS) * eye, H**3 / (6 * MASS) * eye, zero, zero],
            [H / MASS * eye, H**2 / (2 * MASS) * eye, zero, zero],
            [zero, zero, H / INERTIA * eye, H**2 / (2 * INERTIA) * eye],
        ])
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-12 * H / MASS)
        # Accelerations at the step's end under W(H) = F + Ḟ H: ∂a/∂F = 1/m, ∂a/∂Ḟ = H/m.
        accelerations = jacobian(fmu, ["c.ax", "c.ay", "c.az"], ["c.fx", "c.dfy"])
        np.testing.assert_allclose(accelerations, [[1 / MASS, 0], [0, H / MASS], [0, 0]],
                                   rtol=1e-8, atol=1e-10)
        # The body's own outputs are the point's here (the point is the centre of mass).
        np.testing.assert_allclose(jacobian(fmu, ["ball.vx"], ["c.fx"]), [[H / MASS]],
                                   rtol=1e-8)
    finally:
        fmu.close()


H_ARM = 0.01  # TIP_PENDULUM's macro step


def test_arm_derivatives_agree_with_host_finite_differences(arm):
    path, tmp = arm
    fmu = open_fmu(path, tmp / "u")
    try:
        inputs = {"tip.fx": 0.5, "tip.fz": -1.0, "tip.my": 0.2, "tip.dfz": 3.0}
        unknowns = [f"tip.{k}" for k in KIN] + ["arm.wy", "tip.az"]
        knowns = list(inputs)
        t = 0.0
        fmu.set(list(inputs), list(inputs.values()))
        for _ in range(5):  # swing out of the start pose first
            fmu.do_step(t, H_ARM)
            t += H_ARM
        # the host's differences, with its own step (0.1 in the inputs' units), of the step
        # from t with these inputs; then that step and the FMU's derivatives
        host = host_jacobian_at(fmu, unknowns, knowns, inputs, t, 0.1)
        fmu.set(list(inputs), list(inputs.values()))
        fmu.do_step(t, H_ARM)
        got = jacobian(fmu, unknowns, knowns)
        scale = np.abs(host).max(axis=0)
        assert (scale > 0).all()
        error = np.abs(got - host).max(axis=0) / scale
        assert (error <= 1e-6).all(), error
        if fmu.fmi_version == 3:  # adjoint: seedᵀ J, one row per unit seed
            for i in (0, 9, 14):
                seed = np.eye(len(unknowns))[i]
                row = fmu.slave.getAdjointDerivative(fmu.vr(*unknowns), fmu.vr(*knowns),
                                                     list(seed), nSensitivity=len(knowns))
                np.testing.assert_allclose(row, got[i], rtol=1e-13, atol=0)
    finally:
        fmu.close()


def host_jacobian_at(fmu, unknowns, knowns, inputs, t, delta, step=H_ARM):
    """∂unknowns/∂knowns of one doStep of ``step`` from t, by the host's own central
    differences: restore the state, set the inputs with one moved by ±delta, step, read."""
    start = fmu.get_state()
    columns = []
    for name in knowns:
        values = []
        for sign in (1.0, -1.0):
            fmu.set_state(start)
            moved = dict(inputs)
            moved[name] += sign * delta
            fmu.set(list(moved), list(moved.values()))
            fmu.do_step(t, step)
            values.append(np.array(fmu.get(unknowns)))
        columns.append((values[0] - values[1]) / (2 * delta))
    fmu.set_state(start)
    fmu.slave.freeFMUstate(start) if fmu.fmi_version == 2 else fmu.slave.freeFMUState(start)
    return np.column_stack(columns)


def test_derivative_calls_leave_the_trajectory_and_declare_the_structure(arm):
    path, tmp = arm
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    with zipfile.ZipFile(path) as fmu_zip:
        cosim = ElementTree.fromstring(fmu_zip.read("modelDescription.xml")).find("CoSimulation")
    flags = (("providesDirectionalDerivative",) if md.fmiVersion == "2.0"
             else ("providesDirectionalDerivatives", "providesAdjointDerivatives"))
    assert [cosim.get(f) for f in flags] == ["true"] * len(flags)
    with zipfile.ZipFile(path) as fmu_zip:  # the shim is the Linux binary; no Windows one
        binaries = sorted(n for n in fmu_zip.namelist() if n.startswith("binaries/"))
    linux = "linux64" if md.fmiVersion == "2.0" else "x86_64-linux"
    assert binaries == [f"binaries/{linux}/arm.pythonfmu.so", f"binaries/{linux}/arm.so"]
    wrench_inputs = {v.name for v in md.modelVariables if v.causality == "input"
                     and v.name.startswith("tip.") and "flex" not in v.name}
    assert len(wrench_inputs) == 24  # fx .. mz and three derivatives of each
    outputs = {u.variable.name: u for u in md.outputs}
    assert {v.name for v in outputs["tip.vx"].dependencies} == wrench_inputs
    assert {v.name for v in outputs["arm.q0"].dependencies} == wrench_inputs
    assert outputs["tip_joint.gap_pos"].dependencies is None  # not declared: may be any

    fmu = open_fmu(path, tmp / "v")
    try:
        start = fmu.get_state()
        names = [f"tip.{k}" for k in KIN]
        runs = []
        for asked in (True, False):
            fmu.set_state(start)
            rows, t = [], 0.0
            for n in range(4):
                fmu.set(["tip.fz", "tip.dmy"], [np.cos(n), 0.5 * n])
                fmu.do_step(t, H_ARM)
                t += H_ARM
                if asked:
                    jacobian(fmu, names, ["tip.fz", "tip.dmy"])
                rows.append(fmu.get(names))
            runs.append(bits(rows))
        assert runs[0] == runs[1]
    finally:
        fmu.close()


def test_derivatives_are_refused_when_undefined_naming_why(arm):
    path, tmp = arm
    fmu = open_fmu(path, tmp / "w")
    try:
        with pytest.raises(Exception, match="error"):  # no doStep yet (Error, not Fatal)
            derivative(fmu, ["tip.x"], ["tip.fx"], [1.0])
        assert "GetDirectionalDerivative refused: no doStep to differentiate" in fmu.messages()
    finally:
        fmu.slave.freeInstance()
    fmu = open_fmu(path, tmp / "w")
    try:
        fmu.do_step(0.0, H_ARM)
        with pytest.raises(Exception, match="error"):
            derivative(fmu, ["tip_joint.gap_pos"], ["tip.fx"], [1.0])
        assert ("GetDirectionalDerivative refused: tip_joint.gap_pos: not among the outputs "
                "with derivatives") in fmu.messages()
    finally:
        fmu.slave.freeInstance()


def test_derivatives_need_embedded_mode():
    with pytest.raises(ValueError, match="embedded mode only"):
        ExportOptions(derivatives=True, mode="remote")


PENDULUM = REPO / "scenarios" / "rigid_flex_pendulum.toml"


@pytest.mark.parametrize("fmi", [2, 3])
def test_structure_fmu_derivatives_agree_with_host_finite_differences(fmi, tmp_path):
    """The main job's flexible beam (export-fmu --flex beam --derivatives): its outputs after a
    doStep with respect to the rigid point's motion inputs held over it, against the host's
    own central differences (FMU states, δ = 1e-4, ten times the FMU's): to 1e-6 of each
    column's largest entry (5.4e-8 measured); FMI 3's adjoint is the transpose."""
    path = export_fmu(PENDULUM, tmp_path / "beam.fmu",
                      ExportOptions(fmi_version=fmi, flex="beam", derivatives=True))
    md = fmpy.read_model_description(str(path))
    motion = {v.name for v in md.modelVariables if v.causality == "input"}
    assert len(motion) == 19  # tip.x .. tip.alz
    outputs = {u.variable.name: u for u in md.outputs}
    assert {v.name for v in outputs["beam.eta1"].dependencies} == motion
    assert {v.name for v in outputs["tip.dfx"].dependencies} == motion
    assert outputs["tip.added_mass[1,1]"].dependencies is None  # constant: no derivatives
    H = float(md.defaultExperiment.stepSize)
    fmu = open_fmu(path, tmp_path / "u")
    try:
        knowns = ["tip.x", "tip.vx", "tip.wy", "tip.q2", "tip.ax", "tip.aly"]
        unknowns = ["beam.eta1", "clamp.flex.x", "clamp.flex.wy", "tip.fx", "tip.fz",
                    "tip.my", "tip.dfx", "clamp.flex_energy", "beam.tip.x"]
        t = 0.0
        for _ in range(5):  # the beam starts to bend
            fmu.do_step(t, H)
            t += H
        inputs = dict(zip(knowns, fmu.get(knowns)))
        host = host_jacobian_at(fmu, unknowns, knowns, inputs, t, 1e-4, H)
        fmu.do_step(t, H)
        got = jacobian(fmu, unknowns, knowns)
        scale = np.abs(host).max(axis=0)
        assert (scale > 0).all()
        error = np.abs(got - host).max(axis=0) / scale
        assert (error <= 1e-6).all(), error
        if fmi == 3:
            for i in (0, 3, 8):
                row = fmu.slave.getAdjointDerivative(fmu.vr(*unknowns), fmu.vr(*knowns),
                                                     list(np.eye(len(unknowns))[i]),
                                                     nSensitivity=len(knowns))
                np.testing.assert_allclose(row, got[i], rtol=1e-13, atol=0)
    finally:
        fmu.close()
