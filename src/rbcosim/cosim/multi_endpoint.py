"""The flexible side of several rigid–flexible joints on ONE flexible body (n_i interface nodes).

A :class:`MultiFlexEndpoint` holds one :class:`~rbcosim.flex.multi_body.MultiNodeBody` and its
couplings (in the body's interface order) and steps the body once per macro step with every
joint's rigid motion. Each joint keeps its own exchanged-wrench history, polynomial, continuity
report and energy ledger, exactly as a one-joint :class:`~rbcosim.cosim.flex_endpoint.FlexEndpoint`.

Group API (what :class:`~rbcosim.cosim.master.CosimMaster` calls, the values keyed by joint):
``initialize(t, motions) -> {joint: (M_a (6, 6), frame) | None}``, ``report() -> {joint:
(kinematics (13,), energy J)}``, ``polynomials(t, ends=None) -> {joint: (order+1, 6)}``,
``inputs_for_rigid(t, motions) -> {joint: (polynomial, None)}``, ``finish(t, motions, ends)``,
``advance_in_halves(t, motions, mids, ends) -> {joint: wrench (6,)}``,
``iteration_polynomials(t, guesses)``, ``rigid_inputs()``, ``commit(motions)``,
``get_state()/set_state()``, ``columns()/row()``.

The added mass handed to the rigid side is each interface's diagonal (6, 6) block of the body's
(6 n_i, 6 n_i) added mass; the cross blocks stay in the explicit wrench (``rigid_inputs`` adds
back only what was handed over). The `interface_jacobian` scheme is refused for these bodies
(the rigid side takes one Jacobian per point, not the cross terms between points).
"""

from __future__ import annotations

import functools

import numpy as np

from rbcosim.cosim.codec import StateFormatError, array, field, pack_state, unpack_state
from rbcosim.cosim.flex_endpoint import (
    motion_of,
    result_columns,
    result_row,
    start_unstressed_interior,
)
from rbcosim.cosim.model_digest import check_digest, model_digest
from rbcosim.flex.chord_body import ChordBody
from rbcosim.flex.kinematics import InterfaceMotion
from rbcosim.flex.multi_body import MultiNodeBody
from rbcosim.flex.polynomial import exchange_polynomial
from rbcosim.settings import CosimSettings, Coupling

_HISTORY = 4  # exchanged wrenches kept per joint (cubic iteration polynomial)
_NO_TIMES = np.zeros(0)
_NO_VALUES = np.zeros((0, 6))


