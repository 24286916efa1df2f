"""A quick look at the Scene: a GIF (matplotlib's Pillow writer) or, where ffmpeg is installed,
an MP4, projected on the inertial plane the motion spans most (the two axes with the largest
range of the drawn points). With a magnified deflection (scale ≠ 1) the flexible output nodes,
which stay where the run put them, are left out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.animate.scene import Scene
from rbcosim.errors import RbcosimError

#: (kind indices, colour, line width) of the line collections drawn
_LINE_STYLES = (((0,), "0.15", 2.5), ((1,), "tab:red", 1.0), ((2,), "tab:green", 1.0),
                ((3,), "tab:blue", 1.0), ((5,), "tab:purple", 2.0))
#: (kind index, marker, colour) of the vertices drawn
_POINT_STYLES = ((4, "o", "tab:orange"), (6, "s", "tab:red"))


def movie_writer(path: Path, fps: float = 20.0):
    """matplotlib's writer for `path`: Pillow for .gif, ffmpeg for .mp4 (RbcosimError when
    matplotlib or ffmpeg is missing or the suffix is neither)."""
    try:
        from matplotlib import animation
    except ImportError:
        raise RbcosimError("animate needs matplotlib: pip install 'rbcosim[animate]'") from None
    if path.suffix.lower() == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            raise RbcosimError(f"{path}: an MP4 needs ffmpeg on PATH; write a .gif instead")
        return animation.FFMpegWriter(fps=fps)
    if path.suffix.lower() == ".gif":
        return animation.PillowWriter(fps=fps)
    raise RbcosimError(f"{path}: expected a .gif or .mp4 file")


def write_movie(scene: Scene, path: Path, rows: np.ndarray, writer, title: str = "",
                size_in: float = 4.0, dpi: int = 80) -> Path:
    """Write the frames of `rows` (row indices) to `path` with `writer` (`movie_writer`)."""
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    frames = [scene.points(int(i))[0] for i in rows]
    axes = _plane(np.concatenate(frames))
    fig = Figure(figsize=(size_in, size_in))
    fig.subplots_adjust(left=0.18, right=0.96, bottom=0.13, top=0.88)
    ax = fig.add_subplot()
    ax.set_aspect("equal")
    _limits(ax, np.concatenate(frames)[:, axes])
    ax.set_xlabel(f"{'xyz'[axes[0]]} (m)")
    ax.set_ylabel(f"{'xyz'[axes[1]]} (m)")
    ax.grid(True, alpha=0.3)
    lines = np.array([c[:2] for c in scene.lines], dtype=int).reshape(-1, 2)
    line_kind = np.array([c[3] for c in scene.lines], dtype=int)
    collections = []
    for kinds, colour, width in _LINE_STYLES:
        chosen = lines[np.isin(line_kind, kinds)]
        collections.append((chosen, ax.add_collection(LineCollection([], colors=colour,
                                                                     linewidths=width))))
    markers = []
    for kind, marker, colour in _POINT_STYLES:
        if kind == 6 and scene.scale != 1.0:
            continue
        chosen = np.array([v[0] for v in scene.vertices if v[2] == kind], dtype=int)
        markers.append((chosen, ax.plot([], [], marker, color=colour, ms=4, ls="")[0]))
    t = scene.results.t
    path.parent.mkdir(parents=True, exist_ok=True)
    with writer.saving(fig, str(path), dpi):
        for i, pos in zip(rows, frames, strict=True):
            p = pos[:, axes]
            for chosen, collection in collections:
                collection.set_segments(p[chosen])
            for chosen, artist in markers:
                artist.set_data(p[chosen, 0], p[chosen, 1])
            ax.set_title(f"{title}\nt = {t[i]:.3f} s".strip(), fontsize="small")
            writer.grab_frame()
    return path


def _plane(points: np.ndarray) -> list[int]:
    """The two inertial axes (ascending) with the largest range of `points` (n, 3)."""
    spread = np.ptp(points, axis=0)
    return sorted(np.argsort(-spread, kind="stable")[:2].tolist())


def _limits(ax, p: np.ndarray) -> None:
    low, high = p.min(axis=0), p.max(axis=0)
    margin = 0.05 * max(float(np.max(high - low)), 1e-6)
    ax.set_xlim(low[0] - margin, high[0] + margin)
    ax.set_ylim(low[1] - margin, high[1] + margin)
