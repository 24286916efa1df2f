"""Time-series plots of a results table (`rbcosim plot`, `run --plot`, `cosim`'s plot).

One implementation for every command: `select_columns` turns names or shell-style patterns
into columns (or picks a default set), `build_figure` draws them against `t` in one panel per
kind (unit) and returns the matplotlib Figure, `plot_results` writes it as a PNG. Uses
matplotlib's Agg canvas (no display needed); matplotlib is imported only when a plot is drawn.

Each line is labelled with its column name and its data are the CSV's rows: ``t`` (s) on x,
the column on y — minus its value at t = 0 for positions (bodies, interface points, flexible
output nodes: a millimetre oscillation on a metre offset stays visible; the legend gives the
value subtracted) unless ``relative=False``, for every column with ``relative=True`` — and its
absolute value on a log scale for the continuity gaps; energy as E − E(0); several modal
coordinates each divided by its largest |value| (the legend gives it). Each line's gid is its
column name. The results hold only the written rows (`solver.output_every`); the gap panels
therefore also draw the summary's maximum over every step as a dashed line, and the energy
panel of a coupled run names the summary's energy balance, so the plot and the summary agree.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.columns import JOINT_KINDS, Kind, classify, match_columns
from rbcosim.errors import RbcosimError
from rbcosim.results import Results

#: joint result field -> its maximum over every step in the summary's `joints.<joint>` table
SUMMARY_MAX = {"gap_pos": "max_gap_pos_m", "gap_rot": "max_gap_rot_rad",
               "gap_vel": "max_gap_vel_m_s", "gap_angvel": "max_gap_angvel_rad_s"}
#: kinds drawn when no column is asked for
DEFAULT_KINDS = ("body position", "interface point position", "interface point force",
                 "interface point moment", "flexible output node position",
                 "flexible output node deflection, floating frame", "modal coordinates",
                 *(q for q, _, _ in JOINT_KINDS.values()), "energy")


def select_columns(columns: list[str], patterns: list[str] | None = None) -> list[str]:
    """Columns matching `patterns` (names or shell-style patterns such as ``*.gap_pos``), in
    table order; without patterns, the default set: positions of bodies, interface points and
    flexible output nodes, interface wrenches, modal coordinates, continuity gaps, energy
    (columns constant over the run left out). ScenarioError names a pattern that matches
    nothing and lists close column names."""
    data_columns = [c for c in columns if c != "t"]
    if not patterns:
        names = set(columns)
        return [c for c in data_columns if classify(c, names).title in DEFAULT_KINDS]
    return match_columns(data_columns, patterns)


def build_figure(results: Results, columns: list[str] | None = None,
                 relative: bool | None = None, title: str = ""):
    """A matplotlib Figure of `columns` (default `select_columns`) against t, one panel per
    kind; `relative`: True subtracts every column's value at t=0, False none, None (default)
    those of positions. Gap panels add the summary maxima found in `results.diagnostics`."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RbcosimError("plots need matplotlib: pip install 'rbcosim[plots]'") from None
    explicit = columns is not None
    columns = select_columns(results.columns) if columns is None else columns
    names = set(results.columns)
    if not explicit:
        columns = [c for c in columns if np.ptp(results[c]) > 0] or columns
    panels: dict[Kind, list[str]] = {}
    for c in columns:
        panels.setdefault(classify(c, names), []).append(c)
    order = {title: i for i, title in enumerate(DEFAULT_KINDS)}
    panels = dict(sorted(panels.items(), key=lambda item: order.get(item[0].title, len(order))))
    ncols = 1 if len(panels) <= 4 else 2
    items = _energy_row(list(panels.items()), ncols)
    nrows = max(1, -(-len(items) // ncols))
    fig = Figure(figsize=(7.5 * ncols, 2.4 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, sharex=True, squeeze=False).ravel()
    t = results.t
    for ax, item in zip(axes, items):
        if item is None:
            ax.set_visible(False)
            continue
        kind, cols = item
        _draw_panel(ax, kind, cols, results, t, kind.relative if relative is None else relative)
    for ax in axes[len(items):]:
        ax.set_visible(False)
    for ax in axes[-ncols:]:
        ax.set_xlabel("t (s)")
    if title:
        fig.suptitle(title)
    return fig


def _energy_row(items: list, ncols: int) -> list:
    """The panels with energy and the coupling energy residual last, side by side in one row
    of two columns (an empty slot before them when needed)."""
    pair = ("energy", JOINT_KINDS["energy_residual"][0])
    last = [next((i for i in items if i[0].title == title), None) for title in pair]
    if ncols != 2 or None in last:
        return items
    rest = [i for i in items if i[0].title not in pair]
    return rest + [None] * (len(rest) % 2) + last


def _draw_panel(ax, kind: Kind, cols: list[str], results: Results, t: np.ndarray,
                relative: bool) -> None:
    if kind.title == "energy":
        _draw_energy(ax, cols, results, t)
        return
    if kind.title == "modal coordinates" and len(cols) > 1:
        _draw_normalised(ax, kind, cols, results, t)
        return
    unit = f" ({kind.unit})" if kind.unit else ""
    ylabel = kind.title + unit
    for c in cols:
        values = results[c]
        if kind.log:
            values = np.abs(values)
            ax.semilogy(t, np.where(values > 0, values, np.nan), label=c, gid=c)
            maximum = _summary_max(results.diagnostics, c)
            if maximum is not None:
                ax.axhline(maximum, ls="--", lw=0.8, color=ax.lines[-1].get_color(),
                           label=f"{c}: max over all steps {maximum:.3g} (summary)")
        else:
            if relative:
                ax.plot(t, values - values[0], label=f"{c} (at t=0: {values[0]:.6g})", gid=c)
            else:
                ax.plot(t, values, label=c, gid=c)
    if relative and not kind.log:
        ylabel += " − value at t=0"
    ax.set_title(ylabel, fontsize="medium")
    ax.set_ylabel(kind.unit or kind.title)
    ax.legend(loc="best", fontsize="small", ncol=1 + len(cols) // 5)
    ax.grid(True, which="both", alpha=0.3)


def _draw_normalised(ax, kind: Kind, cols: list[str], results: Results, t: np.ndarray) -> None:
    """Each column divided by its largest |value| (the legend gives it), so a small mode is
    as readable as a large one."""
    for c in cols:
        values = results[c]
        peak = float(np.max(np.abs(values)))
        scale = peak if peak > 0 else 1.0
        ax.plot(t, values / scale, label=f"{c} ÷ {scale:.3g}", gid=c)
    ax.set_title(f"{kind.title}, each ÷ its largest |value|", fontsize="medium")
    ax.set_ylabel("normalised")
    ax.legend(loc="best", fontsize="small", ncol=1 + len(cols) // 5)
    ax.grid(True, alpha=0.3)


def _draw_energy(ax, cols: list[str], results: Results, t: np.ndarray) -> None:
    """E − E(0) (J), no axis offset; with a flexible side (coupling energy residual columns),
    the title says the rigid side exchanges work with it and the legend gives the summary's
    energy balance |E − E(0) − W| over every step (W: the work of interface wrenches, loads,
    dampers and drivers)."""
    for c in cols:
        values = results[c]
        ax.plot(t, values - values[0], label=f"{c} − E(0), E(0) = {values[0]:.8g} J", gid=c)
    title = "energy − E(0) (J)"
    if any(c.endswith(".energy_residual") for c in results.columns):
        title += ": rigid side, exchanging work with the flexible side"
        balance = results.diagnostics.get("energy_max_relative_drift")
        if balance is not None:
            ax.plot([], [], " ", label=f"energy balance |E − E(0) − W|: max {balance:.2g} of "
                                       "the energy scale over all steps (summary)")
    ax.set_title(title, fontsize="medium")
    ax.set_ylabel("J")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useOffset=False)
    ax.legend(loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)


def _summary_max(diagnostics: dict, column: str) -> float | None:
    joint, _, field = column.rpartition(".")
    value = diagnostics.get("joints", {}).get(joint, {}).get(SUMMARY_MAX.get(field, ""))
    return float(value) if value is not None else None


def plot_results(results: Results, path: str | Path, columns: list[str] | None = None,
                 relative: bool | None = None, title: str = "") -> Path:
    """Write `build_figure(results, columns, relative, title)` as a PNG to `path`; returns it."""
    fig = build_figure(results, columns, relative, title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
