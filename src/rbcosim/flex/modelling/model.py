"""FlexModel: the immutable description of a Craig–Bampton flexible body.

Coordinates are ``q = [u_b; eta]``: ``n_boundary`` boundary DOFs at the joint and ``n_modes``
fixed-interface modal coordinates (mass-normalised when built here).

Two attachments:

- ``"grounded"``: the structure is tied to ground; its boundary DOFs follow the displacement of
  the interface point from its initial pose. Boundary component names ``x y z rx ry rz`` are
  translations along / small rotations about the structure axes, which are the inertial axes
  for imported matrices (``structure_axes == "inertial"``) and the interface point's initial
  frame (times the beam-axis rotation) for beams (``"point"``).
- ``"floating"``: the structure is clamped to the interface point only; a floating frame rides
  on the point; ``u_b = 0`` relative to it and ``eta`` are the elastic coordinates. Needs the
  physical geometry and mass: node positions, DOF labels and the physical mass matrix
  (:func:`floating_inertia` -> :class:`FloatingInertia`), from the beam generator or an
  imported file (:mod:`rbcosim.flex.modelling.nodal`).

The structure frame is related to the interface point's own frame by the constant rotation
``axis_rotation`` (structure -> point), which takes the beam axis +x to
``axis_in_point_frame`` by the shortest arc.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rbcosim.flex.modelling.beam import COMPONENT_NAMES, BeamFE, euler_bernoulli_beam
from rbcosim.flex.modelling.craig_bampton import craig_bampton
from rbcosim.flex.modelling.floating_inertia import (  # noqa: F401 - _nodal_operator: tests
    FloatingInertia,
    _nodal_operator,
    floating_inertia,
)
from rbcosim.flex.modelling.floating_multi import FloatingMultiModel, build_floating_multi
from rbcosim.flex.modelling.interface_nodes import (
    Interface,
    InterfaceError,
    beam_node,
    boundary_of,
    imported_node,
)
from rbcosim.flex.modelling.nodal import NodalLayout
from rbcosim.model import frozen_array
from rbcosim.spatial.linalg3 import shortest_arc

if TYPE_CHECKING:  # the structure file's contents, read by rbcosim.flex.io
    from rbcosim.flex.io.matrices_io import StructureMatrices

ATTACHMENTS = ("grounded", "floating")


@dataclass(frozen=True)
class FlexModel:
    """Reduced flexible body (immutable). Arrays are read-only float64.

    Attributes:
        attachment: "grounded" or "floating".
        mass, stiffness, damping: reduced matrices on [u_b; eta], shape (n, n), n = n_b + k.
        n_boundary: n_b. boundary_components: interface component index (0..5 = x y z rx ry
            rz) of each boundary DOF.
        frequencies_hz: fixed-interface frequencies, (k,), Hz (empty if unknown).
        axis_rotation: structure frame -> interface point frame, (3, 3).
        structure_axes: grounded only: "inertial" or "point" (see module docstring).
        output_names: output node names; output_rows: (n_out, 3, n) node displacement in the
            structure frame = rows @ [u_b; eta]; output_positions: (n_out, 3) undeformed node
            positions relative to the interface point, structure frame, m.
        floating: inertia data, required for attachment "floating".
        boundary_interfaces: the interface (0..n_i - 1) each boundary DOF belongs to, (n_b,),
            ascending; empty: all at interface 0 (one interface node).
        interface_positions: (n_i, 3) undeformed interface node positions relative to
            interface 0, structure frame, m.
        gravity_load: grounded: G, shape (n, 3), N per m/s²: the reduced generalized force of
            gravity is ``G @ g_s`` (g_s the gravity acceleration in structure axes), i.e.
            ``T^T f`` with f the physical load per unit gravity (beams: ``M R``, R the unit
            rigid translations); floating bodies take gravity through the frame: unused.
    """

    attachment: str
    mass: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    n_boundary: int
    boundary_components: tuple[int, ...]
    frequencies_hz: np.ndarray
    axis_rotation: np.ndarray = field(default_factory=lambda: frozen_array(np.eye(3)))
    structure_axes: str = "inertial"
    output_names: tuple[str, ...] = ()
    output_rows: np.ndarray = field(default_factory=lambda: frozen_array(np.zeros((0, 3, 0))))
    output_positions: np.ndarray = field(default_factory=lambda: frozen_array(np.zeros((0, 3))))
    floating: FloatingInertia | None = None
    gravity_load: np.ndarray = field(default_factory=lambda: frozen_array(np.zeros((0, 3))))
    boundary_interfaces: tuple[int, ...] = ()
    interface_positions: np.ndarray = field(default_factory=lambda: frozen_array(np.zeros((1, 3))))

    def __post_init__(self) -> None:
        if self.attachment not in ATTACHMENTS:
            raise ValueError(f"attachment: expected one of {ATTACHMENTS}, got {self.attachment!r}")
        if self.attachment == "floating" and self.floating is None:
            raise ValueError("floating: required for attachment 'floating' (physical inertia)")
        if self.attachment == "grounded" and self.gravity_load.shape != (self.mass.shape[0], 3):
            raise ValueError(f"gravity_load: expected shape ({self.mass.shape[0]}, 3) for a "
                             f"grounded body, got {self.gravity_load.shape}")
        if self.structure_axes not in ("inertial", "point"):
            raise ValueError(
                f"structure_axes: expected 'inertial' or 'point', got {self.structure_axes!r}"
            )

    @property
    def n_interfaces(self) -> int:
        """Number of interface nodes n_i (each coupled to one rigid interface point)."""
        return self.interface_positions.shape[0]

    def interface_dofs(self, i: int) -> np.ndarray:
        """Indices (into u_b) of interface i's boundary DOFs, ascending."""
        if not self.boundary_interfaces:
            return np.arange(self.n_boundary) if i == 0 else np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.asarray(self.boundary_interfaces) == i)

    @property
    def n_modes(self) -> int:
        """Number of fixed-interface modal coordinates k."""
        return self.mass.shape[0] - self.n_boundary

    # ------------------------------------------------------------------ builders

    @staticmethod
    def from_beam(
        length: float,
        youngs_modulus: float,
        density: float,
        area: float,
        second_moment_y: float,
        *,
        n_elements: int,
        n_modes: int,
        second_moment_z: float | None = None,
        torsion_constant: float | None = None,
        shear_modulus: float | None = None,
        planar: bool = True,
        attachment: str = "floating",
        modal_damping_ratio: float | Sequence[float] = 0.0,
        rayleigh: tuple[float, float] | None = None,
        output_nodes: Mapping[str, int | float | str] | None = None,
        axis_in_point_frame: Sequence[float] = (1.0, 0.0, 0.0),
        geometric_stiffening: bool = False,
        interfaces: Sequence[Interface] = (Interface(),),
    ) -> FlexModel:
        """Beam coupled at its ``interfaces`` (default: clamped at node 0); see
        :func:`euler_bernoulli_beam` and :mod:`rbcosim.flex.modelling.interface_nodes`. A floating beam takes
        one clamp at node 0 or, 3D, several interfaces
        (:mod:`rbcosim.flex.modelling.floating_multi`).

        ``output_nodes`` maps a name to ``"end"``, a node index (int) or a coordinate along the
        beam (float, m; Hermite-interpolated between nodes). Damping: ``modal_damping_ratio``
        (scalar or one per mode) on the modal block, or ``rayleigh = (alpha, beta)`` giving
        ``alpha M + beta K`` on all reduced coordinates.
        """
        beam_args = {
            "length": length,
            "youngs_modulus": youngs_modulus,
            "density": density,
            "area": area,
            "second_moment_y": second_moment_y,
            "n_elements": n_elements,
            "second_moment_z": second_moment_z,
            "torsion_constant": torsion_constant,
            "shear_modulus": shear_modulus,
        }
        beam = euler_bernoulli_beam(**beam_args, planar=planar)
        nodes = [beam_node(f, beam.nodes[:, 0]) for f in interfaces]
        damping_args = (modal_damping_ratio, rayleigh)
        if attachment == "floating" and len(interfaces) > 1:
            return _floating_multi_beam(beam, nodes, interfaces, n_modes, damping_args,
                                        output_nodes or {}, axis_in_point_frame,
                                        (youngs_modulus * area, density * area)
                                        if geometric_stiffening else (0.0, 0.0))
        if attachment == "floating" and (interfaces[0].released or nodes[0] != 0):
            raise InterfaceError(f"{interfaces[-1].where}: a floating beam with one coupling "
                                 "takes a clamp at node 0 (attachment = 'grounded' takes pins "
                                 "and balls; two couplings make a floating body with several "
                                 "interface nodes)")
        boundary, owner = boundary_of(beam.dof_map[:, 0], beam.dof_map[:, 1], nodes, interfaces)
        origin = beam.nodes[nodes[0]]
        names, rows, positions = _beam_outputs(beam, output_nodes or {})
        cb = craig_bampton(beam.mass, beam.stiffness, boundary, n_modes,
                           sign_references=(rows, _translation_rows(beam.dof_map[:, 1])))
        rows = rows @ cb.transformation
        damping = _damping(cb.mass, cb.stiffness, len(boundary), *damping_args)
        floating = None if attachment != "floating" else _beam_floating_inertia(
            beam, beam_args, cb, damping, density * area if geometric_stiffening else 0.0)
        return FlexModel(
            attachment=attachment, mass=frozen_array(cb.mass), stiffness=frozen_array(cb.stiffness),
            damping=frozen_array(damping), n_boundary=len(boundary),
            boundary_components=tuple(int(c) for c in beam.dof_map[boundary, 1]),
            frequencies_hz=frozen_array(cb.frequencies_hz),
            axis_rotation=frozen_array(shortest_arc(axis_in_point_frame)), structure_axes="point",
            output_names=names, output_rows=frozen_array(rows),
            output_positions=frozen_array(positions - origin), floating=floating,
            gravity_load=frozen_array(
                cb.transformation.T @ beam.mass @ _translation_columns(beam.dof_map[:, 1])),
            boundary_interfaces=tuple(int(i) for i in owner),
            interface_positions=frozen_array(beam.nodes[nodes] - origin),
        )

    @staticmethod
    def from_matrices(
        structure: StructureMatrices,
        *,
        n_modes: int | None = None,
        modal_damping_ratio: float | Sequence[float] = 0.0,
        rayleigh: tuple[float, float] | None = None,
        interfaces: Sequence[Interface] = (Interface(),),
        attachment: str = "grounded",
    ) -> FlexModel:
        """Body from imported matrices (first ``n_boundary`` coordinates = boundary, at the
        file's interface nodes ``boundary_nodes``).

        ``interfaces`` pick the coupled interface nodes (their ``node`` an index of the file's
        interface nodes) and the released rotations; the boundary coordinates of released
        components and of interface nodes no coupling uses become interior coordinates. A
        floating body has one clamped interface node.

        Grounded: gravity loads the structure with the file's ``gravity_load`` (physical load
        per unit gravity along x, y, z); without it, through the constraint modes of the
        boundary translations (support acceleration: exact when only the boundary DOFs hold
        the structure, not when it is also tied to ground).

        Floating: the structure (its ``layout``: node positions and DOF labels) is clamped to
        the interface point at its interface node, structure axes = the point's axes; the
        floating-frame terms and gravity come from the physical mass matrix
        (:func:`floating_inertia`, the beam's model). Check the file first with
        :func:`rbcosim.flex.io.matrices_io.check_floating`.

        The file's damping C (if any) is projected with the Craig–Bampton transformation and
        added to the scenario damping (modal ratio or Rayleigh).
        """
        n = structure.mass.shape[0]
        nodes = [imported_node(f, structure.interface_positions.shape[0]) for f in interfaces]
        damping_args = (modal_damping_ratio, rayleigh)
        if attachment == "floating" and len(interfaces) > 1:
            return _floating_multi_matrices(structure, nodes, interfaces, n_modes, damping_args)
        pad = np.full(n - structure.n_boundary, -1)
        comps_file = [COMPONENT_NAMES.index(c) for c in structure.boundary_dofs]
        boundary, owner = boundary_of(np.concatenate([structure.boundary_nodes, pad]),
                                      np.concatenate([comps_file, pad]), nodes, interfaces)
        n_b = boundary.size
        if attachment == "floating":
            if structure.layout is None:
                raise ValueError("layout: required for attachment 'floating' (node positions "
                                 "and DOF labels)")
            if n_b != structure.n_boundary or nodes[0] != 0:
                raise ValueError("attachment 'floating' with one coupling: a clamp at the "
                                 "file's interface node 0 (released rotations need attachment "
                                 "= 'grounded' or a second interface node)")
        origin = structure.interface_positions[nodes[0]]
        labels = (np.asarray(structure.layout.dof_map)[:, 1] if structure.layout is not None
                  else np.full(n, -1))  # without labels: the outputs, then every coordinate
        cb = craig_bampton(structure.mass, structure.stiffness, boundary, n_modes,
                           sign_references=(structure.output_rows if structure.output_names
                                            else np.zeros((0, n)), _translation_rows(labels)))
        damping = _damping(cb.mass, cb.stiffness, n_b, *damping_args)
        if structure.damping is not None:
            damping = damping + cb.reduce(structure.damping)
        damping = 0.5 * (damping + damping.T)
        comps = [comps_file[j] for j in boundary]
        rows = (structure.output_rows @ cb.transformation if structure.output_names
                else np.zeros((0, 3, cb.mass.shape[0])))
        common = {
            "mass": frozen_array(cb.mass), "stiffness": frozen_array(cb.stiffness),
            "damping": frozen_array(damping), "n_boundary": n_b, "boundary_components": tuple(comps),
            "frequencies_hz": frozen_array(cb.frequencies_hz),
            "output_names": tuple(structure.output_names), "output_rows": frozen_array(rows),
            "output_positions": frozen_array(structure.output_positions - origin),
            "boundary_interfaces": tuple(int(i) for i in owner),
            "interface_positions": frozen_array(structure.interface_positions[nodes] - origin),
        }
        return _matrices_model(structure, attachment, cb, damping, comps, common)


