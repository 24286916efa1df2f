"""The C core against the numba kernels it replaced, on the shipped scenarios.

`tests/data/numba_reference.npz` holds `rbcosim run SCENARIO` results written by the last numba
version of rbcosim (main at 85fdabf, before the port), every fifth row and the last: another
implementation of the same formulas, compiled by another compiler. The C core evaluates the
formulas in the same order, so rigid scenarios agree to the last bit on this machine; the
assertion allows 1e-12 of each column's scale (libm or compiler differences elsewhere).

Flexible scenarios: since that reference, each mode's sign follows a stated convention
(`rbcosim.flex.modelling.craig_bampton.mode_signs`), so a modal coordinate may be the reference's negated
(compared up to sign); a flipped mode changes summation order in the ~1e-15 digits, and the
continuity gaps and energy residual are differences of O(1) quantities, so they are held to
1e-12 of the kinematics' and energy's scale rather than of their own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rbcosim.runner import run_scenario
from rbcosim.scenario.loader import load_scenario

REPO = Path(__file__).resolve().parents[1]
REFERENCE = np.load(REPO / "tests" / "data" / "numba_reference.npz")
SCENARIOS = sorted({key.split("/")[0] for key in REFERENCE.files})
RTOL = 1e-12


def _scale(name: str, column: np.ndarray, reference: dict[str, np.ndarray]) -> float:
    """What |Δ| of a column is measured against: its own largest value, at least 1 (m, m/s,
    rad, N, J: O(1) in these scenarios); the energy residual against the largest energy."""
    scale = max(1.0, float(np.abs(column).max()))
    if name.endswith(".energy_residual") and "energy" in reference:
        scale = max(scale, float(np.abs(reference["energy"]).max()))
    return scale


#: Rigid scenarios: the same arithmetic in the same order gives the same bits (this machine's
#: compiler and libm; the tolerance is what other machines rely on).
BITWISE = ("double_pendulum", "andrews_squeezer", "four_bar", "chain")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_shipped_scenario_matches_the_numba_results(scenario):
    columns = [str(c) for c in REFERENCE[f"{scenario}/columns"]]
    rows, data = REFERENCE[f"{scenario}/rows"], REFERENCE[f"{scenario}/data"]
    reference = dict(zip(columns, data.T))
    results = run_scenario(load_scenario(REPO / "scenarios" / f"{scenario}.toml"),
                           progress=False)
    assert len(results.t) == rows[-1] + 1, "same number of output rows"
    if scenario in BITWISE:
        now = np.column_stack([results[name][rows] for name in columns])
        assert np.array_equal(now, data), scenario
    for name, expected in reference.items():
        now = results[name][rows]
        if ".eta" in name and np.abs(now + expected).max() < np.abs(now - expected).max():
            now = -now  # the mode's sign now follows the stated convention
        error = float(np.abs(now - expected).max())
        assert error <= RTOL * _scale(name, expected, reference), (
            f"{scenario}: column {name} differs by {error:.3e} from the numba results")
