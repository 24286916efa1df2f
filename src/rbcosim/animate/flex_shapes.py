"""Deformed shapes of the flexible bodies, rebuilt from a results table and the scenario.

A results table holds each flexible body's modal coordinates ``<flex>.eta1..k`` and the poses
of the interface points it is coupled to. The shape at a row is the scenario's model evaluated
at every FE node (the model rebuilt with an output node per FE node, its mode signs matched to
the run's model) in the frame the run used:

- a floating beam (``frame = "node"``): the interface point's frame (results columns
  ``<point>.x..z``, ``<point>.q0..q3``) times the model's beam-axis rotation, nodes at
  ``r_p + R (X + u)``;
- a chord-frame rod (``frame = "chord"``): origin at the first pin's point, x towards the
  second's, stretch ``s = |p_B − p_A| − L`` (:mod:`rbcosim.flex.modelling.chord`);
- a 3D beam floating at several couplings: its frame and boundary coordinates from the points'
  poses (:func:`rbcosim.flex.runtime.floating_multi_frame.frame_state`).

Other flexible bodies (grounded attachment, imported matrices) have no node line here: the
scene shows their output nodes only. Positions inertial, m; ``scale`` multiplies the modal
part of the elastic displacement (the chord's stretch is not scaled, so the rod still ends at
its second pin).
"""

from __future__ import annotations

import numpy as np

from rbcosim.errors import ScenarioError
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.modelling.floating_multi import FloatingMultiModel
from rbcosim.flex.modelling.interface_nodes import Interface, released_components
from rbcosim.flex.runtime.floating_multi_frame import frame_state
from rbcosim.results import Results
from rbcosim.scenario.flex_config import flex_model_from_config
from rbcosim.spatial.quaternion import to_matrix

NODE_PREFIX = "_node"


