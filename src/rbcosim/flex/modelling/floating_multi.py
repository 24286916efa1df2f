"""A floating body with several interface nodes in 3D: its frame, coordinates and invariants.

**Frame (a 3D chord frame).** Origin at interface node 0; x along the line from node 0 to
node 1; the twist about that line from interface 0: y is the unit projection, on the plane
normal to x, of the structure's y axis carried by interface 0's rigid point (so interface 0
must hold the rotation about x: a clamp or a pin about y); z = x × y. The frame is a function
of the interface points' motions alone (:mod:`rbcosim.flex.runtime.floating_multi_frame`, exact in
large motion): nothing of the frame is integrated or exchanged.

**Coordinates.** By this definition six of the coupled DOFs vanish: node 0's x y z and rx,
node 1's y and z (a statically determinate 3-2-1 support). Every other coupled DOF (all the
held components of every interface: clamp, pin, ball, :mod:`rbcosim.flex.modelling.interface_nodes`) is a
boundary coordinate ``u_b``: its rigid point's displacement relative to the frame (node 1's
x is the stretch s of the line 0–1). Craig–Bampton with all coupled DOFs as boundary, the six
frame DOFs' columns dropped: ``u = T_e q``, ``q = [u_b; eta]`` (physical DOFs relative to
the frame, structure axes = frame axes), eta the fixed-interface modes.

**Equations** (linear floating frame, the node frame's derivation of :mod:`rbcosim.flex.runtime.body`
with T_e for the modes): the field-consistent absolute acceleration less gravity is
``acc = P(b, A) + T_e q'' + 2 D([w]x) T_e q' + D(A) T_e q`` with b = a_0 - g, w, alpha in frame
components, ``A = [alpha]x + [w]x [w]x``; Galerkin on T_e: ``M_qq q'' + E z = [f_b; 0]`` with
E the inertia invariants of :func:`rbcosim.flex.modelling.model.floating_inertia` (``E = -M_qq W``) and
z its input vector. u_b, u_b', u_b'' are prescribed by the points, so the eta rows give
eta'' and the u_b rows the boundary forces f_b. The frame DOFs' forces f6 follow from
Newton–Euler of the whole body: the interface forces' resultant (force, and moment about
node 0 with deformed lever arms) equals the rate of linear and angular momentum less the
weight (the first-moment and moment invariants S, Y), a 6x6 solve. Optional geometric
stiffening (generated beams along x): the bending modes gain ``K_g = ∫ N (v'ᵀv' + w'ᵀw') dx``
with the quasi-static axial force of the line 0–1,
``N = EA s/L + rho A [b_x (x - L/2) + (s''/L - w_y² - w_z²)(x²/2 - L²/6)]``.

**The stretch's spring is on the rigid side** (as for the chord frame, :mod:`rbcosim.flex.modelling.chord`): EA/L
of s (``stretch_stiffness``, the s–s entry of K_qq) is left out of f_b and the scenario adds
the spring ``NAME.stretch`` between interfaces 0 and 1's points (free length L).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rbcosim.flex.modelling.craig_bampton import craig_bampton
from rbcosim.flex.modelling.floating_inertia import _nodal_apply, floating_inertia
from rbcosim.flex.modelling.geometric import axial_field_matrices
from rbcosim.flex.modelling.interface_nodes import Interface, InterfaceError, boundary_of
from rbcosim.flex.modelling.nodal import NodalLayout, field_nodal
from rbcosim.model import frozen_array
from rbcosim.spatial.linalg3 import skew

#: The coupled DOFs that define the frame: (interface, component), components 0..5 = x..rz.
FRAME_DOFS = ((0, 0), (0, 1), (0, 2), (0, 3), (1, 1), (1, 2))
#: Per held rotation component, the rigid point's axis a and the component c of its image
#: w_a = R_rel e_a that measures it, with a sign: theta = sign * (w_a)_c (first order in the
#: small relative rotation; a pin about a measures its two held components from w_a).
ROTATION_MEASURES = {
    "clamp": {3: (1, 2, 1.0), 4: (2, 0, 1.0), 5: (1, 0, -1.0)},
    0: {4: (0, 2, -1.0), 5: (0, 1, 1.0)},
    1: {3: (1, 2, 1.0), 5: (1, 0, -1.0)},
    2: {3: (2, 1, -1.0), 4: (2, 0, 1.0)},
}


@dataclass(frozen=True)
class FloatingMultiModel:
    """The reduced floating body at n_i >= 2 interface nodes (immutable; module docstring).

    Attributes:
        attachment: "floating". axis_rotation: structure -> interface 0's point frame (3, 3).
        n_boundary: n_b; k = n_modes. boundary: (n_b, 2) int, (interface, component) of each
            u_b coordinate; stretch: the index of node 1's x in u_b.
        mass, stiffness, damping: (n_q, n_q) on q = [u_b; eta].
        inertia: E (n_q, 20 n_q + 15), ``M_qq q'' + E z = [f_b; 0]``.
        total_mass kg; first_moment (3,) kg·m; modal_first_moment S (3, n_q);
        spin_inertia (3, 3); moment_invariants Y (3 (n_q + 1), 12 + 13 n_q), structure frame.
        interface_positions: (n_i, 3) undeformed, relative to node 0, m (node 1 on +x).
        released: per interface, the released rotation components.
        stretch_stiffness: N/m, the s–s entry of K_qq (the rigid side's spring).
        geometric: (3, n_q, n_q) ∫ f (v'ᵀv' + w'ᵀw') dx on T_e for f = 1, x − L/2,
            x²/2 − L²/6; stiffening: (EA, rho A) or (0, 0) without it.
        output_names, output_rows (n_out, 3, n_q), output_positions (n_out, 3).
        frequencies_hz: fixed-interface frequencies (k,).
        kinetic: Z (6 + 4 n_q, 6 + 4 n_q): the kinetic energy ``½ cᵀ Z c`` of the
            field-consistent nodal velocity ``P(v_0, [w]x) + T_e q' + D([w]x) T_e q`` with
            ``c = [v_0, w, q', kron(w, q)]`` (frame components; :func:`kinetic_invariants`).
    """

    axis_rotation: np.ndarray
    n_boundary: int
    boundary: np.ndarray
    stretch: int
    mass: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    inertia: np.ndarray
    total_mass: float
    first_moment: np.ndarray
    modal_first_moment: np.ndarray
    spin_inertia: np.ndarray
    moment_invariants: np.ndarray
    interface_positions: np.ndarray
    released: tuple[tuple[int, ...], ...]
    stretch_stiffness: float
    geometric: np.ndarray
    stiffening: tuple[float, float]
    output_names: tuple[str, ...]
    output_rows: np.ndarray
    output_positions: np.ndarray
    frequencies_hz: np.ndarray
    kinetic: np.ndarray
    attachment: str = "floating"

    @property
    def n_interfaces(self) -> int:
        return self.interface_positions.shape[0]

    @property
    def n_modes(self) -> int:
        return self.mass.shape[0] - self.n_boundary


def _frame_checks(layout: NodalLayout, nodes: Sequence[int],
                  interfaces: Sequence[Interface]) -> None:
    """InterfaceError unless interface 0 holds the twist and node 1 lies on +x from node 0."""
    if interfaces[0].released not in ((), (4,)):
        raise InterfaceError(f"{interfaces[0].where}.type: the first coupling of a floating "
                             "body with several interface nodes must be a clamp or a pin "
                             "about y (its frame takes the twist about the line to the second "
                             "interface node from it)")
    x1 = layout.positions[nodes[1]] - layout.positions[nodes[0]]
    if x1[0] <= 0 or np.hypot(x1[1], x1[2]) > 1e-9 * np.linalg.norm(x1):
        raise InterfaceError(f"{interfaces[1].where}.node: a floating body with several "
                             "interface nodes needs its second interface node on the structure's "
                             f"+x axis from the first, got the offset {x1.tolist()} m")


def build_floating_multi(layout: NodalLayout, mass: np.ndarray, stiffness: np.ndarray,
                         nodes: Sequence[int], interfaces: Sequence[Interface], n_modes,
                         damping_fn, *, extra_damping: np.ndarray | None = None,
                         outputs=None, axis_rotation=None,
                         stiffening: tuple[float, float] = (0.0, 0.0),
                         sign_rows: np.ndarray | None = None) -> FloatingMultiModel:
    """The model of a structure (physical ``mass``, ``stiffness`` on ``layout``'s coordinates,
    positions relative to interface node 0) coupled at layout nodes ``nodes`` by
    ``interfaces``. ``damping_fn(m_cb, k_cb, n_b)`` gives the scenario damping on the reduced
    coordinates; ``extra_damping`` a physical C; ``outputs`` (names, rows (n_out, 3, n) on the
    physical coordinates, positions (n_out, 3) from node 0); ``stiffening`` (EA, rho A) of a
    beam along x (0, 0: none)."""
    _frame_checks(layout, nodes, interfaces)
    dof_map = np.asarray(layout.dof_map)
    held, owner = boundary_of(dof_map[:, 0], dof_map[:, 1], nodes, interfaces)
    comps = dof_map[held, 1]
    is_frame = np.array([(int(o), int(c)) in FRAME_DOFS for o, c in zip(owner, comps)])
    if is_frame.sum() != len(FRAME_DOFS):
        raise InterfaceError(f"{interfaces[0].where}: the frame needs node DOFs x y z rx at the "
                             "first interface node and y z at the second (a node with "
                             "rotations: tie a solid's face to a 6-DOF node)")
    names, rows, positions = outputs or ((), np.zeros((0, 3, 0)), np.zeros((0, 3)))
    axis_rotation = np.eye(3) if axis_rotation is None else axis_rotation
    refs = (rows.reshape(-1, mass.shape[0]) if len(names) else np.zeros((0, mass.shape[0])),
            sign_rows if sign_rows is not None else np.zeros((0, mass.shape[0])))
    cb = craig_bampton(mass, stiffness, held, n_modes, sign_references=refs)
    n_c = held.size
    keep = np.concatenate([np.flatnonzero(~is_frame), np.arange(n_c, cb.mass.shape[0])])
    t_e = cb.transformation[:, keep]
    n_b = int((~is_frame).sum())
    m_qq, k_qq = cb.mass[np.ix_(keep, keep)], cb.stiffness[np.ix_(keep, keep)]
    c_qq = damping_fn(m_qq, k_qq, n_b)
    if extra_damping is not None:
        c_qq = c_qq + t_e.T @ extra_damping @ t_e
    c_qq = 0.5 * (c_qq + c_qq.T)
    fl = floating_inertia(layout, mass, dof_map, t_e, k_qq, c_qq)
    boundary = np.stack([owner[~is_frame], comps[~is_frame]], axis=1)
    stretch = int(np.flatnonzero((boundary[:, 0] == 1) & (boundary[:, 1] == 0))[0])
    ks = float(k_qq[stretch, stretch])
    geometric = np.zeros((3, t_e.shape[1], t_e.shape[1]))
    if stiffening[0] > 0.0:
        length = float(layout.positions[nodes[1], 0])
        xs = layout.positions[:, 0]
        fields = (lambda x: np.ones_like(x), lambda x: x - 0.5 * length,
                  lambda x: 0.5 * x**2 - length**2 / 6.0)
        idx = layout.full_index
        for j, g in enumerate(axial_field_matrices(xs, fields)):
            geometric[j] = t_e.T @ g[np.ix_(idx, idx)] @ t_e
    return FloatingMultiModel(
        axis_rotation=frozen_array(axis_rotation), n_boundary=n_b, boundary=boundary.astype(np.int64),
        stretch=stretch, mass=frozen_array(m_qq), stiffness=frozen_array(k_qq), damping=frozen_array(c_qq),
        inertia=frozen_array(-m_qq @ fl.ode_matrix), total_mass=fl.total_mass,
        first_moment=fl.first_moment, modal_first_moment=fl.modal_first_moment,
        spin_inertia=fl.spin_inertia, moment_invariants=fl.moment_invariants,
        interface_positions=frozen_array(layout.positions[list(nodes)]),
        released=tuple(tuple(f.released) for f in interfaces), stretch_stiffness=ks,
        geometric=frozen_array(geometric), stiffening=(float(stiffening[0]), float(stiffening[1])),
        output_names=tuple(names), output_rows=frozen_array(rows @ t_e if len(names) else
                                                  np.zeros((0, 3, t_e.shape[1]))),
        output_positions=frozen_array(positions), frequencies_hz=frozen_array(cb.frequencies_hz),
        kinetic=frozen_array(kinetic_invariants(layout, mass, t_e)))


def kinetic_invariants(layout: NodalLayout, mass: np.ndarray, t_e: np.ndarray) -> np.ndarray:
    """Z = Vᵀ M V with V's columns the nodal velocities per unit v_0 (3), w (3), q' (n_q)
    and kron(w, q) (3 n_q), the nodal maps of the floating equations
    (:func:`rbcosim.flex.modelling.nodal.field_nodal`, ``D`` of :mod:`rbcosim.flex.runtime.body`)."""
    nodes, index = layout.positions, layout.full_index
    full = np.zeros((6 * nodes.shape[0], t_e.shape[1]))
    full[index] = t_e
    eye, zero = np.eye(3), np.zeros((3, 3))
    cols = [field_nodal(nodes, e, zero)[index, None] for e in eye]
    cols += [field_nodal(nodes, np.zeros(3), skew(e))[index, None] for e in eye]
    cols += [t_e] + [_nodal_apply(skew(e), full)[index] for e in eye]
    v = np.hstack(cols)
    return v.T @ (mass @ v)
