"""Cost of an imported floating solid against rbcosim's own beam, per macro step.

    python benchmarks/bench_floating_import.py [--t-end T] [--nodes NX NY NZ]

The main job (scenarios/rigid_flex_pendulum.toml) with its beam replaced, in turn, by

- rbcosim's own 3D beam (10 elements) with 6 modes, and
- an imported floating structure of about 600 nodes with 6 modes: a hex block
  (NX x NY x NZ nodes, default 24 x 5 x 5 = 600, 1 m x 10 mm x 10 mm) of steel 3D beam
  elements along every lattice edge, node numbers shuffled as a mesher leaves them (so that
  the mass matrix is not banded), written as a `.npz` by `rbcosim.flex.io.convert`.

Each runs in process (`run_scenario`) to T (default 0.1 s); the time per macro step is the
run's stepping wall time (`wall_time_s`, which leaves out loading, the reduction and the
inertia invariants) over its macro steps.
Prints seconds per macro step and the ratio imported / beam. Benchmarks print figures; they
are not tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np

from rbcosim.flex.io.convert import convert_structure
from rbcosim.flex.io.matrices_io import save_npz
from rbcosim.flex.modelling.beam import _element_3d
from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "rigid_flex_pendulum.toml"
STEEL = {"e": 2.1e11, "g": 8.1e10, "rho": 7850.0}


def _rotation(d: np.ndarray) -> np.ndarray:
    """(3, 3) element frame (rows: local x along d, y, z) for a lattice edge direction d."""
    x = d / np.linalg.norm(d)
    helper = np.array([0.0, 0.0, 1.0]) if abs(x[2]) < 0.9 else np.array([0.0, 1.0, 0.0])
    y = np.cross(helper, x)
    y /= np.linalg.norm(y)
    return np.vstack([x, y, np.cross(x, y)])


def lattice_structure(nx: int, ny: int, nz: int, length: float = 1.0, width: float = 0.01,
                      seed: int = 1):
    """A floating hex-block lattice of 3D beam elements (square members, side width / 4),
    nodes shuffled, interface node at x = 0 (the centre of that face when ny, nz are odd)."""
    grid = np.stack(np.meshgrid(np.linspace(0, length, nx), np.linspace(-width / 2, width / 2, ny),
                                np.linspace(-width / 2, width / 2, nz), indexing="ij"), axis=-1)
    perm = np.random.default_rng(seed).permutation(nx * ny * nz)
    number = np.empty(nx * ny * nz, dtype=np.int64)
    number[perm] = np.arange(perm.size)
    number = number.reshape(nx, ny, nz)
    pos = np.empty((perm.size, 3))
    pos[number.ravel()] = grid.reshape(-1, 3)
    side = width / 4
    a, i2 = side * side, side**4 / 12
    n = 6 * perm.size
    m, k = np.zeros((n, n)), np.zeros((n, n))
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        for p, q in zip(number[tuple(lo)].ravel(), number[tuple(hi)].ravel()):
            d = pos[q] - pos[p]
            ke, me = _element_3d(float(np.linalg.norm(d)), STEEL["e"], STEEL["g"], STEEL["rho"],
                                 a, i2, i2, 2 * i2)
            t = np.kron(np.eye(4), _rotation(d))
            dofs = np.r_[6 * p:6 * p + 6, 6 * q:6 * q + 6]
            k[np.ix_(dofs, dofs)] += t.T @ ke @ t
            m[np.ix_(dofs, dofs)] += t.T @ me @ t
    labels = np.stack([np.repeat(np.arange(perm.size), 6), np.tile(np.arange(6), perm.size)], 1)
    root = int(number[0, ny // 2, nz // 2])
    tip = int(number[-1, ny // 2, nz // 2])
    return convert_structure(m, k, pos, labels, interface_node=root, output_nodes={"tip": tip})


def _scenario_text(body: str) -> str:
    text = SCENARIO.read_text()
    start = text.index("[flex_bodies.beam]")
    end = text.index("[couplings.clamp]")
    return text[:start] + body + "\n" + text[end:]


BEAM = """[flex_bodies.beam]
kind = "beam"
attachment = "floating"
length = 1.0
youngs_modulus = 2.1e11
density = 7850.0
section = "square"
width = 0.01
elements = 10
modes = 6
planar = false
output_nodes = { tip = "end" }
"""
IMPORTED = """[flex_bodies.beam]
kind = "matrices"
attachment = "floating"
file = "lattice.npz"
modes = 6
"""


def _per_step(path: Path, t_end: float) -> float:
    """Seconds per macro step: the run's stepping wall time (after the master and its bodies
    are built: load, reduction and inertia invariants are not counted) over its steps."""
    scenario = load_scenario(path)
    scenario = dataclasses.replace(scenario,
                                   solver=dataclasses.replace(scenario.solver, t_end=t_end))
    d = run_scenario(scenario, progress=False).diagnostics
    return d["wall_time_s"] / d["macro_steps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-end", type=float, default=0.1)
    parser.add_argument("--nodes", type=int, nargs=3, default=(24, 5, 5))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        save_npz(tmp / "lattice.npz", lattice_structure(*args.nodes))
        print(f"lattice {np.prod(args.nodes)} nodes written in {time.perf_counter() - start:.1f} s")
        results = {}
        for name, body in (("beam", BEAM), ("imported", IMPORTED)):
            path = tmp / f"{name}.toml"
            path.write_text(_scenario_text(body))
            results[name] = _per_step(path, args.t_end)
            print(f"{name:9s} {1e6 * results[name]:8.1f} us per macro step")
        print(f"ratio imported / beam: {results['imported'] / results['beam']:.2f}")


if __name__ == "__main__":
    main()
