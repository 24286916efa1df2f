"""The exported rigid–flexible pendulum FMU, coupled step by step through FMPy's low-level API
with the reference flexible body, reproduces the in-process co-simulation to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.cosim.master import CosimMaster, build_endpoints, run_cosimulation
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.scenario import load_scenario

pytestmark = pytest.mark.fmu

SCENARIO = REPO / "scenarios" / "rigid_flex_pendulum.toml"
STEPS = 200  # 0.05 s at H = 2.5e-4 s
KINEMATICS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
MOTION = KINEMATICS + ("ax", "ay", "az", "alx", "aly", "alz")
WRENCH = ("fx", "fy", "fz", "mx", "my", "mz")


@pytest.fixture(scope="module")
def scenario():
    if not SCENARIO.is_file():
        pytest.skip(f"{SCENARIO} is not in this checkout")
    t_end = STEPS * load_scenario(SCENARIO).cosim.macro_step
    return load_scenario(SCENARIO, {"solver.t_end": repr(t_end), "solver.output_every": "1"})


@pytest.fixture(scope="module")
def reference(scenario):
    return run_cosimulation(scenario, progress=False)


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"rigid_flex_fmi{request.param}.fmu"
    return export_fmu(SCENARIO, out, ExportOptions(fmi_version=request.param))


class FmiMaster:
    """CosimMaster's Jacobi exchange with the rigid side behind an FMU: the same calls on the
    FlexEndpoints, the rigid side's reads and writes as FMI get/set through FMPy."""

    def __init__(self, fmu, scenario):
        self.fmu = fmu
        self.H = scenario.cosim.macro_step
        self.endpoints = build_endpoints(scenario, self.H)
        self.t = float(fmu.description.defaultExperiment.startTime)
        slave = fmu.slave
        if fmu.fmi_version == 2:
            slave.setupExperiment(startTime=self.t)
            slave.enterInitializationMode()
        else:
            slave.enterInitializationMode(startTime=self.t)
        # In initialization mode the outputs are the exported initial state (zero wrench, no
        # added mass): what CosimMaster hands to FlexEndpoint.initialize.
        self.handovers = {}
        motions = self.motions()
        for joint, ep in self.endpoints.items():
            handover = ep.initialize(self.t, motions[joint])
            self.handovers[joint] = handover
            if handover is not None:
                point = ep.coupling.point
                fmu.set(
                    [f"{point}.added_mass[{i},{j}]" for i in range(1, 7) for j in range(1, 7)],
                    np.ravel(handover[0]),
                )
                slave.setString(fmu.vr(f"{point}.added_mass_frame"), [handover[1]])
        slave.exitInitializationMode()
        self.exchange_reports()

    def motions(self):
        """Each joint's rigid point motion (outputs and accelerations) at the current time."""
        return {
            joint: motion_of(
                np.array(self.fmu.get([f"{ep.coupling.point}.{c}" for c in MOTION])), self.t
            )
            for joint, ep in self.endpoints.items()
        }

    def exchange_reports(self):
        for joint, ep in self.endpoints.items():
            kinematics, energy = ep.report()
            self.fmu.set(
                [f"{joint}.flex.{c}" for c in KINEMATICS] + [f"{joint}.flex_energy"],
                [*kinematics, energy],
            )

    def step(self):
        motions = self.motions()
        for joint, ep in self.endpoints.items():
            c = np.zeros((3, 6))
            polynomial = ep.polynomial(self.t)
            c[: len(polynomial)] = polynomial
            point = ep.coupling.point
            # W + Ẇ τ + ½ Ẅ τ²: the inputs are the derivatives, so 2 c₂ (exact in binary).
            self.fmu.set(
                [f"{point}.{p}{w}" for p in ("", "d", "d2") for w in WRENCH],
                [*c[0], *c[1], *(2.0 * c[2])],
            )
            ep.advance(self.t, motions[joint])
        self.fmu.do_step(self.t, self.H)
        for joint, ep in self.endpoints.items():
            ep.commit(motions[joint])
        self.t += self.H
        self.exchange_reports()

    def get_state(self):
        return self.fmu.get_state(), {j: ep.get_state() for j, ep in self.endpoints.items()}, self.t

    def set_state(self, saved):
        fmu_state, flex, self.t = saved
        self.fmu.set_state(fmu_state)
        for joint, blob in flex.items():
            self.endpoints[joint].set_state(blob)


def _compared_columns(reference):
    """Every FMU output that is a results column (the points' kinematics, the joints' gaps and
    energy residual), then the flexible bodies' columns."""
    names = set(reference.columns)
    rigid = [
        c for c in reference.columns if c.startswith(("tip.", "clamp.")) and not c.endswith(WRENCH)
    ]
    flex = [c for c in reference.columns if c.startswith("beam.")]
    assert rigid and flex and names.issuperset(rigid)
    return rigid, flex


def test_fmu_with_flexible_endpoint_reproduces_cosimulation_to_the_bit(
    fmu_path, scenario, reference, tmp_path
):
    assert (scenario.cosim.scheme, scenario.cosim.extrapolation) == ("jacobi", 1)
    rigid_cols, flex_cols = _compared_columns(reference)
    fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
    master = FmiMaster(fmu, scenario)
    # The in-process master in lockstep, for what the results file does not hold: the
    # accelerations handed to the flexible side.
    lockstep = CosimMaster(scenario)
    assert all(h is not None and h[1] == "point" for h in master.handovers.values())

    def row():
        return np.concatenate(
            [fmu.get(rigid_cols), *(ep.row() for ep in master.endpoints.values())]
        )

    def motion_bits(m):
        return bits(np.concatenate([x.as_array() for x in m.values()]))

    rows = [row()]
    for n in range(STEPS):
        assert motion_bits(master.motions()) == motion_bits(lockstep.motions()), n
        if n == STEPS // 2:
            saved = master.get_state()
        master.step()
        lockstep.step()
        rows.append(row())

    expected = reference.data[:, [reference.columns.index(c) for c in rigid_cols + flex_cols]]
    assert np.array(rows).shape == expected.shape
    assert bits(rows) == bits(expected)

    # Rollback of both sides mid-run and re-stepping gives the same bits again.
    master.set_state(saved)
    again = [row()]
    for _ in range(STEPS - STEPS // 2):
        master.step()
        again.append(row())
    fmu.close()
    assert bits(again) == bits(rows[STEPS // 2 :])


def test_bad_added_mass_frame_fails_initialization_naming_it(fmu_path, tmp_path):
    fmu = open_fmu(fmu_path, tmp_path / "u", initialize=False)
    t0 = float(fmu.description.defaultExperiment.startTime)
    if fmu.fmi_version == 2:
        fmu.slave.setupExperiment(startTime=t0)
        fmu.slave.enterInitializationMode()
    else:
        fmu.slave.enterInitializationMode(startTime=t0)
    fmu.set(["tip.added_mass[1,1]"], [0.5])
    fmu.slave.setString(fmu.vr("tip.added_mass_frame"), ["body"])
    with pytest.raises(FMICallException):
        fmu.slave.exitInitializationMode()
    assert (
        "tip.added_mass_frame: expected one of ['point', 'inertial'], got 'body'" in fmu.messages()
    )
    fmu.slave.freeInstance()
