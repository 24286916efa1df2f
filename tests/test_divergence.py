"""A diverged run is a failure: status "diverged", exit 1, one line naming the time, the body
and the likely cause (the step against the fastest time scale `rbcosim check` prints), the
rows before it kept; the rank-loss message only for a real singularity."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from rbcosim.cli.main import main
from rbcosim.maximal.divergence import nice_floor, suggested_step
from rbcosim.results import read_results


def _check_time_scale(capsys, path: str) -> float:
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    return float(re.search(r"fastest time scale: (\S+) s", out).group(1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, dt", [("andrews_squeezer", 1e-2), ("double_pendulum", 0.2)])
def test_a_blown_up_run_exits_1_diverged_naming_the_time_scale(scenarios_dir, tmp_path, capsys,
                                                                name, dt):
    path = str(scenarios_dir / f"{name}.toml")
    scale = _check_time_scale(capsys, path)
    out_csv = tmp_path / "o.csv"
    assert main(["run", path, "--dt", str(dt), "-q", "-o", str(out_csv)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "diverged" in err and "lost rank" not in err
    assert re.search(r"at t = \S+ s in body '\w+'", err)
    assert f"fastest time scale {scale:.3g} s" in err
    suggested = float(re.search(r"try dt ≤ (\S+) s", err).group(1))
    assert suggested <= scale / 2.8  # inside RK4's stability limit 2.83/|λ| of the time scale
    summary = json.loads((tmp_path / "o.summary.json").read_text())
    assert summary["status"] == "diverged" and summary["error"] in err
    rows = read_results(out_csv)
    assert rows.data.shape[0] >= 1 and rows.t[0] == 0.0


def test_the_suggested_dt_runs_andrews_squeezer(scenarios_dir, tmp_path, capsys):
    """The dt the divergence message suggests keeps Andrews' squeezer inside its references'
    tolerance at 0.03 s (test set: β = −15.8 rad at t = 0.03 s... checked by the shipped
    scenario's own test; here: the run passes and its constraint drift stays tiny)."""
    path = str(scenarios_dir / "andrews_squeezer.toml")
    main(["run", path, "--dt", "1e-2", "-q", "-o", str(tmp_path / "bad.csv")])
    err = capsys.readouterr().err
    suggested = re.search(r"try dt ≤ (\S+) s", err).group(1)
    assert main(["run", path, "--dt", suggested, "-q", "-o", str(tmp_path / "ok.csv")]) == 0
    ok = read_results(tmp_path / "ok.csv")
    assert ok.diagnostics["status"] == "ok"
    assert ok.diagnostics["max_constraint_violation"] < 1e-9


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_minimal_route_reports_diverged_too(scenarios_dir, tmp_path, capsys):
    """A tree in joint coordinates with a 1e6 N/m spring far outside RK4's stability region:
    the minimal route stops with status diverged, like the maximal one."""
    text = (scenarios_dir / "double_pendulum.toml").read_text() + (
        '\n[forces.stiff]\ntype = "spring_damper"\nbody1 = "ground"\npoint1 = [0.3, 0.0, -0.75]'
        '\nbody2 = "rod2"\nstiffness = 1e6\nfree_length = 0.05\n')
    path = tmp_path / "stiff.toml"
    path.write_text(text)
    out_csv = tmp_path / "o.csv"
    code = main(["run", str(path), "--formulation", "minimal", "--dt", "0.01", "-q", "-o",
                 str(out_csv)])
    err = capsys.readouterr().err
    assert code == 1 and "diverged" in err and "fastest time scale" in err
    assert read_results(out_csv).diagnostics["status"] == "diverged"


def test_suggested_step_is_a_rounded_quarter_of_the_time_scale():
    assert nice_floor(0.0172) == 0.01 and nice_floor(5.3e-4) == 5e-4 and nice_floor(0.2) == 0.2
    assert suggested_step(0.2, 0.0688) == 0.01  # 0.0688 / 4 = 0.0172 -> 0.01
    assert suggested_step(1e-3, None) == 1e-4  # unknown time scale: a tenth of the step


def test_cosim_without_added_mass_diverges_with_the_coupling_remedy(scenarios_dir, tmp_path):
    """The main job with cosim.added_mass = false: explicit coupling unstable. The CLI's
    warnings are one line each without source paths, the spin warning does not send the user
    to geometric stiffening, and the run ends diverged naming added mass and the macro step."""
    out_csv = tmp_path / "o.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "rbcosim", "run", str(scenarios_dir / "rigid_flex_pendulum.toml"),
         "--set", "cosim.added_mass=false", "-q", "-o", str(out_csv)],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    warns = [w for w in lines if w.startswith("warning: ")]
    assert any(w.startswith("warning: ContinuityWarning: joint 'clamp' at t = ") for w in warns)
    assert all(".py" not in w for w in lines), lines
    assert len(warns) == len(lines) - 1  # every other line is one warning; the last the error
    spin = [w for w in warns if "SpinWarning" in w]
    assert spin and all("geometric_stiffening = true" not in w for w in spin)
    error = lines[-1]
    assert "diverged" in error and "cosim.added_mass = true" in error
    assert "cosim.macro_step ≤ " in error
    summary = read_results(out_csv).diagnostics
    assert summary["status"] == "diverged" and np.isfinite(read_results(out_csv).data).all()


