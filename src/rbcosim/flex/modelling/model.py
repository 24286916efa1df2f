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
from rbcosim.flex.modelling.geometric import axial_load_matrices
from rbcosim.flex.modelling.interface_nodes import (
    Interface,
    InterfaceError,
    beam_node,
    boundary_of,
    imported_node,
)
from rbcosim.flex.modelling.nodal import NodalLayout, field_nodal, rotation_dofs
from rbcosim.spatial.rotation import shortest_arc, skew

if TYPE_CHECKING:  # the structure file's contents, read by rbcosim.flex.io
    from rbcosim.flex.io.matrices_io import StructureMatrices

ATTACHMENTS = ("grounded", "floating")
#: What the refusals of a floating body with several couplings say is missing.
FLOATING_MULTI_NODE = "a floating body with several interface nodes in 3D is not supported yet"


def _readonly(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class FloatingInertia:
    """Physical inertia data for the floating frame terms (beam frame, interface node at 0).

    Attributes:
        mass: 3D consistent mass matrix, shape (n, n), n = 6 * n_nodes, DOFs node-major with
            components (u_x, u_y, u_z, theta_x, theta_y, theta_z).
        modes: fixed-interface modes embedded in the 3D DOFs, shape (n, k) (planar models have
            zero out-of-plane rows).
        nodes: node positions relative to the interface node, shape (n_nodes, 3), m.
        total_mass: kg. first_moment: m * r_cm, (3,), kg·m.
        modal_first_moment: S = P_t^T M Phi, (3, k), kg·m per unit eta: first moment of the
            elastic displacement field, ``integral rho u = S @ eta``.
        spin_inertia: (3, 3), kg·m², the sections' rotary (torsional) inertia, which the nodal
            field terms carry for angular acceleration but not for the gyroscopic term
            ``omega x (J omega)``; the wrench adds that term so a rigid beam's moment is exact.
        ode_matrix: W, shape (k, 20k + 15): ``eta_dd = W @ z`` with
            ``z = [eta, eta_d, b, alpha, kron(w, w), kron(w, eta_d), kron(alpha, eta),
            kron(kron(w, w), eta), kron(b, eta)]``, all structure-frame components,
            b = a_p - g (the last block: geometric stiffening, zero without it).
        moment_invariants: Y, (3 (k + 1), 12 + 13k): the wrench's moment from the state at a
            cost independent of the mesh (:func:`moment_invariants`).
        geometric_stiffening: whether ode_matrix carries the geometric stiffness.
    """

    mass: np.ndarray
    modes: np.ndarray
    nodes: np.ndarray
    total_mass: float
    first_moment: np.ndarray
    modal_first_moment: np.ndarray
    spin_inertia: np.ndarray
    ode_matrix: np.ndarray
    moment_invariants: np.ndarray
    geometric_stiffening: bool = False


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
    axis_rotation: np.ndarray = field(default_factory=lambda: _readonly(np.eye(3)))
    structure_axes: str = "inertial"
    output_names: tuple[str, ...] = ()
    output_rows: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((0, 3, 0))))
    output_positions: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((0, 3))))
    floating: FloatingInertia | None = None
    gravity_load: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((0, 3))))
    boundary_interfaces: tuple[int, ...] = ()
    interface_positions: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((1, 3))))

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
        :func:`euler_bernoulli_beam` and :mod:`rbcosim.flex.modelling.interface_nodes`. Floating beams take
        one clamped interface.

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
        if attachment == "floating" and (len(interfaces) != 1 or interfaces[0].released
                                         or nodes[0] != 0):
            raise InterfaceError(f"{interfaces[-1].where}: a floating beam takes one coupling, "
                                 "a clamp at node 0 (attachment = 'grounded' takes several "
                                 "interface nodes, pins and balls; frame = 'chord' a planar rod "
                                 f"pinned at both ends; {FLOATING_MULTI_NODE})")
        boundary, owner = boundary_of(beam.dof_map[:, 0], beam.dof_map[:, 1], nodes, interfaces)
        origin = beam.nodes[nodes[0]]
        names, rows, positions = _beam_outputs(beam, output_nodes or {})
        cb = craig_bampton(beam.mass, beam.stiffness, boundary, n_modes,
                           sign_references=(rows, _translation_rows(beam.dof_map[:, 1])))
        rows = rows @ cb.transformation
        damping = _damping(cb.mass, cb.stiffness, len(boundary), modal_damping_ratio, rayleigh)
        axis_rotation = shortest_arc(axis_in_point_frame)
        positions = positions - origin
        floating = None
        if attachment == "floating":
            beam3 = beam if not planar else euler_bernoulli_beam(**beam_args, planar=False)
            n_b = len(boundary)
            floating = floating_inertia(
                NodalLayout(beam3.nodes - beam3.nodes[0], beam3.dof_map), beam3.mass,
                beam.dof_map, cb.transformation[:, n_b:], cb.stiffness[n_b:, n_b:],
                damping[n_b:, n_b:], density * area if geometric_stiffening else 0.0)
        return FlexModel(
            attachment=attachment,
            mass=_readonly(cb.mass),
            stiffness=_readonly(cb.stiffness),
            damping=_readonly(damping),
            n_boundary=len(boundary),
            boundary_components=tuple(int(c) for c in beam.dof_map[boundary, 1]),
            frequencies_hz=_readonly(cb.frequencies_hz),
            axis_rotation=_readonly(axis_rotation),
            structure_axes="point",
            output_names=names,
            output_rows=_readonly(rows),
            output_positions=_readonly(positions),
            floating=floating,
            gravity_load=_readonly(
                cb.transformation.T @ beam.mass @ _translation_columns(beam.dof_map[:, 1])),
            boundary_interfaces=tuple(int(i) for i in owner),
            interface_positions=_readonly(beam.nodes[nodes] - origin),
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
        pad = np.full(n - structure.n_boundary, -1)
        comps_file = [COMPONENT_NAMES.index(c) for c in structure.boundary_dofs]
        boundary, owner = boundary_of(np.concatenate([structure.boundary_nodes, pad]),
                                      np.concatenate([comps_file, pad]), nodes, interfaces)
        n_b = boundary.size
        if attachment == "floating":
            if structure.layout is None:
                raise ValueError("layout: required for attachment 'floating' (node positions "
                                 "and DOF labels)")
            if len(interfaces) != 1 or n_b != structure.n_boundary or nodes[0] != 0:
                raise ValueError("attachment 'floating': one clamp at the file's interface "
                                 "node 0 (several interface nodes and released rotations need "
                                 f"attachment = 'grounded'; {FLOATING_MULTI_NODE})")
        origin = structure.interface_positions[nodes[0]]
        labels = (np.asarray(structure.layout.dof_map)[:, 1] if structure.layout is not None
                  else np.full(n, -1))  # without labels: the outputs, then every coordinate
        cb = craig_bampton(structure.mass, structure.stiffness, boundary, n_modes,
                           sign_references=(structure.output_rows if structure.output_names
                                            else np.zeros((0, n)), _translation_rows(labels)))
        damping = _damping(cb.mass, cb.stiffness, n_b, modal_damping_ratio, rayleigh)
        if structure.damping is not None:
            damping = damping + cb.reduce(structure.damping)
        damping = 0.5 * (damping + damping.T)
        comps = [comps_file[j] for j in boundary]
        rows = (
            structure.output_rows @ cb.transformation
            if structure.output_names
            else (np.zeros((0, 3, cb.mass.shape[0])))
        )
        common = {
            "mass": _readonly(cb.mass),
            "stiffness": _readonly(cb.stiffness),
            "damping": _readonly(damping),
            "n_boundary": n_b,
            "boundary_components": tuple(comps),
            "frequencies_hz": _readonly(cb.frequencies_hz),
            "output_names": tuple(structure.output_names),
            "output_rows": _readonly(rows),
            "output_positions": _readonly(structure.output_positions - origin),
            "boundary_interfaces": tuple(int(i) for i in owner),
            "interface_positions": _readonly(structure.interface_positions[nodes] - origin),
        }
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
                         gravity_load=_readonly(cb.transformation.T @ load), **common)


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


