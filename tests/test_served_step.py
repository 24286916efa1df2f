"""RigidSide.step hands the session worker the points' motions after the step: the same bytes
as evaluating them afterwards (motions_array), and None where interface-Jacobian feedback
acted in the step (the evaluation afterwards, without it, differs)."""

from pathlib import Path

import numpy as np

from rbcosim.cosim.rigid_side import RigidSide

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "rigid_flex_pendulum.toml"


def test_step_returns_the_motions_motions_array_evaluates_after_it():
    side = RigidSide.from_scenario(SCENARIO)
    side.set_added_mass("tip", np.diag([0.3, 0.3, 0.3, 0.01, 0.01, 0.01]))
    for k in range(3):
        side.set_wrench_polynomial("tip", [[0.1 * k, 0.0, -2.0, 0.0, 0.05, 0.0], [1.0] * 6])
        motions = side.step(side.macro_step)
        assert motions.shape == (1, 19)
        assert motions.tobytes() == side.motions_array().tobytes()


def test_step_returns_none_after_feedback():
    side = RigidSide.from_scenario(SCENARIO)
    gain = 50.0 * np.eye(6)
    side.set_interface_jacobian("tip", gain, gain)
    assert side.step(side.macro_step) is None
    assert side.step(side.macro_step) is not None  # the feedback lasts one step
