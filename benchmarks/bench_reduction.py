"""Time and memory of the Craig–Bampton reduction of a ~100,000-DOF solid model.

    python benchmarks/bench_reduction.py [--elements NX NY NZ] [--modes K]

A steel bar (x along the bar) meshed with NX x NY x NZ 8-node hexahedra of 10 mm side (C3D8:
trilinear, 2x2x2 Gauss points, consistent mass; default 150 x 14 x 14 elements, a 1.5 m x
0.14 m x 0.14 m bar of 33,975 nodes, 101,925 DOFs), assembled here with scipy.sparse
(independently of the FE readers). Its two end faces (node sets END0 at x = 0 and END1 at
x = L, 225 nodes each by default) are tied rigidly
to two 6-DOF interface nodes (``rbcosim.flex.io.tie``, RBE2-like), and the model is reduced by
``rbcosim.flex.io.fe_import.import_structure`` to the 12 interface DOFs and K (default 6)
fixed-interface modes: the same path as a scenario's ``source = {from = ...}`` table or
``rbcosim convert-structure --from ... --modes K``, reading excepted.

The reduction runs in a child process that loads the assembled matrices from a temporary file,
so that its peak resident memory (``getrusage`` maxrss: Python, NumPy/SciPy and the input
matrices included) is the reduction's alone. Printed: DOFs, wall time, CPU time (user + system,
all threads), peak memory, the 1-minute load average before and after, and the first
fixed-interface frequency next to Euler–Bernoulli's clamped–clamped beam (a sanity cue only:
the bar is about 10 thicknesses long, so shear lowers it by several per cent). Benchmarks print
figures; they are not tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse

E, NU, RHO = 2.1e11, 0.3, 7850.0
ELEMENT = 0.01  # m, the side of the cubic elements


def hex8_matrices(a: float, b: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """(K_e, M_e), (24, 24) each, of a trilinear 8-node brick a x b x c (m), steel, DOFs
    node-major (x, y, z), nodes in the usual C3D8 order; 2x2x2 Gauss (exact for M_e)."""
    corners = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
                        [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], dtype=float)
    lam = E * NU / ((1 + NU) * (1 - 2 * NU))
    mu = E / (2 * (1 + NU))
    d = np.zeros((6, 6))
    d[:3, :3] = lam + 2 * mu * np.eye(3)
    d[3:, 3:] = mu * np.eye(3)
    half = np.array([a, b, c]) / 2
    ke, me = np.zeros((24, 24)), np.zeros((24, 24))
    g = 1 / np.sqrt(3)
    for p in np.array(np.meshgrid([-g, g], [-g, g], [-g, g])).reshape(3, -1).T:
        shape = np.prod(1 + corners * p, axis=1) / 8
        grads = np.empty((8, 3))  # dN/dx (physical)
        for j in range(3):
            others = [k for k in range(3) if k != j]
            grads[:, j] = corners[:, j] * np.prod(1 + corners[:, others] * p[others], axis=1)
        grads /= 8 * half
        bm = np.zeros((6, 24))
        for i in range(8):
            gx, gy, gz = grads[i]
            bm[:, 3 * i:3 * i + 3] = [[gx, 0, 0], [0, gy, 0], [0, 0, gz],
                                      [gy, gx, 0], [0, gz, gy], [gz, 0, gx]]
        det = np.prod(half)
        ke += bm.T @ d @ bm * det
        n3 = np.kron(shape[None, :], np.eye(3))
        me += RHO * n3.T @ n3 * det
    return ke, me


def assemble(nx: int, ny: int, nz: int):
    """(K, M) CSR, positions (n_nodes, 3), node sets {END0, END1} of the bar's mesh."""
    lx, ly, lz = ELEMENT * nx, ELEMENT * ny, ELEMENT * nz
    ke, me = hex8_matrices(ELEMENT, ELEMENT, ELEMENT)
    index = np.arange((nx + 1) * (ny + 1) * (nz + 1)).reshape(nx + 1, ny + 1, nz + 1)
    grid = np.stack(np.meshgrid(np.linspace(0, lx, nx + 1), np.linspace(0, ly, ny + 1),
                                np.linspace(0, lz, nz + 1), indexing="ij"), axis=-1)
    i, j, k = (a.ravel() for a in np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz),
                                               indexing="ij"))
    conn = np.stack([index[i, j, k], index[i + 1, j, k], index[i + 1, j + 1, k],
                     index[i, j + 1, k], index[i, j, k + 1], index[i + 1, j, k + 1],
                     index[i + 1, j + 1, k + 1], index[i, j + 1, k + 1]], axis=1)
    dofs = (3 * conn[:, :, None] + np.arange(3)).reshape(-1, 24).astype(np.int32)
    rows = np.repeat(dofs, 24, axis=1).ravel()
    cols = np.tile(dofs, (1, 24)).ravel()
    n = 3 * index.size
    k_mat = scipy.sparse.csr_matrix((np.tile(ke.ravel(), conn.shape[0]), (rows, cols)),
                                    shape=(n, n))
    m_mat = scipy.sparse.csr_matrix((np.tile(me.ravel(), conn.shape[0]), (rows, cols)),
                                    shape=(n, n))
    sets = {"END0": index[0].ravel(), "END1": index[-1].ravel()}
    return k_mat, m_mat, grid.reshape(-1, 3), sets


