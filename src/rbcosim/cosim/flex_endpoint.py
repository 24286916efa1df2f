"""The flexible side of one rigid–flexible joint: a FlexBody and what it has exchanged.

The same object runs in process (CosimMaster) and in a separate flexible-solver process
(`rbcosim flex`), so both give the same bits. Per macro step [t, t + H]:
  report()            the node's kinematics (13,) and the energy (J) delivered so far;
  polynomial(t, end)  the wrench polynomial the rigid side applies over the step;
  advance(t, motion)  step the flexible body with the rigid point's motion at t;
  commit(motion)      accept the step: energy bookkeeping and exchange histories.
"""

from __future__ import annotations

import numpy as np

from rbcosim import quaternion as quat
from rbcosim.cosim.codec import pack_state, unpack_state
from rbcosim.cosim.signals import polynomial_through
from rbcosim.flex.body import FlexBody
from rbcosim.flex.kinematics import InterfaceMotion
from rbcosim.settings import CosimSettings, Coupling


def motion_of(values: np.ndarray, t: float) -> InterfaceMotion:
    """InterfaceMotion from a point's outputs + accelerations (19,) at time t."""
    return InterfaceMotion(values[:3], values[3:7], values[7:10], values[10:13], values[13:16],
                           values[16:19], time=t)


