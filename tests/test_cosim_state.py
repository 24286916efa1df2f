"""Exact save/restore of the coupled state: restore-then-re-step gives the same bits, and a run
checkpointed to a file, interrupted and resumed ends bitwise equal to an uninterrupted run."""

from __future__ import annotations

import numpy as np
import pytest

import rbcosim.cosim.master as master_module
from rbcosim.cli.main import main
from rbcosim.cosim.master import CosimMaster
from rbcosim.scenario.loader import load_scenario

pytestmark = pytest.mark.scenarios


def _bits(rows) -> bytes:
    return np.ascontiguousarray(np.array(rows, dtype="<f8")).tobytes()


@pytest.mark.parametrize(("scenario_file", "scheme"), [
    ("rigid_flex_pendulum.toml", "gauss_seidel_flex_first"),
    ("rigid_flex_pendulum.toml", "jacobi"),
    ("rigid_flex_pendulum.toml", "iterative"),
    ("rigid_flex_pendulum.toml", "interface_jacobian"),
    ("two_mass_oscillator.toml", "gauss_seidel_rigid_first"),
    ("two_mass_oscillator.toml", "interface_jacobian"),
])
def test_restore_then_restep_is_bitwise_identical(scenarios_dir, scenario_file, scheme):
    scenario = load_scenario(scenarios_dir / scenario_file,
                             [f'cosim.scheme="{scheme}"', "cosim.extrapolation=2"])
    master = CosimMaster(scenario)
    for _ in range(7):  # past values in every extrapolation history
        master.step()
    saved = master.get_state()
    first = []
    for _ in range(5):
        master.step()
        first.append(master.row())
    end_state = master.get_state()

    master.set_state(saved)
    assert master.get_state() == saved
    again = []
    for _ in range(5):
        master.step()
        again.append(master.row())
    assert _bits(again) == _bits(first)
    assert master.get_state() == end_state

    # A fresh master restored from the bytes continues identically as well.
    other = CosimMaster(scenario)
    other.set_state(saved)
    third = []
    for _ in range(5):
        other.step()
        third.append(other.row())
    assert _bits(third) == _bits(first)


@pytest.mark.parametrize("scheme", ["gauss_seidel_flex_first", "interface_jacobian"])
def test_checkpointed_interrupted_resumed_run_equals_uninterrupted(scenarios_dir, tmp_path,
                                                                   monkeypatch, scheme):
    """`rbcosim run --checkpoint F --checkpoint-every N`, killed after the halfway checkpoint,
    then `rbcosim run --resume F`: the CSV is byte-for-byte the uninterrupted run's."""
    scenario = str(scenarios_dir / "rigid_flex_pendulum.toml")
    common = [scenario, "-q", "--set", "solver.t_end=0.05", "--set", "solver.output_every=7",
              "--set", f'cosim.scheme="{scheme}"']  # 200 macro steps; rows not on checkpoints
    whole = tmp_path / "whole.csv"
    assert main(["run", *common, "-o", str(whole)]) == 0

    checkpoint = tmp_path / "run.ckpt"
    original_step = master_module.CosimMaster.step

    def crashing_step(self):
        if self.step_index == 113:
            raise KeyboardInterrupt  # the process dies between checkpoints
        original_step(self)

    monkeypatch.setattr(master_module.CosimMaster, "step", crashing_step)
    code = main(["run", *common, "-o", str(tmp_path / "lost.csv"), "--checkpoint",
                 str(checkpoint), "--checkpoint-every", "100"])
    assert code == 130  # "interrupted"
    monkeypatch.setattr(master_module.CosimMaster, "step", original_step)
    assert checkpoint.is_file() and not (tmp_path / "lost.csv").exists()

    resumed = tmp_path / "resumed.csv"
    assert main(["run", *common, "-o", str(resumed), "--resume", str(checkpoint)]) == 0
    assert resumed.read_bytes() == whole.read_bytes()
