"""Many runs of one scenario at once on Dask: grids, Monte Carlo samples, batches of load cases.

`sweep(...)` is the Python entry point; `rbcosim sweep` is a thin layer over it.
"""

from rbcosim.sweep.cases import Case, grid_cases, sample_cases
from rbcosim.sweep.engine import sweep

__all__ = ["Case", "grid_cases", "sample_cases", "sweep"]
