"""Model checks before a run: degrees of freedom, redundant constraints, initial consistency."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbcosim.errors import SimulationError
from rbcosim.maximal.constraints import JacobianAssembler
from rbcosim.maximal.dynamics import MaximalSystem, independent_rows
from rbcosim.maximal.kinematics import Kinematics
from rbcosim.model import Model
from rbcosim.state import State

#: Holonomic constraint equations per joint type (for the Grübler–Kutzbach count; a rolling
#: disk's contact height is holonomic, its two no-slip rows and a knife edge's are not).
JOINT_EQUATIONS = {"fixed": 6, "revolute": 5, "prismatic": 5, "spherical": 3, "universal": 4,
                   "cylindrical": 4, "planar": 3, "distance": 1, "driver": 1,
                   "rolling_disk": 1, "knife_edge": 0}
CONSISTENCY_TOL = 1e-9


@dataclass
class CheckReport:
    """Outcome of `check_model`: counts, named redundant rows, initial errors, problems.

    dof counts the configuration's degrees of freedom (6n − rank of the holonomic rows, less
    the point masses' constant rotations); velocity_dof those of the velocities, after the
    non-holonomic rows too."""

    n_bodies: int
    n_equations: int
    rank: int
    gruebler_dof: int
    dof: int
    redundant: list[str]
    phi_initial: float
    phidot_initial: float
    phi_assembled: float
    assembled: State
    nonholonomic: int = 0
    velocity_dof: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        return not self.problems


def check_model(model: Model) -> CheckReport:
    """Rank of Φ_q at the initial state, Grübler–Kutzbach count and consistency."""
    n = model.n_bodies
    system = MaximalSystem(model, drop_redundant=False)
    state = State.initial(model)
    kin = Kinematics.of(state)
    values = system.constraints.evaluate(kin)
    m = values.phi.size
    labels = system.constraints.row_labels
    holonomic = ~system.constraints.nonholonomic
    if m:
        J = JacobianAssembler(values.a, values.b, n, sparse=False).assemble(values)
        keep, velocity_rank = independent_rows(J)
        redundant = [labels[i] for i in sorted(set(range(m)) - set(keep.tolist()))]
        rank = independent_rows(J[holonomic])[1]
    else:
        rank = velocity_rank = 0
        redundant = []
    phi0, phidot0 = system.drift(state)
    assembled = state.copy()
    try:
        MaximalSystem(model).project(assembled, tol=1e-13, max_iter=50)
    except SimulationError:
        assembled.r[:] = np.nan  # J M⁻¹ Jᵀ singular: no assembly
    # judge the assembly on every row: the solver's kept rows can be satisfied while a row it
    # dropped as redundant (rank lost at a singular or inconsistent start) is not
    phi_after, _ = system.drift(assembled)
    problems = []
    if not np.isfinite(phi_after) or phi_after > CONSISTENCY_TOL:
        problems.append(f"the initial positions cannot be assembled: ‖Φ‖ stays at {phi_after:.3g}")
    free = 6 * n - model.frozen_rotations
    if model.planar_normal is None:
        gruebler = free - sum(JOINT_EQUATIONS[j.kind] for j in model.joints)
    else:  # 3n minus the joints' in-plane holonomic rows (the bodies' plane rows take 3n)
        gruebler = free - int(np.sum(holonomic))
    return CheckReport(n, m, rank, gruebler, free - rank, redundant, phi0, phidot0, phi_after,
                       assembled, int(np.sum(~holonomic)), free - velocity_rank, problems)
