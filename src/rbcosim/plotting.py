"""Plots of a co-simulation's results: interface motion, continuity gaps, energy residual.

Uses matplotlib's Agg backend (no display needed); imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.results import Results

GAP_LABELS = {
    "gap_pos": "position (m)",
    "gap_rot": "rotation (rad)",
    "gap_vel": "velocity (m/s)",
    "gap_angvel": "angular velocity (rad/s)",
}


def _names(columns: list[str], suffix: str) -> list[str]:
    return [c[: -len(suffix)] for c in columns if c.endswith(suffix)]


def plot_cosim(results: Results, path: str | Path, title: str = "") -> Path:
    """Three panels over time — each interface point's position, each joint's continuity gaps
    (log scale), each joint's energy residual — written as a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = results.columns
    t = results.t
    points = [p for p in _names(cols, ".fx") if f"{p}.x" in cols]
    joints = _names(cols, ".gap_pos")
    fig, axes = plt.subplots(3, 1, figsize=(9, 10), sharex=True, constrained_layout=True)
    ax = axes[0]
    for p in points:
        for axis, style in zip("xyz", ("-", ":", "--")):
            values = results[f"{p}.{axis}"]
            if np.ptp(values) > 0 or axis != "y":
                ax.plot(t, values, style, label=f"{p}.{axis}")
    ax.set_ylabel("interface position (m)")
    ax.set_title(title or "interface motion")
    ax.legend(loc="best", fontsize="small", ncol=max(1, len(points)))
    ax.grid(True, alpha=0.3)
    ax = axes[1]
    for j in joints:
        for gap, label in GAP_LABELS.items():
            values = np.abs(results[f"{j}.{gap}"])
            if np.any(values > 0):
                ax.semilogy(t, np.where(values > 0, values, np.nan), label=f"{j}: {label}")
    ax.set_ylabel("continuity gap")
    ax.set_title("continuity gaps (rigid point vs flexible node)")
    ax.legend(loc="best", fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[2]
    for j in joints:
        ax.plot(t, results[f"{j}.energy_residual"], label=j)
    ax.set_ylabel("energy residual (J)")
    ax.set_xlabel("t (s)")
    ax.set_title("energy created (+) or destroyed (−) by the coupling")
    if joints:
        ax.legend(loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
