"""The reference flexible body as its own process, speaking only the public protocol.

`run_flex_solver` drives one or several rigid–flexible joints of a server session as ONE client
(one attach; per macro step one message with all their wrenches, one reply with all their
motions) with the same `FlexEndpoint`s the in-process master uses, in the master's order, so
that the multi-process run gives the in-process run's bits:

    attach (motions at t_0) → initialize → set_added_mass → report (t_0, initial wrench held)
    step k: report + wrench polynomial (+ Jacobian) → [advance while the rigid side steps]
            → motions at t_{k+1} → commit
    report (t_end)

Jacobi and interface-Jacobian coupling overlap the two solvers' macro steps; the Gauss–Seidel
schemes run them in turn. Iterative coupling (restore and repeat each step) runs in process only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rbcosim.client import Client
from rbcosim.cosim import codec
from rbcosim.cosim.codec import StateFormatError, pack_state, unpack_state, write_atomically
from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.cosim.master import build_endpoints
from rbcosim.errors import RbcosimError, ScenarioError
from rbcosim.scenario import Scenario
from rbcosim.settings import whole_steps

#: Coupling schemes a flexible solver in its own process can run.
DISTRIBUTED_SCHEMES = (
    "jacobi",
    "interface_jacobian",
    "gauss_seidel_rigid_first",
    "gauss_seidel_flex_first",
)
FLEX_RESULTS_FORMAT = "rbcosim-flex-results"


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
    if scenario.cosim.scheme not in DISTRIBUTED_SCHEMES:
        raise ScenarioError(
            f"{scenario.source}: cosim.scheme = {scenario.cosim.scheme!r} restores and repeats "
            "each macro step and runs in process only (`rbcosim run`); the multi-process run "
            f"supports {list(DISTRIBUTED_SCHEMES)}"
        )


def select_joints(scenario: Scenario, joints: Sequence[str] = (),
                  bodies: Sequence[str] = ()) -> list[str]:
    """The joints one flexible solver drives: those named, and every joint of each body named
    ([couplings.NAME] with flex_body = BODY), in the scenario's coupling order."""
    if isinstance(joints, str) or isinstance(bodies, str):
        raise TypeError("joints and bodies are lists of names, not one name")
    names = [c.name for c in scenario.couplings]
    of_body = {b: [c.name for c in scenario.couplings if c.flex_body == b]
               for b in scenario.flex_bodies}
    wanted: list[str] = []
    for j in joints:
        if j not in names:
            raise ScenarioError(f"--joint {j}: {scenario.source} has no coupling {j!r}; "
                                f"valid names: {names}")
        wanted.append(j)
    for b in bodies:
        if not of_body.get(b):
            raise ScenarioError(f"--body {b}: {scenario.source} has no coupled flexible body "
                                f"{b!r}; valid names: {[k for k, v in of_body.items() if v]}")
        wanted += of_body[b]
    twice = sorted({j for j in wanted if wanted.count(j) > 1})
    if twice:
        raise ScenarioError(f"joints {twice} are named twice (by --joint or through --body)")
    if not wanted:
        raise ScenarioError("name the joints to drive: --joint NAME or --body NAME")
    return [n for n in names if n in wanted]


def endpoints_for(scenario: Scenario, joints: Sequence[str]) -> list[FlexEndpoint]:
    """The FlexEndpoints of `joints` (in the scenario's coupling order), built exactly as the
    in-process master builds them."""
    endpoints = build_endpoints(scenario, scenario.cosim.macro_step)
    return [endpoints[j] for j in select_joints(scenario, joints)]


@dataclass
class FlexResults:
    """One joint's flexible-side result columns at the step indices where the master writes
    rows."""

    joint: str
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
"""A flexible solver's results: joint -> its columns, in the solver's joint order."""


def pack_results(results: SolverResults) -> bytes:
    """A flexible solver's result file (msgpack state blob): per joint its columns and rows."""
    return pack_state({
        "format": FLEX_RESULTS_FORMAT,
        "joints": list(results),
        "results": {j: {"columns": list(r.columns), "steps": np.array(r.steps, dtype=np.float64),
                        "rows": r.table()} for j, r in results.items()},
    })


def unpack_results(blob: bytes, where: str = "flex results") -> SolverResults:
    try:
        d = unpack_state(blob)
        if d.get("format") != FLEX_RESULTS_FORMAT:
            raise ValueError("not a flex results file")
        out = {}
        for joint in d["joints"]:
            r = d["results"][joint]
            fr = FlexResults(str(joint), [str(c) for c in r["columns"]])
            steps = codec.array(r, "steps", (None,))
            fr.steps = [int(k) for k in steps]
            fr.rows = list(codec.array(r, "rows", (steps.size, len(fr.columns))))
            out[fr.joint] = fr
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


