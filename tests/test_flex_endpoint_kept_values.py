"""What a flexible endpoint keeps between macro steps for the bodies Python steps (multi-node,
chord-frame): the rigid motions it stepped from as objects (not rebuilt from the history rows
each step) and the nodes' power once per body state (a step's start is the last one's end).
The kept values are the history rows' values, whichever way the endpoint is driven; the bits
of whole runs: tests/test_distributed_multi.py, tests/test_flex_loop_python_bodies.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rbcosim.cosim.master import CosimMaster
from rbcosim.cosim.nodes import NodeSet
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
CRANK = ROOT / "scenarios" / "flexible_slider_crank.toml"
SLIDERS = ROOT / "scenarios" / "pinned_beam_two_sliders.toml"
SCHEMES = ["gauss_seidel_flex_first", "jacobi", "gauss_seidel_rigid_first", "iterative"]


def _master(path: Path, scheme: str) -> CosimMaster:
    return CosimMaster(load_scenario(path, [f'cosim.scheme="{scheme}"']))


def _rows_as_motions(ep) -> list[list[tuple]]:
    """The endpoint's history rows, read as `from_timed` reads them: (values, time)."""
    out = []
    for i in range(int(ep._n_history[0])):
        ms = [InterfaceMotion.from_timed(r) for r in ep._history[i]]
        out.append([(m.as_array().tobytes(), m.time) for m in ms])
    return out


def _kept(ep) -> list[list[tuple]]:
    return [[(m.as_array().tobytes(), m.time) for m in ms] for ms in ep._motions]


@pytest.mark.parametrize("path", [CRANK, SLIDERS], ids=["chord", "multi_node"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_kept_motions_are_the_history_rows(path, scheme):
    master = _master(path, scheme)
    (ep,) = master.endpoints.values()
    assert _kept(ep) == _rows_as_motions(ep) and len(_kept(ep)) == 0
    for n in range(1, 4):
        master.advance(1)
        kept = _kept(ep)
        assert len(kept) == min(n, 2) and kept == _rows_as_motions(ep)
        assert all(isinstance(t, float) and math.isfinite(t) for ms in kept for _, t in ms)
    blob = ep.get_state()
    master.advance(2)
    ep.set_state(blob)  # the motions of the state, not of the two steps after it
    assert _kept(ep) == _rows_as_motions(ep)
    assert ep.get_state() == blob


@pytest.mark.parametrize("path", [CRANK, SLIDERS], ids=["chord", "multi_node"])
def test_steps_read_no_motions_back_from_the_rows(monkeypatch, path):
    master = _master(path, "gauss_seidel_flex_first")
    master.advance(2)
    reads = []
    original = InterfaceMotion.from_timed
    monkeypatch.setattr(InterfaceMotion, "from_timed",
                        staticmethod(lambda row: reads.append(1) or original(row)))
    master.advance(5)
    assert reads == []


@pytest.mark.parametrize("path", [CRANK, SLIDERS], ids=["chord", "multi_node"])
@pytest.mark.parametrize("scheme", ["gauss_seidel_flex_first", "jacobi"])
def test_the_nodes_power_is_evaluated_once_per_body_state(monkeypatch, path, scheme):
    """Per step the power at its start (the last step's end, already known) and at its end:
    one evaluation; the energy ledger is the trapezoid of the two all the same."""
    master = _master(path, scheme)
    (ep,) = master.endpoints.values()
    master.advance(2)
    calls, revisions = [], []
    original = NodeSet.powers

    def counted(self):
        calls.append(1)
        revisions.append(self.body.revision)
        return original(self)

    monkeypatch.setattr(NodeSet, "powers", counted)
    energy, start = ep.energy, ep._power().copy()
    assert calls == []  # known from the last step's end
    master.advance(1)
    assert len(calls) == 1 and len(set(revisions)) == 1
    end = original(ep._nodes)
    np.testing.assert_array_equal(ep.energy, energy + 0.5 * ep.H * (start + end))
