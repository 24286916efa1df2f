"""Interface nodes from faces: a set of nodes tied to a new 6-DOF node (RBE2- or RBE3-like).

A solid's nodes carry translations only, so no single node can take a joint's moment. A tie
adds a node m at ``x_m`` (default: the centroid of the tied nodes) with translations ``u_m``
and small rotations ``theta_m`` (structure axes, the model's length unit and rad) and a linear
multipoint constraint between m and the tied ("slave") nodes s at ``r_s = x_s - x_m``:

- ``rigid`` (RBE2, Abaqus' kinematic coupling): every DOF of every tied node follows m
  rigidly, ``u_s = u_m + theta_m x r_s`` and ``theta_s = theta_m`` (where s has rotations).
  The face moves as a rigid body; it adds stiffness.
- ``average`` (RBE3, Abaqus' distributing coupling): m moves with the rigid motion that best
  fits the tied nodes' translations in the least-squares sense, ``(u_m, theta_m) = argmin
  sum_s |u_s - u_m - theta_m x r_s|^2`` (equal weights), i.e. ``q_m = W u_S`` with
  ``W = A^-1 [S_1^T ... S_n^T]``, ``S_s = [I, -[r_s]x]``, ``A = sum_s S_s^T S_s``. Exact for
  rigid motions of the face; a force and moment at m is spread over the face as ``W^T``
  (virtual work) and the face keeps its own stiffness. Needs three non-collinear nodes.

Both are eliminated through one transformation ``u = T u'``: the constraint's dependent DOFs
are expressed by the independent ones (rigid: all the tied DOFs; average: six of the tied
translations, picked by QR with column pivoting on W, ``u_D = W_D^-1 (q_m - W_F u_F)``), and
``K' = T^T K T``, ``M' = T^T M T`` (sparse). The new node's DOFs come last, in tie order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
import scipy.sparse

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.model import FEModel
from rbcosim.spatial.linalg3 import skew

TIE_KINDS = ("rigid", "average")


@dataclass(frozen=True)
class Tie:
    """Tie node indices ``nodes`` (of the FE model) to a new 6-DOF node at ``at`` (model
    units; None: their centroid), ``kind`` rigid or average; ``name`` for errors."""

    nodes: np.ndarray
    kind: str = "rigid"
    at: np.ndarray | None = None
    name: str = "tie"


def apply_ties(fe: FEModel, ties: list[Tie]) -> tuple[FEModel, list[int]]:
    """The model with every tie's node added (6 DOFs, after the existing nodes, node number
    ``max(node_ids) + 1 + i``) and its dependent DOFs eliminated; the new nodes' indices."""
    if not ties:
        return fe, []
    n = fe.dof_map.shape[0]
    n_nodes = fe.positions.shape[0]
    seen: dict[int, str] = {}
    dep_rows: dict[int, dict[int, float]] = {}  # dependent DOF -> {column key: coefficient}
    positions = [fe.positions]
    for t, tie in enumerate(ties):
        for s in tie.nodes.tolist():
            if s in seen:
                raise ScenarioError(f"{tie.name}: node {fe.node_ids[s]} is already tied by "
                                    f"{seen[s]}")
            seen[s] = tie.name
        centre = _centre(fe, tie)
        positions.append(centre[None, :])
        master = [("m", t, c) for c in range(6)]
        rows = (_rigid_rows if tie.kind == "rigid" else _average_rows)(fe, tie, centre, master)
        dep_rows.update(rows)
    dependent = np.array(sorted(dep_rows), dtype=np.int64)
    keep = np.setdiff1d(np.arange(n), dependent)
    columns = {("u", int(j)): i for i, j in enumerate(keep)}
    for t in range(len(ties)):
        for c in range(6):
            columns[("m", t, c)] = len(columns)
    r, c, v = keep.tolist(), list(range(keep.size)), [1.0] * keep.size
    for d, combo in dep_rows.items():
        for key, coef in combo.items():
            if coef != 0.0:
                r.append(d)
                c.append(columns[key])
                v.append(coef)
    tmat = scipy.sparse.csr_matrix((v, (r, c)), shape=(n, len(columns)))
    new_nodes = list(range(n_nodes, n_nodes + len(ties)))
    dof_map = np.concatenate([fe.dof_map[keep],
                              np.array([(m, c) for m in new_nodes for c in range(6)])])
    start = int(fe.node_ids.max()) + 1
    return replace(
        fe,
        stiffness=(tmat.T @ fe.stiffness @ tmat).tocsr(),
        mass=(tmat.T @ fe.mass @ tmat).tocsr(),
        node_ids=np.concatenate([fe.node_ids, np.arange(start, start + len(ties))]),
        positions=np.concatenate(positions),
        dof_map=dof_map.astype(np.int64),
    ), new_nodes


