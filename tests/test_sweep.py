"""Sweeps on Dask: every case equals a direct `rbcosim run` of the same overrides (bitwise),
a killed worker loses no case, a second run skips what is done, failures are rows."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from rbcosim.cli.main import main
from rbcosim.errors import ScenarioError
from rbcosim.sweep import grid_cases, sample_cases, sweep

pytestmark = pytest.mark.slow
SCENARIO = Path(__file__).parents[1] / "scenarios" / "two_mass_oscillator.toml"
BASE = {"solver.t_end": "0.3"}
GRID = ["forces.k1.stiffness=5,10,20", "bodies.mass1.mass=0.5,1,2"]


def test_grid_rows_equal_direct_runs_bitwise(tmp_path):
    table = sweep(SCENARIO, grid=GRID, overrides=BASE, out=tmp_path / "sw", workers=2,
                  probes=[("mass1.x", 0.15)], progress=False)
    assert len(table) == 9 and set(table["status"]) == {"ok"}
    assert len(set(table["case"])) == 9
    for _, row in table.iterrows():
        k, m = row["param.forces.k1.stiffness"], row["param.bodies.mass1.mass"]
        direct = tmp_path / f"direct_{k}_{m}.csv"
        assert main(["run", str(SCENARIO), "-q", "-o", str(direct), "--set", "solver.t_end=0.3",
                     "--set", f"forces.k1.stiffness={k}", "--set", f"bodies.mass1.mass={m}"]) == 0
        assert Path(row["results"]).read_bytes() == direct.read_bytes()
        summary = json.loads(direct.with_name(direct.stem + ".summary.json").read_text())
        assert row["max_constraint_violation"] == summary["max_constraint_violation"]
        joint = summary["joints"]["coupling"]
        assert row["joints.coupling.energy_residual_J"] == joint["energy_residual_J"]
        assert row["joints.coupling.max_gap_pos_m"] == joint["max_gap_pos_m"]
        data = np.loadtxt(direct, delimiter=",", skiprows=1)
        header = direct.read_text().splitlines()[0].split(",")
        first = np.nonzero(data[:, header.index("t")] >= 0.15 - 1e-12)[0][0]
        assert row["mass1.x@0.15"] == data[first, header.index("mass1.x")]


def test_killed_worker_loses_no_case_and_rerun_skips_done(tmp_path):
    from dask.distributed import LocalCluster

    killed = []

    def kill_a_busy_worker(row, client):
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        out = tmp_path / "sw"
        table = sweep(SCENARIO, grid=GRID, overrides=BASE, out=out,
                      scheduler=cluster.scheduler_address, progress=False,
                      on_result=kill_a_busy_worker)
        assert killed, "no worker was busy after the first case"
        assert sorted(table["case"]) == sorted(c.key for c in grid_cases(
            _digest(), GRID, BASE))
        assert set(table["status"]) == {"ok"}
        # The same sweep again runs nothing and returns the same table.
        again = []
        table2 = sweep(SCENARIO, grid=GRID, overrides=BASE, out=out,
                       scheduler=cluster.scheduler_address, progress=False,
                       on_result=lambda row, client: again.append(row))
        assert again == [] and sorted(table2["case"]) == sorted(table["case"])


def test_failed_case_is_a_row_and_the_sweep_goes_on(tmp_path):
    table = sweep(SCENARIO, grid=["bodies.mass1.mass=1,-1"], overrides=BASE, out=tmp_path,
                  workers=1, progress=False)
    by_mass = {str(r["param.bodies.mass1.mass"]): r for _, r in table.iterrows()}
    assert by_mass["1"]["status"] == "ok"
    assert by_mass["-1"]["status"] == "failed"
    assert "bodies.mass1.mass" in by_mass["-1"]["error"]


def test_cli_sweep_writes_table_and_plot(tmp_path):
    out = tmp_path / "cli"
    code = main(["sweep", str(SCENARIO), "--set", "solver.t_end=0.2", "--grid",
                 "forces.k1.stiffness=5,20", "--workers", "1", "-q", "-o", str(out),
                 "--plot", "joints.coupling.max_gap_pos_m:forces.k1.stiffness"])
    assert code == 0
    assert (out / "sweep.csv").is_file()
    assert (out / "joints.coupling.max_gap_pos_m.png").stat().st_size > 1000


def _digest():
    from rbcosim.sweep.cases import scenario_digest

    return scenario_digest(SCENARIO.read_bytes())


def test_samples_follow_seed_and_bounds():
    a = sample_cases("d", ["x=uniform(2, 3)", "y=loguniform(1e-3, 1e-1)"], 200, seed=7)
    b = sample_cases("d", ["x=uniform(2, 3)", "y=loguniform(1e-3, 1e-1)"], 200, seed=7)
    assert [c.key for c in a] == [c.key for c in b]
    x = np.array([float(c.parameters["x"]) for c in a])
    y = np.array([float(c.parameters["y"]) for c in a])
    assert x.min() >= 2 and x.max() < 3 and y.min() >= 1e-3 and y.max() < 1e-1
    # log-uniform: the median of log10(y) sits near the middle of [-3, -1].
    assert abs(np.median(np.log10(y)) + 2) < 0.15


@pytest.mark.parametrize("spec, option, message", [
    (["x"], "grid", "expected KEY=VALUES"),
    (["x=1,,2"], "grid", "empty value"),
    (["x=1,2", "x=3"], "grid", "given twice"),
    (["x=gauss(1, 2)"], "sample", "expected uniform"),
    (["x=uniform(3, 2)"], "sample", "a < b"),
    (["x=loguniform(0, 2)"], "sample", "0 < a < b"),
])
def test_bad_specs_name_the_problem(spec, option, message):
    with pytest.raises(ScenarioError, match=message):
        if option == "grid":
            grid_cases("d", spec)
        else:
            sample_cases("d", spec, 3, seed=0)


PENDULUM = Path(__file__).parents[1] / "scenarios" / "rigid_flex_pendulum.toml"


def test_cosim_cases_are_distributed_runs_with_cosim_bits(tmp_path):
    """`sweep --cosim`: each case runs as `rbcosim cosim` (server + flexible process on the
    worker's host) and its results file is `rbcosim cosim`'s of the same overrides, bit for
    bit; the distributed summary names the flexible process."""
    base = {"solver.t_end": "0.01", "solver.output_every": "4"}
    table = sweep(PENDULUM, grid=["cosim.added_mass=true,false"], overrides=base,
                  out=tmp_path / "sw", workers=1, progress=False, cosim=True)
    assert len(table) == 2 and set(table["status"]) == {"ok"}, table.get("error")
    for _, row in table.iterrows():
        direct = tmp_path / f"cosim_{row['param.cosim.added_mass']}.csv"
        assert main(["cosim", str(PENDULUM), "-q", "--no-plot", "-o", str(direct),
                     "--set", "solver.t_end=0.01", "--set", "solver.output_every=4",
                     "--set", f"cosim.added_mass={row['param.cosim.added_mass']}"]) == 0
        assert Path(row["results"]).read_bytes() == direct.read_bytes()
        assert row["distributed.session"].startswith("s-")


def test_cosim_sweep_of_a_rigid_scenario_is_refused_before_the_cluster(tmp_path):
    with pytest.raises(ScenarioError, match="no \\[couplings\\]"):
        sweep(Path(__file__).parents[1] / "scenarios" / "double_pendulum.toml",
              grid=["solver.dt=0.01,0.02"], out=tmp_path / "sw", cosim=True, progress=False)
    assert not (tmp_path / "sw" / "sweep.csv").exists()
