"""Python (pythonfmu) FMUs in a plain C host (fmu/hosts/fmi_calls.c) exit cleanly after any
call sequence, and answer refused calls with Error, not Fatal.

Each embedded FMU kind runs 20 times in the host, through the sequences that crashed hosts
before (a second terminate, calls with a null instance, an out-of-order sequence, exiting
without free, unloading the binary): every run must end with exit status 0 and the statuses
the FMI standard asks for. Before the wrapper shim (src/rbcosim/fmu_export/packaging/wrapper_shim.c) a
null instance was a SIGSEGV, a refused set fmiFatal, and the exit released pythonfmu's
interpreter state twice (heap corruption in some runs)."""

from __future__ import annotations

import os
import subprocess

import pytest
from fmi_calls_host import build_host, statuses, unpack, values
from test_fmu_support import REPO

from rbcosim.fmu_export import ExportOptions, export_fmu
from rbcosim.fmu_export.packaging.native_fmu import export_native_fmu
from rbcosim.fmu_export.runtime.host_env import host_environment

pytestmark = pytest.mark.fmu

SCENARIO = REPO / "scenarios" / "two_mass_oscillator.toml"
RUNS = 20
OK, ERROR = "0", "3"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return build_host(tmp_path_factory.mktemp("host"))


#: Per kind: export options and an output of the FMU (setting it is refused).
KINDS = {
    "fmi2": (ExportOptions(fmi_version=2), "interface.x"),
    "fmi3": (ExportOptions(fmi_version=3), "interface.x"),
    "flex_fmi2": (ExportOptions(fmi_version=2, flex="structure"), "coupling.flex_energy"),
    "flex_fmi3": (ExportOptions(fmi_version=3, flex="structure"), "coupling.flex_energy"),
}
#: Per kind: an input set in Instantiated (name, value) and an output it changes.
STARTS = {
    "fmi2": ("interface.fx", 0.5, "mass1.vx"),
    "fmi3": ("interface.fx", 0.5, "mass1.vx"),
    "flex_fmi2": ("interface.vx", 0.05, "structure.eta1"),
    "flex_fmi3": ("interface.vx", 0.05, "structure.eta1"),
    "native_fmi2": ("interface.fx", 0.5, "mass1.vx"),
    "native_fmi3": ("interface.fx", 0.5, "mass1.vx"),
}


def exported(kind: str, folder) -> object:
    """The FMU of ``kind`` (KINDS, or ``native_fmiN``: the self-contained C FMU)."""
    if kind.startswith("native"):
        return export_native_fmu(SCENARIO, folder / f"{kind}.fmu", fmi_version=int(kind[-1]),
                                 self_contained=True)
    return export_fmu(SCENARIO, folder / f"{kind}.fmu", KINDS[kind][0])


