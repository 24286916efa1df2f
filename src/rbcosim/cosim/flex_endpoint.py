"""The flexible side of one rigid–flexible joint: a FlexBody and what it has exchanged.

The same object runs in process (CosimMaster) and in a separate flexible-solver process
(`rbcosim flex`), so both give the same bits. Per macro step [t, t + H]:
  report()            the node's kinematics (13,) and the energy (J) delivered so far;
  polynomial(t, end)  the wrench polynomial the rigid side applies over the step;
  advance(t, motion)  step the flexible body with the rigid point's motion at t;
  commit(motion)      accept the step: energy bookkeeping and exchange histories.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from rbcosim import _core
from rbcosim.core import make_handle
from rbcosim.flex.runtime.arc_shape import ArcShape, is_beam_line
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.flex.runtime.deformation_range import (
    ROTATION_LIMIT,
    DeformationRange,
    DeformationWarning,
)
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.flex.runtime.polynomial import exchange_polynomial
from rbcosim.flex.runtime.spin_limit import SpinLimit, SpinWarning
from rbcosim.serialization.codec import StateFormatError, array, field, pack_state, unpack_state
from rbcosim.serialization.model_digest import check_digest, model_digest
from rbcosim.settings import CosimSettings, Coupling
from rbcosim.spatial.rotation import rotation_matrix

_HISTORY = 4  # exchanged wrenches kept (cubic iteration polynomial)
_NO_TIMES = np.zeros(0)
_NO_VALUES = np.zeros((0, 6))


def motion_of(values: np.ndarray, t: float) -> InterfaceMotion:
    """InterfaceMotion from a point's outputs + accelerations (19,) at time t (copied)."""
    return InterfaceMotion.from_array(values, t)


def _point_frame_mass(mass: np.ndarray, q: np.ndarray, inverse: bool) -> np.ndarray:
    """T^T M T (inverse: T M T^T), T = diag(R(q), R(q)): a (6, 6) mass between inertial and
    point-frame axes (R(q): point frame -> inertial). C core: librbcosim/flex/continuity.c."""
    out = np.empty((6, 6))
    _core.point_frame_mass(np.ascontiguousarray(mass, dtype=np.float64),
                           np.ascontiguousarray(q, dtype=np.float64), inverse, out)
    return out


