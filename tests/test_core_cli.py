"""`rbcosim check` and `rbcosim run` in process: degrees of freedom, redundancy, consistency,
and the results file's columns."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from rbcosim.cli.main import main
from rbcosim.results import Results

pytestmark = pytest.mark.scenarios

# A planar four-bar with four revolutes: in space that is 3·6 − 4·5 = −2 by Grübler–Kutzbach,
# while the mechanism moves with one degree of freedom, so three rows are redundant.
FOUR_BAR = """
[bodies.crank]
mass = 1.0
inertia = [1e-3, 1e-3, 1e-3]
position = [0.0, 0.0, 0.05]

[bodies.coupler]
mass = 1.0
inertia = [1e-3, 1e-3, 1e-3]
position = [0.175, 0.0, 0.15]

[bodies.rocker]
mass = 1.0
inertia = [1e-3, 1e-3, 1e-3]
position = [0.375, 0.0, 0.1]

[joints.o]
type = "revolute"
body1 = "ground"
body2 = "crank"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[joints.a]
type = "revolute"
body1 = "crank"
body2 = "coupler"
at = [0.0, 0.0, 0.1]
axis = [0.0, 1.0, 0.0]

[joints.b]
type = "revolute"
body1 = "coupler"
body2 = "rocker"
at = [0.35, 0.0, 0.2]
axis = [0.0, 1.0, 0.0]