class FlexEndpoint:
    """A FlexBody coupled at `coupling.point`, with histories and its side of the energy ledger."""

    def __init__(self, coupling: Coupling, body: FlexBody, settings: CosimSettings, H: float):
        self.coupling = coupling
        self.body = body
        self.settings = settings
        self.H = H
        self.wrench_history: list[tuple[float, np.ndarray]] = []  # newest first
        self.motion_history: list[InterfaceMotion] = []  # newest first
        self.energy = 0.0
        self.implicit_mass = False
        self._handed_mass = np.zeros((6, 6))  # what the rigid side applies, point frame if floating
        self._pending_power = 0.0

    @property
    def joint(self) -> str:
        return self.coupling.name

    # --- start ----------------------------------------------------------------------------
    def initialize(self, t: float, motion: InterfaceMotion) -> tuple[np.ndarray, str] | None:
        """Place the body at the rigid point's motion; returns the added mass to hand to the
        rigid side as (M_a (6,6), frame "point" | "inertial"), or None."""
        c, body = self.coupling, self.body
        if c.grounded_reference is not None:
            body.initialize(t, InterfaceMotion.at_rest(c.grounded_reference, motion.quaternion))
            body.set_motion(motion)
            _start_unstressed_interior(body)
        else:
            body.initialize(t, motion)
        handover = None
        if self.settings.added_mass:
            handover = self._added_mass(motion)
        self.wrench_history = [(t, self.rigid_input())]
        return handover

    def _added_mass(self, motion: InterfaceMotion):
        """The body's instantaneous added mass, so that the rigid side treats it implicitly:
        explicit force coupling of a body heavier than what it hangs on diverges at any macro
        step (the added-mass instability)."""
        mass = self.body.added_mass()
        if not np.any(np.abs(mass) > 1e-12 * max(1.0, np.abs(mass).max())):
            return None
        self.implicit_mass = True
        if self.body.model.attachment == "floating":
            T = np.kron(np.eye(2), quat.to_matrix(motion.quaternion))
            self._handed_mass = T.T @ mass @ T
            return self._handed_mass, "point"
        self._handed_mass = mass
        return mass, "inertial"

    # --- what goes to the rigid side --------------------------------------------------------
    def rigid_input(self) -> np.ndarray:
        """The wrench (6,) the rigid side takes now: the whole wrench W, or, when the added
        mass M_a was handed over, W + M_a [a; α] (the rigid side applies −M_a [a_p; α_p] itself).
        Not the wrench at zero accelerations: the body's own added mass drifts from M_a as it
        deforms, and that part must stay in the explicit input."""
        wrench = self.body.wrench()
        if not self.implicit_mass:
            return wrench
        mass = self._handed_mass
        if self.body.model.attachment == "floating":
            T = np.kron(np.eye(2), quat.to_matrix(self.body.node_kinematics()[3:7]))
            mass = T @ mass @ T.T
        return wrench + mass @ self.body.frame_accelerations()

    def report(self) -> tuple[np.ndarray, float]:
        """(node kinematics (13,), energy delivered so far J) for the continuity check."""
        return self.body.node_kinematics(), self.energy

    def polynomial(self, t: float, end: np.ndarray | None = None) -> np.ndarray:
        """Wrench coefficients (order+1, 6) in τ = time − t over [t, t + H]: through the past
        values (extrapolation), or through an end value and past values (interpolation)."""
        order = self.settings.extrapolation
        if end is None:
            points = [(tn - t, w) for tn, w in self.wrench_history[: order + 1]]
        else:
            points = [(self.H, end)] + [(tn - t, w) for tn, w in self.wrench_history[: max(order, 1)]]
        taus, values = zip(*points)
        return polynomial_through(taus, np.array(values))

    def resync(self, t: float, motion: InterfaceMotion) -> None:
        """Move the body to the rigid point's motion at t (now) and take the wrench there as
        the newest exchanged value: interface-Jacobian coupling linearizes the wrench about the
        rigid side's x_n, W ≈ W_n + ∂W/∂x (x − x_n) + ∂W/∂v (v − v_n), so W_n must be the
        wrench at x_n, not at the body's own end-of-step estimate of the joint (on a stiff
        joint the difference times the stiffness is a large force error)."""
        self.body.set_motion(motion)
        self.wrench_history[0] = (t, self.rigid_input())

    def iteration_polynomial(self, t: float, mid: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Iterative coupling: wrench coefficients in τ = time − t through the current guesses
        at mid-step and end and the last two exchanged values (cubic; quadratic at the start)."""
        known = [(0.5 * self.H, mid), (self.H, end)]
        known += [(tn - t, w) for tn, w in self.wrench_history[:2]]
        taus, values = zip(*known)
        return polynomial_through(taus, np.array(values))

    def jacobian(self) -> tuple[np.ndarray, np.ndarray]:
        """(∂W/∂x, ∂W/∂v), each (6, 6), for interface-Jacobian coupling."""
        return self.body.interface_jacobian()

    # --- one macro step, in the order every master uses ------------------------------------
    @property
    def needs_end_motion(self) -> bool:
        """True when finish() needs the rigid point's motion at t + H (rigid side first)."""
        return self.settings.scheme == "gauss_seidel_rigid_first"

    def inputs_for_rigid(self, t: float, motion: InterfaceMotion):
        """What the rigid side applies over [t, t + H] (every scheme but `iterative`):
        (wrench polynomial (order+1, 6), (∂W/∂x, ∂W/∂v) or None). With the flexible side
        first, the body steps here and the polynomial interpolates to its end wrench."""
        scheme = self.settings.scheme
        if scheme == "gauss_seidel_flex_first":
            self.advance(t, motion)
            return self.polynomial(t, self.rigid_input()), None
        if scheme == "interface_jacobian":
            self.resync(t, motion)
            return self.polynomial(t), self.jacobian()
        return self.polynomial(t), None

    def finish(self, t: float, motion: InterfaceMotion,
               end_motion: InterfaceMotion | None = None) -> None:
        """Complete the macro step started by inputs_for_rigid: step the body (unless it
        already did) and commit. For Jacobi this may run while the rigid side steps."""
        scheme = self.settings.scheme
        if scheme == "gauss_seidel_rigid_first":
            if end_motion is None:
                raise ValueError("gauss_seidel_rigid_first: the rigid motion at t + H is needed")
            self.advance(t, motion, future=end_motion)
        elif scheme != "gauss_seidel_flex_first":
            self.advance(t, motion)
        self.commit(motion)

    # --- stepping ---------------------------------------------------------------------------
    def advance(self, t: float, motion: InterfaceMotion,
                future: InterfaceMotion | None = None) -> None:
        """Step the body over [t, t + H] from the rigid point's motion at t (and, for
        Gauss–Seidel and iterations, its motion at t + H); call commit() once accepted."""
        self._pending_power = float(self.body.wrench() @ self.body.node_kinematics()[7:13])
        past = self.motion_history[: self.settings.extrapolation]
        if future is not None:
            past = [future] + past[:1]
        self.body.step(t, self.H, motion, extrapolation=past)

    def advance_in_halves(self, t: float, motion: InterfaceMotion, mid: InterfaceMotion,
                          end: InterfaceMotion) -> np.ndarray:
        """Iterative coupling: step over [t, t + H/2] and [t + H/2, t + H], re-synchronised to
        the rigid motion at t and at `mid`, the interface accelerations quadratic through the
        three motions; returns the wrench the rigid side takes at mid-step (call commit())."""
        self._pending_power = float(self.body.wrench() @ self.body.node_kinematics()[7:13])
        half = 0.5 * self.H
        self.body.step(t, half, motion, extrapolation=[mid, end])
        mid_wrench = self.rigid_input()
        self.body.step(t + half, half, mid, extrapolation=[end, motion])
        return mid_wrench

    def commit(self, motion: InterfaceMotion) -> None:
        """Accept the step taken from `motion`: power integrated over the step (trapezoid),
        the new wrench and motion in the histories."""
        body = self.body
        end_power = float(body.wrench() @ body.node_kinematics()[7:13])
        self.energy += 0.5 * self.H * (self._pending_power + end_power)
        self.wrench_history = [(body.time, self.rigid_input())] + self.wrench_history[:3]
        self.motion_history = [motion] + self.motion_history[:1]

    # --- results ----------------------------------------------------------------------------
    def columns(self, name: str) -> list[str]:
        cols = [f"{name}.eta{k + 1}" for k in range(self.body.modal_coordinates.size)]
        for node in self.body.output_nodes():
            cols += [f"{name}.{node}.{axis}" for axis in "xyz"]
        return cols

    def row(self) -> np.ndarray:
        return np.concatenate([self.body.modal_coordinates, *self.body.output_nodes().values()])

    # --- save / restore ---------------------------------------------------------------------
    def get_state(self) -> bytes:
        return pack_state({
            "body": self.body.get_state(),
            "wt": np.array([t for t, _ in self.wrench_history]),
            "w": np.array([w for _, w in self.wrench_history]).reshape(-1, 6),
            "m": np.array([np.append(m.as_array(), m.time) for m in self.motion_history]).reshape(-1, 20),
            "energy": self.energy, "pending": self._pending_power,
            "implicit_mass": self.implicit_mass, "handed_mass": self._handed_mass,
        })

    def set_state(self, blob: bytes) -> None:
        d = unpack_state(blob)
        self.body.set_state(d["body"])
        self.wrench_history = list(zip(d["wt"].tolist(), list(d["w"])))
        self.motion_history = [motion_of(m[:19], float(m[19])) for m in d["m"]]
        self.energy, self._pending_power = float(d["energy"]), float(d["pending"])
        self.implicit_mass = bool(d["implicit_mass"])
        self._handed_mass = d["handed_mass"]


def _start_unstressed_interior(body: FlexBody) -> None:
    """Choose η so that a grounded structure's output nodes start at their reference
    positions, at rest, although the boundary starts displaced (a prescribed initial offset of
    the interface, as in the two-mass benchmark: x1(0) ≠ 0, x2(0) = 0)."""
    rows = body.model.output_rows.reshape(-1, body.model.mass.shape[0])
    if rows.size == 0 or body.model.n_modes == 0:
        return
    nb = body.model.n_boundary
    boundary = body._boundary_state()[0]
    eta = np.linalg.lstsq(rows[:, nb:], -rows[:, :nb] @ boundary, rcond=None)[0]
    body.set_modal_state(eta, np.zeros_like(eta))
