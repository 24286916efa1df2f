"""The Python side of the structure-alone check: rbcosim's FlexEndpoint on a scenario's
grounded structure, fed with a prescribed sequence of rigid motions; writes the motions for
`structure_driver` (the C structure) and returns what the Python endpoint did, row for row.

    python structure_reference.py SCENARIO MOTIONS.txt REFERENCE.txt [--scheme S]
        [--extrapolation N] [--steps N] [--set KEY=VALUE ...]

Rows: k terms coeff[3][6] kin[13] energy wrench[6] eta[k] eta'[k] (the body's Craig-Bampton
modal coordinates and velocities: the C side steps the same body, read from its body file).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from rbcosim.cosim.flex_endpoint import motion_of
from rbcosim.cosim.master import build_endpoints
from rbcosim.scenario.loader import load_scenario


def prescribed_motion(t: float) -> np.ndarray:
    """A smooth rigid-point motion (19,): translation in x and y, rotation about z."""
    x = 0.1 * math.cos(3 * t) + 0.02 * math.sin(11 * t)
    vx = -0.3 * math.sin(3 * t) + 0.22 * math.cos(11 * t)
    ax = -0.9 * math.cos(3 * t) - 2.42 * math.sin(11 * t)
    y, vy, ay = 0.01 * math.sin(5 * t), 0.05 * math.cos(5 * t), -0.25 * math.sin(5 * t)
    phi, dphi, ddphi = 0.3 * math.sin(2 * t), 0.6 * math.cos(2 * t), -1.2 * math.sin(2 * t)
    q = [math.cos(phi / 2), 0.0, 0.0, math.sin(phi / 2)]
    return np.array([x, y, 0.0, *q, vx, vy, 0.0, 0.0, 0.0, dphi, ax, ay, 0.0, 0.0, 0.0, ddphi])


def record(scenario_path, motions_path, *, overrides=(), steps=200):
    """Run the Python endpoint over `steps` macro steps; write the motions file; return the
    reference rows (steps, n_columns)."""
    scenario = load_scenario(scenario_path, list(overrides))
    joint = scenario.couplings[0].name
    ep = build_endpoints(scenario, scenario.cosim.macro_step)[joint]
    H = scenario.cosim.macro_step
    times = [k * H for k in range(steps + 1)]
    motions = [prescribed_motion(t) for t in times]
    ref = ep.coupling.grounded_reference
    handover = ep.initialize(times[0], motion_of(motions[0], times[0]))[joint]
    rows = []
    for k in range(steps):
        t = times[k]
        motion = motion_of(motions[k], t)
        kin, energy = ep.report()[joint]
        poly, _ = ep.inputs_for_rigid(t, motion)
        if ep.needs_end_motion:
            ep.finish(t, motion, motion_of(motions[k + 1], times[k + 1]))
        else:
            ep.finish(t, motion)
        coeff = np.zeros((3, 6))
        coeff[: poly.shape[0]] = poly
        rows.append(
            np.concatenate(
                [
                    [k, poly.shape[0]],
                    coeff.ravel(),
                    kin,
                    [energy],
                    ep.body.wrench(),
                    ep.body.modal_coordinates,
                    ep.body.modal_velocities,
                ]
            )
        )
    s = scenario.cosim
    with open(motions_path, "w") as f:
        r = [0.0, 0.0, 0.0] if ref is None else [float(v) for v in ref]
        f.write(
            f"{s.scheme} {s.extrapolation} {H!r} {ep.body.micro_steps} {steps} "
            f"{int(ref is not None)} {r[0]!r} {r[1]!r} {r[2]!r} {int(handover is not None)}\n"
        )
        for t, m in zip(times, motions):
            f.write(" ".join(repr(float(v)) for v in [t, *m]) + "\n")
    return np.array(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario")
    p.add_argument("motions")
    p.add_argument("reference")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args()
    rows = record(a.scenario, a.motions, overrides=a.set, steps=a.steps)
    np.savetxt(a.reference, rows, fmt="%.17g")


if __name__ == "__main__":
    main()
