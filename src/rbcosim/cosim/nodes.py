"""A flexible body's interface nodes as the endpoint sees them (rbcosim.cosim.flex_endpoint).

The endpoint drives any body with k >= 1 interface nodes through the interface of
:class:`~rbcosim.flex.runtime.multi_body.MultiNodeBody` (what a new body must provide):

  initialize(t, motions), set_motion(motions)    k InterfaceMotions, node order;
  step(t, H, motions, extrapolation)             up to two past motion lists, newest first;
  wrenches() (k, 6), node_kinematics() (k, 13), frame_accelerations() (k, 6), inertial;
  added_mass() (6k, 6k), interface_jacobian() (two (6k, 6k)), stacked nodes, inertial;
  model, gravity, micro_steps, revision, time, modal_coordinates, output_nodes(),
  get_state() / set_state(); floating or chord-frame bodies also output_displacements().

:class:`NodeSet` is that interface as it is; :class:`CompiledNode` puts the compiled one-node
:class:`~rbcosim.flex.runtime.body.FlexBody` (grounded or floating) behind it and takes the endpoint's
exchange in the C core (``librbcosim/flex/endpoint.h``). Each keeps the arithmetic of its body
family (the order of the sums), so that a scenario's results keep their bits.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.flex.runtime.chord_body import ChordBody
from rbcosim.flex.runtime.interface_motion import InterfaceMotion


def hands_point_frame_mass(body) -> bool:
    """True when the body's added mass is handed to the rigid side in point-frame axes: a body
    in a floating reference frame (its added mass turns with it); a grounded body's and a
    chord-frame rod's (affine in the pins' inertial accelerations) go in inertial axes."""
    return body.model.attachment == "floating" and not isinstance(body, ChordBody)


def point_frame_mass(mass: np.ndarray, q: np.ndarray, inverse: bool) -> np.ndarray:
    """T^T M T (inverse: T M T^T), T = diag(R(q), R(q)): a (6, 6) mass between inertial and
    point-frame axes (R(q): point frame -> inertial). C core: librbcosim/flex/continuity.c."""
    out = np.empty((6, 6))
    _core.point_frame_mass(np.ascontiguousarray(mass, dtype=np.float64),
                           np.ascontiguousarray(q, dtype=np.float64), inverse, out)
    return out


class NodeSet:
    """A body with the MultiNodeBody interface (module docstring), k interface nodes."""

    fused = False  # no one-call exchange step: the endpoint steps, then commits

    def __init__(self, body, handed_mass: np.ndarray):
        """handed_mass: the endpoint's (6k, 6k) added mass handed to the rigid side (written in
        place by the endpoint; its diagonal blocks are the nodes' own)."""
        self.body = body
        self._handed = handed_mass
        self._point_frame = hands_point_frame_mass(body)

    def initialize(self, t: float, motions: list[InterfaceMotion]) -> None:
        self.body.initialize(t, motions)

    def set_motion(self, motions: list[InterfaceMotion]) -> None:
        self.body.set_motion(motions)

    def step(self, t: float, H: float, motions: list[InterfaceMotion],
             past: list[list[InterfaceMotion]]) -> None:
        self.body.step(t, H, motions, extrapolation=past)

    def wrenches(self) -> np.ndarray:
        return self.body.wrenches()

    def node_kinematics(self) -> np.ndarray:
        return self.body.node_kinematics()

    def added_mass(self) -> np.ndarray:
        return self.body.added_mass()

    def interface_jacobian(self) -> tuple[np.ndarray, np.ndarray]:
        return self.body.interface_jacobian()

    def powers(self) -> np.ndarray:
        """(k,): power (W) each node's wrench delivers to its rigid body now."""
        return np.einsum("ni,ni->n", self.body.wrenches(), self.body.node_kinematics()[:, 7:13])

    def rigid_inputs(self) -> np.ndarray:
        """(6k,): each node's wrench plus its handed added-mass block times its frame's
        accelerations (blocks in point-frame axes: `hands_point_frame_mass`)."""
        acc = self.body.frame_accelerations()
        k = acc.shape[0]
        handed = np.array([self._handed[6 * i:6 * i + 6, 6 * i:6 * i + 6] for i in range(k)])
        if self._point_frame:
            quats = self.body.node_kinematics()[:, 3:7]
            handed = np.array([point_frame_mass(m, q, True) for m, q in zip(handed, quats)])
        return (self.body.wrenches() + np.einsum("nij,nj->ni", handed, acc)).ravel()


class CompiledNode:
    """The compiled one-node FlexBody behind the MultiNodeBody interface (k = 1), its exchange
    (rigid input, step and commit) in the C core on the endpoint's arrays."""

    fused = True

    def __init__(self, body: FlexBody, exchange):
        """exchange: the endpoint's handle of its exchange arrays (make_handle "flex_exchange")."""
        self.body = body
        self._exchange = exchange
        self._floating = hands_point_frame_mass(body)

    def initialize(self, t: float, motions: list[InterfaceMotion]) -> None:
        self.body.initialize(t, motions[0])

    def set_motion(self, motions: list[InterfaceMotion]) -> None:
        self.body.set_motion(motions[0])

    def step(self, t: float, H: float, motions: list[InterfaceMotion],
             past: list[list[InterfaceMotion]]) -> None:
        self.body.step(t, H, motions[0], extrapolation=[p[0] for p in past])

    def wrenches(self) -> np.ndarray:
        return self.body.wrench().reshape(1, 6)

    def node_kinematics(self) -> np.ndarray:
        return self.body.node_kinematics().reshape(1, 13)

    def added_mass(self) -> np.ndarray:
        return self.body.added_mass()

    def interface_jacobian(self) -> tuple[np.ndarray, np.ndarray]:
        return self.body.interface_jacobian()

    def powers(self) -> np.ndarray:
        """(1,): power (W) the node's wrench delivers to the rigid body now, summed in index
        order from 0 as the C core's macro step does."""
        w, v = self.body.wrench(), self.body.node_kinematics()[7:13]
        return np.array([sum(float(w[i]) * float(v[i]) for i in range(6))])

    def rigid_inputs(self) -> np.ndarray:
        """(6,): the wrench plus the handed added mass times the frame's accelerations (C core:
        rbc_fx_rigid_input, the handed mass in the exchange's arrays)."""
        value = np.empty(6)
        body = self.body
        _core.rigid_input(self._exchange, body._state, body.wrench(), self._floating, value)
        return value

    def exchange_step(self, t: float, H: float, motion: InterfaceMotion,
                      future: InterfaceMotion | None, history: np.ndarray, count: np.ndarray,
                      checks, order: int, poly_order: int,
                      coef: np.ndarray) -> tuple[bool, int]:
        """step + commit + motion history in one C call (FlexBody.exchange_step): (range
        checks certainly quiet, rows of ``coef`` written)."""
        return self.body.exchange_step(t, H, motion, future, self._exchange, history, count,
                                       checks, order, poly_order, coef)
