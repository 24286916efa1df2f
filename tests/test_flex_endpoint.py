"""The one flexible endpoint on bodies with several interface nodes: what it hands to the rigid
side is the body's own added mass and wrenches, node by node, checked against the body."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rbcosim.cosim.master import CosimMaster
from rbcosim.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def _blocks(full: np.ndarray, k: int) -> list[np.ndarray]:
    return [full[6 * i:6 * i + 6, 6 * i:6 * i + 6] for i in range(k)]


@pytest.mark.parametrize(("name", "body", "overrides"), [
    ("flexible_slider_crank", "rod", ['solver.t_end="pi/Omega/8"']),
    ("pinned_beam_two_sliders", "beam", ["solver.t_end=0.002"]),
])
def test_the_rigid_input_is_each_nodes_wrench_plus_its_inertial_added_mass_block(
        name, body, overrides):
    """A chord-frame rod (its added mass affine in the pins' inertial accelerations) and a
    grounded beam hand each node's diagonal block of the body's added mass at the start, in
    inertial axes; after some macro steps (the crank pin's frame has turned) the rigid input
    is W_i + M_ii a_i with the body's own W and a and that handed M_ii."""
    scenario = load_scenario(ROOT / "scenarios" / f"{name}.toml", overrides)
    fresh = CosimMaster(scenario).endpoints[body]
    handed = fresh.initialize(0.0, CosimMaster(scenario).motions())
    start = _blocks(fresh.body.added_mass(), 2)
    for (joint, handover), block in zip(handed.items(), start):
        assert handover[1] == "inertial", joint
        np.testing.assert_allclose(handover[0], block, rtol=1e-12, atol=1e-15)
    master = CosimMaster(scenario)
    ep = master.endpoints[body]
    assert len(ep.joints) == 2
    master.advance(20)
    b = ep.body
    expect = b.wrenches() + np.array([m @ a for m, a in zip(start, b.frame_accelerations())])
    np.testing.assert_allclose(ep.rigid_input().reshape(2, 6), expect, rtol=0,
                               atol=1e-12 * np.abs(expect).max())
