"""The floating body's kernels (linear floating frame of reference), in the C core
(``librbcosim/flex/floating.c``; the macro step runs through FlexBody's handle,
``librbcosim/flex/endpoint.h``).

Equations and frames: see :mod:`rbcosim.flex.runtime.body`. Structure-frame inputs are ``w``,
``alpha`` and ``b = a_p - g`` rotated by ``R_s = R(q) @ axis_rotation`` (structure ->
inertial). The modes obey ``eta'' = W @ z`` with ``W`` the model's ``ode_matrix`` (k, 20k + 15)
and ``z = [eta, eta', b, alpha, kron(w, w), kron(w, eta'), kron(alpha, eta),
kron(kron(w, w), eta), kron(b, eta)]`` (the last block and part of the one before: geometric
stiffening, :mod:`rbcosim.flex.modelling.geometric`).

A macro step integrates (q, eta, eta') by classic RK4 with ``n`` micro steps, in one call.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core


def floating_wrench(s: np.ndarray, gravity: np.ndarray, axis_rotation: np.ndarray, wmat: np.ndarray,
                    total_mass: float, first_moment: np.ndarray, s_e: np.ndarray,
                    spin_inertia: np.ndarray, moment_invariants: np.ndarray) -> np.ndarray:
    """[force (3) N, moment (3) N·m] on the rigid body at the point, inertial, at the state s
    (its frame and modes; formulas in the module docstring of :mod:`rbcosim.flex.runtime.body`), from
    the inertia invariants of :class:`rbcosim.flex.modelling.model.FloatingInertia`: O(k²) per call,
    whatever the mesh."""
    out = np.empty(6)
    _core.floating_wrench(s, gravity, axis_rotation, wmat, float(total_mass), first_moment, s_e,
                          spin_inertia, moment_invariants, out)
    return out
