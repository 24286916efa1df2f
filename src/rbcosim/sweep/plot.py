"""A sweep's figure against one of its parameters (PNG)."""

from __future__ import annotations

from pathlib import Path

from rbcosim.errors import ScenarioError


def plot_figure(table, figure: str, parameter: str, path) -> Path:
    """Scatter `figure` over `param.<parameter>` for the cases that ran; one series per value
    of the other parameters when there are any. Returns the PNG path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    column = f"param.{parameter}"
    for name in (column, figure):
        if name not in table.columns:
            raise ScenarioError(f"--plot: no column {name!r} in the sweep table; columns: "
                                f"{sorted(table.columns)}")
    ok = table[table["status"] == "ok"].copy()
    ok[column] = ok[column].astype(float)
    ok[figure] = ok[figure].astype(float)
    others = [c for c in table.columns if c.startswith("param.") and c != column
              and table[c].nunique() > 1]
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = ok.groupby(others) if others else [((), ok)]
    for label, group in groups:
        group = group.sort_values(column)
        name = ", ".join(f"{o[6:]}={v}" for o, v in zip(others, label if isinstance(label, tuple)
                                                          else (label,)))
        ax.plot(group[column], group[figure], "o-", label=name or None)
    for values, scale in ((ok[column], ax.set_xscale), (ok[figure], ax.set_yscale)):
        if len(values) and values.min() > 0 and values.max() > 10 * values.min():
            scale("log")
    ax.set_xlabel(parameter)
    ax.set_ylabel(figure)
    ax.grid(True, alpha=0.3)
    if others:
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