def _save_checkpoint(directory: Path, endpoints: list[FlexEndpoint], results: SolverResults,
                     step: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tag = solver_tag([ep.joint for ep in endpoints])
    write_atomically(checkpoint_path(directory, tag, step), pack_state({
        "step": step, "endpoints": {ep.joint: ep.get_state() for ep in endpoints},
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


def _load_checkpoint(directory: Path, endpoints: list[FlexEndpoint], step: int) -> SolverResults:
    tag = solver_tag([ep.joint for ep in endpoints])
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
        states = codec.field(d, "endpoints", dict)
        if sorted(states) != sorted(results) or sorted(states) != sorted(ep.joint for ep in endpoints):
            raise StateFormatError(f"state.endpoints: joints {sorted(states)}")
        for ep in endpoints:
            ep.set_state(codec.field(states, ep.joint, bytes, "state.endpoints"))
    except OSError as exc:
        raise FlexSolverError(f"{path}: cannot read the checkpoint: {exc}") from None
    except ValueError as exc:
        raise FlexSolverError(f"{path}: not a checkpoint of these joints: {exc}") from None
    return results


def _add_rows(endpoints: list[FlexEndpoint], results: SolverResults, step: int) -> None:
    for ep in endpoints:
        results[ep.joint].add(step, ep.row())


def _polynomials(polynomials: list[np.ndarray]) -> np.ndarray:
    """The joints' wrench polynomials as one (n_points, m, 6) array; a lower order is padded
    with zero coefficients (the same W(τ))."""
    m = max(len(p) for p in polynomials)
    out = np.zeros((len(polynomials), m, 6))
    for row, p in zip(out, polynomials):
        row[:len(p)] = p
    return out


def _hand_over_added_mass(client: Client, endpoints: list[FlexEndpoint], t: float,
                          motions: np.ndarray) -> None:
    """Initialize each body from its point's motion and hand the added masses over in one
    message (a zero matrix for a body without one: the rigid side then adds nothing there)."""
    handovers = [ep.initialize(t, motion_of(m, t)) for ep, m in zip(endpoints, motions)]
    if all(h is None for h in handovers):
        return
    masses = [np.zeros((6, 6)) if h is None else h[0] for h in handovers]
    frames = ["point" if h is None else h[1] for h in handovers]
    client.set_added_mass(masses, frames)


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
) -> SolverResults:
    """Drive `joints` of `session` to solver.t_end as ONE client: one attach, and per macro
    step one message with all their wrenches and node reports, one reply with all their
    motions. Returns this side's result rows per joint.

    checkpoint_dir/checkpoint_every: write this side's state every N macro steps (use the same
    N as the session's snapshot_every). resume: take over the joints (force attach) from a
    session restored to a snapshot, and continue from this side's checkpoint of that step.
    """
    check_distributed(scenario)
    endpoints = endpoints_for(scenario, joints)
    joints = [ep.joint for ep in endpoints]
    points = [ep.coupling.point for ep in endpoints]
    n_steps = macro_steps(scenario)
    every = scenario.solver.output_every
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume and ckpt is None:
        raise FlexSolverError("resuming needs the checkpoint folder of the interrupted run")

    tag = solver_tag(joints)
    info = client.attach(points, joints, session=session, motions=True, force=resume,
                         name=name or f"rbcosim flex {tag} (pid {os.getpid()})")
    k, t, m = info["step"], info["time"], info["motions"]
    if resume:
        results = _load_checkpoint(ckpt, endpoints, k)
    else:
        if k != 0:
            raise FlexSolverError(
                f"session {session} is at step {k}, not 0: a fresh flexible solver starts a run; "
                "to continue one, restore the session and pass --resume with the checkpoints"
            )
        _hand_over_added_mass(client, endpoints, t, m)
        results = {ep.joint: FlexResults(ep.joint, ep.columns(ep.coupling.flex_body))
                   for ep in endpoints}
        _add_rows(endpoints, results, 0)
        # Hold the initial wrenches from t_0 on, as the in-process master does, so the motions
        # the first step starts from include them.
        kins, energies = zip(*(ep.report() for ep in endpoints))
        r = client.report(kins, energies,
                          wrench_polynomial=_polynomials([ep.polynomial(t) for ep in endpoints]))
        m = r.motions

    # The step loop: per macro step, one exchange in each direction for all the joints, the
    # bodies stepped one after the other (they are independent within a macro step).
    saving = ckpt is not None and checkpoint_every
    end_motion = endpoints[0].needs_end_motion
    while k < n_steps:
        if saving and k % checkpoint_every == 0:
            _save_checkpoint(ckpt, endpoints, results, k)
        motions = [motion_of(row, t) for row in m]
        kins, energies = zip(*(ep.report() for ep in endpoints))
        inputs = [ep.inputs_for_rigid(t, mo) for ep, mo in zip(endpoints, motions)]
        jacobians = None if inputs[0][1] is None else [jac for _, jac in inputs]  # one scheme
        msg_id = client.start_step(
            wrench_polynomial=_polynomials([poly for poly, _ in inputs]), flex_kinematics=kins,
            flex_energy=energies, interface_jacobian=jacobians)
        if end_motion:
            r = client.finish_step(msg_id)
            for ep, mo, row in zip(endpoints, motions, r.motions):
                ep.finish(t, mo, motion_of(row, r.time))
        else:
            for ep, mo in zip(endpoints, motions):  # while the rigid side takes the same step
                ep.finish(t, mo)
            r = client.finish_step(msg_id)
        k, t, m = r.step, r.time, r.motions
        if k % every == 0 or k == n_steps:
            _add_rows(endpoints, results, k)
    kins, energies = zip(*(ep.report() for ep in endpoints))
    client.report(kins, energies)
    return results
