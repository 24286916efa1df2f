"""The default figure of the shipped scenarios shows what each is about: the flexible output
nodes' deflection (the main job's `beam.tip.uz`, the slider-crank's `rod.mid.uz`), every modal
coordinate on a readable scale, energy as its deviation from E(0) without an axis offset, and
next to it the coupling energy residual with the summary's energy balance. Checked on the
matplotlib Figure (lines' data against the CSV read back with numpy, labels), not on pixels."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg

from rbcosim.cli.main import main
from rbcosim.plotting import build_figure
from rbcosim.results import read_results


def run(tmp_path, scenario, *options):
    out = tmp_path / "run.csv"
    assert main(["run", str(scenario), "-q", "-o", str(out), *options]) == 0
    with open(out) as f:
        header = next(csv.reader(f))
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    col = {name: data[:, i] for i, name in enumerate(header)}
    fig = build_figure(read_results(out))
    FigureCanvasAgg(fig).draw()
    lines = {ln.get_gid(): ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid()}
    return out, col, fig, lines


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory, scenarios_dir):
    """The main job, 0.25 s."""
    return run(tmp_path_factory.mktemp("rfp"), scenarios_dir / "rigid_flex_pendulum.toml",
               "--t-end", "0.25")


def test_main_job_shows_the_tip_deflection(pendulum):
    _, col, _, lines = pendulum
    np.testing.assert_array_equal(lines["beam.tip.uz"].get_ydata(), col["beam.tip.uz"])
    assert "deflection" in lines["beam.tip.uz"].axes.get_title()


def test_slider_crank_shows_its_named_output(tmp_path, scenarios_dir):
    _, col, _, lines = run(tmp_path, scenarios_dir / "flexible_slider_crank.toml", "--set",
                           "solver.t_end=6*pi/Omega/16")
    np.testing.assert_array_equal(lines["rod.mid.uz"].get_ydata(), col["rod.mid.uz"])


def test_every_modal_coordinate_spans_its_axis(pendulum):
    _, col, _, lines = pendulum
    etas = [f"beam.eta{j}" for j in range(1, 5)]
    peaks = [np.max(np.abs(col[e])) for e in etas]
    assert peaks[3] < 0.01 * peaks[0]  # eta4 is under 1 % of eta1: flat on a shared scale
    for e, peak in zip(etas, peaks, strict=True):
        y = np.asarray(lines[e].get_ydata())
        np.testing.assert_allclose(y * peak, col[e], rtol=1e-15, atol=0)
        lo, hi = lines[e].axes.get_ylim()
        assert np.ptp(y) > 0.4 * (hi - lo)


def test_double_pendulum_energy_is_its_deviation_without_offset(tmp_path, scenarios_dir):
    _, col, _, lines = run(tmp_path, scenarios_dir / "double_pendulum.toml", "--t-end", "1")
    line = lines["energy"]
    e = col["energy"]
    np.testing.assert_allclose(line.get_ydata(), e - e[0], rtol=0, atol=0)
    assert np.ptp(e) < 1e-8  # conserved: the deviation is what there is to see
    ax = line.axes
    assert "E(0)" in ax.get_title() and f"E(0) = {e[0]:.8g} J" in line.get_label()
    offset = ax.yaxis.get_offset_text().get_text()
    assert "5.8" not in offset  # a scale factor (1e-9) at most, no subtracted −5.80…


def test_coupled_energy_sits_next_to_the_residual_with_the_balance(pendulum):
    out, _, _, lines = pendulum
    summary = json.loads(out.with_name("run.summary.json").read_text())
    energy, residual = lines["energy"].axes, lines["clamp.energy_residual"].axes
    assert energy.get_subplotspec().rowspan == residual.get_subplotspec().rowspan
    assert "flexible side" in energy.get_title()
    labels = [t.get_text() for t in energy.get_legend().get_texts()]
    balance = summary["energy_max_relative_drift"]
    assert f"energy balance |E − E(0) − W|: max {balance:.2g} of" in labels[-1]
