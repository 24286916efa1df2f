"""File fuzz corpus (tests/fuzz_files.py): scenario TOML, checkpoints and state blobs, FMU
states, .npz and .mtx files.

Every case must end in one of rbcosim's own errors naming the file (or the key), or load a
valid result: no traceback, no corruption accepted, no hang (a per-case alarm). Loads and
validates only (no long simulation); the counts per kind are printed (`pytest -s`).
"""

from __future__ import annotations

import math
import random
import signal
import time
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from fuzz_files import Case, byte_mutations, mtx_cases, npz_cases, scenario_cases, state_cases

from rbcosim.errors import RbcosimError, ScenarioError, SimulationError
from rbcosim.flex.io.matrices_io import load_mtx, load_npz
from rbcosim.fmu_export.runtime.fmustate import decode_state, encode_state
from rbcosim.limits import estimate
from rbcosim.scenario.flex_config import flex_model_from_config
from rbcosim.scenario.loader import load_scenario_text
from rbcosim.scenario.reader import MAX_MAGNITUDE
from rbcosim.serialization.codec import unpack_state

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
PER_SCENARIO = 600
PER_STATE = 1000
PER_STRUCTURE = 1000
CASE_SECONDS = 5


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout


def _run(case: Case, check, refusal=RbcosimError) -> str:
    """'refused' (`check` raised `refusal`) or 'accepted'; fails the test on anything else."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        check(case)
        outcome = "accepted"
    except refusal as exc:
        outcome = "refused"
        assert str(exc).strip(), case.label
    except CaseTimeout:
        pytest.fail(f"{case.kind} {case.label}: no answer in {CASE_SECONDS} s")
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{case.kind} {case.label}: {type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if outcome == "accepted" and case.must_refuse:
        pytest.fail(f"{case.kind} {case.label}: corruption accepted")
    return outcome


def _model_numbers(scenario) -> list[float]:
    values = []
    for body in scenario.model.bodies:
        values += [body.mass, *np.ravel(body.inertia), *body.position, *body.velocity]
    values += list(scenario.model.gravity)
    return values


def _check_scenario(case: Case, tmp: Path) -> None:
    source = f"fuzz/{case.label.split(':')[0]}"
    try:
        text = case.data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{source}: not UTF-8 text") from None
    try:
        scenario = load_scenario_text(text, source=source, base_dir=SCENARIOS)
    except ScenarioError as exc:
        assert str(exc).startswith(source + ":"), str(exc)
        raise
    numbers = _model_numbers(scenario)
    assert all(math.isfinite(x) and abs(x) <= MAX_MAGNITUDE for x in numbers), case.label
    for name, cfg in scenario.flex_bodies.items():
        flex_model_from_config(cfg, SCENARIOS, f"{source}: flex_bodies.{name}")
    estimate(scenario)
    # The same text loads to the same model again (validation has no hidden state).
    again = load_scenario_text(text, source=source, base_dir=SCENARIOS)
    assert _model_numbers(again) == numbers


def _scenario_corpus(rng: random.Random) -> list[Case]:
    cases = []
    for path in sorted(SCENARIOS.glob("*.toml")):
        text = path.read_text()
        cases += scenario_cases(rng, path.name, text, tomllib.loads(text), PER_SCENARIO)
    return cases


@pytest.fixture(scope="module")
def rigid_checkpoint(tmp_path_factory):
    from rbcosim.maximal.simulate import RigidSimulation, _save_checkpoint
    from rbcosim.scenario.loader import load_scenario

    scenario = load_scenario(SCENARIOS / "double_pendulum.toml")
    sim = RigidSimulation(scenario.model, scenario.solver)
    rows = [sim.observe()]
    sim.advance(np.arange(3) * scenario.solver.dt, scenario.solver.dt)
    rows.append(sim.observe())
    path = tmp_path_factory.mktemp("ckpt") / "run.ckpt"
    _save_checkpoint(sim, rows, 2, path)
    return scenario, path.read_bytes()


@pytest.fixture(scope="module")
def cosim_master():
    from rbcosim.cosim.master import CosimMaster
    from rbcosim.scenario.loader import load_scenario

    master = CosimMaster(load_scenario(SCENARIOS / "rigid_flex_pendulum.toml"))
    master.step()
    return master


def test_file_fuzz_corpus(tmp_path, rigid_checkpoint, cosim_master):
    from rbcosim.maximal.simulate import RigidSimulation, _load_checkpoint

    rng = random.Random(20261203)
    counts: Counter = Counter()
    start = time.perf_counter()

    for case in _scenario_corpus(rng):
        counts[case.kind, _run(case, lambda c: _check_scenario(c, tmp_path))] += 1

    scenario, blob = rigid_checkpoint
    ckpt = tmp_path / "fuzzed.ckpt"

    def resume(case: Case) -> None:
        ckpt.write_bytes(case.data)
        sim = RigidSimulation(scenario.model, scenario.solver)
        try:
            _load_checkpoint(sim, ckpt)
        except SimulationError as exc:
            assert str(ckpt) in str(exc), str(exc)
            raise

    for case in state_cases(rng, "checkpoint", blob, PER_STATE):
        counts[case.kind, _run(case, resume)] += 1

    master = cosim_master
    saved = master.get_state()
    rigid = unpack_state(saved)["rigid"]

    def restore(case: Case) -> None:
        try:
            master.set_state(case.data)
        except SimulationError:
            assert master.get_state() == saved, f"{case.label}: a refused state changed the master"
            raise
        master.set_state(saved)  # a plausible state was accepted: back for the next case

    nested = {("rigid",), *(("flex", j) for j in master.endpoints)}
    for case in state_cases(rng, "cosim-state", saved, PER_STATE, nested=nested, optional=("flex",)):
        counts[case.kind, _run(case, restore)] += 1

    def restore_rigid(case: Case) -> None:
        before = master.rigid.get_state()
        try:
            master.rigid.set_state(case.data)
        except SimulationError:
            assert master.rigid.get_state() == before, f"{case.label}: refused, yet changed"
            raise

    for case in state_cases(rng, "rigid-state", rigid, PER_STATE, optional=("flex",)):
        counts[case.kind, _run(case, restore_rigid)] += 1

    npz = (SCENARIOS / "two_mass_flex.npz").read_bytes()
    reference = load_npz(SCENARIOS / "two_mass_flex.npz")
    npz_path = tmp_path / "fuzzed.npz"

    def load_fuzzed_npz(case: Case) -> None:
        npz_path.write_bytes(case.data)
        try:
            loaded = load_npz(npz_path)
        except ScenarioError as exc:
            assert "fuzzed.npz" in str(exc), str(exc)
            raise
        assert np.array_equal(loaded.mass, reference.mass), f"{case.label}: changed M accepted"
        assert np.array_equal(loaded.stiffness, reference.stiffness), case.label

    for case in npz_cases(rng, npz, PER_STRUCTURE):
        counts[case.kind, _run(case, load_fuzzed_npz)] += 1

    mtx_dir = SCENARIOS / "data" / "two_mass"
    files = {k: mtx_dir / f"{k.lower()}.mtx" for k in ("M", "K", "C")}
    reference_mtx = load_mtx(files, 1, None)
    fuzzed = tmp_path / "fuzzed.mtx"

    def load_fuzzed_mtx(case: Case) -> None:
        fuzzed.write_bytes(case.data)
        try:
            loaded = load_mtx({**files, "K": fuzzed}, 1, None)
        except ScenarioError as exc:
            assert "fuzzed.mtx" in str(exc), str(exc)
            raise
        assert np.all(np.isfinite(loaded.stiffness)), case.label
        assert loaded.mass.shape == reference_mtx.mass.shape, case.label

    for case in mtx_cases(rng, files["K"].read_bytes(), PER_STRUCTURE):
        counts[case.kind, _run(case, load_fuzzed_mtx)] += 1

    # An FMU state (fmi2SerializeFMUstate's bytes) around a real solver state: every damaged
    # byte must be refused by its digest before anything is restored.
    fmu_blob = encode_state({"values": [0.0, 1.5, float("nan")], "overrides": {"a.b": 2.0},
                             "flex_reported": [True], "wrench_pending": False, "mode": "STEP",
                             "solver": saved, "joint_angles": [[0.0, 3.0, -1.0]]})

    def decode_fuzzed_fmu_state(case: Case) -> None:
        assert decode_state(case.data)["solver"] == saved, f"{case.label}: changed state accepted"

    for i in range(PER_STRUCTURE):
        label, data = byte_mutations(rng, fmu_blob)
        case = Case("fmu-state", label, data, data != fmu_blob)
        counts[case.kind, _run(case, decode_fuzzed_fmu_state, ValueError)] += 1

    elapsed = time.perf_counter() - start
    total = sum(counts.values())
    print(f"\nfile fuzz: {total} cases in {elapsed:.1f} s")
    for (kind, outcome), n in sorted(counts.items()):
        print(f"  {kind:12s} {outcome:9s} {n}")
    assert total >= 10_000
