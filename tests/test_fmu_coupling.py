"""The exported rigid–flexible pendulum FMU, coupled step by step through FMPy's low-level API
with the reference flexible body, reproduces the in-process co-simulation to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException
from test_fmu_support import REPO, bits, open_fmu

from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.cosim.master import CosimMaster, build_endpoints, run_cosimulation
from rbcosim.cosim.signals import evaluate
from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.fmu

SCENARIO = REPO / "scenarios" / "rigid_flex_pendulum.toml"
STEPS = 200  # 0.05 s at H = 2.5e-4 s
KINEMATICS = ("x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz")
MOTION = KINEMATICS + ("ax", "ay", "az", "alx", "aly", "alz")
WRENCH = ("fx", "fy", "fz", "mx", "my", "mz")


def _scenario(steps, **cosim):
    """The pendulum for `steps` macro steps, every step a results row; `cosim` overrides."""
    if not SCENARIO.is_file():
        pytest.skip(f"{SCENARIO} is not in this checkout")
    t_end = steps * load_scenario(SCENARIO).cosim.macro_step
    overrides = {"solver.t_end": repr(t_end), "solver.output_every": "1"}
    overrides.update({f"cosim.{k}": v for k, v in cosim.items()})
    return load_scenario(SCENARIO, overrides)


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"rigid_flex_fmi{request.param}.fmu"
    return export_fmu(SCENARIO, out, ExportOptions(fmi_version=request.param))


class FmiMaster:
    """CosimMaster's exchange with the rigid side behind an FMU: the same calls on the
    FlexEndpoints in the same order, the rigid side's reads and writes as FMI get/set, its
    steps as doStep and its save/restore as get/set FMU state, through FMPy."""

    def __init__(self, fmu, scenario):
        self.fmu = fmu
        self.settings = scenario.cosim
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
        motions = self.motions(self.t)
        for joint, ep in self.endpoints.items():
            handover = ep.initialize(self.t, motions[joint])[joint]
            self.handovers[joint] = handover
            if handover is not None:
                point = ep.coupling.point
                fmu.set(
                    [f"{point}.added_mass[{i},{j}]" for i in range(1, 7) for j in range(1, 7)],
                    np.ravel(handover[0]),
                )
                slave.setString(fmu.vr(f"{point}.added_mass_frame"), [handover[1]])
        # CosimMaster holds the initial wrenches before the first step: set in initialization
        # mode, they are what the accelerations after it see (inputs set in step mode change
        # no output before the next doStep).
        self.set_polynomials()
        slave.exitInitializationMode()
        self.exchange_reports()

    def motions(self, t):
        """Each joint's rigid point motion (outputs and accelerations) now, at time t."""
        return {
            joint: motion_of(
                np.array(self.fmu.get([f"{ep.coupling.point}.{c}" for c in MOTION])), t
            )
            for joint, ep in self.endpoints.items()
        }

    def exchange_reports(self):
        for joint, ep in self.endpoints.items():
            kinematics, energy = ep.report()[joint]
            self.fmu.set(
                [f"{joint}.flex.{c}" for c in KINEMATICS] + [f"{joint}.flex_energy"],
                [*kinematics, energy],
            )

    def set_polynomials(self, ends=None):
        """Each endpoint's wrench polynomial for the step, as the FMU's wrench inputs."""
        polynomials = {}
        for joint, ep in self.endpoints.items():
            polynomial = ep.polynomial(self.t, None if ends is None else ends[joint])
            self.set_polynomial(ep.coupling.point, polynomial)
            polynomials[joint] = polynomial
        return polynomials

    def set_polynomial(self, point, polynomial):
        """W + Ẇ τ + ½ Ẅ τ² + ⅙ W⃛ τ³: the inputs are the derivatives, so 2 c₂ (exact in
        binary) and 6 c₃ (the FMU's division by 6 may differ from c₃ in the last bit)."""
        c = np.zeros((4, 6))
        c[: len(polynomial)] = polynomial
        self.fmu.set(
            [f"{point}.{p}{w}" for p in ("", "d", "d2", "d3") for w in WRENCH],
            [*c[0], *c[1], *(2.0 * c[2]), *(6.0 * c[3])],
        )

    def step(self):
        t, H, scheme = self.t, self.H, self.settings.scheme
        motions = self.motions(t)
        if scheme == "jacobi":
            self.set_polynomials()
            for joint, ep in self.endpoints.items():
                ep.advance(t, motions[joint])
            self.fmu.do_step(t, H)
        elif scheme == "gauss_seidel_rigid_first":
            self.set_polynomials()
            self.fmu.do_step(t, H)
            ends = self.motions(t + H)
            for joint, ep in self.endpoints.items():
                ep.advance(t, motions[joint], future=ends[joint])
        elif scheme == "gauss_seidel_flex_first":
            for joint, ep in self.endpoints.items():
                ep.advance(t, motions[joint])
            self.set_polynomials({j: ep.rigid_input() for j, ep in self.endpoints.items()})
            self.fmu.do_step(t, H)
        elif scheme == "iterative":
            self._iterate(motions)
        else:
            raise NotImplementedError(f"the FMU has no interface-Jacobian inputs: {scheme}")
        for joint, ep in self.endpoints.items():
            ep.commit(motions[joint])
        self.t = t + H
        self.exchange_reports()

    def _iterate(self, motions):
        """CosimMaster._iterate's sequence: two half steps per pass, the wrench cubic through
        the previous macro value, t, mid-step and end."""
        t, H = self.t, self.H
        half = 0.5 * H
        saved = self.fmu.get_state()
        saved_flex = {j: ep.get_state() for j, ep in self.endpoints.items()}
        guess = {}
        for joint, ep in self.endpoints.items():
            c = ep.polynomial(t)
            guess[joint] = (evaluate(c, half), evaluate(c, H))
        for iteration in range(1, self.settings.max_iterations + 1):
            for joint, ep in self.endpoints.items():
                self.set_polynomial(ep.coupling.point, ep.iteration_polynomial(t, *guess[joint]))
            self.fmu.do_step(t, half)
            mids = self.motions(t + half)
            self.fmu.do_step(t + half, half)
            ends = self.motions(t + H)
            change = 0.0
            for joint, ep in self.endpoints.items():
                new = (ep.advance_in_halves(t, motions[joint], mids[joint], ends[joint]),
                       ep.rigid_input())
                for old_w, new_w in zip(guess[joint], new):
                    change = max(
                        change, np.linalg.norm(new_w - old_w) / (1.0 + np.linalg.norm(new_w))
                    )
                guess[joint] = new
            if change <= self.settings.tolerance:
                return
            assert iteration < self.settings.max_iterations, "did not converge"
            self.fmu.set_state(saved)
            for joint, blob in saved_flex.items():
                self.endpoints[joint].set_state(blob)

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
    rigid = [
        c for c in reference.columns if c.startswith(("tip.", "clamp.")) and not c.endswith(WRENCH)
    ]
    flex = [c for c in reference.columns if c.startswith("beam.")]
    assert len(rigid) == 13 + 4 + 1 and flex
    return rigid, flex


