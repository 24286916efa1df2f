"""The reference flexible body as its own process, speaking only the public protocol.

`run_flex_solver` drives one or several rigid–flexible joints of a server session as ONE client
(one attach; per macro step one message with all their wrenches, one reply with all their
motions) with the same flexible-body endpoints the in-process master uses (one per body with
its couplings, rbcosim.cosim.flex_bodies), in the master's order, so that the multi-process run
gives the in-process run's bits:

    attach (motions at t_0) → initialize → set_added_mass → report (t_0, initial wrench held)
    step k: report + wrench polynomial (+ Jacobian) → [advance while the rigid side steps]
            → motions at t_{k+1} → commit
    report (t_end)

The scheme (rbcosim.scheme) sets the order: Jacobi and interface-Jacobian coupling
overlap the two solvers' macro steps; the Gauss–Seidel schemes run them in turn. Iterative
coupling (restore and repeat each step) runs in process only.

With Jacobi or either Gauss–Seidel order the C core takes the macro steps (rbcosim._core.
flex_loop, librbcosim/cosim/flex_loop.h: request, reply and the bodies' steps) from one result
row, checkpoint or unusual step to the next: compiled one-node bodies step there too; any other
body (multi-node, chord-frame) steps through the endpoints' own Python, called back once per
phase of the scheme. Python's step (`_Side.step`, `_Side._complete`) takes interface-Jacobian
coupling and whatever the C loop hands back, with the same errors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rbcosim import _core
from rbcosim.client import Client
from rbcosim.cosim.flex_bodies import body_couplings, build_endpoints
from rbcosim.cosim.flex_endpoint import FlexEndpoint
from rbcosim.errors import RbcosimError, ScenarioError
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.scenario.loader import Scenario
from rbcosim.scheme import DISTRIBUTED_SCHEMES, scheme_named
from rbcosim.serialization import codec
from rbcosim.serialization.codec import (
    StateFormatError,
    pack_state,
    remove_stale_temporaries,
    unpack_state,
    write_atomically,
)
from rbcosim.settings import whole_steps

FLEX_RESULTS_FORMAT = "rbcosim-flex-results"
_LOOP_JOINTS = 32  # bodies (joints) the C core's loop takes (RBC_CS_MAX_JOINTS)
# why rbcosim._core.flex_loop returned (librbcosim/cosim/flex_loop.h): at the stop step; nothing
# of the step done; the request encoded, not sent; sent, for Python to read the reply; the
# reply read, its parts for Python; no reply within the timeout; (a signal: its exception
# raised;) a body's step raised (Python's bodies), the exception returned
_STOPPED, _AT_TOP, _UNSENT, _SENT, _REPLY, _TIMEOUT, _SIGNAL, _RAISED = range(8)
_IN_STEP = (_UNSENT, _SENT, _REPLY, _TIMEOUT)


class FlexSolverError(RbcosimError):
    """The flexible solver cannot run (scheme, joint, checkpoint, session state)."""


def macro_steps(scenario: Scenario) -> int:
    """Macro steps from t = 0 to solver.t_end (a whole number, as the in-process master wants)."""
    return whole_steps(scenario.solver.t_end, scenario.cosim.macro_step, "macro steps H")


def check_distributed(scenario: Scenario) -> None:
    """Refuse what the multi-process run does not do, with the reason."""
    if not scenario.couplings:
        raise ScenarioError(
            f"{scenario.source}: no [couplings]: nothing to co-simulate; use `rbcosim run`"
        )
    if not scheme_named(scenario.cosim.scheme).distributed:
        raise ScenarioError(
            f"{scenario.source}: cosim.scheme = {scenario.cosim.scheme!r} restores and repeats "
            "each macro step and runs in process only (`rbcosim run`); the multi-process run "
            f"supports {list(DISTRIBUTED_SCHEMES)}"
        )


def body_joints(scenario: Scenario) -> dict[str, list[str]]:
    """Flexible body -> its joints ([couplings.NAME] with flex_body = BODY), bodies in the order
    of their first coupling, as the in-process master orders its groups: what one flexible
    solver drives at least (a body is never split between solvers)."""
    return {b: [c.name for c in cs] for b, cs in body_couplings(scenario).items()}


def select_joints(scenario: Scenario, joints: Sequence[str] = (),
                  bodies: Sequence[str] = ()) -> list[str]:
    """The joints one flexible solver drives: those named and every joint of each body named,
    body by body (`body_joints` order). A body is driven whole: naming some of its joints only
    is a ScenarioError, as is a joint named twice or nothing named."""
    if isinstance(joints, str) or isinstance(bodies, str):
        raise TypeError("joints and bodies are lists of names, not one name")
    of_body = body_joints(scenario)
    body_of = {j: b for b, js in of_body.items() for j in js}
    wanted: list[str] = []
    for j in joints:
        if j not in body_of:
            raise ScenarioError(f"--joint {j}: {scenario.source} has no coupling {j!r}; "
                                f"valid names: {list(body_of)}")
        wanted.append(j)
    for b in bodies:
        if b not in of_body:
            raise ScenarioError(f"--body {b}: {scenario.source} has no coupled flexible body "
                                f"{b!r}; valid names: {list(of_body)}")
        wanted += of_body[b]
    twice = sorted({j for j in wanted if wanted.count(j) > 1})
    if twice:
        raise ScenarioError(f"joints {twice} are named twice (by --joint or through --body)")
    if not wanted:
        raise ScenarioError("name the joints to drive: --joint NAME or --body NAME")
    for b, js in of_body.items():
        missing = [j for j in js if j not in wanted]
        if missing and len(missing) < len(js):
            raise ScenarioError(
                f"--joint {' --joint '.join(j for j in js if j in wanted)}: flexible body {b!r} "
                f"is coupled by {js}; one solver drives a whole body: name them all, or "
                f"--body {b}")
    return [j for js in of_body.values() for j in js if j in wanted]


def endpoints_for(scenario: Scenario, joints: Sequence[str]) -> list[FlexEndpoint]:
    """The flexible bodies of `joints` (whole bodies, `select_joints`) as the in-process
    master's endpoints (rbcosim.cosim.flex_bodies: one per body), built exactly as it builds
    them."""
    wanted = set(select_joints(scenario, joints))
    endpoints = build_endpoints(scenario, scenario.cosim.macro_step).values()
    return [ep for ep in endpoints if wanted & set(ep.joints)]


@dataclass
class FlexResults:
    """One flexible body's result columns at the step indices where the master writes rows."""

    body: str
    columns: list[str]
    steps: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)

    def add(self, step: int, row: np.ndarray) -> None:
        while self.steps and self.steps[-1] >= step:
            self.steps.pop()
            self.rows.pop()
        self.steps.append(step)
        self.rows.append(np.asarray(row, dtype=np.float64))

    def table(self) -> np.ndarray:
        return np.array(self.rows, dtype=np.float64).reshape(len(self.rows), len(self.columns))