def _beam_floating_inertia(beam: BeamFE, beam_args: dict, cb, damping: np.ndarray,
                           stiffening_density: float) -> FloatingInertia:
    """A floating beam's inertia data (a planar beam's modes inside its 3D mass)."""
    beam3 = beam if not beam.planar else euler_bernoulli_beam(**beam_args, planar=False)
    n_b = cb.boundary_dofs.size
    return floating_inertia(
        NodalLayout(beam3.nodes - beam3.nodes[0], beam3.dof_map), beam3.mass, beam.dof_map,
        cb.transformation[:, n_b:], cb.stiffness[n_b:, n_b:], damping[n_b:, n_b:],
        stiffening_density)


def _matrices_model(structure: StructureMatrices, attachment: str, cb, damping: np.ndarray,
                    comps, common: dict) -> FlexModel:
    """The FlexModel of imported matrices after the reduction: floating (inertia from the
    physical mass) or grounded (gravity through the file's load or the support)."""
    n_b = common["n_boundary"]
    if attachment == "floating":
        layout = structure.layout
        floating = floating_inertia(layout, structure.mass, layout.dof_map,
                                    cb.transformation[:, n_b:], cb.stiffness[n_b:, n_b:],
                                    damping[n_b:, n_b:])
        return FlexModel(attachment="floating", structure_axes="point", floating=floating,
                         **common)
    load = structure.gravity_load
    if load is None:  # support acceleration: the boundary alone holds the structure
        load = structure.mass @ cb.transformation[:, :n_b] @ _translation_columns(comps)
    return FlexModel(attachment="grounded", structure_axes="inertial",
                     gravity_load=frozen_array(cb.transformation.T @ load), **common)