def _same(a, b, exact: bool) -> bool:
    """Bitwise equal, or (exact=False) equal to round-off: 1e-11 relative to each column, or
    1e-14 absolute (the continuity gaps are differences of nearly equal poses)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if exact:
        return bits(a) == bits(b)
    scale = np.max(np.abs(b), axis=0, keepdims=True) + 1e-300
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 1e-11 * scale + 1e-14))


def _couple_and_compare(fmu_path, scenario, unzipdir, rollback=False, exact=True):
    """Run FmiMaster and, in lockstep, CosimMaster; compare the motions handed to the flexible
    side at each step, then the rows with run_cosimulation's: to the bit (exact), or to
    round-off where the FMU's inputs cannot carry the master's numbers exactly (the third
    wrench derivative, divided by 6 inside the FMU)."""
    reference = run_cosimulation(scenario, progress=False)
    steps = len(reference.data) - 1
    rigid_cols, flex_cols = _compared_columns(reference)
    fmu = open_fmu(fmu_path, unzipdir, initialize=False)
    master = FmiMaster(fmu, scenario)
    # The in-process master in lockstep, for what the results file does not hold: the
    # motions (accelerations included) handed to the flexible side.
    lockstep = CosimMaster(scenario)

    def row():
        return np.concatenate(
            [fmu.get(rigid_cols), *(ep.row() for ep in master.endpoints.values())]
        )

    def motion_bits(m):
        return bits(np.concatenate([x.as_array() for x in m.values()]))

    rows = [row()]
    for n in range(steps):
        fmu_motions, own = master.motions(master.t), lockstep.motions()
        if exact:
            assert motion_bits(fmu_motions) == motion_bits(own), n
        else:
            assert _same([m.as_array() for m in fmu_motions.values()],
                         [m.as_array() for m in own.values()], exact=False), n
        if n == steps // 2:
            saved = master.get_state()
        master.step()
        lockstep.step()
        rows.append(row())

    expected = reference.data[:, [reference.columns.index(c) for c in rigid_cols + flex_cols]]
    assert np.array(rows).shape == expected.shape
    assert _same(rows, expected, exact)

    if rollback:  # both sides back to the middle of the run, re-stepped: the same bits again
        master.set_state(saved)
        again = [row()]
        for _ in range(steps - steps // 2):
            master.step()
            again.append(row())
        assert _same(again, rows[steps // 2 :], exact)
    fmu.close()
    return master


def test_fmu_with_flexible_body_reproduces_cosimulation_to_the_bit(fmu_path, tmp_path):
    scenario = _scenario(STEPS)  # the scenario as shipped: its scheme and extrapolation
    master = _couple_and_compare(fmu_path, scenario, tmp_path / "u", rollback=True)
    # The pendulum needs the added-mass handover (the beam outweighs the link's tip).
    assert all(h is not None and h[1] == "point" for h in master.handovers.values())


@pytest.mark.parametrize(
    ("scheme", "extrapolation"),
    [
        ("jacobi", "1"),
        ("jacobi", "2"),
        ("gauss_seidel_rigid_first", "1"),
        ("gauss_seidel_flex_first", "2"),
        ("iterative", "1"),
    ],
)
def test_every_scheme_through_the_fmu_reproduces_cosimulation(
    fmu_path, tmp_path, scheme, extrapolation
):
    scenario = _scenario(40, scheme=scheme, extrapolation=extrapolation)
    _couple_and_compare(fmu_path, scenario, tmp_path / "u", exact=scheme != "iterative")


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
