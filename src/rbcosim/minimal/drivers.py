"""Drivers in joint coordinates: a driven tree joint's coordinate is prescribed, not integrated.

A driver on a revolute or prismatic joint that the spanning tree uses fixes that joint's
coordinate q_p = f(t) (rad or m), its rate v_p = ḟ(t) and its acceleration v̇_p = f̈(t), f the
driver's `Motion`. Prescribed rates are neither independent nor dependent coordinates of the
partition (`rbcosim.minimal.loops`): they have no virtual displacement, so they leave the
reduced equations, and their generalized force is the driver's effort

    τ_p = (M v̇ + C − Gᵀ λ)_p,

the share of the joint-space residual M v̇ + C that the loop closure (Jacobian G on the rates,
multipliers λ) does not carry: N·m about the driven revolute's axis z1, or N along the driven
prismatic's, acting on body2 — what the maximal route reports as `D.force`. Its power is τ_p ḟ
(W).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.minimal.tree import Tree
from rbcosim.model import Motion


@dataclass(frozen=True)
class Prescribed:
    """The drivers of a model in tree coordinates: names (model order), their motions, and
    the index of each driven coordinate in q and of its rate in v."""

    names: tuple[str, ...]
    motions: tuple[Motion, ...]
    q_index: np.ndarray
    v_index: np.ndarray

    def values(self, t: float) -> np.ndarray:
        """(3, n_drivers): f, ḟ, f̈ of every driver at time t (s)."""
        return np.array([m.evaluate(t) for m in self.motions], dtype=float).reshape(-1, 3).T

    def impose(self, t: float, y: np.ndarray, nq: int) -> None:
        """Set the driven coordinates and rates of y = [q, v] in place to f(t), ḟ(t)."""
        f, fd, _ = self.values(t)
        y[self.q_index] = f
        y[nq + self.v_index] = fd


def prescribed(tree: Tree, drivers: list[int]) -> Prescribed:
    """Prescribed of the model joints `drivers` (indices of driver joints) on `tree`;
    SimulationError when a driven joint closes a loop or is driven twice."""
    model = tree.model
    owner = {tj.model_joint: tj for tj in tree.joints}
    q_index, v_index, seen = [], [], {}
    for k in drivers:
        driver = model.joints[k]
        target = model.joints[driver.driven_joint].name
        if driver.driven_joint not in owner:
            raise SimulationError(f"driver {driver.name!r}: its joint {target!r} closes a loop of "
                                  "the minimal route's spanning tree, which drives tree joints "
                                  "only; use formulation = \"maximal\"")
        if driver.driven_joint in seen:
            raise SimulationError(f"drivers {seen[driver.driven_joint]!r} and {driver.name!r} "
                                  f"both drive joint {target!r}")
        seen[driver.driven_joint] = driver.name
        tj = owner[driver.driven_joint]
        q_index.append(tj.q0)
        v_index.append(tj.v0)
    return Prescribed(tuple(model.joints[k].name for k in drivers),
                      tuple(model.joints[k].motion for k in drivers),
                      np.array(q_index, dtype=np.int64), np.array(v_index, dtype=np.int64))


def efforts(residual: np.ndarray, G: np.ndarray, v_index: np.ndarray) -> np.ndarray:
    """Driver efforts τ_p from residual = M v̇ + C (nv,) = Gᵀ λ + Σ_p e_p τ_p, G (m, nv) the
    independent closure rows: least squares over [Gᵀ, e_p] (exact when the drivers and the
    loops do not fix the same motion)."""
    basis = np.zeros((residual.size, G.shape[0] + v_index.size))
    basis[:, : G.shape[0]] = G.T
    basis[v_index, G.shape[0] + np.arange(v_index.size)] = 1.0
    return np.linalg.lstsq(basis, residual, rcond=None)[0][G.shape[0]:]