SolverResults = dict[str, FlexResults]
"""A flexible solver's results: flexible body -> its columns, in the solver's body order."""


def pack_results(results: SolverResults) -> bytes:
    """A flexible solver's result file (msgpack state blob): per body its columns and rows."""
    return pack_state({
        "format": FLEX_RESULTS_FORMAT,
        "bodies": list(results),
        "results": {b: {"columns": list(r.columns), "steps": np.array(r.steps, dtype=np.float64),
                        "rows": r.table()} for b, r in results.items()},
    })


def unpack_results(blob: bytes, where: str = "flex results") -> SolverResults:
    try:
        d = unpack_state(blob)
        if d.get("format") != FLEX_RESULTS_FORMAT:
            raise ValueError("not a flex results file")
        out = {}
        for body in d["bodies"]:
            r = d["results"][body]
            fr = FlexResults(str(body), [str(c) for c in r["columns"]])
            steps = codec.array(r, "steps", (None,))
            fr.steps = [int(k) for k in steps]
            fr.rows = list(codec.array(r, "rows", (steps.size, len(fr.columns))))
            out[fr.body] = fr
    except (KeyError, TypeError, ValueError) as exc:
        raise FlexSolverError(f"{where}: unreadable ({exc})") from None
    return out


def write_results(path: str | Path, results: SolverResults) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, pack_results(results))
    return path


