"""What an animation draws, row by row of a results table: points, line and vertex cells.

Parts (inertial positions, m):

- each body: its origin (the centre of mass, results ``<body>.x..z``), the points where its
  joints, springs and interface points attach (body frame, from the scenario) joined to the
  origin by lines — the body's shape; and its frame axes: lines from the origin to
  ``origin + axes_length R(q) e_i`` (``R(q)`` from ``<body>.q0..q3``);
- each interface point: a vertex at ``<point>.x..z``;
- each floating flexible beam: its deformed FE nodes joined by its elements
  (:mod:`rbcosim.animate.flex_shapes`);
- each flexible output node: a vertex at ``<flex>.<node>.x..z`` (where the run put it: not
  moved by ``scale``).

Without a scenario the bodies are their frame axes only (no attachment points, no beams).
Cell data ``part`` indexes ``Scene.parts``; ``kind`` is one of ``KINDS``. Point data
``displacement``: the flexible nodes' elastic displacement (unscaled, inertial, m), zero
elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbcosim.animate.flex_shapes import BeamShape, beam_shapes
from rbcosim.columns import classify
from rbcosim.results import Results
from rbcosim.spatial.quaternion import to_matrix

#: cell kinds (cell data ``kind``)
KINDS = ("body", "axis x", "axis y", "axis z", "interface point", "flexible element",
         "flexible output node")


@dataclass
class Scene:
    """Constant topology and per-row point positions of an animation."""

    results: Results
    scale: float = 1.0  # on the flexible beams' modal displacements, not on the output nodes
    parts: list[str] = field(default_factory=list)
    slices: dict[str, slice] = field(default_factory=dict)  # part -> its points
    lines: list[tuple[int, int, int, int]] = field(default_factory=list)  # (a, b, part, kind)
    vertices: list[tuple[int, int, int]] = field(default_factory=list)  # (a, part, kind)
    _fixed: list[tuple[slice, np.ndarray]] = field(default_factory=list)  # (T, n, 3) each
    _shapes: list[tuple[slice, BeamShape]] = field(default_factory=list)
    n_points: int = 0

    @property
    def n_rows(self) -> int:
        return len(self.results.t)

    def _add_part(self, name: str, positions: np.ndarray) -> tuple[int, int]:
        """Register a part whose positions (T, n, 3) are known; returns (part id, first point)."""
        start = self.n_points
        self.n_points += positions.shape[1]
        self.slices[name] = slice(start, self.n_points)
        self.parts.append(name)
        self._fixed.append((self.slices[name], positions))
        return len(self.parts) - 1, start

    def points(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, displacement) at row i, each (n_points, 3), inertial, m."""
        pos, disp = np.empty((self.n_points, 3)), np.zeros((self.n_points, 3))
        for where, values in self._fixed:
            pos[where] = values[i]
        for where, shape in self._shapes:
            pos[where], disp[where] = shape.nodes(i)
        return pos, disp


def build_scene(results: Results, scenario=None, scale: float = 1.0,
                axes_length: float | None = None) -> Scene:
    """The Scene of `results` (optionally with its `scenario`: body shapes, beams); `scale`
    multiplies the flexible bodies' modal displacements; `axes_length` (m) the frame axes
    (default: a quarter of the largest attachment offset, else 0.1 m)."""
    scene = Scene(results, scale)
    names = set(results.columns)
    stems = [c[:-2] for c in results.columns if c.endswith(".x")]
    bodies = [s for s in stems if classify(f"{s}.x", names).title == "body position"]
    offsets = _attachments(scenario, bodies) if scenario is not None else {}
    if axes_length is None:
        sizes = [np.linalg.norm(p, axis=1).max() for p in offsets.values() if len(p)]
        axes_length = 0.25 * max(sizes) if sizes and max(sizes) > 0 else 0.1
    for body in bodies:
        local = np.vstack((np.zeros((1, 3)), offsets.get(body, np.zeros((0, 3))),
                           axes_length * np.eye(3)))
        x = np.column_stack([results[f"{body}.{c}"] for c in "xyz"])
        rot = to_matrix(np.column_stack([results[f"{body}.q{k}"] for k in range(4)]))
        part, start = scene._add_part(f"body {body}", x[:, None] + local @ rot.transpose(0, 2, 1))
        n = len(local)
        scene.lines += [(start, start + j, part, 0) for j in range(1, n - 3)]
        scene.lines += [(start, start + n - 3 + k, part, 1 + k) for k in range(3)]
    for stem in stems:
        title = classify(f"{stem}.x", names).title
        if title in ("interface point position", "flexible output node position"):
            kind = 4 if title.startswith("interface") else 6
            x = np.column_stack([results[f"{stem}.{c}"] for c in "xyz"])
            part, start = scene._add_part(f"{'point' if kind == 4 else 'node'} {stem}",
                                          x[:, None])
            scene.vertices.append((start, part, kind))
    if scenario is not None:
        for name, shape in beam_shapes(scenario, results, scale).items():
            _add_beam(scene, name, shape)
    return scene


def _add_beam(scene: Scene, name: str, shape: BeamShape) -> None:
    start = scene.n_points
    scene.n_points += shape.n_nodes
    where = slice(start, scene.n_points)
    scene.slices[f"flex {name}"] = where
    scene.parts.append(f"flex {name}")
    part = len(scene.parts) - 1
    scene._shapes.append((where, shape))
    scene.lines += [(start + j, start + j + 1, part, 5) for j in range(shape.n_nodes - 1)]


def _attachments(scenario, bodies: list[str]) -> dict[str, np.ndarray]:
    """{body: (m, 3) body-frame points (m) where its joints, springs and interface points
    attach}, duplicates and the origin left out."""
    model = scenario.model
    found: dict[int, list[np.ndarray]] = {}
    markers = [m for j in model.joints for m in (j.marker1, j.marker2)]
    markers += [m for s in model.springs for m in (s.marker1, s.marker2)]
    for m in [*markers, *model.points]:
        found.setdefault(m.body, []).append(np.asarray(m.position, dtype=float))
    out = {}
    for body in bodies:
        try:
            index = model.body_index(body)
        except KeyError:
            continue
        unique: list[np.ndarray] = []
        for p in found.get(index, []):
            if np.linalg.norm(p) > 1e-12 and all(np.linalg.norm(p - u) > 1e-12 for u in unique):
                unique.append(p)
        out[body] = np.array(unique).reshape(-1, 3)
    return out
