"""Body outputs of the server-client native FMU (`export-fmu --native --address`).

The session protocol carries interface points' kinematics only, so the FMU's bundled scenario
gets one interface point of its own per body, at the body's centre of mass with the body's
axes (``_body_<B>``; not FMU variables, their wrench stays zero). The FMU attaches to them
after its own points and reads each body's pose and centre-of-mass velocity from its point;
the angular velocity, which the session sends inertial, it turns into the body frame
(R(q)^T ω), as the results file's ``B.wx .. B.wz`` are.
"""

from __future__ import annotations

import numpy as np

from rbcosim.scenario.loader import load_scenario_text


def point_name(body: str) -> str:
    """The hidden interface point of ``body``."""
    return f"_body_{body}"


def _sections(bodies, positions) -> str:
    return "".join(f'\n[interface_points."{point_name(b)}"]\nbody = "{b}"\n'
                   f"position = [{', '.join(repr(float(x)) for x in p)}]\n"
                   for b, p in zip(bodies, positions))


def with_body_points(text: str, base_dir, bodies: tuple[str, ...]) -> str:
    """The scenario ``text`` with a point at each body's centre of mass appended (a point's
    ``position`` is relative to the body's reference origin: a first load with the points at
    [0, 0, 0] gives the offsets)."""
    trial = load_scenario_text(text + _sections(bodies, [np.zeros(3)] * len(bodies)),
                               base_dir=base_dir)
    offsets = {p.name: -np.asarray(p.position) for p in trial.model.points}
    return text + _sections(bodies, [offsets[point_name(b)] for b in bodies])
