"""`rbcosim animate`, `run --animate`: the ParaView series read back with meshio holds the
results file's positions (read back with numpy), the bodies' frames and attachment points are
the analytic rotation of the planar pendulums, the flexible beams' deformed nodes meet the
output nodes the flexible side computed during the run, and bad input is a one-line error."""

from __future__ import annotations

import csv
import re
import sys

import numpy as np
import pytest

meshio = pytest.importorskip("meshio")
pytest.importorskip("matplotlib")

from rbcosim.animate.scene import build_scene
from rbcosim.cli.main import main
from rbcosim.results import read_results
from rbcosim.scenario.loader import load_scenario


def loaded(path):
    """The CSV read back without rbcosim: {column: values}."""
    with open(path) as f:
        header = next(csv.reader(f))
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {name: data[:, i] for i, name in enumerate(header)}


def series(directory, stem):
    """[(t, mesh)] of the .pvd collection, each .vtu read with meshio."""
    text = (directory / f"{stem}.pvd").read_text()
    entries = re.findall(r'timestep="([^"]+)" part="0" file="([^"]+)"', text)
    return [(float(t), meshio.read(directory / name)) for t, name in entries]


def xyz(col, stem):
    return np.column_stack([col[f"{stem}.{c}"] for c in "xyz"])


def run_animated(tmp_path, scenario, *options):
    out = tmp_path / "run.csv"
    code = main(["run", scenario, "-q", "-o", str(out), "--animate", str(tmp_path / "anim"),
                 *options])
    assert code == 0
    return out, tmp_path / "anim"