[joints.d]
type = "revolute"
body1 = "rocker"
body2 = "ground"
at = [0.4, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
"""

# Two 1 m arms hinged 3 m apart whose tips a ball joint should join: they cannot meet.
UNASSEMBLABLE = """
[bodies.a]
mass = 1.0
inertia = [1e-3, 0.08, 0.08]
position = [0.4330127018922193, 0.0, 0.25]
orientation = { axis = [0.0, 1.0, 0.0], angle_deg = -30.0 }
[bodies.a.markers.tip]
position = [0.5, 0.0, 0.0]

[bodies.b]
mass = 1.0
inertia = [1e-3, 0.08, 0.08]
position = [2.5, 0.0, 0.0]
[bodies.b.markers.tip]
position = [-0.5, 0.0, 0.0]

[joints.hinge_a]
type = "revolute"
body1 = "ground"
body2 = "a"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[joints.hinge_b]
type = "revolute"
body1 = "ground"
body2 = "b"
at = [3.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[joints.link]
type = "spherical"
marker1 = "a.tip"
marker2 = "b.tip"
"""


def check(capsys, path, *extra):
    code = main(["check", str(path), *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize(
    "name, dof",
    [
        ("double_pendulum", 2),
        ("slider_crank", 1),
        ("heavy_top", 3),
        ("free_body", 6),
        ("chain", 10),
    ],
)
def test_check_counts_degrees_of_freedom(capsys, scenarios_dir, name, dof):
    code, out, _ = check(capsys, scenarios_dir / f"{name}.toml")
    assert code == 0
    assert f"degrees of freedom: {dof} (from the rank), Grübler–Kutzbach count: {dof}" in out
    assert "redundant" not in out
    assert "PROBLEM" not in out


def test_check_chain_count_follows_the_override(capsys, scenarios_dir):
    code, out, _ = check(capsys, scenarios_dir / "chain.toml", "--set", "generators.chain.links=4")
    assert code == 0
    assert "degrees of freedom: 4 (from the rank)" in out


def test_check_names_the_redundant_constraints_of_a_planar_four_bar(capsys, tmp_path):
    path = tmp_path / "four_bar.toml"
    path.write_text(FOUR_BAR)
    code, out, _ = check(capsys, path)
    assert code == 0  # redundant rows are dropped, the model still runs
    assert "constraint equations: 20, rank of Φ_q: 17" in out
    assert "degrees of freedom: 1 (from the rank), Grübler–Kutzbach count: -2" in out
    assert "redundant constraints (3, dropped by the solver):" in out
    listed = out.split("redundant constraints (3, dropped by the solver):\n")[1].splitlines()[:3]
    for line in listed:
        joint, what = line.strip().split(": ", 1)
        assert joint in {"o", "a", "b", "d"} and what, line


def test_check_rejects_an_unassemblable_model(capsys, tmp_path):
    path = tmp_path / "gap.toml"
    path.write_text(UNASSEMBLABLE)
    code, out, _ = check(capsys, path)
    assert code == 1
    assert "PROBLEM: the initial positions cannot be assembled" in out


def test_check_assembles_a_fixable_start(capsys, tmp_path):
    # the same arms hinged 1.5 m apart can meet (a locked triangle): exit 0, state printed
    path = tmp_path / "gap.toml"
    path.write_text(UNASSEMBLABLE)
    code, out, _ = check(
        capsys,
        path,
        "--assemble",
        "--set",
        "joints.hinge_b.at=[1.5, 0.0, 0.0]",
        "--set",
        "bodies.b.position=[1.0, 0.0, 0.0]",
    )
    assert code == 0, out
    assert "initial ‖Φ‖∞ = 5.000e-01" in out  # tips at (0.866, 0, 0.5) and (0.5, 0, 0)
    assert "after assembly ‖Φ‖∞" in out
    assert "[bodies.b]" in out and "PROBLEM" not in out


HINGED_ROD = """
[bodies.rod]
mass = 1.0
inertia = [0.02, 0.02, 1e-4]
position = [0.0, 0.0, -0.25]
velocity = [0.0, 0.0, 1.0]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
[solver]
integrator = "rk4"
dt = 1e-3
t_end = 0.1
"""


def test_check_gives_a_verdict_and_refuses_inconsistent_velocities(capsys, tmp_path):
    # A rod hinged at the origin moving along itself at 1 m/s: the hinge point's velocity
    # v + ω × (R s) = (0, 0, 1), so ‖Φ_q v + Φ_t‖∞ = 1 exactly (the axis rows stay 0, ω = 0).
    path = tmp_path / "rod.toml"
    path.write_text(HINGED_ROD)
    code, out, _ = check(capsys, path)
    assert code == 1
    assert "‖Φ_q v + Φ_t‖∞ = 1.000e+00" in out
    assert "PROBLEM: the initial state violates the joints" in out and "--assemble" in out
    assert "verdict: not usable as written" in out
    code, out, _ = check(capsys, path, "--assemble")  # the printed state is the remedy
    assert code == 0 and "verdict: usable from the consistent initial state" in out
    assert "velocity = [0.0, 0.0, 0.0]" in out  # the only admissible motion is a swing
    code, out, _ = check(capsys, path, "--set", "bodies.rod.velocity=[0.0, 0.0, 0.0]")
    assert code == 0 and "verdict: consistent and within the limits" in out


def test_run_writes_the_documented_columns(capsys, scenarios_dir, tmp_path):
    out_file = tmp_path / "dp.csv"
    code = main(
        [
            "run",
            str(scenarios_dir / "double_pendulum.toml"),
            "--out",
            str(out_file),
            "--t-end",
            "0.02",
        ]
    )  # without --quiet: it prints no summary (issue 27)
    out, err = capsys.readouterr()
    assert code == 0, err
    with out_file.open() as f:
        header = next(csv.reader(f))
    fields = ["x", "y", "z", "q0", "q1", "q2", "q3", "vx", "vy", "vz", "wx", "wy", "wz"]
    expected = [
        "t",
        *[f"{b}.{f}" for b in ("rod1", "rod2") for f in fields],
        "energy",
        "constraint_drift",
    ]
    assert header == expected
    table = Results.read_csv(out_file)
    assert table.data.shape == (3, len(expected))  # t = 0, 0.01, 0.02 (output_every = 10)
    assert np.allclose(table.t, [0.0, 0.01, 0.02])
    assert (out_file.parent / "dp.summary.json").is_file()
    assert "energy_max_relative_drift" in out


def test_documented_example_runs(capsys, tmp_path):
    """The example in docs/scenario-format.md loads, checks clean and runs."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "scenario-format.md").read_text()
    example = doc.split("## Example")[1].split("```toml\n")[1].split("```")[0]
    path = tmp_path / "example.toml"
    path.write_text(example)
    code, out, _ = check(capsys, path)
    assert code == 0 and "degrees of freedom: 1 (from the rank)" in out
    assert (
        main(["run", str(path), "--t-end", "0.3", "--quiet", "--out", str(tmp_path / "e.csv")]) == 0
    )
    table = Results.read_csv(tmp_path / "e.csv")
    assert table["rod.x"][-1] > 0.0  # the push along +X has swung the rod forward


def test_rigid_run_resumed_from_a_checkpoint_is_bitwise_equal(tmp_path, scenarios_dir):
    """A run saved halfway and resumed ends with the same bytes as an uninterrupted run."""
    scenario = str(scenarios_dir / "double_pendulum.toml")
    whole, half, resumed = (tmp_path / f"{n}.csv" for n in ("whole", "half", "resumed"))
    checkpoint = tmp_path / "run.ckpt"
    assert main(["run", scenario, "-q", "--t-end", "0.4", "--out", str(whole)]) == 0
    assert main(["run", scenario, "-q", "--t-end", "0.2", "--out", str(half),
                 "--checkpoint", str(checkpoint), "--checkpoint-every", "50"]) == 0
    assert main(["run", scenario, "-q", "--t-end", "0.4", "--out", str(resumed),
                 "--resume", str(checkpoint)]) == 0
    assert whole.read_bytes() == resumed.read_bytes()
    assert whole.read_bytes() != half.read_bytes()
