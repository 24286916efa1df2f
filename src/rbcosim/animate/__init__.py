"""Watch a run: a ParaView time series (.vtu per row + .pvd) and a quick-look GIF of the
bodies, interface points and flexible bodies of a results table (`rbcosim animate`,
`run --animate`, `cosim --animate`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rbcosim.animate.movie import movie_writer, write_movie
from rbcosim.animate.scene import build_scene
from rbcosim.animate.vtk_series import check_meshio, write_series
from rbcosim.results import Results


def write_animation(results: Results, directory: str | Path, stem: str, scenario=None,
                    scale: float = 1.0, every: int = 1, gif_frames: int = 120,
                    movie: str = "gif", fps: float = 20.0) -> list[Path]:
    """Write ``<directory>/<stem>.pvd`` with its .vtu files (every `every`-th row, and the
    last) and ``<directory>/<stem>.<movie>`` (at most `gif_frames` frames, evenly spaced;
    no movie when `gif_frames` is 0); returns the paths written."""
    directory = Path(directory)
    movie_path = directory / f"{stem}.{movie}"
    writer = movie_writer(movie_path, fps) if gif_frames > 0 else None
    check_meshio()
    scene = build_scene(results, scenario, scale)
    n = len(results.t)
    rows = np.unique(np.append(np.arange(0, n, max(1, every)), n - 1))
    written = [write_series(scene, directory, stem, rows)]
    if writer is not None:
        frames = np.unique(np.linspace(0, n - 1, min(n, gif_frames)).round().astype(int))
        written.append(write_movie(scene, movie_path, frames, writer, title=stem))
    return written