@pytest.mark.parametrize("absurd", [False, True])
def test_rank_loss_is_a_singularity_at_a_sane_state_and_a_divergence_otherwise(
        scenarios_dir, tmp_path, capsys, monkeypatch, absurd):
    """The core's singular status (J M⁻¹ Jᵀ), raised after 100 steps: at the state the run
    reached, the kinematic-singularity message; at a state moved 1e9 m away, a divergence."""
    from rbcosim.errors import SingularJacobianError
    from rbcosim.maximal.integrators import FixedStepIntegrator

    advance = FixedStepIntegrator.advance

    def singular_later(self, state, times, h):
        advance(self, state, times[times <= 0.1 + 1e-12], h)
        if state.t >= 0.1 - 1e-12:
            if absurd:
                state.r[:] += 1e9
            raise SingularJacobianError(f"the joints' Jacobian lost rank at t = {state.t:.6g} s "
                                        "(a kinematic singularity, or constraints that became "
                                        "redundant): J M⁻¹ Jᵀ is singular")
        return state

    monkeypatch.setattr(FixedStepIntegrator, "advance", singular_later)
    code = main(["run", str(scenarios_dir / "double_pendulum.toml"), "--t-end", "0.5", "-q",
                 "-o", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 1
    if absurd:
        assert "diverged: moved 1.73e+09 m from the start" in err  # √3 · 1e9 and "lost rank" not in err
    else:
        assert "lost rank at t = 0.1 s" in err and "diverged" not in err


@pytest.mark.slow
def test_the_distributed_cosim_names_the_cause_too(scenarios_dir, tmp_path, capsys):
    """`rbcosim cosim` (server and flexible-solver processes) of the same unstable coupling:
    the session's divergence arrives with the same likely cause."""
    code = main(["cosim", str(scenarios_dir / "rigid_flex_pendulum.toml"), "--set",
                 "cosim.added_mass=false", "--set", "solver.t_end=0.05", "-q", "--no-plot",
                 "-o", str(tmp_path / "o.csv")])
    lines = capsys.readouterr().err.strip().splitlines()
    # the line that says so (the flexible process's, or the session's, whichever the driver
    # sees first; a failed process's is followed by the server's view of the session)
    err = next((line for line in lines if "diverged" in line), "\n".join(lines))
    assert code == 1 and "diverged: " in err  # the first bound the state crossed
    assert ("likely cause: the coupling without added mass is unstable at cosim.macro_step = "
            "0.00025 s") in err and "set cosim.added_mass = true" in err
