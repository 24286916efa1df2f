"""Make the figures of docs/coupling.md (PNG files in docs/img/).

    python docs/make_plots.py                    # every figure, a minute or two on 2 cores
    python docs/make_plots.py continuity_gaps    # one of them

The figures run the shipped scenarios with their own coupling settings (scheme,
extrapolation, added mass): regenerate them when a scenario's settings change.

- img/continuity_gaps.png: the rigid–flexible pendulum's continuity gaps (position, rotation,
  velocity, angular velocity) and energy residual against time at two macro steps;
- img/coupling_orders.png: max |x1 − exact| of the two-mass oscillator against H per scheme;
- img/rigid_flex_pendulum.gif, img/flexible_slider_crank.gif: the README's animations.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import scipy.linalg

from rbcosim.cosim.master import run_cosimulation
from rbcosim.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
IMG = Path(__file__).resolve().parent / "img"


def continuity_gaps() -> Path:
    fields = [("gap_pos", "position gap (m)"), ("gap_rot", "rotation gap (rad)"),
              ("gap_vel", "velocity gap (m/s)"), ("gap_angvel", "angular velocity gap (rad/s)"),
              ("energy_residual", "energy residual (J)")]
    fig, axes = plt.subplots(len(fields), 1, figsize=(7.5, 10), sharex=True)
    for H in (2.5e-4, 1.25e-4):
        scenario = load_scenario(SCENARIOS / "rigid_flex_pendulum.toml", [
            f"cosim.macro_step={H!r}", "solver.t_end=0.5", "solver.output_every=4",
            'couplings.clamp.on_violation="record"'])
        r = run_cosimulation(scenario, progress=False)
        for ax, (name, label) in zip(axes, fields):
            values = np.abs(r[f"clamp.{name}"])
            ax.semilogy(r.t[1:], np.maximum(values[1:], 1e-18), lw=0.8, label=f"H = {H:g} s")
            ax.set_ylabel(label, fontsize=8)
    c = scenario.cosim
    modes = scenario.flex_bodies["beam"]["modes"]
    axes[0].set_title(f"rigid_flex_pendulum ({modes} modes, {c.scheme}, extrapolation "
                      f"{c.extrapolation}, added mass {'on' if c.added_mass else 'off'}): "
                      "joint 'clamp'", fontsize=9)
    axes[-1].set_xlabel("t (s)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    out = IMG / "continuity_gaps.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def coupling_orders() -> Path:
    a = np.array([[0.0, 1.0, 0.0, 0.0], [-110.0, -1.0, 100.0, 1.0],
                  [0.0, 0.0, 0.0, 1.0], [100.0, 1.0, -1100.0, -1.0]])
    steps = [1e-2, 5e-3, 2.5e-3, 1.25e-3]
    fig, ax = plt.subplots(figsize=(7, 5))
    for scheme, extrapolation in [("jacobi", 0), ("jacobi", 1), ("gauss_seidel_rigid_first", 0),
                                  ("gauss_seidel_flex_first", 0), ("iterative", 0),
                                  ("iterative", 2), ("interface_jacobian", 0)]:
        err = []
        for H in steps:
            scenario = load_scenario(SCENARIOS / "two_mass_oscillator.toml", [
                f"cosim.macro_step={H!r}", "cosim.micro_steps=1", f'cosim.scheme="{scheme}"',
                f"cosim.extrapolation={extrapolation}", "solver.t_end=0.3",
                "solver.output_every=1"])
            r = run_cosimulation(scenario, progress=False)
            exact = np.array([(scipy.linalg.expm(a * t) @ [0.1, 0, 0, 0])[0] for t in r.t])
            err.append(np.max(np.abs(r["mass1.x"] - exact)))
        ax.loglog(steps, err, "o-", label=f"{scheme}, extrapolation {extrapolation}")
    for order, anchor in ((1, 3e-3), (2, 3e-5), (3, 3e-7)):
        ax.loglog(steps, anchor * (np.array(steps) / steps[0]) ** order, "k:", lw=0.7)
        ax.text(steps[0] * 1.05, anchor, f"H^{order}", fontsize=8)
    ax.set_xlabel("macro step H (s)")
    ax.set_ylabel("max |x1 − exact| (m), 0.3 s")
    ax.set_title("two_mass_oscillator, one rigid micro step per macro step", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = IMG / "coupling_orders.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def animations() -> list[Path]:
    """The README's GIFs of the main job and the flexible slider-crank (`rbcosim animate`'s
    drawing; the flexible bodies' modal displacements magnified to be seen)."""
    from rbcosim.animate.movie import movie_writer, write_movie
    from rbcosim.animate.scene import build_scene
    from rbcosim.runner import run_scenario

    written = []
    for name, scale in (("rigid_flex_pendulum", 50.0), ("flexible_slider_crank", 10.0)):
        scenario = load_scenario(SCENARIOS / f"{name}.toml")
        results = run_scenario(scenario, progress=False)
        rows = np.unique(np.linspace(0, len(results.t) - 1, 100).round().astype(int))
        scene = build_scene(results, scenario, scale=scale)
        path = IMG / f"{name}.gif"
        written.append(write_movie(scene, path, rows, movie_writer(path, fps=15.0),
                                   title=f"{name} (deflection × {scale:g})"))
    return written


def main(names: list[str]) -> None:
    IMG.mkdir(exist_ok=True)
    figures = {make.__name__: make for make in (continuity_gaps, coupling_orders, animations)}
    unknown = [n for n in names if n not in figures]
    if unknown:
        raise SystemExit(f"make_plots.py: no figure {unknown[0]!r}; figures: {', '.join(figures)}")
    for name in names or figures:
        print(f"wrote {figures[name]()}")


if __name__ == "__main__":
    main(sys.argv[1:])
