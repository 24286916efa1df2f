"""Remote mode: the FMU under FMPy drives a session of a running server."""

from __future__ import annotations

import fmpy
import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from test_fmu_support import REPO, bits, open_fmu, rigid_side_class, scenario_with_points

from rbcosim.cli.main import main
from rbcosim.client import Client, ServiceError
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.joint_coordinates import coordinate_columns
from rbcosim.results import Results, body_columns
from rbcosim.scenario.loader import load_scenario
from rbcosim.service.core import Service
from rbcosim.service.server import serve_in_thread

pytestmark = pytest.mark.fmu

COMPONENTS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return scenario_with_points(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture
def server():
    server, thread = serve_in_thread(Service(rigid_factory=rigid_side_class().from_scenario))
    yield server
    server.stop()
    thread.join(10)
    server.close()


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, scenario, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"remote_fmi{request.param}.fmu"
    return export_fmu(scenario, out, ExportOptions(fmi_version=request.param, mode="remote"))


def test_fmu_drives_a_server_session_like_in_process(fmu_path, scenario, server, tmp_path):
    side = rigid_side_class().from_scenario(scenario)
    points, H = side.point_names, side.macro_step
    fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
    t0 = side.time
    if fmu.fmi_version == 2:
        fmu.slave.setupExperiment(startTime=t0)
        fmu.slave.enterInitializationMode()
    else:
        fmu.slave.enterInitializationMode(startTime=t0)
    fmu.slave.setString(fmu.vr("server.address"), [server.address])
    fmu.slave.exitInitializationMode()

    (sid,) = server.workers.by_session
    outputs = [f"{p}.{c}" for p in points for c in COMPONENTS]
    t = t0
    for n in range(6):
        wrench = [0.1 * (n + 1), 0.0, -0.3, 0.0, 0.0, 0.0]
        for p in points:
            fmu.set([f"{p}.{c}" for c in ("fx", "fy", "fz", "mx", "my", "mz")], wrench)
            side.set_wrench(p, wrench)
        for j in side.joint_names:
            side.set_flex_kinematics(j, [0.0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        fmu.do_step(t, H)
        side.step(H)
        t += H
    got = fmu.get(outputs)
    assert bits(got) == bits([x for p in points for x in side.point_outputs()[p]])

    with Client(server.address) as observer:
        observer.session = sid
        results = observer.results()
    assert len(results["time"]) == 7
    # the session's first points are the FMU's (then its own points at the bodies' centres)
    assert bits(results["kinematics"][-1][: len(points)].ravel()) == bits(got)

    fmu.close()
    with Client(server.address) as observer:  # the FMU closed the session it created
        observer.session = sid
        with pytest.raises(ServiceError, match="unknown_session"):
            observer.heartbeat()


def test_remote_fmu_has_no_exchange_variables(fmu_path):
    # Accelerations, wrench derivatives, added mass and energies need the solver in the FMU.
    names = {x.name for x in fmpy.read_model_description(str(fmu_path)).modelVariables}
    assert any(n.endswith(".fx") for n in names)
    assert not [
        n
        for n in names
        if n.endswith(
            (".ax", ".dfx", ".d2fx", "added_mass_frame", ".flex_energy", ".energy_residual")
        )
    ]


def test_lost_server_gives_an_error_status(fmu_path, scenario, tmp_path):
    server, thread = serve_in_thread(Service(rigid_factory=rigid_side_class().from_scenario))
    fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
    e = fmu.description.defaultExperiment
    if fmu.fmi_version == 2:
        fmu.slave.setupExperiment(startTime=float(e.startTime))
        fmu.slave.enterInitializationMode()
    else:
        fmu.slave.enterInitializationMode(startTime=float(e.startTime))
    fmu.slave.setString(fmu.vr("server.address"), [server.address])
    # long enough for the session's creation on a loaded machine (0.3 s was not), short
    # enough for the lost server's step to give up soon
    fmu.set(["server.timeout"], [3.0])
    fmu.slave.exitInitializationMode()
    server.stop()
    thread.join(10)
    server.close()
    with pytest.raises(FMICallException) as info:
        fmu.do_step(float(e.startTime), float(e.stepSize))
    assert info.value.status == 3  # Error in both versions (FMI 2 was Discard before the shim)
    assert "no reply" in fmu.messages()
    fmu.close()


def test_remote_steps_multiples_and_gaps_are_current(fmu_path, scenario, server, tmp_path):
    """A doStep of 2H is two session steps (against RigidSide in process); the gaps compare
    the kinematics after the step with the flexible inputs set after it (not those sent with
    the step); a half step is refused, naming remote mode."""
    side = rigid_side_class().from_scenario(scenario)
    points, joints, H = side.point_names, side.joint_names, side.macro_step
    assert joints, "the test scenario needs a rigid–flexible joint"
    fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
    t = side.time
    if fmu.fmi_version == 2:
        fmu.slave.setupExperiment(startTime=t)
        fmu.slave.enterInitializationMode()
    else:
        fmu.slave.enterInitializationMode(startTime=t)
    fmu.slave.setString(fmu.vr("server.address"), [server.address])
    fmu.slave.exitInitializationMode()
    rest = [0.0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    wrench = [0.2, 0.0, -0.4, 0.0, 0.01, 0.0]
    for p in points:
        fmu.set([f"{p}.{c}" for c in ("fx", "fy", "fz", "mx", "my", "mz")], wrench)
        side.set_wrench(p, wrench)
    for j in joints:
        side.set_flex_kinematics(j, rest)  # what the FMU sends until its inputs are set
    fmu.do_step(t, 2 * H)
    side.step(H)
    side.step(H)
    outputs = [f"{p}.{c}" for p in points for c in COMPONENTS]
    assert bits(fmu.get(outputs)) == bits([x for p in points for x in side.point_outputs()[p]])

    for j in joints:  # the flexible side's report for the new time: the rigid point, moved
        flex = side.point_outputs()[side.joint_point(j)].copy()
        flex[:3] += [1e-3, -2e-3, 0.5e-3]
        flex[7:10] += 0.01
        fmu.set([f"{j}.flex.{c}" for c in COMPONENTS], flex)
        side.set_flex_kinematics(j, flex)
    gaps = side.gaps()
    got = fmu.get([f"{j}.{g}" for j in joints for g in ("gap_pos", "gap_rot", "gap_vel",
                                                         "gap_angvel")])
    assert bits(got) == bits([x for j in joints for x in gaps[j]])
    assert got[0] == pytest.approx(np.sqrt(1 + 4 + 0.25) * 1e-3, rel=1e-12)

    with pytest.raises(FMICallException):
        fmu.do_step(t + 2 * H, 0.5 * H)
    assert "remote mode: no half steps" in fmu.messages()
    fmu.slave.terminate()
    fmu.slave.freeInstance()


def test_joining_a_session_of_another_macro_step_fails_initialization(fmu_path, scenario,
                                                                       server, tmp_path):
    H = rigid_side_class().from_scenario(scenario).macro_step
    with Client(server.address) as owner:
        owner.create_session(scenario, overrides={"cosim.macro_step": repr(2 * H)})
        fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
        if fmu.fmi_version == 2:
            fmu.slave.setupExperiment(startTime=0.0)
            fmu.slave.enterInitializationMode()
        else:
            fmu.slave.enterInitializationMode(startTime=0.0)
        fmu.slave.setString(fmu.vr("server.address", "server.session"),
                            [server.address, owner.session])
        with pytest.raises(FMICallException):
            fmu.slave.exitInitializationMode()
        assert f"steps {2 * H!r} s, but this FMU was exported for the macro step {H!r} s" in (
            fmu.messages())
        fmu.slave.freeInstance()


def test_joining_a_session_without_the_body_points_fails_initialization_naming_them(
        fmu_path, scenario, server, tmp_path):
    """The body outputs read the FMU's own points at the bodies' centres of mass: a session
    created from the plain scenario lacks them, and joining it fails naming them."""
    with Client(server.address) as owner:
        owner.create_session(scenario)
        fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
        if fmu.fmi_version == 2:
            fmu.slave.setupExperiment(startTime=0.0)
            fmu.slave.enterInitializationMode()
        else:
            fmu.slave.enterInitializationMode(startTime=0.0)
        fmu.slave.setString(fmu.vr("server.address", "server.session"),
                            [server.address, owner.session])
        with pytest.raises(FMICallException):
            fmu.slave.exitInitializationMode()
        assert (f"session {owner.session!r} has no points at the bodies' centres of mass "
                "(_body_") in fmu.messages()
        fmu.slave.freeInstance()


@pytest.mark.parametrize("version", [2, 3])
def test_remote_body_and_joint_outputs_equal_rbcosim_run(server, version, tmp_path):
    """The remote FMU's body outputs (its own points at the bodies' centres of mass, angular
    velocity turned into the body frame) and joint coordinates (from those and the scenario's
    markers) equal `rbcosim run --joint-coordinates`'s columns to 1e-12: the slider-crank, its
    crank turning past ±π (revolute, spherical, universal and prismatic joints)."""
    scenario = REPO / "scenarios" / "slider_crank.toml"
    path = export_fmu(scenario, tmp_path / "sc.fmu",
                      ExportOptions(fmi_version=version, mode="remote"))
    model = load_scenario(scenario).model
    columns = body_columns(model) + coordinate_columns(model)
    outputs = {v.name for v in fmpy.read_model_description(str(path)).modelVariables
               if v.causality == "output"}
    assert outputs == set(columns)  # no variable of the FMU's own points
    got = fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.01, output=columns,
                            start_values={"server.address": server.address})
    out = tmp_path / "run.csv"
    assert main(["run", str(scenario), "--t-end", "1.0", "--joint-coordinates", "--out",
                 str(out), "--quiet"]) == 0
    ref = Results.read_csv(out)
    assert bits(got["time"]) == bits(ref.t)
    worst = max(np.abs(got[c] - ref[c]).max() for c in columns)
    assert worst <= 1e-12, worst
    assert abs(got["crank_pivot.angle"][-1]) > 3 * np.pi