def read_results(path: str | Path) -> SolverResults:
    path = Path(path)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise FlexSolverError(f"{path}: cannot read the flexible side's results: {exc}") from None
    return unpack_results(blob, str(path))


def checkpoint_path(directory: str | Path, tag: str, step: int) -> Path:
    """A solver's checkpoint of `step`; tag: its joints joined by "+" (`solver_tag`)."""
    return Path(directory) / f"{tag}.{step}.ckpt"


def solver_tag(joints: Sequence[str]) -> str:
    """The name of a flexible solver's files: its joints, joined by "+"."""
    return "+".join(joints)


def _tag(endpoints: list) -> str:
    return solver_tag([j for ep in endpoints for j in ep.joints])


def _save_checkpoint(directory: Path, endpoints: list, results: SolverResults,
                     step: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tag = _tag(endpoints)
    write_atomically(checkpoint_path(directory, tag, step), pack_state({
        "step": step, "bodies": {ep.flex_body: ep.get_state() for ep in endpoints},
        "results": pack_results(results)}))
    # Keep the two newest: the server's snapshot of step k is taken only once every client's
    # step-k inputs are in, so a crash may leave the server one checkpoint behind this one.
    older = sorted(
        (int(p.name.rsplit(".", 2)[1]), p)
        for p in directory.glob(f"{tag}.*.ckpt")
        if p.name.rsplit(".", 2)[1].isdigit()
    )
    for _, p in older[:-2]:
        p.unlink(missing_ok=True)


def _load_checkpoint(directory: Path, endpoints: list, step: int) -> SolverResults:
    tag = _tag(endpoints)
    path = checkpoint_path(directory, tag, step)
    if not path.is_file():
        have = sorted(p.name for p in directory.glob(f"{tag}.*.ckpt"))
        raise FlexSolverError(
            f"no checkpoint of joints {tag!r} at step {step} (the session's step) in "
            f"{directory}; found {have or 'none'}: restore the session to a step that has one"
        )
    try:
        d = unpack_state(path.read_bytes())
        if codec.field(d, "step", int) != step:
            raise StateFormatError(f"state.step: it holds step {d['step']}")
        results = unpack_results(codec.field(d, "results", bytes), str(path))
        states = codec.field(d, "bodies", dict)
        bodies = sorted(ep.flex_body for ep in endpoints)
        if sorted(states) != bodies or sorted(results) != bodies:
            raise StateFormatError(f"state.bodies: {sorted(states)}, expected {bodies}")
        for ep in endpoints:
            ep.set_state(codec.field(states, ep.flex_body, bytes, "state.bodies"))
    except OSError as exc:
        raise FlexSolverError(f"{path}: cannot read the checkpoint: {exc}") from None
    except ValueError as exc:
        raise FlexSolverError(f"{path}: not a checkpoint of these joints: {exc}") from None
    return results


class _Side:
    """The endpoints one flexible solver drives, and their values as the protocol's arrays in
    the solver's joint order (endpoint by endpoint, node by node), written in place each step
    (a message is packed before the next step writes them again)."""

    def __init__(self, endpoints: list[FlexEndpoint]):
        self.endpoints = endpoints
        self.joints = [j for ep in endpoints for j in ep.joints]
        self.scheme = endpoints[0].scheme  # one scheme for every body
        self._spans = []  # each endpoint's rows [a, b) of the protocol's arrays
        for ep in endpoints:
            a = self._spans[-1][1] if self._spans else 0
            self._spans.append((a, a + len(ep.joints)))
        n = len(self.joints)
        self._kinematics, self._energies = np.zeros((n, 13)), np.zeros(n)
        self._reported = [(ep, self._kinematics[a:b], self._energies[a:b])
                          for ep, (a, b) in zip(endpoints, self._spans)]  # views, per endpoint
        self._polynomials: dict[int, np.ndarray] = {}  # rows m -> (n, m, 6)
        # the motions (n, 19) the C core's loop steps from, or None where it does not serve
        # (interface-Jacobian coupling); its bodies: the compiled one-node ones in C, others
        # through `_loop_inputs` and `_loop_finish` (the motions at t_end to `_end`)
        self._now = np.zeros((n, 19)) if self.scheme.batch_code is not None else None
        self._in_c = len(endpoints) <= _LOOP_JOINTS and all(ep.compiled for ep in endpoints)
        self._end = np.zeros((n, 19))
        self._stepping: list = []  # the motions (per endpoint) of the step the loop is in

    def motions(self, rows: np.ndarray, t: float) -> list[list]:
        """Each endpoint's rigid-point motions (node order) from (n_joints, 19) rows at t."""
        motions = InterfaceMotion.rows(rows, t)
        return [motions[a:b] for a, b in self._spans]

    def reports(self) -> tuple[np.ndarray, np.ndarray]:
        """(node kinematics (n_joints, 13), delivered energies (n_joints,) J)."""
        for ep, kinematics, energies in self._reported:
            ep.report_into(kinematics, energies)
        return self._kinematics, self._energies

    def polynomials(self, stacked: list[np.ndarray]) -> np.ndarray:
        """The endpoints' stacked wrench polynomials (order+1, 6k) as one (n_points, m, 6)
        array; a lower order is padded with zero coefficients (the same W(τ))."""
        m = max(len(p) for p in stacked)
        out = self._polynomials.get(m)
        if out is None:
            out = self._polynomials[m] = np.zeros((len(self.joints), m, 6))
        for p, (a, b) in zip(stacked, self._spans):
            rows = len(p)
            out[a:b, :rows] = p.reshape(rows, b - a, 6).swapaxes(0, 1)
            out[a:b, rows:] = 0.0
        return out

    @staticmethod
    def jacobians(jacobians: list) -> list | None:
        """Each point's (∂W/∂x, ∂W/∂v) (one node per endpoint), or None without them."""
        return None if jacobians[0] is None else list(jacobians)

    def hand_over_added_mass(self, client: Client, t: float, motions: list) -> None:
        """Initialize each body from its points' motions and hand the added masses over in one
        message (a zero matrix where a body hands none: the rigid side then adds nothing)."""
        handovers = {j: h for ep, ms in zip(self.endpoints, motions)
                     for j, h in ep.initialize(t, ms).items()}
        if all(handovers[j] is None for j in self.joints):
            return
        masses = [np.zeros((6, 6)) if handovers[j] is None else handovers[j][0]
                  for j in self.joints]
        frames = ["point" if handovers[j] is None else handovers[j][1] for j in self.joints]
        client.set_added_mass(masses, frames)

    def add_rows(self, results: SolverResults, step: int) -> None:
        for ep in self.endpoints:
            results[ep.flex_body].add(step, ep.row())

    def step(self, client: Client, t: float, rows: np.ndarray):
        """One macro step from the motions `rows` at t, in the scheme's order; the reply."""
        motions = self.motions(rows, t)
        kinematics, energies = self.reports()
        inputs = [ep.inputs_for_rigid(t, ms) for ep, ms in zip(self.endpoints, motions)]
        msg_id = client.start_step(
            wrench_polynomial=self.polynomials([p for p, _ in inputs]),
            flex_kinematics=kinematics, flex_energy=energies,
            interface_jacobian=self.jacobians([jac for _, jac in inputs]))
        return self._complete(client, t, motions, msg_id)

    def _complete(self, client: Client, t: float, motions: list, msg_id: str,
                  frames: list | None = None, stepped: bool = False):
        """The rest of a macro step whose request `msg_id` is sent: the bodies' step while the
        rigid side takes it (unless `stepped`), the reply (frames: already read), the bodies'
        step to the rigid motions at its end (rigid side first)."""
        if self.scheme.overlaps and not stepped:
            self._overlap(t, motions)
        r = client.finish_step(msg_id, frames)
        if self.scheme.rigid_first:
            self._to_end(t, motions, r.motions, r.time)
        return r

    def _overlap(self, t: float, motions: list) -> None:
        """The bodies' step from `motions` at t while the rigid side takes it (Jacobi)."""
        for ep, ms in zip(self.endpoints, motions):
            ep.finish(t, ms)

    def _to_end(self, t: float, motions: list, rows: np.ndarray, t_end: float) -> None:
        """The bodies' step from `motions` at t to the rigid motions `rows` at t_end (rigid
        side first)."""
        for ep, ms, end in zip(self.endpoints, motions, self.motions(rows, t_end)):
            ep.finish(t, ms, end)

    def _loop_inputs(self, t: float) -> np.ndarray:
        """The C loop's call before its request, bodies stepped by Python: the reports to
        `_kinematics` and `_energies`, and the polynomial (n, m, 6) over the step from the
        motions `_now` at t (flexible side first: the bodies step now), as `step` has them."""
        motions = self._stepping = self.motions(self._now, t)
        self.reports()
        return self.polynomials([ep.inputs_for_rigid(t, ms)[0]
                                 for ep, ms in zip(self.endpoints, motions)])

    def _loop_finish(self, t: float, t_end: float | None) -> None:
        """The C loop's call for the bodies' step after its request (bodies stepped by
        Python): while the rigid side steps (t_end None), or to the motions `_end` at t_end."""
        if t_end is None:
            self._overlap(t, self._stepping)
        else:
            self._to_end(t, self._stepping, self._end, t_end)

    def advance(self, client: Client, k: int, t: float, rows: np.ndarray,
                stop: int) -> tuple[int, float, np.ndarray]:
        """Macro steps from step k at t with the motions `rows` (n_joints, 19) towards step
        `stop`: (step, time, motions) after them. A scheme of the C core's loop goes there
        (rbcosim._core.flex_loop: request and reply in C, the compiled one-node bodies' steps
        too, other bodies' through `_loop_inputs` and `_loop_finish`, until `stop` or anything
        unusual, which Python then takes with `step` or `_complete`); interface-Jacobian
        coupling takes one step here."""
        now = self._now
        if now is None or np.shape(rows) != now.shape:
            r = self.step(client, t, rows)  # (motions of the wrong shape: refused there)
            return r.step, r.time, r.motions
        if rows is not now:
            now[:] = rows
        bodies = tuple(ep.core_joint() for ep in self.endpoints) if self._in_c else (
            self._loop_inputs, self._loop_finish, self._kinematics, self._energies, self._end)
        k_in = k
        code, k, t, client.next_id, stepped, extra = _core.flex_loop(
            *client.step_wire(len(self.joints)), bodies, self.scheme.batch_code,
            self.endpoints[0].settings.extrapolation, self.endpoints[0].H, k, t, now, stop,
            client.next_id)
        client.step_index = k  # (as its step replies set it)
        if code == _RAISED:
            raise extra
        if self._in_c and (k != k_in or stepped or (self.scheme.flex_first and code in _IN_STEP)):
            for ep in self.endpoints:
                ep.core_stepped()
        if code == _STOPPED:
            return k, t, now
        if code == _AT_TOP:
            r = self.step(client, t, now)
            return r.step, r.time, r.motions
        msg_id = client.msg_id(client.next_id - 1)
        if code == _TIMEOUT:
            raise client.no_reply(msg_id, client.timeout)
        if code == _UNSENT:
            client.send_frames("step", [extra], client.session)
        frames = extra if code == _REPLY else None
        r = self._complete(client, t, self.motions(now, t), msg_id, frames, bool(stepped))
        return r.step, r.time, r.motions


def run_flex_solver(
    scenario: Scenario,
    joints: Sequence[str],
    client: Client,
    session: str,
    *,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    name: str | None = None,
    endpoints: list | None = None,
) -> SolverResults:
    """Drive `joints` (whole flexible bodies, `select_joints`) of `session` to solver.t_end as
    ONE client: one attach, and per macro step one message with all their wrenches and node
    reports, one reply with all their motions. Returns this side's result rows per body.

    endpoints: `endpoints_for(scenario, joints)` built ahead (e.g. while the server starts).
    checkpoint_dir/checkpoint_every: write this side's state every N macro steps (use the same
    N as the session's snapshot_every). resume: take over the joints (force attach) from a
    session restored to a snapshot, and continue from this side's checkpoint of that step.
    """
    check_distributed(scenario)
    side = _Side(endpoints if endpoints is not None else endpoints_for(scenario, joints))
    point_of = {c.name: c.point for c in scenario.couplings}
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume and ckpt is None:
        raise FlexSolverError("resuming needs the checkpoint folder of the interrupted run")
    if ckpt is not None and ckpt.is_dir():
        remove_stale_temporaries(ckpt, "*.ckpt")  # of a solver killed while writing one
    info = client.attach([point_of[j] for j in side.joints], side.joints, session=session,
                         motions=True, force=resume,
                         name=name or f"rbcosim flex {solver_tag(side.joints)} "
                                      f"(pid {os.getpid()})")
    k, t, m = info["step"], info["time"], info["motions"]
    if resume:
        results = _load_checkpoint(ckpt, side.endpoints, k)
    else:
        results, m = _start(side, client, session, k, t, m)
    n_steps, every = macro_steps(scenario), scenario.solver.output_every
    saving = ckpt is not None and checkpoint_every
    while k < n_steps:  # per macro step one exchange each way for all the joints
        if saving and k % checkpoint_every == 0:
            _save_checkpoint(ckpt, side.endpoints, results, k)
        stop = min(n_steps, _next_multiple(k, every),
                   _next_multiple(k, checkpoint_every) if saving else n_steps)
        k, t, m = side.advance(client, k, t, m, stop)  # to stop, or one step
        if k % every == 0 or k == n_steps:
            side.add_rows(results, k)
    client.report(*side.reports())
    return results


def _next_multiple(k: int, n: int) -> int:
    """The first multiple of n after step k."""
    return (k // n + 1) * n


def _start(side: _Side, client: Client, session: str, k: int, t: float,
           m: np.ndarray) -> tuple[SolverResults, np.ndarray]:
    """A fresh run at step 0: the bodies placed, the added masses handed over, the first
    rows and the initial wrenches held from t_0 on, as the in-process master does (so the
    motions the first step starts from include them); the results and the motions at t_0."""
    if k != 0:
        raise FlexSolverError(
            f"session {session} is at step {k}, not 0: a fresh flexible solver starts a run; "
            "to continue one, restore the session and pass --resume with the checkpoints"
        )
    side.hand_over_added_mass(client, t, side.motions(m, t))
    results = {ep.flex_body: FlexResults(ep.flex_body, ep.columns()) for ep in side.endpoints}
    side.add_rows(results, 0)
    r = client.report(*side.reports(),
                      wrench_polynomial=side.polynomials([ep.polynomial(t)
                                                          for ep in side.endpoints]))
    return results, r.motions
