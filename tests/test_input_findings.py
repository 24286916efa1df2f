"""Issue 11's findings 7–9, each reproduced as it was reported and now refused with a message
naming the key (or the time), never a traceback, never a silent run.

7. damaged checkpoints, ragged vectors, huge values, non-integer or huge counts, dt = 1e-15;
8. a distance joint in the `at` form (length 0 → dropped as redundant → free fall);
9. an adaptive integrator that no longer advances.
The file-fuzz corpus (test_file_fuzz.py) covers the same defects at random; these are the
reported cases."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from test_scenario_errors import BASE, edit

from rbcosim.cli.main import main
from rbcosim.errors import SimulationError
from rbcosim.run_loop import ProgressGuard
from rbcosim.scenario.loader import load_scenario_text

FLEX = "scenarios/rigid_flex_pendulum.toml"


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def _write(tmp_path, text: str):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


# --- 7 ---------------------------------------------------------------------------------------

def test_a_damaged_checkpoint_is_refused_naming_the_file(tmp_path, capsys):
    path = _write(tmp_path, BASE)
    ckpt = tmp_path / "run.ckpt"
    code, _ = _cli(capsys, "run", str(path), "-q", "-o", str(tmp_path / "a.csv"),
                   "--checkpoint", str(ckpt), "--checkpoint-every", "20", "--t-end", "0.3")
    assert code == 0 and ckpt.exists()
    blob = bytearray(ckpt.read_bytes())
    blob[len(blob) // 2] ^= 0x10  # one bit inside the saved rows
    ckpt.write_bytes(bytes(blob))
    code, out = _cli(capsys, "run", str(path), "-q", "-o", str(tmp_path / "b.csv"),
                     "--resume", str(ckpt), "--t-end", "0.5")
    assert code == 1 and str(ckpt) in out and "Traceback" not in out
    assert not (tmp_path / "b.csv").exists()


@pytest.mark.parametrize("text, fragments", [
    (edit("gravity = [0.0, 0.0, -9.81]", "gravity = [[1.0, 2.0], [3.0]]"),
     ["world.gravity", "ragged"]),
    (edit("mass = 1.0", "mass = 1e300"), ["bodies.link1.mass", "1e+300"]),
    (edit("t_end = 1.0", "t_end = 1e300"), ["solver.t_end"]),
    (edit("output_every = 10", "output_every = 1e9"), ["solver.output_every", "integer"]),
])
def test_ragged_huge_and_non_integer_values_name_the_key(text, fragments, tmp_path, capsys):
    code, out = _cli(capsys, "run", str(_write(tmp_path, text)), "-q",
                     "-o", str(tmp_path / "r.csv"))
    assert code == 1 and "Traceback" not in out
    for fragment in fragments:
        assert fragment in out
    assert not (tmp_path / "r.csv").exists()


def test_a_tiny_dt_is_refused_before_it_starts_and_check_estimates_it(tmp_path, capsys):
    path = _write(tmp_path, BASE)
    code, out = _cli(capsys, "run", str(path), "-q", "--dt", "1e-15")
    steps = round(1.0 / 1e-15)
    assert code == 1 and f"total_steps = {steps}" in out and "--limit total_steps=" in out
    code, out = _cli(capsys, "check", str(path), "--set", "solver.dt=1e-15")
    assert code == 1 and f"estimate: {steps} steps" in out  # an estimate, not a run


def test_micro_steps_as_a_float_and_a_huge_count_are_refused(capsys):
    code, out = _cli(capsys, "cosim", FLEX, "--set", "cosim.micro_steps=1e9")
    assert code == 1 and "cosim.micro_steps: expected an integer" in out
    code, out = _cli(capsys, "cosim", FLEX, "--set", "cosim.micro_steps=1000000000")
    assert code == 1 and "steps_per_macro_step = 1000000000" in out


def test_a_run_that_overflows_stops_with_the_time_and_keeps_its_rows(tmp_path, capsys):
    # A spring of 1e100 N/m pulling the lower link sideways: RK4 at dt = 1e-3 multiplies the
    # state by ~(ω dt)^4 = 1e188 a step, so float64 overflows within two steps.
    spring = ('\n[forces.stiff]\ntype = "spring_damper"\nbody1 = "ground"\n'
              'point1 = [0.3, 0.0, -0.75]\nbody2 = "link2"\nstiffness = 1e100\n'
              'free_length = 0.05\n')
    out_csv = tmp_path / "o.csv"
    code, out = _cli(capsys, "run", str(_write(tmp_path, edit("output_every = 10",
                     "output_every = 1") + spring)), "-q", "-o", str(out_csv))
    assert code == 1 and "Traceback" not in out and "non-finite state at t = " in out
    assert "in body 'link" in out
    with open(out_csv) as f:
        rows = list(csv.DictReader(f))
    assert rows and float(rows[0]["t"]) == 0.0
    assert all(np.isfinite(float(v)) for row in rows for v in row.values())


# --- 8 ---------------------------------------------------------------------------------------

def test_a_distance_joint_in_the_at_form_is_an_error_naming_the_key():
    text = edit('[joints.elbow]\ntype = "revolute"', '[joints.elbow]\ntype = "distance"')
    text = text.replace('marker1 = "link1.tip"\nmarker2 = "link2.top"',
                        'body1 = "link1"\nbody2 = "link2"\nat = [0.0, 0.0, -0.5]')
    with pytest.raises(Exception) as info:
        load_scenario_text(text, source="s.toml")
    assert "joints.elbow.at" in str(info.value) and "point1 and point2" in str(info.value)


# --- 9 ---------------------------------------------------------------------------------------

def test_an_adaptive_run_that_stops_advancing_names_the_time_and_the_fixed_step_route():
    """The guard solve_ivp calls: a derivative evaluated again and again at (nearly) the same
    time, as DOP853 did at the four-bar's singularity, ends in an error within its window."""
    scenario = load_scenario_text(BASE, source="s.toml")
    guard = ProgressGuard(lambda t, y: y, scenario.solver, window=500)
    y = np.ones(3)
    t, calls = 0.37, 0
    with pytest.raises(SimulationError) as info:
        while calls < 10_000:
            guard(t, y)
            t += 1e-12  # advancing, but far below 1e-6 of an output interval
            calls += 1
    assert calls == 500
    assert "no progress at t = 0.37 s" in str(info.value) and "rk4" in str(info.value)