class FlexEndpoint:
    """A FlexBody coupled at `coupling.point`, with histories and its side of the energy ledger."""

    def __init__(self, coupling: Coupling, body: FlexBody, settings: CosimSettings, H: float):
        self.coupling = coupling
        self.body = body
        self.settings = settings
        self.H = H
        # Exchanged wrenches (the rigid side's inputs) and their times, newest first, and the
        # rest of this side of the exchange: arrays written in place, that the C core's
        # macro step (librbcosim/flex/endpoint.h, "flex_exchange") updates too.
        self._times = np.zeros(_HISTORY)
        self._wrenches = np.zeros((_HISTORY, 6))
        self._counts = np.zeros(1, dtype=np.int64)
        self._energy = np.zeros(1)
        self._pending = np.zeros(1)
        self._handed_mass = np.zeros((6, 6))  # what the rigid side applies, point frame if floating
        self._implicit = np.zeros(1, dtype=np.int64)
        self._rigid_input = np.zeros(6)
        self._exchange = make_handle("flex_exchange", self._times, self._wrenches, self._counts,
                                     self._energy, self._pending, self._handed_mass,
                                     self._implicit, self._rigid_input)
        self._coef = np.zeros((_HISTORY, 6))
        self._motions: list[InterfaceMotion] = []  # rigid motions stepped from, newest first
        self._floating = body.model.attachment == "floating"
        self._end_tau = np.array([H])
        self._mid_end_taus = np.array([0.5 * H, H])
        self._input: tuple[int, np.ndarray] = (-1, np.zeros(6))  # (body revision, rigid_input)
        model = body.model
        linear_floating = (self._floating and model.n_modes
                           and not model.floating.geometric_stiffening)
        self._spin_limit = SpinLimit(model) if linear_floating else None
        #: s: when the rigid side first saw this joint's continuity violated (None: never);
        #: set by the master; a spin after it is the coupling's instability, not the body's
        self.continuity_lost_at: float | None = None
        self._deformation = (DeformationRange(model) if self._floating and model.n_modes
                             else None)
        self._arc = (ArcShape(model) if self._floating and model.output_names
                     and is_beam_line(model) else None)

    @property
    def joint(self) -> str:
        return self.coupling.name

    @property
    def energy(self) -> float:
        """Energy delivered to the rigid side so far, J."""
        return float(self._energy[0])

    @energy.setter
    def energy(self, value: float) -> None:
        self._energy[0] = value

    @property
    def implicit_mass(self) -> bool:
        """True once the body's added mass was handed to the rigid side."""
        return bool(self._implicit[0])

    @implicit_mass.setter
    def implicit_mass(self, value: bool) -> None:
        self._implicit[0] = bool(value)

    @property
    def _count(self) -> int:
        return int(self._counts[0])

    @_count.setter
    def _count(self, value: int) -> None:
        self._counts[0] = value

    @property
    def _pending_power(self) -> float:
        return float(self._pending[0])

    @_pending_power.setter
    def _pending_power(self, value: float) -> None:
        self._pending[0] = value

    # --- start ----------------------------------------------------------------------------
    def initialize(self, t: float, motion: InterfaceMotion) -> tuple[np.ndarray, str] | None:
        """Place the body at the rigid point's motion; returns the added mass to hand to the
        rigid side as (M_a (6,6), frame "point" | "inertial"), or None."""
        c, body = self.coupling, self.body
        if c.grounded_reference is not None:
            body.initialize(t, InterfaceMotion.at_rest(c.grounded_reference, motion.quaternion))
            body.set_motion(motion)
            start_unstressed_interior(body)
        else:
            body.initialize(t, motion)
        handover = None
        if self.settings.added_mass:
            handover = self._added_mass(motion)
        self._times[0], self._wrenches[0], self._count = t, self.rigid_input(), 1
        return handover

    def _added_mass(self, motion: InterfaceMotion):
        """The body's instantaneous added mass, so that the rigid side treats it implicitly:
        explicit force coupling of a body heavier than what it hangs on diverges at any macro
        step (the added-mass instability)."""
        mass = self.body.added_mass()
        if not np.any(np.abs(mass) > 1e-12 * max(1.0, np.abs(mass).max())):
            return None
        self.implicit_mass = True
        self._input = (-1, self._input[1])  # the rigid input changes meaning
        if self._floating:
            self._handed_mass[:] = _point_frame_mass(mass, motion.as_array()[3:7], False)
            return self._handed_mass.copy(), "point"
        self._handed_mass[:] = mass
        return mass, "inertial"

    # --- what goes to the rigid side --------------------------------------------------------
    def rigid_input(self) -> np.ndarray:
        """The wrench (6,) the rigid side takes now: the whole wrench W, or, when the added
        mass M_a was handed over, W + M_a [a; α] (the rigid side applies −M_a [a_p; α_p] itself).
        Not the wrench at zero accelerations: the body's own added mass drifts from M_a as it
        deforms, and that part must stay in the explicit input. Computed once per body state."""
        body = self.body
        if self._input[0] != body.revision:
            value = np.empty(6)
            _core.rigid_input(self._exchange, body._state, body.wrench(), self._floating, value)
            self._input = (body.revision, value)
        return self._input[1].copy()

    def report(self) -> tuple[np.ndarray, float]:
        """(node kinematics (13,), energy delivered so far J) for the continuity check."""
        return self.body.node_kinematics(), self.energy

    def polynomial(self, t: float, end: np.ndarray | None = None) -> np.ndarray:
        """Wrench coefficients (order+1, 6) in τ = time − t over [t, t + H]: through the past
        values (extrapolation), or through an end value and past values (interpolation)."""
        order = self.settings.extrapolation
        if end is None:
            return exchange_polynomial(t, self._times, self._wrenches,
                                       min(order + 1, self._count), _NO_TIMES, _NO_VALUES)
        return exchange_polynomial(t, self._times, self._wrenches, min(max(order, 1), self._count),
                                   self._end_tau, np.asarray(end, dtype=float).reshape(1, 6))

    def resync(self, t: float, motion: InterfaceMotion) -> None:
        """Move the body to the rigid point's motion at t (now) and take the wrench there as
        the newest exchanged value: interface-Jacobian coupling linearizes the wrench about the
        rigid side's x_n, W ≈ W_n + ∂W/∂x (x − x_n) + ∂W/∂v (v − v_n), so W_n must be the
        wrench at x_n, not at the body's own end-of-step estimate of the joint (on a stiff
        joint the difference times the stiffness is a large force error)."""
        self.body.set_motion(motion)
        self._times[0], self._wrenches[0] = t, self.rigid_input()

    def iteration_polynomial(self, t: float, mid: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Iterative coupling: wrench coefficients in τ = time − t through the current guesses
        at mid-step and end and the last two exchanged values (cubic; quadratic at the start)."""
        known = np.array([mid, end], dtype=float).reshape(2, 6)
        return exchange_polynomial(t, self._times, self._wrenches, min(2, self._count),
                                   self._mid_end_taus, known)

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
        if scheme == "gauss_seidel_flex_first":  # the whole macro step of this side, now
            return self._step(t, motion, None, self.settings.extrapolation), None
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
            self._step(t, motion, end_motion)
        elif scheme != "gauss_seidel_flex_first":  # (flexible side first: stepped already)
            self._step(t, motion)

    def _step(self, t: float, motion: InterfaceMotion, future: InterfaceMotion | None = None,
              order: int = -1) -> np.ndarray | None:
        """advance() then commit() in one call of the C core (the same arithmetic); with
        ``order`` >= 0 also the Gauss–Seidel polynomial through the new rigid input at t + H
        and the past values (what :meth:`polynomial` gives between the two), returned."""
        past = self._motions[: self.settings.extrapolation]
        if future is not None:
            past = [future] + past[:1]
        body = self.body
        rows = body.exchange_step(t, self.H, motion, past, self._exchange, order, self._coef)
        self._input = (body.revision, self._rigid_input.copy())
        self._after_commit(motion)
        return self._coef[:rows].copy() if order >= 0 else None

    # --- stepping ---------------------------------------------------------------------------
    def advance(self, t: float, motion: InterfaceMotion,
                future: InterfaceMotion | None = None) -> None:
        """Step the body over [t, t + H] from the rigid point's motion at t (and, for
        Gauss–Seidel and iterations, its motion at t + H); call commit() once accepted."""
        self._pending_power = self._power()
        past = self._motions[: self.settings.extrapolation]
        if future is not None:
            past = [future] + past[:1]
        self.body.step(t, self.H, motion, extrapolation=past)

    def advance_in_halves(self, t: float, motion: InterfaceMotion, mid: InterfaceMotion,
                          end: InterfaceMotion) -> np.ndarray:
        """Iterative coupling: step over [t, t + H/2] and [t + H/2, t + H], re-synchronised to
        the rigid motion at t and at `mid`, the interface accelerations quadratic through the
        three motions; returns the wrench the rigid side takes at mid-step (call commit())."""
        self._pending_power = self._power()
        half = 0.5 * self.H
        self.body.step(t, half, motion, extrapolation=[mid, end])
        mid_wrench = self.rigid_input()
        self.body.step(t + half, half, mid, extrapolation=[end, motion])
        return mid_wrench

    def commit(self, motion: InterfaceMotion) -> None:
        """Accept the step taken from `motion`: power integrated over the step (trapezoid),
        the new wrench and motion in the histories."""
        self.energy += 0.5 * self.H * (self._pending_power + self._power())
        self._times[1:] = self._times[:-1]
        self._wrenches[1:] = self._wrenches[:-1]
        self._times[0], self._wrenches[0] = self.body.time, self.rigid_input()
        self._count = min(self._count + 1, _HISTORY)
        self._after_commit(motion)

    def _after_commit(self, motion: InterfaceMotion) -> None:
        """The motion history and the range checks, after a commit."""
        self._motions = [motion, *self._motions[:1]]
        if self._spin_limit is not None:
            self._check_spin()
        if self._deformation is not None:
            self._check_deformation()

    def _check_deformation(self) -> None:
        """Warn once when the body's elastic rotations leave the small-deformation range of
        the linear floating-frame field (rbcosim.flex.runtime.deformation_range)."""
        eta = self.body.modal_coordinates
        if self._deformation.rotation_exceeds(eta, ROTATION_LIMIT):
            rotation, deflection = self._deformation.measure(eta)
            self._deformation = None
            name = self.coupling.flex_body
            warnings.warn(
                f"flexible body {name}: at t = {self.body.time:.6g} s an elastic rotation of "
                f"{rotation:.3g} rad (deflection {deflection:.3g} of its length) is beyond the "
                f"{ROTATION_LIMIT} rad the linear deformation field holds for: positions err "
                f"by about {rotation**2 / 6:.1%} of the deflection, and more as it grows",
                DeformationWarning, stacklevel=2)

    def _check_spin(self) -> None:
        """Warn once when a floating body without geometric stiffening spins where its linear
        model has a negative modal stiffness (its deformation then grows without bound)."""
        body = self.body
        nk = body.node_kinematics()
        if self._spin_limit.below_floor(float(nk[10:13] @ nk[10:13])):
            return
        rot = rotation_matrix(nk[3:7]) @ body.model.axis_rotation
        w = rot.T @ nk[10:13]
        if self._spin_limit.unstable(w):
            self._spin_limit = None
            name = self.coupling.flex_body
            remedy = f"set flex_bodies.{name}.geometric_stiffening = true"
            if self.continuity_lost_at is not None:
                remedy = (f"but joint {self.joint!r} lost continuity first (t = "
                          f"{self.continuity_lost_at:.6g} s): the coupling is unstable, not the "
                          "body; " + ("use a smaller cosim.macro_step" if self.settings.added_mass
                                      else "set cosim.added_mass = true or use a smaller "
                                           "cosim.macro_step"))
            warnings.warn(
                f"flexible body {name}: at t = {body.time:.6g} s its angular velocity "
                f"{np.linalg.norm(w):.4g} rad/s makes a modal stiffness negative in the linear "
                f"floating frame (centrifugal softening without stiffening): the deformation "
                f"grows without bound; {remedy}",
                SpinWarning, stacklevel=2)

    def _power(self) -> float:
        """Power (W) the body's wrench delivers to the rigid side at the joint node now."""
        w, v = self.body.wrench(), self.body.node_kinematics()[7:13]
        # summed in index order from 0, as the C core's macro step does
        return sum(float(w[i]) * float(v[i]) for i in range(6))

    # --- results ----------------------------------------------------------------------------
    def columns(self, name: str) -> list[str]:
        return result_columns(name, self.body, self._floating, self._arc is not None)

    def row(self) -> np.ndarray:
        return result_row(self.body, self._floating, self._arc)

    # --- save / restore ---------------------------------------------------------------------
    @functools.cached_property
    def digest(self) -> str:
        """The flexible body's digest (its reduced model and gravity), carried by every state."""
        return model_digest(self.body.model, self.body.gravity)

    def get_state(self) -> bytes:
        return pack_state({
            "model": self.digest,
            "body": self.body.get_state(),
            "wt": self._times[:self._count].copy(),
            "w": self._wrenches[:self._count].copy(),
            "m": np.array([np.append(m.as_array(), m.time) for m in self._motions]).reshape(-1, 20),
            "energy": self.energy, "pending": self._pending_power,
            "implicit_mass": self.implicit_mass, "handed_mass": self._handed_mass,
        })

    def set_state(self, blob: bytes) -> None:
        """Restore a state from get_state; the whole blob is checked before anything changes
        (ValueError naming the field otherwise)."""
        d = unpack_state(blob)
        check_digest(d, self.digest, "flexible body")
        body, size = field(d, "body", bytes), len(self.body.get_state())
        if len(body) != size:
            raise StateFormatError(f"state.body: {len(body)} bytes, this model's state has {size}")
        n = array(d, "wt", (None,)).size
        if n > _HISTORY:
            raise StateFormatError(f"state.wt: {n} wrenches, at most {_HISTORY}")
        if array(d, "w", (None, None)).shape != (n, 6):
            raise StateFormatError(f"state.w: expected {n} wrenches (n, 6), got {d['w'].shape}")
        motions = array(d, "m", (None, 20))
        for key in ("energy", "pending"):
            field(d, key)
        field(d, "implicit_mass", bool)
        array(d, "handed_mass", (6, 6))
        if not np.isfinite(np.frombuffer(body, dtype="<f8")).all():
            raise StateFormatError("state.body: non-finite values")
        self.body.set_state(body)
        self._times[:n], self._wrenches[:n], self._count = d["wt"], d["w"], n
        self._motions = [motion_of(m[:19], float(m[19])) for m in motions]
        self.energy, self._pending_power = float(d["energy"]), float(d["pending"])
        self.implicit_mass = bool(d["implicit_mass"])
        self._handed_mass[:] = d["handed_mass"]
        self._input = (-1, self._input[1])


