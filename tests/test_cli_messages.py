"""What the CLI prints: -q leaves only the files written, a mistyped option names the close
one, and `check` of a co-simulation weighs the flexible modes against its macro step."""

from __future__ import annotations

import math
import re

import pytest

from rbcosim.cli.main import main


def test_quiet_run_prints_only_the_files_written(scenarios_dir, tmp_path, capsys):
    out = tmp_path / "o.csv"
    assert main(["run", str(scenarios_dir / "double_pendulum.toml"), "--t-end", "0.01", "-q",
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [f"results: {out}, {tmp_path / 'o.summary.json'}"]


@pytest.mark.parametrize("typed, meant", [("--tend", "--t-end"), ("--qiet", "--quiet"),
                                          ("--dtt", "--dt")])
def test_a_mistyped_option_suggests_the_close_one(scenarios_dir, capsys, typed, meant):
    code = main(["run", str(scenarios_dir / "double_pendulum.toml"), typed, "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == f"rbcosim run: error: unrecognized option {typed} (did you mean {meant}?)"


def test_check_of_the_main_job_weighs_the_beam_modes_against_the_macro_step(scenarios_dir,
                                                                              capsys):
    """The beam: steel (E = 2.1e11 Pa, ρ = 7850 kg/m³), 1 m, 10 mm square, clamped at the
    link (fixed interface). Its 4th cantilever mode, Euler–Bernoulli: f4 = (β4 L)² / (2π L²)
    √(EI/ρA), β4 L = 10.9955 -> 287.3 Hz; the FE model with 10 elements is within 0.2 %."""
    assert main(["check", str(scenarios_dir / "rigid_flex_pendulum.toml")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("fastest time scale:"))
    width, E, rho = 0.01, 2.1e11, 7850.0
    f4 = 10.9955**2 / (2 * math.pi) * math.sqrt(E * width**4 / 12 / (rho * width**2))
    scale = float(re.match(r"fastest time scale: (\S+) s", line).group(1))
    assert scale == pytest.approx(1 / (2 * math.pi * f4), rel=2e-3)
    assert line.endswith("macro step = 0.00025 s")
    assert "WARNING" not in out
