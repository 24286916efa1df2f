"""The reference flexible body as its own process, speaking only the public protocol.

`run_flex_solver` drives one rigid–flexible joint of a server session with the same
`FlexEndpoint` the in-process master uses, in the master's order, so that the multi-process run
gives the in-process run's bits:

    attach (motions at t_0) → initialize → set_added_mass → report (t_0, initial wrench held)
    step k: report + wrench polynomial (+ Jacobian) → [advance while the rigid side steps]
            → motions at t_{k+1} → commit
    report (t_end)

Jacobi and interface-Jacobian coupling overlap the two solvers' macro steps; the Gauss–Seidel
schemes run them in turn. Iterative coupling (restore and repeat each step) runs in process only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rbcosim.client import Client
from rbcosim.cosim import codec
from rbcosim.cosim.codec import StateFormatError, pack_state, unpack_state, write_atomically
from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.cosim.flex_groups import refuse_multi_node
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
    refuse_multi_node(scenario)


def endpoint_for(scenario: Scenario, joint: str) -> FlexEndpoint:
    """The FlexEndpoint of one joint, built exactly as the in-process master builds it."""
    names = [c.name for c in scenario.couplings]
    if joint not in names:
        raise ScenarioError(f"Invalid joint name {joint!r}. Valid names: {names}")
    return build_endpoints(scenario, scenario.cosim.macro_step)[joint]


@dataclass
class FlexResults:
    """The flexible side's result columns at the step indices where the master writes rows."""

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

    def pack(self) -> bytes:
        return pack_state({
            "format": FLEX_RESULTS_FORMAT,
            "joint": self.joint,
            "columns": list(self.columns),
            "steps": np.array(self.steps, dtype=np.float64),
            "rows": self.table(),
        })

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, self.pack())
        return path

    @classmethod
    def unpack(cls, blob: bytes, where: str = "flex results") -> FlexResults:
        try:
            d = unpack_state(blob)
            if d.get("format") != FLEX_RESULTS_FORMAT:
                raise ValueError("not a flex results file")
            out = cls(str(d["joint"]), [str(c) for c in d["columns"]])
            steps = codec.array(d, "steps", (None,))
            out.steps = [int(k) for k in steps]
            out.rows = list(codec.array(d, "rows", (steps.size, len(out.columns))))
        except (KeyError, TypeError, ValueError) as exc:
            raise FlexSolverError(f"{where}: unreadable ({exc})") from None
        return out

    @classmethod
    def read(cls, path: str | Path) -> FlexResults:
        path = Path(path)
        try:
            blob = path.read_bytes()
        except OSError as exc:
            raise FlexSolverError(f"{path}: cannot read the flexible side's results: {exc}") from None
        return cls.unpack(blob, str(path))


def checkpoint_path(directory: str | Path, joint: str, step: int) -> Path:
    return Path(directory) / f"{joint}.{step}.ckpt"


def _save_checkpoint(directory: Path, ep: FlexEndpoint, results: FlexResults, step: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = checkpoint_path(directory, ep.joint, step)
    write_atomically(path, pack_state({"step": step, "endpoint": ep.get_state(),
                                       "results": results.pack()}))
    # Keep the two newest: the server's snapshot of step k is taken only once every client's
    # step-k inputs are in, so a crash may leave the server one checkpoint behind this one.
    older = sorted(
        (int(p.name.rsplit(".", 2)[1]), p)
        for p in directory.glob(f"{ep.joint}.*.ckpt")
        if p.name.rsplit(".", 2)[1].isdigit()
    )
    for _, p in older[:-2]:
        p.unlink(missing_ok=True)


def _load_checkpoint(directory: Path, ep: FlexEndpoint, step: int) -> FlexResults:
    path = checkpoint_path(directory, ep.joint, step)
    if not path.is_file():
        have = sorted(p.name for p in directory.glob(f"{ep.joint}.*.ckpt"))
        raise FlexSolverError(
            f"no checkpoint of joint {ep.joint!r} at step {step} (the session's step) in "
            f"{directory}; found {have or 'none'}: restore the session to a step that has one"
        )
    try:
        d = unpack_state(path.read_bytes())
        if codec.field(d, "step", int) != step:
            raise StateFormatError(f"state.step: it holds step {d['step']}")
        results = FlexResults.unpack(codec.field(d, "results", bytes), str(path))
        ep.set_state(codec.field(d, "endpoint", bytes))
    except OSError as exc:
        raise FlexSolverError(f"{path}: cannot read the checkpoint: {exc}") from None
    except ValueError as exc:
        raise FlexSolverError(f"{path}: not a checkpoint of this joint: {exc}") from None
    return results


def run_flex_solver(
    scenario: Scenario,
    joint: str,
    client: Client,
    session: str,
    *,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    name: str | None = None,
) -> FlexResults:
    """Drive `joint` of `session` to solver.t_end; returns this side's result rows.

    checkpoint_dir/checkpoint_every: write this side's state every N macro steps (use the same
    N as the session's snapshot_every). resume: take over the joint (force attach) from a
    session restored to a snapshot, and continue from this side's checkpoint of that step.
    """
    check_distributed(scenario)
    ep = endpoint_for(scenario, joint)
    point = ep.coupling.point
    n_steps = macro_steps(scenario)
    every = scenario.solver.output_every
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if resume and ckpt is None:
        raise FlexSolverError("resuming needs the checkpoint folder of the interrupted run")

    info = client.attach([point], [joint], session=session, motions=True, force=resume,
                         name=name or f"rbcosim flex {joint} (pid {os.getpid()})")
    k, t, m = info["step"], info["time"], info["motions"][0]
    if resume:
        results = _load_checkpoint(ckpt, ep, k)
    else:
        if k != 0:
            raise FlexSolverError(
                f"session {session} is at step {k}, not 0: a fresh flexible solver starts a run; "
                "to continue one, restore the session and pass --resume with the checkpoints"
            )
        handover = ep.initialize(t, motion_of(m, t))
        if handover is not None:
            client.set_added_mass([handover[0]], [handover[1]])
        results = FlexResults(joint, ep.columns(ep.coupling.flex_body))
        results.add(0, ep.row())
        # Hold the initial wrench from t_0 on, as the in-process master does, so the motions
        # the first step starts from include it.
        kin, energy = ep.report()
        r = client.report([kin], [energy], wrench_polynomial=[ep.polynomial(t)])
        m = r.motions[0]

    # The step loop: per macro step, one exchange in each direction. Arrays go to the client
    # already shaped per point / joint (leading axis of 1).
    saving = ckpt is not None and checkpoint_every
    energies = np.zeros(1)
    while k < n_steps:
        if saving and k % checkpoint_every == 0:
            _save_checkpoint(ckpt, ep, results, k)
        motion = motion_of(m, t)
        kin, energies[0] = ep.report()
        polynomial, jacobian = ep.inputs_for_rigid(t, motion)
        msg_id = client.start_step(
            wrench_polynomial=polynomial[None], flex_kinematics=kin[None], flex_energy=energies,
            interface_jacobian=None if jacobian is None else [jacobian])
        if ep.needs_end_motion:
            r = client.finish_step(msg_id)
            ep.finish(t, motion, motion_of(r.motions[0], r.time))
        else:
            ep.finish(t, motion)  # while the rigid side takes the same step
            r = client.finish_step(msg_id)
        k, t, m = r.step, r.time, r.motions[0]
        if k % every == 0 or k == n_steps:
            results.add(k, ep.row())
    kin, energy = ep.report()
    client.report([kin], [energy])
    return results
