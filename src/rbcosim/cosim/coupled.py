"""Coupled macro steps of the in-process master in one call of the C core.

For the master's common case — every flexible body coupled at one point (a
:class:`~rbcosim.cosim.flex_endpoint.FlexEndpoint` over a :class:`~rbcosim.flex.runtime.body.FlexBody`,
grounded or floating) and a scheme with a batch code (rbcosim.scheme: ``jacobi``,
``gauss_seidel_rigid_first``, ``gauss_seidel_flex_first``) — :meth:`CoupledSteps.run` advances a batch of macro steps in one
call of ``_core.coupled_steps`` (``librbcosim/cosim/coupled.h``): the rigid macro step, each
body's exchange step, the wrench polynomials between them, the reports, the continuity gaps and
both sides of the energy ledger, in the order of :meth:`CosimMaster.step
<rbcosim.cosim.master.CosimMaster.step>` and with the same C functions, so the results are the
same bits. The master's Python objects (rigid state and ledger, endpoints' histories) are read
before and written back after the batch.

The batch stops before a step that needs Python — a gap over its tolerance (the joint's
``on_violation`` action), a non-finite value, a failed step, a floating body's spin or
deformation check that may warn — with every array as it was before that step; the master then
takes that step with :meth:`CosimMaster.step` as before.
"""

from __future__ import annotations

import numpy as np

from rbcosim import _core
from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.maximal.simulate import RigidSimulation

#: ledger layout (coupled.h): energies, flexible kinematics (13), last gaps (4), largest gaps (4)
_E_RIGID, _E_FLEX, _KIN, _GAPS, _GAP_MAX, _LEDGER = 0, 1, 2, 15, 19, 23
_MAX_JOINTS = 32
_NO_P = np.zeros(0)


class _Joint:
    """One coupling's arrays for the C batch."""

    def __init__(self, name: str, endpoint: FlexEndpoint, point: int):
        self.name = name
        self.endpoint = endpoint
        self.body = endpoint.body
        self.ints = np.zeros(3, dtype=np.int64)  # point, micro steps, motions kept
        self.ints[0], self.ints[1] = point, self.body.micro_steps
        self.floats = np.zeros(7)  # tolerances (4), spin floor, rotation gain, rotation limit
        self.floats[:4] = endpoint.coupling.tolerances
        self.motions = np.zeros((2, 20))
        self.ledger = np.zeros(_LEDGER)


class CoupledSteps:
    """The C batch of a CosimMaster (see the module docstring); :meth:`for_master` gives None
    when the master's case is not the batch's."""

    def __init__(self, master, joints: list[_Joint]):
        self.master = master
        self.rigid = master.rigid
        self.joints = joints
        self.scheme = master.scheme.batch_code
        self.order = int(master.settings.extrapolation)
        self.micro_steps = int(master.settings.micro_steps)

    @classmethod
    def for_master(cls, master) -> CoupledSteps | None:
        if master.scheme.batch_code is None or not 0 <= master.settings.extrapolation <= 2:
            return None
        if not isinstance(master.rigid.sim, RigidSimulation):  # the minimal formulation
            return None
        endpoints = list(master.endpoints.values())
        if not endpoints or len(endpoints) > _MAX_JOINTS:
            return None
        joints = []
        for ep in endpoints:
            if type(ep) is not FlexEndpoint or type(ep.body) is not FlexBody:
                return None
            if ep.H != master.H or ep.scheme is not master.scheme:
                return None
            point = master.rigid.points.index(ep.coupling.point)
            joints.append(_Joint(ep.coupling.name, ep, point))
        if [j.name for j in joints] != list(master.rigid.couplings):
            return None
        return cls(master, joints)

    # --- the master's objects <-> the batch's arrays ------------------------------------------
    def _load(self) -> tuple | None:
        """Fill the joints' arrays from the master's objects; None if a value is not one the
        batch takes (the master steps)."""
        rigid = self.rigid
        if rigid.inputs.switches[0]:
            return None
        H = self.master.H
        out = []
        for j in self.joints:
            ep, body = j.endpoint, j.body
            motions = [ms[0] for ms in ep._motions]
            if len(motions) > 2 or any(m.time is None for m in motions):
                return None
            for i, m in enumerate(motions):
                j.motions[i, :19] = m.as_array()
                j.motions[i, 19] = m.time
            j.ints[2] = len(motions)
            checks = ep.checks
            j.floats[4:] = checks.quiet  # spin floor, rotation gain, rotation limit
            flex = rigid._flex[j.name]
            led = j.ledger
            led[_E_RIGID], led[_E_FLEX] = rigid.energy_rigid[j.name], rigid.energy_flex[j.name]
            led[_KIN:_GAPS] = 0.0 if flex is None else flex
            led[_GAPS:_GAP_MAX] = rigid.last_gaps[j.name]
            led[_GAP_MAX:] = rigid.gap_max[j.name]
            body._require_init()
            if not body._wrench_ok:  # the power at the first step's start
                body.wrench()
            p = body._propagator(H) if body._grounded else _NO_P
            out.append((body._handle, ep._exchange, p, j.ints, j.floats, j.motions, j.ledger,
                        checks.rotations))
        return tuple(out)

    def _store(self, done: int, t: float, micro: int, start: np.ndarray,
               end: np.ndarray) -> None:
        """The master's objects after `done` batched steps."""
        rigid, master = self.rigid, self.master
        rigid.sim.took_steps(t, micro)
        rigid.keep_step_wrenches(start, end)
        for j in self.joints:
            ep, body, led = j.endpoint, j.body, j.ledger
            rigid.energy_rigid[j.name] = float(led[_E_RIGID])
            rigid.energy_flex[j.name] = float(led[_E_FLEX])
            rigid._flex[j.name] = led[_KIN:_GAPS].copy()
            rigid.last_gaps[j.name] = led[_GAPS:_GAP_MAX].copy()
            rigid.gap_max[j.name][:] = led[_GAP_MAX:]
            ep._motions = [[motion_of(j.motions[i, :19], float(j.motions[i, 19]))]
                           for i in range(int(j.ints[2]))]
            body._changed()
            body._wrench_ok = True  # the core left the wrench at the new state
            ep._input = (body.revision, ep._rigid_input.copy())
        master.iterations.extend([1] * done)
        master.step_index += done

    # --- stepping -----------------------------------------------------------------------------
    def run(self, count: int) -> int:
        """Up to `count` macro steps; returns how many were taken (fewer: the next one is the
        master's to take)."""
        joints = self._load()
        if joints is None or count <= 0:
            return 0
        rigid = self.rigid
        sim, state = rigid.sim, rigid.sim.state
        n = self.micro_steps
        times, start, end, acc, energy, failed = sim.macro_scratch(n)
        integrator = sim.integrator
        method, do_project, tol, max_newton, matrix, valid = integrator.stepper()
        _code, done, t, micro = _core.coupled_steps(
            sim.system.handle, state.vector, state.t, float(self.master.H), n, method,
            do_project, tol, max_newton, matrix, valid, times, start, end, acc, energy,
            integrator._stats, failed, self.scheme, self.order, int(count), joints)
        if done:
            self._store(done, t, micro, start, end)
        return done