def sequences(x: int, h: float) -> list[tuple[list[str], list[str]]]:
    """Call sequences with an output's value reference ``x`` and the status each call must
    return ("-": a void call)."""
    run = ["instantiate", "setup:0", "enter:0", "exit", f"step:0:{h!r}"]
    return [
        # a normal run, then a second terminate, free, and calls on a null or freed instance
        (run + ["terminate", "terminate", "free", "null:terminate", "null:free", "free",
                "terminate", "unload"],
         [OK] * 5 + [OK, ERROR, "-", ERROR, "-", "-", ERROR, "0"]),
        # out of order: doStep before initialization, exit twice, setting an output; then
        # the host exits without terminate or free
        (["instantiate", f"step:0:{h!r}", "exit", f"set:{x}:0.2", "quit"],
         [OK, ERROR, ERROR, ERROR, "-"]),
        # a refused set in step mode, a state restored, then exit without free
        (run + ["save", f"set:{x}:0.2", "restore", f"step:{h!r}:{h!r}", "terminate", "quit"],
         [OK] * 5 + [OK, ERROR, OK, OK, OK, "-"]),
        # a step size the FMU refuses, reset, terminate, free, no unload
        (run + [f"step:{h!r}:{h / 3!r}", "reset", "free"],
         [OK] * 5 + [ERROR, OK, "-"]),
    ]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_run_exits_cleanly_with_the_standard_statuses(host, tmp_path, kind):
    options, output = KINDS[kind]
    fmu = export_fmu(SCENARIO, tmp_path / f"{kind}.fmu", options)
    head, refs, h = unpack(fmu, tmp_path / kind)
    env = {**os.environ, **host_environment()}
    plans = sequences(refs[output], h)
    for n in range(RUNS):
        calls, expected = plans[n % len(plans)]
        done = subprocess.run([str(host), *head, *calls], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, (n, calls, done.returncode, done.stderr[-2000:])
        assert statuses(done.stdout) == expected, (calls, done.stdout, done.stderr[-2000:])
        assert "Fatal py exception" not in done.stderr  # refusals are Error, not Fatal
    # the refusal names the variable, and the null instance is named as such
    assert "refused" in done.stderr


@pytest.mark.parametrize("kind", sorted(STARTS))
def test_start_values_in_instantiated_and_a_state_restored_before_initialization(
        host, tmp_path, kind):
    """fmusim's --start-value and --initial-fmu-state-file, replayed in the C host: an input
    set in Instantiated acts from the start (the output after two steps differs from a run
    without it), and a state saved after the first step, serialized, restored into a fresh
    instance before its initialization steps on to the same bits as the run that went on."""
    name, value, output = STARTS[kind]
    head, refs, h = unpack(exported(kind, tmp_path), tmp_path / kind)
    env = {**os.environ, **host_environment()}
    start = ["instantiate", f"set:{refs[name]}:{value!r}", "setup:0", "enter:0", "exit",
             f"step:0:{h!r}"]
    plans = {
        "straight": start + [f"step:{h!r}:{h!r}", f"get:{refs[output]}", "terminate", "free"],
        "without": start[:1] + start[2:] + [f"step:{h!r}:{h!r}", f"get:{refs[output]}"],
        "restored": start + ["save", "serialize", "terminate", "free", "instantiate",
                             "deserialize", "restore", f"step:{h!r}:{h!r}",
                             f"get:{refs[output]}", "terminate", "free"],
    }
    got = {}
    for plan, calls in plans.items():
        done = subprocess.run([str(host), *head, *calls], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, (plan, done.stderr[-2000:])
        assert set(statuses(done.stdout)) <= {OK, "-"}, (plan, done.stdout, done.stderr[-2000:])
        got[plan] = values(done.stdout)[refs[output]]
    assert got["restored"] == got["straight"] != got["without"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_terminate_and_free_after_the_fmus_exit_handlers_are_refused_not_a_crash(
        host, tmp_path, kind):
    """A host that terminates and frees its instances in its own exit handlers, registered
    before it loaded the FMU, calls after the FMU's handler released its Python interpreter
    (OMSimulator does, from its model scope's static destructor, when a script ends without
    oms_terminate: SIGSEGV in PyGILState_Ensure under pythonfmu's Terminate, measured with
    OMSimulator 3.0 and here in the C host before the guard). The calls are answered Error,
    naming the reason, and the host exits 0, 20 runs each."""
    options, _ = KINDS[kind]
    fmu = export_fmu(SCENARIO, tmp_path / f"{kind}.fmu", options)
    head, _, h = unpack(fmu, tmp_path / kind)
    env = {**os.environ, **host_environment()}
    calls = ["instantiate", "setup:0", "enter:0", "exit", f"step:0:{h!r}", "atexit",
             "terminate", "free"]
    for n in range(RUNS):
        done = subprocess.run([str(host), *head, *calls], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, (n, done.returncode, done.stderr[-2000:])
        assert statuses(done.stdout) == [OK] * 5 + ["-", ERROR, "-"], done.stdout
    assert "terminate" in done.stdout and "released at process exit" in done.stderr
