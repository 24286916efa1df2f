"""One flexible-solver process that drives several joints as ONE client (one attach, one step
message per macro step with all its wrenches, one reply with all their motions) gives the
in-process master's bits — several one-node bodies, and a body at two interface nodes;
`rbcosim cosim` starts one process per flexible body and `--serve-external` prints one
`rbcosim flex` command per body."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from service_helpers import running_server

from rbcosim.cli.main import main
from rbcosim.client import Client
from rbcosim.distributed.driver import (
    CosimOptions,
    merge_results,
    run_distributed,
    start_flex,
)
from rbcosim.distributed.flex_solver import read_results, select_joints
from rbcosim.errors import ScenarioError
from rbcosim.results import Results
from rbcosim.scenario.loader import load_scenario
from rbcosim.service import Service

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[1]
TWO_BEAMS = ROOT / "scenarios" / "two_beams.toml"
JOINTS = ["clamp_tip", "clamp_side"]


# Two 1 kg bodies on vertical sliders at x = 0 and x = 1 m, joined by a grounded steel beam
# clamped at both ends (ONE flexible body at two interface nodes: joints left and right), and
# a floating cantilever `arm` clamped on body a (joint arm_clamp), under gravity.
SLIDERS = """
[bodies.a]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
position = [0.0, 0.0, 0.0]
[bodies.b]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
position = [1.0, 0.0, 0.0]
[joints.ja]
type = "prismatic"
body1 = "ground"
body2 = "a"
at = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
[joints.jb]
type = "prismatic"
body1 = "ground"
body2 = "b"
at = [1.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
[interface_points.pa]
body = "a"
[interface_points.pb]
body = "b"
[interface_points.pc]
body = "a"
[flex_bodies.beam]
kind = "beam"
attachment = "grounded"
length = 1.0
youngs_modulus = 2.1e11
density = 7850.0
section = "square"
width = 0.01
elements = 4
modes = 4
planar = true
output_nodes = { mid = 0.5 }
[flex_bodies.arm]
kind = "beam"
attachment = "floating"
length = 0.3
youngs_modulus = 2.1e11
density = 7850.0
section = "square"
width = 0.01
elements = 3
modes = 2
planar = true
output_nodes = { tip = "end" }
[couplings.left]
point = "pa"
flex_body = "beam"
[couplings.arm_clamp]
point = "pc"
flex_body = "arm"
[couplings.right]
point = "pb"
flex_body = "beam"
node = "end"
[cosim]
macro_step = 1e-4
[solver]
t_end = 0.005
output_every = 10
"""


def sliders(tmp_path: Path) -> Path:
    path = tmp_path / "sliders.toml"
    path.write_text(SLIDERS)
    return path


def in_process(tmp_path: Path, sets: list[str]) -> Results:
    out = tmp_path / "two_beams.run.csv"
    args = ["run", str(TWO_BEAMS), "--out", str(out), "--quiet"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return Results.read_csv(out)


def assert_bitwise(columns: list[str], data: np.ndarray, reference: Results) -> None:
    assert columns == reference.columns
    assert data.shape == reference.data.shape
    differ = [columns[i] for i in np.flatnonzero((data != reference.data).any(axis=0))]
    assert not differ, f"columns that differ: {differ}"


@pytest.mark.parametrize("scheme", ["gauss_seidel_flex_first", "gauss_seidel_rigid_first",
                                    "interface_jacobian"])
def test_one_process_owning_both_joints_equals_in_process_bitwise(tmp_path, scheme):
    """Two beams (two flexible bodies, each with its added mass handed over) driven by one
    `rbcosim flex --joint clamp_tip --joint clamp_side` process: the same numbers as
    run_cosimulation, and the server saw one client."""
    sets = ["solver.t_end=0.01", f'cosim.scheme="{scheme}"', "solver.output_every=8"]
    reference = in_process(tmp_path, sets)
    overrides = dict(s.split("=", 1) for s in sets)
    with running_server(Service()) as server, Client(server.address, timeout=30) as client:
        sid = client.create_session(TWO_BEAMS, overrides=overrides,
                                    wait_for_joints=True)["session"]
        proc = start_flex(server.address, sid, list(reversed(JOINTS)), TWO_BEAMS, sets,
                          tmp_path, CosimOptions(timeout=60))
        assert proc.proc.wait(120) == 0, proc.log.read_text()
        state = client.heartbeat()
        assert len(state["clients"]) == 1 and state["step"] == 40
        columns, data = merge_results(load_scenario(TWO_BEAMS, sets), client.results(),
                                      read_results(proc.out))
    assert_bitwise(columns, data, reference)


def test_a_two_joint_solver_resumes_from_its_checkpoint_bitwise(tmp_path):
    """Run to the end with checkpoints every 16 steps, restore the session's last snapshot
    (step 32 of 40), and let a new two-joint process take both joints over from its
    checkpoint of that step: the in-process numbers, bit for bit."""
    sets = ["solver.t_end=0.01", "solver.output_every=8"]
    reference = in_process(tmp_path, sets)
    overrides = dict(s.split("=", 1) for s in sets)
    options = CosimOptions(timeout=60, checkpoint_every=16, checkpoint_dir=tmp_path / "ckpt")
    with running_server(Service()) as server, Client(server.address, timeout=30) as client:
        sid = client.create_session(TWO_BEAMS, overrides=overrides, wait_for_joints=True,
                                    snapshot_every=16)["session"]
        (tmp_path / "first").mkdir()
        first = start_flex(server.address, sid, JOINTS, TWO_BEAMS, sets, tmp_path / "first",
                           options)
        assert first.proc.wait(120) == 0, first.log.read_text()
        assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [
            "clamp_tip+clamp_side.16.ckpt", "clamp_tip+clamp_side.32.ckpt"]
        assert client.restore("auto")["step"] == 32
        (tmp_path / "second").mkdir()
        second = start_flex(server.address, sid, JOINTS, TWO_BEAMS, sets, tmp_path / "second",
                            options, resume=True)
        assert second.proc.wait(120) == 0, second.log.read_text()
        assert len(client.heartbeat()["clients"]) == 1  # the new one took both joints over
        columns, data = merge_results(load_scenario(TWO_BEAMS, sets), client.results(),
                                      read_results(second.out))
    assert_bitwise(columns, data, reference)


def test_cosim_starts_one_process_per_flexible_body(tmp_path):
    sets = ["solver.t_end=0.005"]
    run = run_distributed(TWO_BEAMS, sets, CosimOptions(progress=False, log=lambda _: None))
    assert set(run.processes) == set(JOINTS)
    assert len(set(run.processes.values())) == 2  # two bodies, one joint each
    assert_bitwise(run.results.columns, run.results.data, in_process(tmp_path, sets))


def test_serve_external_prints_one_command_per_body_and_they_run(tmp_path):
    """On the sliders (the two-node beam and the arm), the printed commands — one per body,
    `--body NAME`, the beam's covering both its joints — run as they are and drive the session
    to the end: the rigid columns are the in-process run's, bit for bit."""
    path = sliders(tmp_path)
    lines: list[str] = []
    outcome: dict = {}

    def drive():
        try:
            outcome["run"] = run_distributed(path, [], CosimOptions(
                serve_external=True, progress=False, log=lines.append))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while len([ln for ln in lines if "rbcosim flex" in ln]) < 2 and "error" not in outcome:
        assert time.monotonic() < deadline, lines
        time.sleep(0.05)
    printed = [ln for ln in lines if "rbcosim flex" in ln]
    assert len(printed) == 2, lines
    assert printed[0].startswith("  body beam (joints left at point pa, right at point pb): ")
    assert printed[1].startswith("  body arm (joints arm_clamp at point pc): ")
    commands = [ln.split(": ", 1)[1] for ln in printed]
    assert "--body beam " in commands[0] and "--body arm " in commands[1]
    procs = [subprocess.Popen([sys.executable, "-m", "rbcosim", *shlex.split(c)[1:]],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in commands]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out
    thread.join(120)
    assert "error" not in outcome, outcome.get("error")
    out = tmp_path / "ref.csv"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    reference = Results.read_csv(out)
    results = outcome["run"].results
    rigid = [c for c in results.columns if c in reference.columns]
    assert rigid == results.columns and len(rigid) < len(reference.columns)
    index = [reference.columns.index(c) for c in rigid]
    assert np.array_equal(results.data, reference.data[:, index])


def test_cosim_runs_a_multi_node_body_as_one_client(tmp_path):
    """`rbcosim cosim` runs the two-node beam (joints left and right) in one process and the
    arm in another: the in-process run's numbers, bit for bit."""
    path = sliders(tmp_path)
    out = tmp_path / "ref.csv"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    reference = Results.read_csv(out)
    assert "beam.mid.z" in reference.columns and "arm.tip.z" in reference.columns
    run = run_distributed(path, [], CosimOptions(progress=False, log=lambda _: None))
    pids = run.processes
    assert pids["left"] == pids["right"] != pids["arm_clamp"]
    assert_bitwise(run.results.columns, run.results.data, reference)


def test_one_process_drives_a_multi_node_body_and_another_body(tmp_path):
    """One process driving all three joints (the beam's two and the arm's), rigid side
    first: the in-process run's numbers, bit for bit."""
    path = sliders(tmp_path)
    sets = ['cosim.scheme="gauss_seidel_rigid_first"']
    out = tmp_path / "ref_rigid_first.csv"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--set", sets[0]]) == 0
    reference = Results.read_csv(out)
    with running_server(Service()) as server, Client(server.address, timeout=30) as client:
        sid = client.create_session(path, overrides=dict(s.split("=", 1) for s in sets),
                                    wait_for_joints=True)["session"]
        proc = start_flex(server.address, sid, ["left", "arm_clamp", "right"], path, sets,
                          tmp_path, CosimOptions(timeout=60))
        assert proc.proc.wait(120) == 0, proc.log.read_text()
        assert len(client.heartbeat()["clients"]) == 1
        columns, data = merge_results(load_scenario(path, sets), client.results(),
                                      read_results(proc.out))
    assert_bitwise(columns, data, reference)


def test_joint_selection_errors_name_the_option_and_the_valid_names():
    scenario = load_scenario(TWO_BEAMS)
    assert select_joints(scenario, ["clamp_side"], ["beam_tip"]) == JOINTS
    for joints, bodies, words in (
        (["clamp_x"], [], ["--joint clamp_x", "'clamp_tip'", "two_beams.toml"]),
        ([], ["beam_x"], ["--body beam_x", "'beam_side'"]),
        (["clamp_tip"], ["beam_tip"], ["named twice", "clamp_tip"]),
        ([], [], ["--joint NAME or --body NAME"]),
    ):
        with pytest.raises(ScenarioError) as info:
            select_joints(scenario, joints, bodies)
        assert all(w in str(info.value) for w in words), str(info.value)


def test_a_multi_node_body_is_never_split_between_solvers(tmp_path):
    scenario = load_scenario(sliders(tmp_path))
    # body by body, each in the order of its first coupling: beam (left, right), then arm
    assert select_joints(scenario, ["arm_clamp"], ["beam"]) == ["left", "right", "arm_clamp"]
    assert select_joints(scenario, ["right", "left"]) == ["left", "right"]
    with pytest.raises(ScenarioError) as info:
        select_joints(scenario, ["right", "arm_clamp"])
    assert all(w in str(info.value) for w in ("--joint right", "'beam'", "['left', 'right']",
                                               "--body beam")), str(info.value)


def test_cosim_runs_the_flexible_slider_crank_with_the_rod_in_its_own_process(tmp_path):
    """The slider-crank's chord-frame rod (two pins, one body) as one client in its own process:
    `rbcosim run`'s numbers bit for bit (the in-process run is the one checked against the
    nonlinear chain in tests/test_flexible_slider_crank.py)."""
    path = Path(__file__).resolve().parent.parent / "scenarios" / "flexible_slider_crank.toml"
    sets = ['solver.t_end="6*pi/Omega/32"']  # 200 of the 6400 macro steps
    out = tmp_path / "crank.csv"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--set", sets[0]]) == 0
    reference = Results.read_csv(out)
    assert np.abs(reference.data[:, reference.columns.index("rod.mid.uz")]).max() > 1e-5
    run = run_distributed(path, sets, CosimOptions(progress=False, log=lambda _: None))
    pids = run.processes
    assert len(pids) == 2 and len(set(pids.values())) == 1  # both pins: one rod, one process
    assert_bitwise(run.results.columns, run.results.data, reference)


@pytest.mark.parametrize("scheme", ["gauss_seidel_flex_first", "jacobi"])
def test_rbcosim_cosim_runs_the_pinned_beam_between_two_sliders_bitwise(tmp_path, scheme):
    """`rbcosim cosim` on the shipped grounded two-node scenario (the beam pinned to two
    sprung sliders, its own scheme and Jacobi): one flexible process for both pins, and the
    results file equals `rbcosim run`'s bit for bit."""
    path = ROOT / "scenarios" / "pinned_beam_two_sliders.toml"
    sets = ["--set", "solver.t_end=0.01", "--set", f'cosim.scheme="{scheme}"']
    ref, got = tmp_path / "run.csv", tmp_path / "cosim.csv"
    assert main(["run", str(path), "--out", str(ref), "--quiet", *sets]) == 0
    assert main(["cosim", str(path), "--out", str(got), "--quiet", *sets]) == 0
    reference, results = Results.read_csv(ref), Results.read_csv(got)
    assert np.abs(reference.data[:, reference.columns.index("beam.eta1")]).max() > 0
    assert_bitwise(results.columns, results.data, reference)