def _floating_multi_beam(beam: BeamFE, nodes, interfaces, n_modes, damping_args, outputs,
                         axis, stiffening) -> FloatingMultiModel:
    """A 3D beam floating at several interface nodes (:mod:`rbcosim.flex.modelling.floating_multi`)."""
    if beam.planar:
        raise InterfaceError(f"{interfaces[-1].where}: a floating beam with several couplings "
                             "is 3D: set planar = false in its flex_bodies table")
    origin = beam.nodes[nodes[0]]
    names, rows, positions = _beam_outputs(beam, outputs)
    return build_floating_multi(
        NodalLayout(beam.nodes - origin, beam.dof_map), beam.mass, beam.stiffness, nodes,
        interfaces, n_modes, lambda m, k, nb: _damping(m, k, nb, *damping_args),
        outputs=(names, rows, positions - origin), axis_rotation=shortest_arc(axis),
        stiffening=stiffening, sign_rows=_translation_rows(beam.dof_map[:, 1]))


def _floating_multi_matrices(structure: StructureMatrices, nodes, interfaces, n_modes,
                             damping_args) -> FloatingMultiModel:
    """Imported physical matrices floating at several of the file's interface nodes."""
    layout = structure.layout
    if layout is None:
        raise ValueError("layout: required for attachment 'floating' (node positions and DOF "
                         "labels)")
    dof_nodes = np.asarray(layout.dof_map)[:, 0]
    bnodes = np.asarray(structure.boundary_nodes)
    node_of = [int(dof_nodes[np.flatnonzero(bnodes == j)[0]]) for j in nodes]
    origin = layout.positions[node_of[0]]
    names = tuple(structure.output_names)
    rows = structure.output_rows if names else np.zeros((0, 3, structure.mass.shape[0]))
    positions = structure.output_positions + layout.positions[0] - origin
    return build_floating_multi(
        NodalLayout(layout.positions - origin, layout.dof_map), structure.mass,
        structure.stiffness, node_of, interfaces, n_modes,
        lambda m, k, nb: _damping(m, k, nb, *damping_args), extra_damping=structure.damping,
        outputs=(names, rows, positions),
        sign_rows=_translation_rows(np.asarray(layout.dof_map)[:, 1]))


