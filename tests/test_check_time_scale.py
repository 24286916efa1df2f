"""`rbcosim check`: the fastest time scale of the linearized model and the dt warning.

A uniform rod of length l hanging straight down on a hinge swings, linearized, at
ω = sqrt(3 g / (2 l)) (I_pivot = m l²/3, moment m g l/2 per radian); with l = 0.05 m that is
17.15 rad/s, above the Baumgarte rates (10 1/s), so the printed time scale must be 1/ω.
"""

from __future__ import annotations

import math
import re

import pytest

from rbcosim.cli.main import main

ROD = """
[bodies.rod]
mass = 1.0
inertia = [2.0833333333333335e-4, 2.0833333333333335e-4, 1e-9]
position = [0.0, 0.0, -0.025]
[joints.hinge]
type = "revolute"
body1 = "ground"
body2 = "rod"
at = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]
[solver]
dt = {dt}
t_end = 1.0
"""


@pytest.mark.parametrize("dt, warned", [(1e-3, False), (0.1, True)])
def test_check_prints_the_pendulum_time_scale_and_warns_above_it(tmp_path, capsys, dt, warned):
    path = tmp_path / "rod.toml"
    path.write_text(ROD.format(dt=dt))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    scale = float(re.search(r"fastest time scale: (\S+) s", out).group(1))
    assert scale == pytest.approx(1 / math.sqrt(3 * 9.81 / (2 * 0.05)), rel=1e-2)
    assert ("WARNING: dt" in out) == warned
