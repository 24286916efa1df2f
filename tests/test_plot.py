"""`rbcosim plot`, `run --plot` and the shared figure of rbcosim.plotting: the lines drawn are
the results file's columns (read back independently with numpy), patterns select exactly the
matching columns, bad input is a one-line error with exit 1."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from rbcosim.cli.main import main
from rbcosim.plotting import build_figure, select_columns
from rbcosim.results import Results, read_results

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def result_file(tmp_path):
    """A co-simulation-shaped table: a body, an interface point, a joint, a flexible body with
    a metre offset and a millimetre oscillation, written as CSV with its summary."""
    t = np.linspace(0.0, 0.2, 41)
    wave = 0.0116 * np.sin(40 * t)
    cols = {
        "t": t,
        "link.x": 0.125 + 0.01 * t, "link.z": -0.2 - 0.02 * t,
        "tip.x": 0.25 + wave, "tip.z": -0.433 + 0.5 * wave, "tip.fx": 3 + t, "tip.fz": -5 + t,
        "clamp.gap_pos": np.r_[0.0, 1e-9 * (1 + np.cos(t[1:]))],
        "clamp.energy_residual": 1e-7 * t,
        "beam.eta1": wave, "beam.eta2": 0.1 * wave,
        "beam.tip.x": 0.75 + wave, "beam.tip.z": -1.3 + 2 * wave,
        "energy": -2.1 + 0 * t,
    }
    path = tmp_path / "run.csv"
    Results(list(cols), np.column_stack(list(cols.values())),
            {"joints": {"clamp": {"max_gap_pos_m": 3e-9}}}).write(path)
    return path


def loaded(path):
    """The CSV read back without rbcosim: header and numpy array."""
    with open(path) as f:
        header = next(csv.reader(f))
    return header, np.loadtxt(path, delimiter=",", skiprows=1)


def lines_by_column(fig):
    return {line.get_gid(): line for ax in fig.axes for line in ax.get_lines() if line.get_gid()}


def test_lines_are_the_columns_positions_relative_to_start(result_file):
    header, data = loaded(result_file)
    col = {name: data[:, i] for i, name in enumerate(header)}
    fig = build_figure(read_results(result_file))
    lines = lines_by_column(fig)
    # the default set: everything that varies (energy is constant here)
    assert set(lines) == set(header) - {"t", "energy"}
    for name, line in lines.items():
        np.testing.assert_array_equal(line.get_xdata(), col["t"])
        y = np.asarray(line.get_ydata(), float)
        if name.endswith(("x", "z")) and not name.startswith("tip.f"):
            np.testing.assert_allclose(y, col[name] - col[name][0], rtol=0, atol=1e-15)
            assert "value at t=0" in line.axes.get_title()
        elif name == "clamp.gap_pos":  # log scale: |gap|, the zero at t=0 left out
            np.testing.assert_array_equal(y[1:], col[name][1:])
            assert np.isnan(y[0]) and line.axes.get_yscale() == "log"
        elif ".eta" in name:  # several modal coordinates: each over its largest |value|
            peak = np.max(np.abs(col[name]))
            np.testing.assert_allclose(y * peak, col[name], rtol=1e-15, atol=0)
            assert line.get_label() == f"{name} ÷ {peak:.3g}"
        else:
            np.testing.assert_array_equal(y, col[name])
    # the millimetre oscillation of tip.x spans its panel instead of a flat line at 0.25 m
    lo, hi = lines["tip.x"].axes.get_ylim()
    assert hi - lo < 0.05


def test_gap_panel_draws_the_summary_maximum(result_file):
    fig = build_figure(read_results(result_file), ["clamp.gap_pos"])
    ax = fig.axes[0]
    summary = [line for line in ax.get_lines() if "summary" in line.get_label()]
    assert len(summary) == 1 and np.all(np.asarray(summary[0].get_ydata()) == 3e-9)


def test_relative_and_absolute(result_file):
    header, data = loaded(result_file)
    col = {name: data[:, i] for i, name in enumerate(header)}
    results = read_results(result_file)
    rel = lines_by_column(build_figure(results, ["tip.fx", "beam.eta1"], relative=True))
    for name, line in rel.items():
        np.testing.assert_allclose(line.get_ydata(), col[name] - col[name][0], atol=1e-15)
    absolute = lines_by_column(build_figure(results, ["beam.tip.x"], relative=False))
    np.testing.assert_array_equal(absolute["beam.tip.x"].get_ydata(), col["beam.tip.x"])


def test_patterns_select_exactly_the_matching_columns(result_file):
    columns = read_results(result_file).columns
    assert select_columns(columns, ["beam.tip.*"]) == ["beam.tip.x", "beam.tip.z"]
    assert select_columns(columns, ["*.gap_pos", "energy"]) == ["clamp.gap_pos", "energy"]
    assert select_columns(columns, ["beam.eta?"]) == ["beam.eta1", "beam.eta2"]
    assert select_columns(columns, ["tip.*"]) == ["tip.x", "tip.z", "tip.fx", "tip.fz"]


def test_cli_plot_writes_the_png(result_file, tmp_path, capsys):
    out = tmp_path / "fig" / "gaps.png"
    assert main(["plot", str(result_file), "*.gap_pos", "beam.tip.*", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG and out.stat().st_size > 5000
    assert main(["plot", str(result_file)]) == 0
    assert result_file.with_suffix(".png").read_bytes()[:8] == PNG


def test_unknown_column_names_it_and_close_matches(result_file, capsys):
    assert main(["plot", str(result_file), "clamp.gap_po"]) == 1
    err = capsys.readouterr().err
    assert "'clamp.gap_po'" in err and "clamp.gap_pos" in err and "Traceback" not in err


@pytest.mark.parametrize("content", [None, b"", b"t,a\n1,2,3\n", b"\xff\xfe\x00"])
def test_unreadable_file_is_named(tmp_path, capsys, content):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_bytes(content)
    assert main(["plot", str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err


def test_run_plot_writes_the_same_figure(tmp_path, scenarios_dir, capsys):
    out = tmp_path / "dp.csv"
    assert main(["run", str(scenarios_dir / "double_pendulum.toml"), "--t-end", "0.01", "-q",
                 "--out", str(out), "--plot"]) == 0
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 5000
    assert str(png) in capsys.readouterr().out
