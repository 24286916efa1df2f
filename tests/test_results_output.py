"""Results files: a failed run keeps its rows (they equal the same run's rows without the
failure, and grow by RK4's amplification factor), HDF5 columns equal the CSV's bitwise,
output selection keeps exactly the asked columns and rows, and `--set` warns on a key without
effect."""

from __future__ import annotations

import json

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from rbcosim.cli.main import main
from rbcosim.results import Results, read_results

#: a 1 kg slider on a spring of k N/m along X (x = 0.1 + 0.01 at rest + 0.01 offset)
OSCILLATOR = """
[world]
gravity = [0.0, 0.0, 0.0]
[bodies.mass1]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
position = [0.11, 0.0, 0.0]
[joints.slider]
type = "prismatic"
body1 = "ground"
body2 = "mass1"
at = [0.1, 0.0, 0.0]
axis = [1.0, 0.0, 0.0]
[forces.k1]
type = "spring_damper"
body1 = "ground"
point1 = [-1.0, 0.0, 0.0]
body2 = "mass1"
point2 = [0.0, 0.0, 0.0]
stiffness = {k}
free_length = 1.1
[solver]
integrator = "rk4"
dt = 1e-3
t_end = {t_end}
formulation = "maximal"
"""


def scenario(tmp_path, k: float, t_end: float) -> str:
    path = tmp_path / f"osc_{k:g}_{t_end:g}.toml"
    path.write_text(OSCILLATOR.format(k=repr(float(k)), t_end=t_end))
    return str(path)


#: N/m: ω h = 2.85 for the 1 kg slider at h = 1 ms
UNSTABLE_K = 8.1e6


def test_failed_run_keeps_the_rows_before_the_failure(tmp_path, capsys):
    """ω h = 2.85 (k = 8.1e6 N/m, h = 1 ms) is just outside RK4's stability region (2√2): the
    energy grows until the run stops as diverged (its energy balance beyond ten energy scales;
    it was ω h = 10 and an overflow before divergence stopped runs). Its rows equal those of the
    same run stopped at 10 ms, and the spring energy grows by |R(iωh)|² per step,
    R(z) = 1 + z + z²/2 + z³/6 + z⁴/24 (linear oscillator)."""
    failed = tmp_path / "failed.csv"
    code = main(["run", scenario(tmp_path, UNSTABLE_K, 1.0), "-q", "-o", str(failed)])
    out, err = capsys.readouterr()
    assert code == 1 and len(err.strip().splitlines()) == 1 and "diverged" in err
    assert "partial results" in out and str(failed) in out
    partial = read_results(failed)
    assert partial.diagnostics["status"] == "diverged"  # a non-finite state: diverged (issue 27)
    assert partial.diagnostics["error"] in err
    assert partial.diagnostics["rows"] == len(partial.data) > 11
    assert np.isfinite(partial.data).all()
    short = tmp_path / "short.csv"
    assert main(["run", scenario(tmp_path, UNSTABLE_K, 0.01), "-q", "-o", str(short)]) == 0
    whole = Results.read_csv(short)
    assert whole.columns == partial.columns and len(whole.data) == 11
    assert np.array_equal(partial.data[:11], whole.data)
    z = 1j * np.sqrt(UNSTABLE_K) * 1e-3
    growth = abs(1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24) ** 2
    energy = partial["energy"][10:30]  # past the start-up transient (settled by row 6)
    assert energy[1:] / energy[:-1] == pytest.approx(growth, rel=1e-6)


def test_hdf5_columns_equal_the_csv_columns_bitwise(tmp_path):
    path = scenario(tmp_path, 10.0, 0.05)
    csv_file, h5_file = tmp_path / "r.csv", tmp_path / "r.h5"
    assert main(["run", path, "-q", "-o", str(csv_file)]) == 0
    assert main(["run", path, "-q", "-o", str(h5_file)]) == 0
    table = Results.read_csv(csv_file)
    with h5py.File(h5_file, "r") as f:
        assert list(f.attrs["columns"]) == table.columns
        for i, name in enumerate(table.columns):
            assert np.array_equal(f["columns"][name][()], table.data[:, i]), name
        units = {name: f["columns"][name].attrs["units"] for name in table.columns}
        summary = json.loads(f.attrs["summary"])
    assert units["t"] == "s" and units["mass1.x"] == "m" and units["mass1.vx"] == "m/s"
    assert units["mass1.wz"] == "rad/s" and units["energy"] == "J"
    assert set(summary) == set(json.loads((tmp_path / "r.summary.json").read_text()))
    assert main(["plot", str(h5_file), "mass1.x", "-o", str(tmp_path / "r.png")]) == 0


def test_output_selection_keeps_the_asked_columns_and_rows(tmp_path, capsys):
    path = scenario(tmp_path, 10.0, 0.05)
    full, chosen = tmp_path / "full.csv", tmp_path / "chosen.csv"
    assert main(["run", path, "-q", "-o", str(full)]) == 0
    assert main(["run", path, "-q", "-o", str(chosen), "--output-interval", "0.004",
                 "--output-variables", "mass1.x,mass1.v*"]) == 0
    a, b = Results.read_csv(full), Results.read_csv(chosen)
    assert b.columns == ["t", "mass1.x", "mass1.vx", "mass1.vy", "mass1.vz"]
    steps = [*range(0, 51, 4), 50]  # every 4 ms and the end time
    assert np.allclose(b.t, np.array(steps) * 1e-3, rtol=0, atol=1e-15)
    index = [a.columns.index(c) for c in b.columns]
    assert np.array_equal(b.data, a.data[steps][:, index])
    capsys.readouterr()
    assert main(["run", path, "-q", "-o", str(chosen), "--output-interval", "0.0015"]) == 1
    assert "not a whole multiple of solver.dt" in capsys.readouterr().err
    assert main(["run", path, "-q", "-o", str(chosen), "--output-variables", "mass1.xx"]) == 1
    assert "close matches: mass1.x" in capsys.readouterr().err


def test_set_on_a_key_without_effect_warns(tmp_path, capsys):
    path = scenario(tmp_path, 10.0, 0.01)
    assert main(["run", path, "-q", "-o", str(tmp_path / "w.csv"), "--set",
                 "cosim.macro_step=0.002", "--set", "solver.rtol=1e-9"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(": no effect")[0] for line in err] == ["warning: --set cosim.macro_step",
                                                     "warning: --set solver.rtol"]