def _translation_columns(components) -> np.ndarray:
    """(n, 3): 1 where coordinate i is the translation along axis j (components 0..5 per
    coordinate: x y z rx ry rz), 0 elsewhere: the coordinates of unit rigid translations."""
    comps = np.asarray(components, dtype=np.int64)
    return (comps[:, None] == np.arange(3)[None, :]).astype(float)


def _translation_rows(components) -> np.ndarray:
    """(n_t, n): the unit rows of the coordinates that are translations (components 0..2),
    in coordinate order: the second reference block of a mode's sign (craig_bampton)."""
    comps = np.asarray(components, dtype=np.int64)
    return np.eye(comps.size)[(comps >= 0) & (comps < 3)]


def _damping(m_cb, k_cb, n_b, ratio, rayleigh) -> np.ndarray:
    n = m_cb.shape[0]
    k = n - n_b
    ratios = np.broadcast_to(np.asarray(ratio, dtype=float), (k,)) if k else np.zeros(0)
    if np.any(ratios < 0) or not np.all(np.isfinite(ratios)):
        raise ValueError(f"modal_damping_ratio: expected finite values >= 0, got {ratio!r}")
    c = np.zeros((n, n))
    if rayleigh is not None:
        alpha, beta = (float(x) for x in rayleigh)
        c += alpha * m_cb + beta * k_cb
    if k and np.any(ratios > 0):
        m_ee = m_cb[n_b:, n_b:]
        k_ee = k_cb[n_b:, n_b:]
        omega = np.sqrt(np.clip(np.diag(k_ee) / np.diag(m_ee), 0.0, None))
        c[n_b:, n_b:] += np.diag(2.0 * ratios * omega * np.diag(m_ee))
    return c