def _centre(fe: FEModel, tie: Tie) -> np.ndarray:
    if tie.nodes.size == 0:
        raise ScenarioError(f"{tie.name}: no nodes to tie")
    if tie.kind not in TIE_KINDS:
        raise ScenarioError(f"{tie.name}: tie: expected one of {list(TIE_KINDS)}, got "
                            f"{tie.kind!r}")
    return (fe.positions[tie.nodes].mean(axis=0) if tie.at is None
            else np.asarray(tie.at, dtype=float))


def _dofs_of(fe: FEModel, node: int) -> dict[int, int]:
    """component -> coordinate index of ``node``'s DOFs."""
    idx = np.flatnonzero(fe.dof_map[:, 0] == node)
    return {int(fe.dof_map[i, 1]): int(i) for i in idx}


def _rigid_rows(fe: FEModel, tie: Tie, centre, master) -> dict:
    """u_s = u_m + theta_m x r_s = u_m - [r_s]x theta_m; theta_s = theta_m."""
    rows = {}
    for s in tie.nodes.tolist():
        dofs = _dofs_of(fe, s)
        if not dofs:
            raise ScenarioError(f"{tie.name}: node {fe.node_ids[s]} has no DOFs in the "
                                f"matrices (constrained in the FE model?)")
        lever = -skew(fe.positions[s] - centre)
        for comp, i in dofs.items():
            if comp < 3:
                rows[i] = {master[comp]: 1.0, **{master[3 + k]: float(lever[comp, k])
                                                  for k in range(3)}}
            else:
                rows[i] = {master[comp]: 1.0}
    return rows


def _average_rows(fe: FEModel, tie: Tie, centre, master) -> dict:
    """Six tied translations u_D = W_D^-1 (q_m - W_F u_F), W the least-squares fit."""
    idx = []
    blocks = []
    for s in tie.nodes.tolist():
        dofs = _dofs_of(fe, s)
        if any(c not in dofs for c in range(3)):
            raise ScenarioError(f"{tie.name}: node {fe.node_ids[s]} lacks translations "
                                f"(an averaging tie needs x, y, z of every tied node)")
        idx += [dofs[c] for c in range(3)]
        blocks.append(np.hstack([np.eye(3), -skew(fe.positions[s] - centre)]))
    s_all = np.vstack(blocks)  # (3 n_s, 6)
    a = s_all.T @ s_all
    spread = fe.positions[tie.nodes] - fe.positions[tie.nodes].mean(axis=0)
    second = np.linalg.svd(spread, compute_uv=False) if tie.nodes.size > 1 else np.zeros(1)
    if second.size < 2 or second[1] <= 1e-9 * second[0]:
        raise ScenarioError(f"{tie.name}: an averaging tie needs at least three non-collinear "
                            f"nodes (their rotation is not defined), got {tie.nodes.size}")
    w = np.linalg.solve(a, s_all.T)  # (6, 3 n_s)
    _, _, piv = scipy.linalg.qr(w, pivoting=True, mode="economic")
    dep, free = piv[:6], piv[6:]
    w_d_inv = np.linalg.inv(w[:, dep])
    coef_m = w_d_inv  # u_D = W_D^-1 q_m - W_D^-1 W_F u_F
    coef_f = -w_d_inv @ w[:, free]
    rows = {}
    for r, d in enumerate(dep):
        combo = {master[k]: float(coef_m[r, k]) for k in range(6)}
        combo.update({("u", idx[f]): float(coef_f[r, j]) for j, f in enumerate(free)})
        rows[idx[d]] = combo
    return rows
