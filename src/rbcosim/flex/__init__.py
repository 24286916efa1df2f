"""Reference flexible side: Euler–Bernoulli beams, Craig–Bampton reduction, a modal solver.

The solver (:class:`FlexBody`) talks to the rigid side through plain interface data only
(:class:`InterfaceMotion` in, a wrench and the joint node's kinematics out), so that it can run
in its own process. See ``README.md`` in this folder for the file formats.
"""

from rbcosim.flex.beam import BeamFE, euler_bernoulli_beam
from rbcosim.flex.body import FlexBody
from rbcosim.flex.config import flex_model_from_config
from rbcosim.flex.craig_bampton import CraigBampton, craig_bampton
from rbcosim.flex.kinematics import InterfaceMotion
from rbcosim.flex.matrices_io import StructureMatrices, load_mtx, load_npz, save_npz
from rbcosim.flex.model import FlexModel, FloatingInertia

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
    "flex_model_from_config",
    "load_mtx",
    "load_npz",
    "save_npz",
]
