"""Compile every kernel into the on-disk cache now (`rbcosim compile`).

numba compiles the kernels on their first use and keeps the machine code on disk (see
`rbcosim.kernels`); the first run after an install pays that once. This module runs a few
small built-in models through every compiled path so that the cost is paid up front, e.g.
when building an image or before a test session, not in the first co-simulation.
"""

from __future__ import annotations

import time

from rbcosim.runner import run_scenario
from rbcosim.scenario import load_scenario_text

#: Two links on revolute joints (one driven), a spring, a torsion spring and a load, and two
#: interface points with a floating and a grounded beam: every force, joint row kind, driver
#: motion and flexible-body route.
_MODEL = """
[bodies.a]
mass = 1.0
inertia = [0.02, 0.02, 0.001]
position = [0.0, 0.0, -0.25]
[bodies.b]
mass = 0.5
inertia = [0.01, 0.01, 0.001]
position = [0.0, 0.0, -0.75]
[joints.j1]
type = "revolute"
body1 = "ground"
body2 = "a"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
[joints.j2]
type = "revolute"
body1 = "a"
body2 = "b"
at = [0.0, 0.0, -0.5]
axis = [0.0, 1.0, 0.0]
{driver}
[forces.spring]
type = "spring_damper"
body1 = "ground"
point1 = [0.3, 0.0, 0.0]
body2 = "b"
point2 = [0.0, 0.0, -1.0]
stiffness = 10.0
damping = 0.1
[forces.torsion]
type = "torsional_spring_damper"
joint = "j1"
stiffness = 0.5
damping = 0.01
[forces.push]
type = "load"
body = "a"
force = [0.1, 0.0, 0.0]
[solver]
integrator = "{integrator}"
dt = 1e-3
t_end = 0.004
formulation = "{formulation}"
"""

_DRIVER = """
[joints.drive]
type = "driver"
joint = "j2"
motion = {motion}
"""

_FLEX = """
[interface_points.p1]
body = "a"
position = [0.0, 0.0, -0.5]
[interface_points.p2]
body = "b"
position = [0.0, 0.0, -1.0]
{beams}
[couplings.c1]
point = "p1"
flex_body = "floating"
[couplings.c2]
point = "p2"
flex_body = "grounded"
[cosim]
macro_step = 1e-3
scheme = "{scheme}"
"""

_BEAM = """
[flex_bodies.{attachment}]
kind = "beam"
attachment = "{attachment}"
length = 0.5
youngs_modulus = 2.1e11
density = 7850.0
section = "square"
width = 0.01
elements = 4
modes = 2
"""

_MOTIONS = ("{ polynomial = [0.0, 0.1, 0.2] }",
            "{ harmonic = { amplitude = 0.1, frequency = 2.0 } }",
            "{ table = [[0.0, 0.0], [0.01, 0.01], [0.02, 0.0]] }",
            '{ expression = "where(t < 0.002, t^2, 0.1*sin(4*pi*t))" }')


def _cases() -> list[tuple[str, str]]:
    """(label, scenario text) of the warm-up runs."""
    cases = []
    for integrator in ("rk4", "sdirk2", "RK45"):
        for motion in _MOTIONS:
            text = _MODEL.format(driver=_DRIVER.format(motion=motion), integrator=integrator,
                                 formulation="maximal")
            cases.append((f"maximal {integrator}", text))
    for integrator in ("rk4", "sdirk2"):
        cases.append((f"minimal {integrator}",
                      _MODEL.format(driver="", integrator=integrator, formulation="minimal")))
    for scheme in ("jacobi", "interface_jacobian", "iterative"):
        text = _MODEL.format(driver="", integrator="rk4", formulation="maximal")
        beams = "".join(_BEAM.format(attachment=a) for a in ("floating", "grounded"))
        cases.append((f"co-simulation {scheme}", text + _FLEX.format(scheme=scheme, beams=beams)))
    return cases


def warm_up(report=print) -> float:
    """Run every warm-up case (compiling what the cache lacks); returns the seconds taken."""
    start = time.perf_counter()
    for label, text in _cases():
        case_start = time.perf_counter()
        run_scenario(load_scenario_text(text, source=f"<warm-up: {label}>"), progress=False)
        report(f"{label}: {time.perf_counter() - case_start:.1f} s")
    return time.perf_counter() - start