class MultiFlexEndpoint:
    """One MultiNodeBody coupled through ``couplings`` (interface i <-> couplings[i])."""

    def __init__(self, couplings: list[Coupling], body: MultiNodeBody | ChordBody,
                 settings: CosimSettings, H: float):
        self.couplings = tuple(couplings)
        self.joints = tuple(c.name for c in couplings)
        self.flex_body = couplings[0].flex_body
        self.body, self.settings, self.H = body, settings, H
        self._chord = hasattr(body, "output_displacements")  # chord or floating frame
        n = len(couplings)
        self._times = np.zeros(_HISTORY)
        self._wrenches = np.zeros((_HISTORY, n, 6))
        self._count = 0
        self._motions: list[list[InterfaceMotion]] = []  # stepped from, newest first
        self.energy = np.zeros(n)
        self._pending = np.zeros(n)
        self._handed = np.zeros((n, 6, 6))  # inertial added-mass blocks the rigid side applies
        self._input: tuple[int, np.ndarray] = (-1, np.zeros((n, 6)))
        self._end_tau = np.array([H])
        self._mid_end_taus = np.array([0.5 * H, H])

    def _list(self, motions: dict) -> list[InterfaceMotion]:
        return [motions[j] for j in self.joints]

    # --- start ----------------------------------------------------------------------------
    def initialize(self, t: float, motions: dict) -> dict:
        """Place the body at the rigid points; {joint: (added mass (6, 6), "inertial") or
        None}. A coupling's grounded_reference is that interface's unstressed position."""
        ms = self._list(motions)
        body = self.body
        if any(c.grounded_reference is not None for c in self.couplings):
            refs = [m if c.grounded_reference is None
                    else InterfaceMotion.at_rest(c.grounded_reference, m.quaternion)
                    for c, m in zip(self.couplings, ms)]
            body.initialize(t, refs)
            body.set_motion(ms)
            start_unstressed_interior(body)
        else:
            body.initialize(t, ms)
        handover = dict.fromkeys(self.joints)
        if self.settings.added_mass:
            full = body.added_mass()
            for i, j in enumerate(self.joints):
                block = full[6 * i:6 * i + 6, 6 * i:6 * i + 6]
                if np.any(np.abs(block) > 1e-12 * max(1.0, np.abs(block).max())):
                    self._handed[i] = block
                    handover[j] = (block.copy(), "inertial")
            self._input = (-1, self._input[1])
        self._times[0], self._wrenches[0], self._count = t, self.rigid_inputs(), 1
        return handover

    # --- what goes to the rigid side --------------------------------------------------------
    def rigid_inputs(self) -> np.ndarray:
        """(n_i, 6): each joint's wrench plus the handed added mass times its acceleration
        (the rigid side applies −M_a [a_p; α_p] itself). Once per body state."""
        body = self.body
        if self._input[0] != body.revision:
            acc = body.frame_accelerations()
            value = body.wrenches() + np.einsum("nij,nj->ni", self._handed, acc)
            self._input = (body.revision, value)
        return self._input[1].copy()

    def report(self) -> dict:
        """{joint: (node kinematics (13,), energy delivered so far J)}."""
        nk = self.body.node_kinematics()
        return {j: (nk[i], float(self.energy[i])) for i, j in enumerate(self.joints)}

    def polynomials(self, t: float, ends: dict | None = None) -> dict:
        """{joint: wrench coefficients (order+1, 6) in τ = time − t}: extrapolated through the
        past values, or interpolated through ``ends[joint]`` at t + H and the past values."""
        order = self.settings.extrapolation
        out = {}
        for i, j in enumerate(self.joints):
            w = self._wrenches[:, i]
            if ends is None:
                out[j] = exchange_polynomial(t, self._times, w, min(order + 1, self._count),
                                             _NO_TIMES, _NO_VALUES)
            else:
                out[j] = exchange_polynomial(t, self._times, w, min(max(order, 1), self._count),
                                             self._end_tau, np.reshape(ends[j], (1, 6)))
        return out

    def iteration_polynomials(self, t: float, guesses: dict) -> dict:
        """{joint: cubic through the last two exchanged values and guesses[joint] = (mid,
        end)} (iterative coupling)."""
        return {j: exchange_polynomial(t, self._times, self._wrenches[:, i],
                                       min(2, self._count), self._mid_end_taus,
                                       np.array(guesses[j], dtype=float).reshape(2, 6))
                for i, j in enumerate(self.joints)}

    # --- one macro step -------------------------------------------------------------------
    @property
    def needs_end_motion(self) -> bool:
        return self.settings.scheme == "gauss_seidel_rigid_first"

    def inputs_for_rigid(self, t: float, motions: dict) -> dict:
        """{joint: (wrench polynomial, None)} over [t, t + H]; flexible side first: the body
        steps here and each polynomial interpolates to its end wrench."""
        if self.settings.scheme == "gauss_seidel_flex_first":
            self.advance(t, motions)
            end = self.rigid_inputs()
            return {j: (p, None) for j, p in self.polynomials(
                t, {j: end[i] for i, j in enumerate(self.joints)}).items()}
        return {j: (p, None) for j, p in self.polynomials(t).items()}

    def finish(self, t: float, motions: dict, ends: dict | None = None) -> None:
        """Step the body (unless the flexible side went first) and commit."""
        scheme = self.settings.scheme
        if scheme == "gauss_seidel_rigid_first":
            if not ends:
                raise ValueError("gauss_seidel_rigid_first: the rigid motions at t + H are needed")
            self.advance(t, motions, future=ends)
        elif scheme != "gauss_seidel_flex_first":
            self.advance(t, motions)
        self.commit(motions)

    def advance(self, t: float, motions: dict, future: dict | None = None) -> None:
        """Step the body over [t, t + H] from every joint's rigid motion at t (and at t + H)."""
        self._pending = self._powers()
        past = self._motions[: self.settings.extrapolation]
        if future is not None:
            past = [self._list(future)] + past[:1]
        self.body.step(t, self.H, self._list(motions), extrapolation=past)

    def advance_in_halves(self, t: float, motions: dict, mids: dict, ends: dict) -> dict:
        """Iterative coupling: two half steps re-synchronised at t and mid-step, accelerations
        quadratic through the three motions; {joint: wrench at mid-step} (call commit())."""
        self._pending = self._powers()
        m0, mm, me = self._list(motions), self._list(mids), self._list(ends)
        half = 0.5 * self.H
        self.body.step(t, half, m0, extrapolation=[mm, me])
        mid = self.rigid_inputs()
        self.body.step(t + half, half, mm, extrapolation=[me, m0])
        return {j: mid[i] for i, j in enumerate(self.joints)}

    def commit(self, motions: dict) -> None:
        """Accept the step: each joint's power integrated (trapezoid), histories shifted."""
        self.energy += 0.5 * self.H * (self._pending + self._powers())
        self._times[1:] = self._times[:-1]
        self._wrenches[1:] = self._wrenches[:-1]
        self._times[0], self._wrenches[0] = self.body.time, self.rigid_inputs()
        self._count = min(self._count + 1, _HISTORY)
        self._motions = [self._list(motions), *self._motions[:1]]

    def _powers(self) -> np.ndarray:
        """(n_i,): power (W) each joint's wrench delivers to its rigid body now."""
        return np.einsum("ni,ni->n", self.body.wrenches(), self.body.node_kinematics()[:, 7:13])

    # --- results ----------------------------------------------------------------------------
    def columns(self) -> list[str]:
        """<body>.eta1.., each output node's inertial x y z and, for a chord-frame body, its
        elastic displacement ux uy uz in the chord frame (uz: the deflection from the chord)."""
        return result_columns(self.flex_body, self.body, self._chord, False)

    def row(self) -> np.ndarray:
        return result_row(self.body, self._chord, None)

    # --- save / restore ---------------------------------------------------------------------
    @functools.cached_property
    def digest(self) -> str:
        """The flexible body's digest (its reduced model and gravity), carried by every state."""
        return model_digest(self.body.model, self.body.gravity)

    def get_state(self) -> bytes:
        n = len(self.joints)
        return pack_state({
            "model": self.digest,
            "body": self.body.get_state(),
            "wt": self._times[:self._count].copy(),
            "w": self._wrenches[:self._count].reshape(-1, 6).copy(),
            "m": np.array([[np.append(m.as_array(), m.time) for m in ms]
                           for ms in self._motions]).reshape(-1, 20),
            "energy": self.energy.copy(), "pending": self._pending.copy(),
            "handed_mass": self._handed.reshape(6 * n, 6).copy(),
        })

    def set_state(self, blob: bytes) -> None:
        """Restore from get_state; everything is checked before anything changes."""
        d = unpack_state(blob)
        check_digest(d, self.digest, "flexible body")
        n = len(self.joints)
        body, size = field(d, "body", bytes), len(self.body.get_state())
        if len(body) != size:
            raise StateFormatError(f"state.body: {len(body)} bytes, this model's state has {size}")
        count = array(d, "wt", (None,)).size
        if count > _HISTORY:
            raise StateFormatError(f"state.wt: {count} wrenches, at most {_HISTORY}")
        wrenches = array(d, "w", (count * n, 6))
        motions = array(d, "m", (None, 20))
        if motions.shape[0] % n or motions.shape[0] > 2 * n:
            raise StateFormatError(f"state.m: {motions.shape[0]} motions for {n} joints")
        energy, pending = array(d, "energy", (n,)), array(d, "pending", (n,))
        handed = array(d, "handed_mass", (6 * n, 6))
        if not np.isfinite(np.frombuffer(body, dtype="<f8")).all():
            raise StateFormatError("state.body: non-finite values")
        self.body.set_state(body)
        self._times[:count], self._count = d["wt"], count
        self._wrenches[:count] = wrenches.reshape(count, n, 6)
        self._motions = [[motion_of(m[:19], float(m[19])) for m in motions[i:i + n]]
                         for i in range(0, motions.shape[0], n)]
        self.energy, self._pending = energy.copy(), pending.copy()
        self._handed = handed.reshape(n, 6, 6).copy()
        self._input = (-1, self._input[1])
