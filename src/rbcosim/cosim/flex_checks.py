"""What a flexible endpoint checks and writes besides the exchange: the range of the linear
floating frame (spin, elastic rotation), and its results columns.

A floating body whose frame is the linear floating frame (FlexBody's, or a floating body with
several interface nodes; not a chord-frame rod) warns once when its spin makes a modal
stiffness negative without geometric stiffening (rbcosim.flex.runtime.spin_limit) and once when its
elastic rotations leave the small-deformation range (rbcosim.flex.runtime.deformation_range); the spin
is read at interface node 0.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from rbcosim.flex.runtime.arc_shape import ArcShape, is_beam_line
from rbcosim.flex.runtime.deformation_range import (
    ROTATION_LIMIT,
    DeformationRange,
    DeformationWarning,
)
from rbcosim.flex.runtime.spin_limit import SpinLimit, SpinWarning
from rbcosim.spatial.quaternion import rotation_matrix

_NO_ROWS = np.zeros((0, 0))


class RangeChecks:
    """The range checks of one endpoint's body (module docstring); ``arc``: its ArcShape
    (a floating beam line with output nodes) or None."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        body = endpoint.body
        model = body.model
        frame = getattr(model, "floating", None) is not None  # the node frame (FlexModel)
        linear = frame and model.n_modes and not model.floating.geometric_stiffening
        self._spin_limit = SpinLimit(model) if linear else None
        self._deformation = DeformationRange(model) if frame and model.n_modes else None
        self.arc = ArcShape(model) if frame and model.output_names and is_beam_line(model) else None
        #: (s, joint): when and where the rigid side first saw continuity violated (None: never)
        self.continuity_lost: tuple[float, str] | None = None
        #: what the C core's exchange step (`rbcosim._core.flex_step`) takes to know these
        #: checks are quiet: [spin floor rad²/s² (inf: off), rotation gain rad per |η| (0:
        #: off), rotation limit rad], and the nodes' elastic rotation rows (3 N, k)
        self.quiet = np.zeros(3)
        self.rotations = _NO_ROWS if self._deformation is None else self._deformation._rotations
        self._set_quiet()

    def _set_quiet(self) -> None:
        self.quiet[:] = (math.inf if self._spin_limit is None else self._spin_limit._floor,
                         0.0 if self._deformation is None else self._deformation._rotation_gain,
                         ROTATION_LIMIT)

    def note_continuity_lost(self, joint: str, t: float) -> None:
        if self.continuity_lost is None:
            self.continuity_lost = (t, joint)

    def after_step(self) -> None:
        if self._spin_limit is not None:
            self._check_spin()
        if self._deformation is not None:
            self._check_deformation()

    def _check_deformation(self) -> None:
        """Warn once when the body's elastic rotations leave the small-deformation range of
        the linear floating-frame field (rbcosim.flex.runtime.deformation_range)."""
        body = self.endpoint.body
        eta = body.modal_coordinates
        if self._deformation.rotation_exceeds(eta, ROTATION_LIMIT):
            rotation, deflection = self._deformation.measure(eta)
            self._deformation = None
            self._set_quiet()
            warnings.warn(
                f"flexible body {self.endpoint.flex_body}: at t = {body.time:.6g} s an elastic "
                f"rotation of {rotation:.3g} rad (deflection {deflection:.3g} of its length) is "
                f"beyond the {ROTATION_LIMIT} rad the linear deformation field holds for: "
                f"positions err by about {rotation**2 / 6:.1%} of the deflection, and more as "
                "it grows", DeformationWarning, stacklevel=3)

    def _check_spin(self) -> None:
        """Warn once when a floating body without geometric stiffening spins where its linear
        model has a negative modal stiffness (its deformation then grows without bound)."""
        ep = self.endpoint
        body = ep.body
        nk = ep._nodes.node_kinematics()[0]
        if self._spin_limit.below_floor(float(nk[10:13] @ nk[10:13])):
            return
        rot = rotation_matrix(nk[3:7]) @ body.model.axis_rotation
        w = rot.T @ nk[10:13]
        if self._spin_limit.unstable(w):
            self._spin_limit = None
            self._set_quiet()
            name = ep.flex_body
            remedy = f"set flex_bodies.{name}.geometric_stiffening = true"
            if self.continuity_lost is not None:
                t, joint = self.continuity_lost
                remedy = (f"but joint {joint!r} lost continuity first (t = {t:.6g} s): the "
                          "coupling is unstable, not the body; "
                          + ("use a smaller cosim.macro_step" if ep.settings.added_mass
                             else "set cosim.added_mass = true or use a smaller "
                                  "cosim.macro_step"))
            warnings.warn(
                f"flexible body {name}: at t = {body.time:.6g} s its angular velocity "
                f"{np.linalg.norm(w):.4g} rad/s makes a modal stiffness negative in the linear "
                f"floating frame (centrifugal softening without stiffening): the deformation "
                f"grows without bound; {remedy}",
                SpinWarning, stacklevel=3)


def result_columns(name: str, body, displacements: bool, arc: bool) -> list[str]:
    """A flexible body's results columns: eta1.., each output node's inertial x y z; with
    `displacements` its elastic displacement ux uy uz in the body's floating (or chord) frame;
    with `arc` also on the inextensible axis, arc_ux arc_uy arc_uz (rbcosim.flex.runtime.arc_shape)."""
    cols = [f"{name}.eta{k + 1}" for k in range(body.modal_coordinates.size)]
    nodes = list(body.output_nodes())
    suffixes = [""] + (["u"] if displacements else []) + (["arc_u"] if arc else [])
    for suffix in suffixes:
        for node in nodes:
            cols += [f"{name}.{node}.{suffix}{axis}" for axis in "xyz"]
    return cols


def result_row(body, displacements: bool, arc: ArcShape | None) -> np.ndarray:
    """The values of :func:`result_columns` now (``arc``: the body's ArcShape, or None)."""
    values = [body.modal_coordinates, *body.output_nodes().values()]
    if displacements:
        values += list(body.output_displacements().values())
    if arc is not None:
        values.append(arc.displacements(body.modal_coordinates).ravel())
    return np.concatenate(values)
