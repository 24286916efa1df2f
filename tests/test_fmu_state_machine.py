"""The FMU's FMI state machine, as an attacker would try it: every call out of FMI's order, on
unknown or read-only variables, with a step that is not the macro step, or with a spoiled FMU
state is refused (never OK), changes nothing, and never crashes the host. Each case runs in a
child process (fmu_calls.py) so that a SIGSEGV fails the test instead of killing pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_fmu_support import scenario_with_points

from rbcosim.fmu_export import ExportOptions, export_fmu

pytestmark = pytest.mark.fmu

OK = 0
CALLS = Path(__file__).with_name("fmu_calls.py")
FUZZ_SEQUENCES = 500  # per FMI version
FUZZ_BATCHES = 2
FUZZ_BUDGET = 60.0  # s, both FMI versions


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return scenario_with_points(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture(scope="module", params=[2, 3], ids=["fmi2", "fmi3"])
def fmu_path(request, scenario, tmp_path_factory):
    out = tmp_path_factory.mktemp("fmus") / f"machine_fmi{request.param}.fmu"
    return export_fmu(scenario, out, ExportOptions(fmi_version=request.param))


def run(fmu_path, case, *args, timeout=300):
    """The case's JSON result; fails (rather than crashing pytest) if the child dies."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # this rbcosim
    done = subprocess.run(
        [sys.executable, str(CALLS), str(fmu_path), case, *map(str, args)],
        check=False, capture_output=True, text=True, timeout=timeout, env=env,
    )
    assert done.returncode == 0, (
        f"{case}: the host process died (return code {done.returncode})\n{done.stderr[-3000:]}"
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_step_after_a_refused_deserialisation_does_not_crash(fmu_path):
    result = run(fmu_path, "step_after_refused_deserialisation")
    assert result["step"] == OK  # deserialising changed nothing in the instance
    assert result["restore"] != OK
    assert result["step_after_restore"] != OK  # the instance is in the error state


def test_step_after_terminate_is_refused(fmu_path):
    assert run(fmu_path, "step_after_terminate")["step"] != OK


def test_second_initialization_is_refused(fmu_path):
    result = run(fmu_path, "second_initialization")
    assert result["first"] == OK
    assert result["twice"] != OK
    assert result["after_exit"] != OK


def test_unknown_value_references_are_refused(fmu_path):
    result = run(fmu_path, "unknown_value_reference")
    assert result["set"] != OK and result["get"] != OK
    assert result["unchanged"]
    assert result["step"] != OK  # after a refused call


def test_setting_outputs_and_fixed_parameters_is_refused(fmu_path):
    result = run(fmu_path, "set_output")
    assert result["set"] != OK
    assert result["unchanged"]
    assert result["set_parameter_after_init"] != OK


def test_steps_other_than_the_macro_step_are_refused(fmu_path):
    result = run(fmu_path, "odd_step_sizes")
    for name in ("1.5H", "0.3H", "1000.5H"):
        assert result[name] != OK, name
        assert result[name + " unchanged"], name


def test_a_whole_multiple_of_the_macro_step_is_that_many_macro_steps(fmu_path):
    result = run(fmu_path, "multiple_step")
    assert result["status"] != OK or result["same_as_k_steps"], result
    assert result["max_output"] < 1e3


def test_spoiled_fmu_states_are_refused_and_change_nothing(fmu_path):
    result = run(fmu_path, "corrupted_blobs")
    assert result["accepted"] == []
    assert result["changed"] == []
    assert result["same_as_twin"]


def test_fuzzed_call_sequences(fmu_path):
    """Random FMI call sequences (seeded): no crash, no OK for an illegal call, nothing changed
    by a refused one; FUZZ_SEQUENCES per FMI version, each batch bounded by FUZZ_BUDGET (a hang
    fails the run's timeout; how fast the batches go depends on the machine's load, so it is
    printed, not asserted)."""
    start, violations = time.monotonic(), []
    totals = dict.fromkeys(("sequences", "calls", "refused", "steps"), 0)
    per_batch = FUZZ_SEQUENCES // FUZZ_BATCHES
    for batch in range(FUZZ_BATCHES):
        result = run(fmu_path, "fuzz", 1000 + batch, per_batch, timeout=FUZZ_BUDGET)
        violations += result.pop("violations")
        for key, n in result.items():
            totals[key] += n
    elapsed = time.monotonic() - start
    print(f"fuzz: {totals} in {elapsed:.1f} s")
    assert violations == []
    assert totals["sequences"] >= FUZZ_SEQUENCES
    assert totals["steps"] > 0 and totals["refused"] > 0  # both kinds of call were reached
