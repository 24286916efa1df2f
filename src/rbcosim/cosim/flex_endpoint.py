"""The flexible side of a flexible body's rigid–flexible joints: the body (k >= 1 interface
nodes, one per coupling) and what it has exchanged.

One class serves every body — the compiled one-node FlexBody (grounded or floating), a grounded
MultiNodeBody, a chord-frame rod — in process (CosimMaster), in a flexible-solver process
(`rbcosim flex`) and in a flexible-body FMU, so all give the same bits. Interface values are
stacked in node order (the couplings' order), as the body's added mass and interface Jacobian
are: wrenches (6k,), wrench polynomials (order+1, 6k), Jacobians (6k, 6k). Motions are given
as {joint: InterfaceMotion} (or one InterfaceMotion for a one-node endpoint, or a list in
node order). Per macro step
[t, t + H], in the order of the scheme (rbcosim.scheme):
  report()                     each node's kinematics (13,) and the energy (J) delivered;
  inputs_for_rigid(t, motion)  the wrench polynomial the rigid side applies over the step;
  finish(t, motion[, ends])    step the body with the rigid points' motions and commit.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from rbcosim.core import make_handle
from rbcosim.cosim.flex_checks import RangeChecks, result_columns, result_row
from rbcosim.cosim.nodes import CompiledNode, NodeSet, hands_point_frame_mass, point_frame_mass
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.flex.runtime.polynomial import exchange_polynomial
from rbcosim.scheme import scheme_named
from rbcosim.serialization.codec import StateFormatError, array, field, pack_state, unpack_state
from rbcosim.serialization.model_digest import check_digest, model_digest
from rbcosim.settings import CosimSettings, Coupling

_HISTORY = 4  # exchanged wrenches kept (cubic iteration polynomial)
_COLUMNS = 60  # wrench columns per polynomial call (the C core takes up to 64)
_NO_TIMES = np.zeros(0)


def motion_of(values: np.ndarray, t: float) -> InterfaceMotion:
    """InterfaceMotion from a point's outputs + accelerations (19,) at time t (copied)."""
    return InterfaceMotion.from_array(values, t)


