"""Write scenarios/kane_spinup.toml: the spin-up beam of Kane, Ryan & Banerjee (1987).

A cantilever (L = 10 m, E = 6.8952e10 Pa, I = 8.2189e-9 m⁴, A = 7.2968e-5 m², ρ = 2766.67 kg/m³)
clamped on the axis of a rigid hub (radius 0) that a revolute driver spins about the vertical
Z axis with

    θ(t) = ωs/Ts [t²/2 + (Ts/2π)² (cos(2πt/Ts) − 1)]   (t ≤ Ts),   ωs (t − Ts/2)   (t > Ts),

Ts = 15 s, over 0–20 s, bending in the plane of rotation (no gravity). The driver's motion is a
natural cubic spline through θ at every DT = 0.05 s from T_START = −0.5 s (θ is even in t, so
the spline's θ'(0) is 1.6e-10 rad/s and the hub starts at rest, as `rbcosim check` wants);
its θ'' error is below 3e-5 of the peak θ'' = 2 ωs/Ts (tests/test_spinup_beam.py checks it).

Run: python scenarios/data/make_kane_spinup.py [--omega 10] [--output FILE]
(default ωs = 4 rad/s, output scenarios/kane_spinup.toml).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

TS, T_END, DT = 15.0, 20.0, 0.05
T_START = -0.5  # θ is even in t: rows before 0 make the spline's θ'(0) vanish (hub at rest)


def hub_angle(t, omega_s: float, ts: float = TS):
    """θ(t), rad, of the spin-up manoeuvre (array or scalar t, s)."""
    t = np.asarray(t, dtype=float)
    c = (ts / (2 * math.pi)) ** 2
    ramp = omega_s / ts * (t**2 / 2 + c * (np.cos(2 * math.pi * t / ts) - 1))
    return np.where(t <= ts, ramp, omega_s * (t - ts / 2))


def table_rows(omega_s: float) -> np.ndarray:
    """The driver table (n, 2): [t, θ(t)] every DT from T_START to T_END."""
    t = np.linspace(T_START, T_END, round((T_END - T_START) / DT) + 1)
    return np.column_stack([t, hub_angle(t, omega_s)])


HEADER = """\
# Spin-up of a flexible beam (Kane, Ryan & Banerjee 1987): a cantilever clamped on the axis of a
# rigid hub that a driver spins about Z from rest to omega_s = {omega:g} rad/s in Ts = 15 s,
#   theta(t) = omega_s/Ts [t^2/2 + (Ts/2 pi)^2 (cos(2 pi t/Ts) - 1)]  (t <= Ts),
#   omega_s (t - Ts/2) after; 0-20 s, no gravity, bending in the plane of rotation.
# Written by scenarios/data/make_kane_spinup.py (the driver table: theta every 0.05 s).
# Above the first bending frequency (1.863 rad/s) the linear floating frame diverges; the
# geometric stiffening of the centrifugal axial load keeps the tip deflection bounded.
# beam.tip.uz: the tip's deflection in the hub frame, normal to the undeformed axis, positive
# in the direction of rotation (m).
title = "Kane spin-up beam"

[world]
gravity = [0.0, 0.0, 0.0]

[bodies.hub]
mass = 1.0
inertia = [1.0, 1.0, 1.0]

[joints.spin]
type = "revolute"
body1 = "ground"
body2 = "hub"
at = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]

[joints.spin_up]
type = "driver"
joint = "spin"
"""

FOOTER = """
# The point's x axis runs along the beam (inertial X at t = 0), its z axis along +Y, so the
# beam bends in the X-Y plane (the structure's x-z plane) and +z is the direction of rotation.
[interface_points.root]
body = "hub"
position = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
x_axis = [1.0, 0.0, 0.0]

[flex_bodies.beam]
kind = "beam"
attachment = "floating"
length = 10.0
youngs_modulus = 6.8952e10
density = 2766.67
area = 7.2968e-5
second_moment_y = 8.2189e-9
elements = 10
modes = 4
planar = true
geometric_stiffening = true
output_nodes = {{ tip = "end", mid = 5.0 }}

[couplings.clamp]
point = "root"
flex_body = "beam"

# The hub is driven: the beam's wrench does not change its motion, so the coupling is one-way
# and any scheme gives the same beam.
[cosim]
macro_step = {macro_step:g}
micro_steps = 1
scheme = "gauss_seidel_flex_first"
extrapolation = 2

[solver]
integrator = "rk4"
t_end = 20.0
output_every = {output_every}
"""


def scenario_text(omega_s: float, macro_step: float = 0.01) -> str:
    """The whole scenario file for ωs (rad/s) and the macro step H (s, divides 0.1 s)."""
    rows = ",\n".join(f"  [{t:.2f}, {float(v)!r}]" for t, v in table_rows(omega_s))
    motion = f"\n[joints.spin_up.motion]\ntable = [\n{rows},\n]\n"
    footer = FOOTER.format(macro_step=macro_step, output_every=round(0.1 / macro_step))
    return HEADER.format(omega=omega_s) + motion + footer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--omega", type=float, default=4.0, help="final spin rate ωs, rad/s")
    default = Path(__file__).resolve().parent.parent / "kane_spinup.toml"
    parser.add_argument("--output", type=Path, default=default)
    args = parser.parse_args()
    args.output.write_text(scenario_text(args.omega), encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