def result_columns(name: str, body, displacements: bool, arc: bool) -> list[str]:
    """A flexible body's results columns: eta1.., each output node's inertial x y z; with
    `displacements` its elastic displacement ux uy uz in the body's floating (or chord) frame;
    with `arc` also on the inextensible axis, arc_ux arc_uy arc_uz (rbcosim.flex.runtime.arc_shape)."""
    cols = [f"{name}.eta{k + 1}" for k in range(body.modal_coordinates.size)]
    nodes = list(body.output_nodes())
    suffixes = [""] + (["u"] if displacements else []) + (["arc_u"] if arc else [])
    for suffix in suffixes:
        for node in nodes:
            cols += [f"{name}.{node}.{suffix}{axis}" for axis in "xyz"]
    return cols


def result_row(body, displacements: bool, arc: ArcShape | None) -> np.ndarray:
    """The values of :func:`result_columns` now (``arc``: the body's ArcShape, or None)."""
    values = [body.modal_coordinates, *body.output_nodes().values()]
    if displacements:
        values += list(body.output_displacements().values())
    if arc is not None:
        values.append(arc.displacements(body.modal_coordinates).ravel())
    return np.concatenate(values)


def start_unstressed_interior(body: FlexBody) -> None:
    """Choose η so that a grounded structure's output nodes start at their reference
    positions, at rest, although the boundary starts displaced (a prescribed initial offset of
    the interface, as in the two-mass benchmark: x1(0) ≠ 0, x2(0) = 0)."""
    rows = body.model.output_rows.reshape(-1, body.model.mass.shape[0])
    if rows.size == 0 or body.model.n_modes == 0:
        return
    nb = body.model.n_boundary
    boundary = body.boundary_state()[0]
    eta = np.linalg.lstsq(rows[:, nb:], -rows[:, :nb] @ boundary, rcond=None)[0]
    body.set_modal_state(eta, np.zeros_like(eta))