def test_rigid_bodies_are_the_results_positions_and_the_analytic_rotation(tmp_path,
                                                                          scenarios_dir):
    path = str(scenarios_dir / "double_pendulum.toml")
    out, anim = run_animated(tmp_path, path, "--t-end", "0.5")
    col = loaded(out)
    frames = series(anim, "run")
    assert [t for t, _ in frames] == list(col["t"])
    scene = build_scene(read_results(out), load_scenario(path))
    rod1, rod2 = scene.slices["body rod1"], scene.slices["body rod2"]
    pos1, pos2 = xyz(col, "rod1"), xyz(col, "rod2")
    # θ from the centres of mass alone: rod1 hangs from the origin, rod2 from rod1's far end
    theta1 = np.arctan2(pos1[:, 0], -pos1[:, 2])
    elbow = 2 * pos1
    theta2 = np.arctan2(pos2[:, 0] - elbow[:, 0], -(pos2[:, 2] - elbow[:, 2]))
    assert np.ptp(theta1) > 0.3  # the pendulum swings
    for k, (_, mesh) in enumerate(frames):
        p = mesh.points
        np.testing.assert_allclose(p[rod1.start], pos1[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(p[rod2.start], pos2[k], rtol=0, atol=1e-12)
        for body, theta, where in ((rod1, theta1[k], pos1[k]), (rod2, theta2[k], pos2[k])):
            s, c = np.sin(theta), np.cos(theta)
            # a rotation by −θ about +Y: body x, y, z axes in inertial components
            axes = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
            length = np.linalg.norm(p[body.stop - 1] - p[body.start])
            np.testing.assert_allclose(p[body.stop - 3:body.stop], where + length * axes,
                                       rtol=0, atol=1e-9)
        # the attachment points: the shoulder (origin) and the elbow, on both rods
        for body, hinges in ((rod1, [np.zeros(3), elbow[k]]), (rod2, [elbow[k]])):
            attached = p[body.start + 1:body.stop - 3]
            assert len(attached) == len(hinges)
            for h in hinges:
                assert np.min(np.linalg.norm(attached - h, axis=1)) < 1e-9


def test_flexible_beam_nodes_meet_the_run_and_scale(tmp_path, scenarios_dir):
    path = str(scenarios_dir / "rigid_flex_pendulum.toml")
    # the one output node at FE node 3: its rows set the run's mode signs (rbcosim.flex
    # .craig_bampton.mode_signs; here modes 2 and 4 flip), which the drawn model (an output node
    # at every FE node) has to match
    mid = "flex_bodies.beam.output_nodes={ mid = 3 }"
    out, anim = run_animated(tmp_path, path, "--t-end", "0.05", "--set", mid)
    col = loaded(out)
    frames = series(anim, "run")
    results, scenario = read_results(out), load_scenario(path, [mid])
    scene = build_scene(results, scenario)
    beam, tip, node = (scene.slices[k] for k in ("flex beam", "point tip", "node beam.mid"))
    assert beam.stop - beam.start == 11  # 10 elements
    for k, (_, mesh) in enumerate(frames):
        p = mesh.points
        np.testing.assert_allclose(p[tip.start], xyz(col, "tip")[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(p[node.start], xyz(col, "beam.mid")[k], rtol=0, atol=1e-12)
        # clamped at the interface point; node 3 is the flexible side's own output node (the
        # continuity gap, < 1e-9 m, apart); a wrong mode sign would miss it
        np.testing.assert_allclose(p[beam.start], xyz(col, "tip")[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(p[beam.start + 3], xyz(col, "beam.mid")[k], rtol=0, atol=1e-8)
    # undeformed at t = 0: 11 nodes 0.1 m apart along the link, outwards from the hinge
    p0 = frames[0][1].points[beam]
    direction = xyz(col, "tip")[0] / np.linalg.norm(xyz(col, "tip")[0])
    np.testing.assert_allclose(p0, xyz(col, "tip")[0] + np.outer(np.arange(11) * 0.1, direction),
                               rtol=0, atol=1e-12)
    # --scale multiplies the elastic displacement (point data, unscaled) on the drawn nodes
    scaled = build_scene(results, scenario, scale=10.0)
    last = len(results.t) - 1
    pos1, disp = scene.points(last)
    pos10, _ = scaled.points(last)
    assert np.abs(disp[beam]).max() > 1e-5
    np.testing.assert_allclose(pos10[beam] - pos1[beam], 9 * disp[beam], rtol=0, atol=1e-14)
    np.testing.assert_allclose(frames[-1][1].point_data["displacement"], disp, rtol=0, atol=0)


def test_chord_rod_nodes_meet_the_pins_and_the_mid_node(tmp_path, scenarios_dir):
    path = str(scenarios_dir / "flexible_slider_crank.toml")
    out, _ = run_animated(tmp_path, path, "--set", "solver.t_end=6*pi/Omega/16")
    col = loaded(out)
    scene = build_scene(read_results(out), load_scenario(path))
    rod = scene.slices["flex rod"]
    assert rod.stop - rod.start == 9  # 8 elements; node 4 at 0.15 m is the output node `mid`
    for k in range(len(col["t"])):
        p = scene.points(k)[0][rod]
        np.testing.assert_allclose(p[0], xyz(col, "crank_pin")[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(p[-1], xyz(col, "wrist")[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(p[4], xyz(col, "rod.mid")[k], rtol=0, atol=1e-8)
    assert np.abs(col["rod.mid.uz"]).max() > 1e-4  # the rod bends: the check sees the modes


def test_gif_frames_and_the_animate_command(tmp_path, scenarios_dir, capsys):
    out, _ = run_animated(tmp_path, str(scenarios_dir / "double_pendulum.toml"), "--t-end",
                          "0.2")
    code = main(["animate", str(out), "-o", str(tmp_path / "a"), "--frames", "7", "--every",
                 "5"])
    assert code == 0
    from PIL import Image

    with Image.open(tmp_path / "a" / "run.gif") as gif:
        assert gif.n_frames == 7
    rows = len(loaded(out)["t"])  # 21 rows: every 5th (0, 5, .., 20)
    assert [t for t, _ in series(tmp_path / "a", "run")] == list(loaded(out)["t"][::5])
    assert rows == 21
    assert f"animation: {tmp_path / 'a' / 'run.pvd'}" in capsys.readouterr().out


@pytest.mark.parametrize("content", [None, "not a table\n"])
def test_missing_or_bad_results_file_is_named(tmp_path, capsys, content):
    path = tmp_path / "r.csv"
    if content is not None:
        path.write_text(content)
    assert main(["animate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rbcosim animate: error: {path}: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "r_animation").exists()


def test_without_meshio_one_line_names_the_extra(tmp_path, scenarios_dir, capsys, monkeypatch):
    out, _ = run_animated(tmp_path, str(scenarios_dir / "double_pendulum.toml"), "--t-end",
                          "0.05")
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "meshio", None)
    assert main(["animate", str(out), "-o", str(tmp_path / "b")]) == 1
    assert capsys.readouterr().err == ("rbcosim animate: error: animate needs meshio: "
                                       "pip install 'rbcosim[animate]'\n")
    assert not (tmp_path / "b").exists()


def test_mp4_without_ffmpeg_and_bad_options_are_one_line(tmp_path, scenarios_dir, capsys,
                                                          monkeypatch):
    from matplotlib import animation

    out, _ = run_animated(tmp_path, str(scenarios_dir / "double_pendulum.toml"), "--t-end",
                          "0.05")
    capsys.readouterr()
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    assert main(["animate", str(out), "-o", str(tmp_path / "c"), "--mp4"]) == 1
    assert capsys.readouterr().err == (f"rbcosim animate: error: {tmp_path / 'c' / 'run.mp4'}: "
                                       "an MP4 needs ffmpeg on PATH; write a .gif instead\n")
    assert not (tmp_path / "c").exists()  # refused before anything is written
    assert main(["animate", str(out), "--every", "0"]) == 1
    assert capsys.readouterr().err == ("rbcosim animate: error: --every: expected an integer "
                                       ">= 1, got 0\n")