class FlexEndpoint:
    """A flexible body coupled by ``couplings`` (node i <-> couplings[i]; one Coupling for a
    one-node body), with its exchange histories and its side of the energy ledger."""

    def __init__(self, couplings: Coupling | Sequence[Coupling], body, settings: CosimSettings,
                 H: float):
        self.couplings = (couplings,) if isinstance(couplings, Coupling) else tuple(couplings)
        self.joints = tuple(c.name for c in self.couplings)
        self.flex_body = self.couplings[0].flex_body
        self.body, self.settings, self.H = body, settings, H
        self.scheme = scheme_named(settings.scheme)
        k = len(self.couplings)
        # Exchanged wrenches (the rigid side's inputs, stacked) and their times, newest first,
        # and the rest of this side of the exchange: arrays written in place, that the C
        # core's macro step (librbcosim/flex/endpoint.h, "flex_exchange") updates too.
        self._times = np.zeros(_HISTORY)
        self._wrenches = np.zeros((_HISTORY, 6 * k))
        self._counts = np.zeros(1, dtype=np.int64)
        self._energy = np.zeros(k)
        self._pending = np.zeros(k)
        # what the rigid side applies (stacked, block diagonal; point frames: nodes.py)
        self._handed_mass = np.zeros((6 * k, 6 * k))
        self._implicit = np.zeros(1, dtype=np.int64)
        self._rigid_input = np.zeros(6 * k)
        self._floating = body.model.attachment == "floating"  # (or chord frame)
        self._point_frame = hands_point_frame_mass(body)
        if isinstance(body, FlexBody):
            self._exchange = make_handle(
                "flex_exchange", self._times, self._wrenches, self._counts, self._energy,
                self._pending, self._handed_mass, self._implicit, self._rigid_input)
            self._nodes = CompiledNode(body, self._exchange)
        else:
            self._nodes = NodeSet(body, self._handed_mass)
        self._coef = np.zeros((_HISTORY, 6))
        # the rigid motions stepped from, newest first: (values (19), time s (NaN: none)) per
        # node, and how many (<= 2) are valid (`_motions`)
        self._history = np.zeros((2, k, 20))
        self._n_history = np.zeros(1, dtype=np.int64)
        self._recent: list | None = []  # those motions as objects; None: read them from there
        self._powered: tuple[int, np.ndarray] = (-1, np.zeros(k))  # (body revision, _power)
        self._end_tau = np.array([H])
        self._mid_end_taus = np.array([0.5 * H, H])
        self._no_values = np.zeros((0, 6 * k))
        self._input: tuple[int, np.ndarray] = (-1, np.zeros(6 * k))  # (body revision, input)
        self.checks = RangeChecks(self)

    @property
    def coupling(self) -> Coupling:
        """The coupling of a one-node endpoint."""
        if len(self.couplings) != 1:
            raise AttributeError(f"flexible body {self.flex_body!r} has {len(self.couplings)} "
                                 "couplings: use .couplings")
        return self.couplings[0]

    @property
    def energy(self) -> np.ndarray:
        """(k,): energy delivered to the rigid side through each joint so far, J."""
        return self._energy.copy()

    @property
    def implicit_mass(self) -> bool:
        """True once the body's added mass was handed to the rigid side."""
        return bool(self._implicit[0])

    @property
    def _motions(self) -> list[list[InterfaceMotion]]:
        """The rigid motions stepped from (node order), newest first, at most two: kept as
        objects where Python wrote them, read from the history rows where the C core did."""
        if self._recent is None:
            self._recent = [[InterfaceMotion.from_timed(r) for r in self._history[i]]
                            for i in range(int(self._n_history[0]))]
        return list(self._recent)

    @_motions.setter
    def _motions(self, motions: list[list[InterfaceMotion]]) -> None:
        for i, ms in enumerate(motions):
            self._write_motions(i, ms)
        self._n_history[0] = len(motions)
        self._recent = [[m.frozen() for m in ms] for ms in motions]

    def _write_motions(self, i: int, motions: list[InterfaceMotion]) -> None:
        for row, m in zip(self._history[i], motions, strict=True):
            m.write_timed(row)

    @property
    def _count(self) -> int:
        return int(self._counts[0])

    @_count.setter
    def _count(self, value: int) -> None:
        self._counts[0] = value

    def _list(self, motion: InterfaceMotion | Mapping[str, InterfaceMotion]) -> list:
        """The rigid points' motions in node order (from {joint: motion}, one motion for a
        one-node endpoint, or a list already in node order)."""
        if type(motion) is list:
            return motion
        if type(motion) is InterfaceMotion:
            if len(self.joints) != 1:
                raise ValueError(f"flexible body {self.flex_body!r}: one motion per joint "
                                 f"{list(self.joints)} is needed, as {{joint: motion}}")
            return [motion]
        return [motion[j] for j in self.joints]

    def per_joint(self, stacked: np.ndarray) -> dict[str, np.ndarray]:
        """{joint: its (..., 6) columns} of a stacked (..., 6k) value."""
        return {j: np.ascontiguousarray(stacked[..., 6 * i:6 * i + 6])
                for i, j in enumerate(self.joints)}

    # --- start ----------------------------------------------------------------------------
    def initialize(self, t: float, motion) -> dict:
        """Place the body at the rigid points' motions; {joint: the added mass to hand to the
        rigid side as (M_a (6, 6), frame "point" | "inertial"), or None}. A coupling's
        grounded_reference is that interface's unstressed position."""
        ms, nodes = self._list(motion), self._nodes
        if any(c.grounded_reference is not None for c in self.couplings):
            refs = [m if c.grounded_reference is None
                    else InterfaceMotion.at_rest(c.grounded_reference, m.quaternion)
                    for c, m in zip(self.couplings, ms)]
            nodes.initialize(t, refs)
            nodes.set_motion(ms)
            start_unstressed_interior(self.body)
        else:
            nodes.initialize(t, ms)
        handover = dict.fromkeys(self.joints)
        if self.settings.added_mass:
            handover.update(self._added_mass(ms))
        self._times[0], self._wrenches[0], self._count = t, self.rigid_input(), 1
        return handover

    def _added_mass(self, motions: list[InterfaceMotion]) -> dict:
        """Each node's block of the body's instantaneous added mass, so that the rigid side
        treats it implicitly: explicit force coupling of a body heavier than what it hangs on
        diverges at any macro step (the added-mass instability). The cross blocks between
        nodes stay in the explicit wrench."""
        full = self._nodes.added_mass()
        out = {}
        for i, (j, m) in enumerate(zip(self.joints, motions)):
            block = full[6 * i:6 * i + 6, 6 * i:6 * i + 6]
            if not np.any(np.abs(block) > 1e-12 * max(1.0, np.abs(block).max())):
                continue
            self._implicit[0] = 1
            if self._point_frame:
                block = point_frame_mass(block, m.as_array()[3:7], False)
            self._handed_mass[6 * i:6 * i + 6, 6 * i:6 * i + 6] = block
            out[j] = (block.copy(), "point" if self._point_frame else "inertial")
        self._input = (-1, self._input[1])  # the rigid input changes meaning
        return out

    # --- what goes to the rigid side --------------------------------------------------------
    def rigid_input(self) -> np.ndarray:
        """The stacked wrench (6k,) the rigid side takes now: the whole wrench W, or, when the
        added mass M_a was handed over, W + M_a [a; α] (the rigid side applies −M_a [a_p; α_p]
        itself). Not the wrench at zero accelerations: the body's own added mass drifts from
        M_a as it deforms, and that part must stay in the explicit input. Once per body state."""
        body = self.body
        if self._input[0] != body.revision:
            self._input = (body.revision, self._nodes.rigid_inputs())
        return self._input[1].copy()

    def report(self) -> dict[str, tuple[np.ndarray, float]]:
        """{joint: (node kinematics (13,), energy delivered so far J)} for the continuity check."""
        nk, energy = np.empty((len(self.joints), 13)), np.empty(len(self.joints))
        self.report_into(nk, energy)
        return {j: (nk[i], float(energy[i])) for i, j in enumerate(self.joints)}

    def report_into(self, kinematics: np.ndarray, energy: np.ndarray) -> None:
        """`report` written to arrays: each node's kinematics (k, 13) and energy (k,) J."""
        kinematics[:] = self._nodes.node_kinematics()
        energy[:] = self._energy

    def _through(self, t: float, count: int, taus: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Stacked coefficients (len(taus) + count, 6k) in τ = time − t through ``known`` (rows
        (len(taus), 6k)) and the newest ``count`` exchanged wrenches; each column on its own
        (the same bits node by node), up to ten nodes per call of the C core."""
        width = self._wrenches.shape[1]
        if width <= _COLUMNS:
            return exchange_polynomial(t, self._times, self._wrenches, count, taus, known)
        return np.hstack([exchange_polynomial(t, self._times, self._wrenches[:, i:i + _COLUMNS],
                                              count, taus, known[:, i:i + _COLUMNS])
                          for i in range(0, width, _COLUMNS)])

    def polynomial(self, t: float, end: np.ndarray | None = None) -> np.ndarray:
        """Wrench coefficients (order+1, 6k) in τ = time − t over [t, t + H]: through the past
        values (extrapolation), or through an end value (6k,) and past values (interpolation)."""
        order = self.settings.extrapolation
        if end is None:
            return self._through(t, min(order + 1, self._count), _NO_TIMES, self._no_values)
        return self._through(t, min(max(order, 1), self._count), self._end_tau,
                             np.asarray(end, dtype=float).reshape(1, -1))

    def resync(self, t: float, motion) -> None:
        """Move the body to the rigid points' motions at t (now) and take the wrench there as
        the newest exchanged value: interface-Jacobian coupling linearizes the wrench about the
        rigid side's x_n, W ≈ W_n + ∂W/∂x (x − x_n) + ∂W/∂v (v − v_n), so W_n must be the
        wrench at x_n, not at the body's own end-of-step estimate of the joint (on a stiff
        joint the difference times the stiffness is a large force error)."""
        self._nodes.set_motion(self._list(motion))
        self._times[0], self._wrenches[0] = t, self.rigid_input()

    def iteration_polynomial(self, t: float, mid: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Iterative coupling: stacked wrench coefficients in τ = time − t through the current
        guesses (6k,) at mid-step and end and the last two exchanged values (cubic; quadratic
        at the start)."""
        known = np.array([mid, end], dtype=float).reshape(2, -1)
        return self._through(t, min(2, self._count), self._mid_end_taus, known)

    def jacobian(self) -> tuple[np.ndarray, np.ndarray]:
        """(∂W/∂x, ∂W/∂v), each (6k, 6k), for interface-Jacobian coupling."""
        return self._nodes.interface_jacobian()

    # --- one macro step, in the order of the scheme ---------------------------------------
    @property
    def needs_end_motion(self) -> bool:
        """True when finish() needs the rigid points' motions at t + H (rigid side first)."""
        return self.scheme.rigid_first

    def inputs_for_rigid(self, t: float, motion):
        """What the rigid side applies over [t, t + H] (every scheme but `iterative`):
        (stacked wrench polynomial (order+1, 6k), (∂W/∂x, ∂W/∂v) or None). With the flexible
        side first, the body steps here and the polynomial interpolates to its end wrench."""
        if self.scheme.flex_first:  # the whole macro step of this side, now
            return self._step(t, motion, None, interpolate=True), None
        if self.scheme.jacobian:
            self.resync(t, motion)
            return self.polynomial(t), self.jacobian()
        return self.polynomial(t), None

    def finish(self, t: float, motion, end_motion=None) -> None:
        """Complete the macro step started by inputs_for_rigid: step the body (unless it
        already did) and commit. For Jacobi this may run while the rigid side steps."""
        if self.scheme.rigid_first:
            if end_motion is None:
                raise ValueError(f"{self.scheme}: the rigid motion at t + H is needed")
            self._step(t, motion, end_motion)
        elif not self.scheme.flex_first:  # (flexible side first: stepped already)
            self._step(t, motion)

    def _step(self, t: float, motion, future=None, interpolate: bool = False):
        """advance() then commit() (a compiled body: in one call of the C core, the same
        arithmetic); with ``interpolate`` also the Gauss–Seidel polynomial through the new
        rigid input at t + H and the past values, returned."""
        ms = self._list(motion)
        if not self._nodes.fused:
            self.advance(t, ms, future)
            coef = self.polynomial(t, self.rigid_input()) if interpolate else None
            self.commit(ms)
            return coef
        order = self.settings.extrapolation
        end = None if future is None else self._list(future)[0]
        quiet, rows = self._nodes.exchange_step(t, self.H, ms[0], end, self._history,
                                                self._n_history, self.checks, order,
                                                order if interpolate else -1, self._coef)
        self._input = (self.body.revision, self._rigid_input.copy())
        self._recent = None  # (the C core wrote the motion history)
        if not quiet:
            self.checks.after_step()
        return self._coef[:rows].copy() if interpolate else None

    # --- the C core's loops ------------------------------------------------------------------
    @property
    def compiled(self) -> bool:
        """True for the compiled one-node body, whose exchange step is one call of the C core
        (`core_joint`)."""
        return self._nodes.fused

    def core_joint(self) -> tuple:
        """A compiled body's arguments to the C core's loop of macro steps
        (rbcosim._core.flex_loop): body, exchange, propagator, micro steps, the rigid motions
        stepped from (2, 20) and their count, the range checks' bounds and rows."""
        handle, p, micro_steps = self.body.core_args(self.H)
        return (handle, self._exchange, p, micro_steps, self._history, self._n_history,
                self.checks.quiet, self.checks.rotations)

    def core_stepped(self) -> None:
        """The C core's loop stepped the body (as `_step` does, without the range checks:
        it steps only where they are certainly quiet)."""
        self.body.core_stepped()
        self._input = (self.body.revision, self._rigid_input.copy())
        self._recent = None

    # --- stepping ---------------------------------------------------------------------------
    def _past(self, future) -> list[list[InterfaceMotion]]:
        """The past motions a step extrapolates through (with ``future``: the motion at t + H
        and the newest past one)."""
        past = self._motions[: self.settings.extrapolation]
        return past if future is None else [self._list(future)] + past[:1]

    def advance(self, t: float, motion, future=None) -> None:
        """Step the body over [t, t + H] from the rigid points' motions at t (and, for
        Gauss–Seidel and iterations, their motions at t + H); call commit() once accepted."""
        self._pending[:] = self._power()
        self._nodes.step(t, self.H, self._list(motion), self._past(future))

    def advance_in_halves(self, t: float, motion, mid, end) -> np.ndarray:
        """Iterative coupling: step over [t, t + H/2] and [t + H/2, t + H], re-synchronised to
        the rigid motions at t and at `mid`, the interface accelerations quadratic through the
        three motions; returns the stacked wrench the rigid side takes at mid-step (then
        commit())."""
        self._pending[:] = self._power()
        m0, mm, me = self._list(motion), self._list(mid), self._list(end)
        half = 0.5 * self.H
        self._nodes.step(t, half, m0, [mm, me])
        mid_wrench = self.rigid_input()
        self._nodes.step(t + half, half, mm, [me, m0])
        return mid_wrench

    def commit(self, motion) -> None:
        """Accept the step taken from `motion`: power integrated over the step (trapezoid),
        the new wrench and motion in the histories."""
        self._energy += 0.5 * self.H * (self._pending + self._power())
        self._times[1:] = self._times[:-1]
        self._wrenches[1:] = self._wrenches[:-1]
        self._times[0], self._wrenches[0] = self.body.time, self.rigid_input()
        self._count = min(self._count + 1, _HISTORY)
        self._after_commit(self._list(motion))

    def _after_commit(self, motions: list[InterfaceMotion]) -> None:
        """The motion history and the range checks, after a commit."""
        self._history[1] = self._history[0]
        self._write_motions(0, motions)
        self._n_history[0] = min(int(self._n_history[0]) + 1, 2)
        if self._recent is not None:
            self._recent = [[m.frozen() for m in motions], *self._recent[:1]]
        self.checks.after_step()

    def _power(self) -> np.ndarray:
        """(k,): power (W) each node's physical wrench self._nodes.wrenches() (not the rigid
        input) delivers to the rigid side now; once per body state (a step's start is the last
        one's end). Not to be written to."""
        revision = self.body.revision
        if self._powered[0] != revision:
            self._powered = (revision, self._nodes.powers())
        return self._powered[1]

    def note_continuity_lost(self, joint: str, t: float) -> None:
        """The rigid side saw `joint`'s continuity violated at t (s); kept once: a spin after
        it is the coupling's instability, not the body's (RangeChecks)."""
        self.checks.note_continuity_lost(joint, t)

    # --- results ----------------------------------------------------------------------------
    def columns(self) -> list[str]:
        return result_columns(self.flex_body, self.body, self._floating,
                              self.checks.arc is not None)

    def row(self) -> np.ndarray:
        return result_row(self.body, self._floating, self.checks.arc)

    # --- save / restore ---------------------------------------------------------------------
    @functools.cached_property
    def digest(self) -> str:
        """The flexible body's digest (its reduced model and gravity), carried by every state."""
        return model_digest(self.body.model, self.body.gravity)

    def get_state(self) -> bytes:
        k = len(self.joints)
        return pack_state({
            "model": self.digest,
            "body": self.body.get_state(),
            "wt": self._times[:self._count].copy(),
            "w": self._wrenches[:self._count].copy(),
            "m": np.array([[np.append(m.as_array(), m.time) for m in ms]
                           for ms in self._motions]).reshape(-1, 20),
            "energy": self._energy.copy(), "pending": self._pending.copy(),
            "implicit_mass": self.implicit_mass, "handed_mass": self._handed_mass.copy(),
            "nodes": k,
        })

    def set_state(self, blob: bytes) -> None:
        """Restore a state from get_state; the whole blob is checked before anything changes
        (ValueError naming the field otherwise)."""
        d = unpack_state(blob)
        check_digest(d, self.digest, "flexible body")
        k = len(self.joints)
        if field(d, "nodes", int) != k:
            raise StateFormatError(f"state.nodes: {d['nodes']} interface nodes, this body has {k}")
        body, size = field(d, "body", bytes), len(self.body.get_state())
        if len(body) != size:
            raise StateFormatError(f"state.body: {len(body)} bytes, this model's state has {size}")
        n = array(d, "wt", (None,)).size
        if n > _HISTORY:
            raise StateFormatError(f"state.wt: {n} wrenches, at most {_HISTORY}")
        if array(d, "w", (None, None)).shape != (n, 6 * k):
            raise StateFormatError(f"state.w: expected {n} wrenches (n, {6 * k}), got "
                                   f"{d['w'].shape}")
        motions = array(d, "m", (None, 20))
        if motions.shape[0] % k or motions.shape[0] > 2 * k:
            raise StateFormatError(f"state.m: {motions.shape[0]} motions for {k} nodes")
        energy, pending = array(d, "energy", (k,)), array(d, "pending", (k,))
        field(d, "implicit_mass", bool)
        handed = array(d, "handed_mass", (6 * k, 6 * k))
        if not np.isfinite(np.frombuffer(body, dtype="<f8")).all():
            raise StateFormatError("state.body: non-finite values")
        self.body.set_state(body)
        self._times[:n], self._wrenches[:n], self._count = d["wt"], d["w"], n
        self._motions = [[motion_of(m[:19], float(m[19])) for m in motions[i:i + k]]
                         for i in range(0, motions.shape[0], k)]
        self._energy[:], self._pending[:] = energy, pending
        self._implicit[0] = bool(d["implicit_mass"])
        self._handed_mass[:] = handed
        self._input = (-1, self._input[1])


def start_unstressed_interior(body) -> None:
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