def _nodal_block(b: np.ndarray) -> np.ndarray:
    """(6, 6): one node's map (u, theta) -> (B u, rotation_dofs(B [theta]x))."""
    q = np.stack([rotation_dofs(b @ skew(e)) for e in np.eye(3)], axis=1)
    block = np.zeros((6, 6))
    block[:3, :3] = b
    block[3:, 3:] = q
    return block


def _nodal_operator(b: np.ndarray, n_nodes: int) -> np.ndarray:
    """Matrix of the nodal map (u, theta) -> (B u, rotation_dofs(B [theta]x)), (6n, 6n)."""
    return np.kron(np.eye(n_nodes), _nodal_block(b))


def _nodal_apply(b: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``_nodal_operator(b, n) @ phi`` node by node, phi (6n, k) -> (6n, k)."""
    k = phi.shape[1]
    n = phi.shape[0] // 6
    return np.einsum("ab,nbk->nak", _nodal_block(b), phi.reshape(n, 6, k)).reshape(6 * n, k)


def moment_invariants(m3: np.ndarray, nodes: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """The floating wrench's moment invariants Y, (3 (k + 1), 12 + 13k), structure frame.

    The nodal moment ``sum_i (X_i + u_i) x f_t,i + f_r,i`` of ``f = M acc`` (module docstring
    of :mod:`rbcosim.flex.runtime.body`) is bilinear: ``acc = V c`` with the inputs
    ``c = [b, A (row-major), eta'', kron(w, eta'), kron(A, eta)]`` and the lever arms affine in
    eta, so the moment is ``(Y_0 + sum_m eta_m Y_m) c`` with ``Y = [Y_0; Y_1; ...; Y_k]``
    (3 rows each) computed here once: a step's cost no longer depends on the mesh."""
    eye, zero = np.eye(3), np.zeros((3, 3))
    units = [np.outer(eye[i], eye[j]) for i in range(3) for j in range(3)]
    cols = [field_nodal(nodes, e, zero)[:, None] for e in eye]
    cols += [field_nodal(nodes, np.zeros(3), u)[:, None] for u in units]
    cols += [phi] + [2.0 * _nodal_apply(skew(e), phi) for e in eye]
    cols += [_nodal_apply(u, phi) for u in units]
    f = (m3 @ np.hstack(cols)).reshape(nodes.shape[0], 6, -1)  # node, component, input
    eps = np.zeros((3, 3, 3))
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    y0 = np.einsum("jab,na,nbt->jt", eps, nodes, f[:, :3]) + f[:, 3:].sum(axis=0)
    arms = phi.reshape(nodes.shape[0], 6, phi.shape[1])[:, :3]  # node, axis, mode
    y1 = np.einsum("jab,nam,nbt->mjt", eps, arms, f[:, :3])
    return np.vstack([y0, y1.reshape(-1, y0.shape[1])])


def floating_inertia(layout: NodalLayout, mass: np.ndarray, mode_dofs: np.ndarray,
                     modes: np.ndarray, k_ee: np.ndarray, c_ee: np.ndarray,
                     stiffening_density: float = 0.0) -> FloatingInertia:
    """The floating frame's inertia data of any structure described by nodes and DOF labels.

    ``mass`` (n, n) is the physical mass matrix on the coordinates ``layout.dof_map`` labels;
    ``modes`` (n_m, k) the fixed-interface modes on coordinates labelled ``mode_dofs``
    (n_m, 2) (node, component), e.g. a planar beam's in-plane DOFs inside its 3D mass;
    ``k_ee``, ``c_ee`` (k, k) their modal stiffness and damping. Both are embedded in the
    all-six-components node-major layout the kernels use (absent components: zero mass, zero
    mode rows). ``stiffening_density`` (rho A, kg/m; 0: none) scales the geometric stiffness of
    the inertial axial load of a beam along x (:mod:`rbcosim.flex.modelling.geometric`)."""
    nodes = layout.positions
    n_nodes = nodes.shape[0]
    k = modes.shape[1]
    index = layout.full_index
    m3 = np.zeros((6 * n_nodes, 6 * n_nodes))
    m3[np.ix_(index, index)] = mass
    phi = np.zeros((6 * n_nodes, k))
    phi[6 * mode_dofs[:, 0] + mode_dofs[:, 1], :] = modes
    eye = np.eye(3)
    zero = np.zeros(3)
    p0 = np.stack([field_nodal(nodes, e, np.zeros((3, 3))) for e in eye], axis=1)
    total_mass = float(p0[:, 0] @ m3 @ p0[:, 0])
    # first_moment_i = sum of m x_i: the field x -> e_i x_i tested with unit translation e_i.
    first_moment = np.array(
        [p0[:, i] @ m3 @ field_nodal(nodes, zero, np.outer(eye[i], eye[i])) for i in range(3)]
    )
    spin = np.zeros((n_nodes, 6))
    spin[:, 3] = 1.0
    spin_inertia = np.zeros((3, 3))
    spin_inertia[0, 0] = spin.ravel() @ m3 @ spin.ravel()
    pt_m = phi.T @ m3
    m_ee = pt_m @ phi
    minv = np.linalg.inv(m_ee) if k else np.zeros((0, 0))
    sk = [skew(e) for e in eye]
    l0 = pt_m @ p0
    l_alpha = np.stack([pt_m @ field_nodal(nodes, zero, s) for s in sk], axis=1)
    l_ww = np.stack(
        [pt_m @ field_nodal(nodes, zero, sk[i] @ sk[j]) for i in range(3) for j in range(3)],
        axis=1,
    )
    g = [pt_m @ _nodal_apply(s, phi) for s in sk]
    h = [pt_m @ _nodal_apply(sk[i] @ sk[j], phi) for i in range(3) for j in range(3)]
    # Geometric stiffness -b_x K_b + (w_y² + w_z²) K_c: kron(w, w) entries yy (4) and zz (8).
    gb = np.zeros((k, 3 * k))
    if stiffening_density > 0.0:
        k_b, k_c = (phi.T @ g_e @ phi
                    for g_e in axial_load_matrices(nodes[:, 0], stiffening_density))
        h[4] = h[4] + k_c
        h[8] = h[8] + k_c
        gb[:, :k] = -k_b
    blocks = [k_ee, c_ee, l0, l_alpha, l_ww, 2.0 * np.hstack(g), np.hstack(g), np.hstack(h), gb]
    w = -minv @ np.hstack(blocks) if k else np.zeros((0, 15))
    return FloatingInertia(
        mass=_readonly(m3),
        modes=_readonly(phi),
        nodes=_readonly(nodes),
        total_mass=total_mass,
        first_moment=_readonly(first_moment),
        modal_first_moment=_readonly(p0.T @ m3 @ phi),
        spin_inertia=_readonly(spin_inertia),
        ode_matrix=_readonly(w),
        moment_invariants=_readonly(moment_invariants(m3, nodes, phi)),
        geometric_stiffening=stiffening_density > 0.0,
    )
