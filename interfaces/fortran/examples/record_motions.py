"""Record the rigid motions the flexible side of a one-joint scenario is driven with, and the
Python FlexEndpoint's answers to them, for the Fortran structure-alone check.

    python record_motions.py SCENARIO MOTIONS REFERENCE [--set KEY=VALUE ...]

Runs the scenario in process (`rbcosim run`'s CosimMaster) and records every motion handed to
the joint's endpoint; then a fresh FlexEndpoint replays them in the order of PROTOCOL.md 7a.
Both files are text, one record a line, numbers with 17 significant digits:

MOTIONS    `scheme extrapolation micro_steps H n_steps added_mass`, then `t0 m0(19)` (the
           motion the body is initialised from), then per step k
           `t_k m_k(19) t_k+1 e_k(19)` (e_k: the motion at the step's end, zeros unless the
           scheme steps the rigid side first).
REFERENCE  per step k: `kin(13) energy n_terms poly(6, 3)` (the report at t_k and the wrench
           polynomial of step k, column-major, padded with zeros), then after the last step
           `kin(13) energy`; the line before step 0 is the initial report and polynomial.
"""

from __future__ import annotations

import argparse

import numpy as np

from rbcosim.cosim.flex_endpoint import FlexEndpoint, motion_of
from rbcosim.cosim.master import CosimMaster, build_endpoints
from rbcosim.distributed.flex_solver import macro_steps
from rbcosim.scenario.loader import load_scenario


def _line(values) -> str:
    return " ".join(f"{float(v):.17g}" for v in values)


def record(scenario) -> tuple[np.ndarray, list[np.ndarray]]:
    """(t0, m0 (19,)), then per step (t, m (19,), t_end, end (19,)), from the in-process run."""
    init, steps = [], []
    originals = FlexEndpoint.initialize, FlexEndpoint.inputs_for_rigid, FlexEndpoint.finish

    def only(motions):  # the scenario's one joint: the master passes {joint: motion}
        (motion,) = motions.values()
        return motion

    def initialize(self, t, motions):
        init.append(np.concatenate([[t], only(motions).as_array()]))
        return originals[0](self, t, motions)

    def inputs_for_rigid(self, t, motions):
        steps.append([t, only(motions).as_array().copy(), 0.0, np.zeros(19)])
        return originals[1](self, t, motions)

    def finish(self, t, motions, end_motions=None):
        if end_motions is not None:
            end = only(end_motions)
            steps[-1][2], steps[-1][3] = end.time, end.as_array().copy()
        return originals[2](self, t, motions, end_motions)

    FlexEndpoint.initialize, FlexEndpoint.inputs_for_rigid, FlexEndpoint.finish = (
        initialize,
        inputs_for_rigid,
        finish,
    )
    try:
        master = CosimMaster(scenario)
        for _ in range(macro_steps(scenario)):
            master.step()
    finally:
        FlexEndpoint.initialize, FlexEndpoint.inputs_for_rigid, FlexEndpoint.finish = originals
    return init[0], steps


def replay(scenario, init, steps) -> list[list[float]]:
    """The reference rows: a fresh endpoint driven with the recorded motions."""
    ep = build_endpoints(scenario, scenario.cosim.macro_step)[scenario.couplings[0].name]
    t0 = init[0]
    ep.initialize(t0, motion_of(init[1:], t0))
    rows = []

    def row(kin, energy, poly):
        padded = np.zeros((3, 6))
        padded[: poly.shape[0]] = poly
        return [*kin, energy, poly.shape[0], *padded.ravel()]

    joint = scenario.couplings[0].name
    kin, energy = ep.report()[joint]
    rows.append(row(kin, energy, ep.polynomial(t0)))
    for t, m, t_end, end in steps:
        motion = motion_of(m, t)
        kin, energy = ep.report()[joint]
        poly, _ = ep.inputs_for_rigid(t, motion)
        rows.append(row(kin, energy, poly))
        ep.finish(t, motion, motion_of(end, t_end) if ep.needs_end_motion else None)
    kin, energy = ep.report()[joint]
    rows.append([*kin, energy])
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario")
    p.add_argument("motions")
    p.add_argument("reference")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    args = p.parse_args()
    scenario = load_scenario(args.scenario, args.overrides)
    cs = scenario.cosim
    init, steps = record(scenario)
    with open(args.motions, "w") as f:
        f.write(
            f"{cs.scheme} {cs.extrapolation} {cs.micro_steps} {cs.macro_step!r} "
            f"{len(steps)} {int(cs.added_mass)}\n"
        )
        f.write(_line(init) + "\n")
        f.writelines(_line([t, *m, t_end, *end]) + "\n" for t, m, t_end, end in steps)
    with open(args.reference, "w") as f:
        f.writelines(_line(r) + "\n" for r in replay(scenario, init, steps))


if __name__ == "__main__":
    main()