class BeamShape:
    """The FE nodes of one flexible beam (``n_nodes``) along the rows of a results table."""

    def __init__(self, name: str, scenario, results: Results, scale: float = 1.0):
        couplings = [c for c in scenario.couplings if c.flex_body == name]
        cfg = scenario.flex_bodies[name]
        where = f"{scenario.source}: flex_bodies.{name}"
        interfaces = [Interface(c.node, released_components(c.type, c.axis),
                                f"{scenario.source}: couplings.{c.name}") for c in couplings]
        run_model = flex_model_from_config(cfg, scenario.base_dir, where, interfaces)
        self.n_nodes = int(cfg["elements"]) + 1
        outputs = {**cfg.get("output_nodes", {}),
                   **{f"{NODE_PREFIX}{i}": i for i in range(self.n_nodes)}}
        model = flex_model_from_config({**cfg, "output_nodes": outputs}, scenario.base_dir,
                                       where, interfaces)
        self.name, self.model, self.scale = name, model, float(scale)
        self.points = [c.point for c in couplings]
        self.chord = isinstance(model, ChordModel)
        nb = model.n_boundary
        n_out = len(run_model.output_names)
        signs = _sign_match(_sign_blocks(run_model, n_out), _sign_blocks(model, n_out))
        rows = np.array(model.output_rows[n_out:], dtype=float)
        rows[..., nb:] *= signs
        self.rows, self.nb = rows, nb  # (n_nodes, 2 or 3, nb + k) in the model's frame
        columns = [f"{name}.eta{j + 1}" for j in range(model.n_modes)]
        missing = [c for c in columns if c not in results.columns]
        if missing:
            raise ScenarioError(f"results: no column {missing[0]!r} for flex_bodies.{name} "
                                "(the results of another scenario?)")
        self.eta = np.column_stack([results[c] for c in columns]) if columns else \
            np.zeros((len(results.t), 0))
        self.results = results

    def nodes(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, displacements) of the nodes at row i, each (n_nodes, 3), inertial, m;
        the displacement is the unscaled elastic one."""
        r = self.results
        p = [np.array([r[f"{pt}.{c}"][i] for c in "xyz"]) for pt in self.points]
        eta = self.eta[i]
        if self.chord:
            return self._chord_nodes(p[0], p[1], eta)
        if isinstance(self.model, FloatingMultiModel):
            return self._multi_nodes(i, np.array(p), eta)
        q = np.array([r[f"{self.points[0]}.q{k}"][i] for k in range(4)])
        rot = to_matrix(q) @ self.model.axis_rotation
        y = np.concatenate((np.zeros(self.nb), eta))
        u = self.rows @ y
        local = self.model.output_positions[-self.n_nodes:] + self.scale * u
        return p[0] + local @ rot.T, u @ rot.T

    def _multi_nodes(self, i: int, p: np.ndarray, eta: np.ndarray):
        """A floating multi-node body: each point's structure orientation is its rotation
        times its mounting at row 0 (as the body takes it at initialize)."""
        r = self.results
        rots = [[to_matrix(np.array([r[f"{pt}.q{k}"][j] for k in range(4)]))
                 for pt in self.points] for j in (0, i)]
        axes = rots[0][0] @ self.model.axis_rotation
        orient = np.array([now @ (axes.T @ start).T for start, now in zip(*rots, strict=True)])
        kin = np.zeros((len(self.points), 18))
        kin[:, 0:3] = p
        st = frame_state(kin, orient, self.model, np.zeros(3))
        u = self.rows @ np.concatenate((st.ub, eta))
        local = self.model.output_positions[-self.n_nodes:] + self.rows @ np.concatenate(
            (st.ub, self.scale * eta))
        return p[0] + local @ st.rot.T, u @ st.rot.T

    def _chord_nodes(self, a: np.ndarray, b: np.ndarray, eta: np.ndarray):
        d = (b - a)[[0, 2]]
        length = float(np.hypot(*d))
        ex = d / length
        rot = np.array([[ex[0], -ex[1]], [ex[1], ex[0]]])  # columns e_x, e_z on (x, z)
        s = length - self.model.length
        u = self.rows @ np.concatenate(([s], eta))  # (n, 2): (u_x, u_z), chord frame
        u_scaled = self.rows @ np.concatenate(([s], self.scale * eta))
        x = self.model.output_x[-self.n_nodes:]
        pos = np.tile(a, (self.n_nodes, 1))
        pos[:, [0, 2]] += (np.column_stack((x, np.zeros_like(x))) + u_scaled) @ rot.T
        disp = np.zeros((self.n_nodes, 3))
        disp[:, [0, 2]] = u @ rot.T
        return pos, disp


def beam_shapes(scenario, results: Results, scale: float) -> dict[str, BeamShape]:
    """{flexible body: BeamShape} for the scenario's floating beams (see the module docstring)."""
    shapes = {}
    for name, cfg in scenario.flex_bodies.items():
        if cfg.get("kind") == "beam" and cfg.get("attachment", "floating") == "floating":
            shapes[name] = BeamShape(name, scenario, results, scale)
    return shapes


def _sign_blocks(model, n_out: int) -> list[np.ndarray]:
    """Quantities (..., k), linear in each mode, that two builds of one model share: the run's
    output nodes and the inertia or load rows (so a rebuilt model's mode signs can be matched)."""
    nb = model.n_boundary
    blocks = [np.asarray(model.output_rows[:n_out])[..., nb:]]
    if isinstance(model, ChordModel):
        blocks += [model.load_b[1:].T, model.load_alpha[1:][None], model.pin_mass[:, 1:]]
    elif isinstance(model, FloatingMultiModel):
        blocks += [model.modal_first_moment[:, nb:], model.mass[:nb, nb:]]
    elif model.floating is not None:
        blocks.append(model.floating.modes)
    return [np.asarray(b, dtype=float).reshape(-1, model.n_modes) for b in blocks]


def _sign_match(reference: list[np.ndarray], rebuilt: list[np.ndarray]) -> np.ndarray:
    """Signs (k,) that turn the rebuilt model's modes into the reference's."""
    dots = sum((a * b).sum(axis=0) for a, b in zip(reference, rebuilt, strict=True))
    return np.where(np.asarray(dots) < 0.0, -1.0, 1.0)
