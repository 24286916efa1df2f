"""Reference flexible side: Euler–Bernoulli beams, Craig–Bampton reduction, a modal solver.

The solver (:class:`FlexBody`) talks to the rigid side through plain interface data only
(:class:`InterfaceMotion` in, a wrench and the joint node's kinematics out), so that it can run
in its own process. See ``README.md`` in this folder for the file formats.
"""

from rbcosim.flex.io.matrices_io import StructureMatrices, load_mtx, load_npz, save_npz
from rbcosim.flex.modelling.beam import BeamFE, euler_bernoulli_beam
from rbcosim.flex.modelling.craig_bampton import CraigBampton, craig_bampton
from rbcosim.flex.modelling.model import FlexModel, FloatingInertia
from rbcosim.flex.runtime.body import FlexBody
from rbcosim.flex.runtime.interface_motion import InterfaceMotion

__all__ = [
    "BeamFE",
    "CraigBampton",
    "FlexBody",
    "FlexModel",
    "FloatingInertia",
    "InterfaceMotion",
    "StructureMatrices",
    "craig_bampton",
    "euler_bernoulli_beam",
    "load_mtx",
    "load_npz",
    "save_npz",
]
