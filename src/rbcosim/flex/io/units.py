"""Unit systems of imported FE models, scaled to SI.

``units = "LENGTH-MASS-TIME"``: LENGTH ``m``, ``cm`` or ``mm``; MASS ``kg``, ``g`` or ``t``
(tonne); TIME ``s`` or ``ms``; e.g. ``m-kg-s`` (SI), ``mm-t-s`` (N, MPa), ``mm-kg-ms`` (kN,
GPa), ``mm-g-ms`` (N). Coordinates are ``u_SI = D u`` with ``D`` = L (the length unit in m)
for translations and 1 for rotations (rad), and energies scale by ``E = m_u L² / t_u²``, so

    positions_SI = L x,   K_SI = E D^-1 K D^-1,   M_SI = m_u L² D^-1 M D^-1,

(a translational stiffness by m_u / t_u², a rotational one by E, a translational mass by m_u,
a rotary inertia by m_u L²).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse

from rbcosim.errors import ScenarioError
from rbcosim.flex.io.readers.model import FEModel

LENGTHS = {"m": 1.0, "cm": 1e-2, "mm": 1e-3}
MASSES = {"kg": 1.0, "g": 1e-3, "t": 1e3}
TIMES = {"s": 1.0, "ms": 1e-3}


def unit_scales(units: str, where: str = "units") -> tuple[float, float, float]:
    """(length in m, mass in kg, time in s) of ``units`` ("LENGTH-MASS-TIME")."""
    parts = units.split("-") if isinstance(units, str) else []
    if (len(parts) != 3 or parts[0] not in LENGTHS or parts[1] not in MASSES
            or parts[2] not in TIMES):
        raise ScenarioError(f"{where}: expected 'LENGTH-MASS-TIME' with LENGTH in "
                            f"{list(LENGTHS)}, MASS in {list(MASSES)}, TIME in {list(TIMES)} "
                            f"(e.g. 'm-kg-s', 'mm-t-s', 'mm-kg-ms'), got {units!r}")
    return LENGTHS[parts[0]], MASSES[parts[1]], TIMES[parts[2]]


def to_si(fe: FEModel, units: str, where: str = "units") -> FEModel:
    """The model in SI units (see the module docstring)."""
    length, mass, time = unit_scales(units, where)
    if (length, mass, time) == (1.0, 1.0, 1.0):
        return fe
    d_inv = scipy.sparse.diags(np.where(fe.dof_map[:, 1] < 3, 1.0 / length, 1.0))
    energy = mass * length**2 / time**2
    return replace(
        fe,
        positions=fe.positions * length,
        stiffness=(energy * (d_inv @ fe.stiffness @ d_inv)).tocsr(),
        mass=(mass * length**2 * (d_inv @ fe.mass @ d_inv)).tocsr(),
    )