def _beam_outputs(beam: BeamFE, spec: Mapping[str, int | float | str]):
    """Output names, their displacement rows on the beam's physical DOFs (n_out, 3, n_dof)
    and undeformed positions (n_out, 3) from node 0, m."""
    n_nodes = beam.nodes.shape[0]
    length = float(beam.nodes[-1, 0])
    names, rows, positions = [], [], []
    n_dof = beam.mass.shape[0]
    index = {(int(nd), int(c)): i for i, (nd, c) in enumerate(beam.dof_map)}
    for name, where in spec.items():
        if isinstance(where, str):
            if where != "end":
                raise ValueError(
                    f"output_nodes.{name}: expected 'end', a node index or a "
                    f"coordinate along the beam, got {where!r}"
                )
            x = length
        elif isinstance(where, (int, np.integer)) and not isinstance(where, bool):
            if not 0 <= where < n_nodes:
                raise ValueError(
                    f"output_nodes.{name}: node index out of range 0..{n_nodes - 1}, got {where}"
                )
            x = float(beam.nodes[where, 0])
        elif isinstance(where, float):
            if not 0.0 <= where <= length:
                raise ValueError(
                    f"output_nodes.{name}: coordinate out of [0, {length}] m, got {where}"
                )
            x = where
        else:  # ValueError like every other bad value here; the config layer maps it
            msg = f"output_nodes.{name}: expected 'end', a node index or a coordinate"
            raise ValueError(f"{msg} along the beam, got {where!r}")  # noqa: TRY004
        ell = length / (n_nodes - 1)
        e = min(int(x // ell), n_nodes - 2)
        xi = (x - e * ell) / ell
        n1, n2 = 1 - 3 * xi**2 + 2 * xi**3, ell * (xi - 2 * xi**2 + xi**3)
        n3, n4 = 3 * xi**2 - 2 * xi**3, ell * (-(xi**2) + xi**3)
        row = np.zeros((3, n_dof))

        def put(r, node, comp, value, row=row):
            i = index.get((node, comp))
            if i is not None:
                row[r, i] += value

        put(0, e, 0, 1 - xi)
        put(0, e + 1, 0, xi)
        for node, nv, ns in ((e, n1, n2), (e + 1, n3, n4)):
            put(1, node, 1, nv)
            put(1, node, 5, ns)  # theta_z = +v'
            put(2, node, 2, nv)
            put(2, node, 4, -ns)  # theta_y = -w'
        names.append(str(name))
        rows.append(row)
        positions.append([x, 0.0, 0.0])
    return (
        tuple(names),
        np.array(rows).reshape(len(names), 3, n_dof),
        np.array(positions, dtype=float).reshape(len(names), 3),
    )