def reduce_file(path: Path, modes: int) -> None:
    """Child process: load the model, reduce it, print the figures."""
    from rbcosim.flex.io.fe_import import import_structure
    from rbcosim.flex.io.readers import FEModel

    with np.load(path) as data:
        positions, end0, end1 = data["positions"], data["END0"], data["END1"]
    k = scipy.sparse.load_npz(path.with_suffix(".K.npz")).tocsr()
    m = scipy.sparse.load_npz(path.with_suffix(".M.npz")).tocsr()
    n_nodes = positions.shape[0]
    fe = FEModel(stiffness=k, mass=m, node_ids=np.arange(1, n_nodes + 1), positions=positions,
                 dof_map=np.stack([np.repeat(np.arange(n_nodes), 3),
                                   np.tile(np.arange(3), n_nodes)], axis=1),
                 node_sets={"END0": end0, "END1": end1}, stiffness_file="bar.K",
                 mass_file="bar.M", model_file="bar")
    load_before = os.getloadavg()[0]
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    structure = import_structure(fe, [{"tie": "rigid", "set": "END0"},
                                      {"tie": "rigid", "set": "END1"}], modes=modes)
    wall = time.perf_counter() - wall0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    n_b = structure.n_boundary
    lam = np.sort(np.linalg.eigvalsh(structure.stiffness[n_b:, n_b:]))  # modal block: omega²
    length = np.ptp(positions[:, 0])
    width = min(np.ptp(positions[:, 1]), np.ptp(positions[:, 2]))
    euler = 4.7300407**2 / (2 * np.pi * length**2) * np.sqrt(E * width**2 / 12 / RHO)
    print(f"DOFs {k.shape[0]} (nodes {n_nodes}), interface DOFs {n_b}, modes {modes}")
    print(f"reduction: wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS "
          f"{cpu1.ru_maxrss / 2**20:.3f} GiB (process, input matrices included)")
    print(f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}; "
          f"cores {os.cpu_count()}")
    print(f"first fixed-interface frequency {np.sqrt(lam[0]) / (2 * np.pi):.2f} Hz "
          f"(Euler-Bernoulli clamped-clamped {euler:.2f} Hz)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs=3, default=[150, 14, 14],
                        metavar=("NX", "NY", "NZ"))
    parser.add_argument("--modes", type=int, default=6)
    parser.add_argument("--reduce", type=Path, help=argparse.SUPPRESS)  # the child's input
    args = parser.parse_args(argv)
    if args.reduce:
        reduce_file(args.reduce, args.modes)
        return
    t0 = time.perf_counter()
    k, m, positions, sets = assemble(*args.elements)
    print(f"assembled {k.shape[0]} DOFs, nnz(K) {k.nnz} in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bar.npz"
        np.savez(path, positions=positions, **sets)
        scipy.sparse.save_npz(path.with_suffix(".K.npz"), k, compressed=False)
        scipy.sparse.save_npz(path.with_suffix(".M.npz"), m, compressed=False)
        del k, m
        subprocess.run([sys.executable, __file__, "--reduce", str(path), "--modes",
                        str(args.modes)], check=True)


if __name__ == "__main__":
    main()
