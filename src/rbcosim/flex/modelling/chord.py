"""Chord frame: a floating planar beam pinned at both ends (bending in the inertial x–z plane).

Frame: origin at the first pin A, x axis along the chord towards the second pin B, y the
inertial +y (the pins' axis), z = x × y. Both pins follow rigid interface points; the frame's
motion is a function of the two points' motions only (no rotation of either point enters):

    d = p_B - p_A,  l = |d| = L + s,  e_x = d / l,
    s' = d'·e_x,  w = -d'·e_z / l,  s'' = d''·e_x + l w²,  alpha = -(d''·e_z + 2 s' w) / l,

w and alpha the frame's angular velocity and acceleration about +y. The elastic coordinates are
``y = [s; eta]``: the chord's stretch s (m; its Craig–Bampton constraint mode is the uniform
axial strain s/L) and the pinned–pinned fixed-interface modes eta (both ends' translations held
in the frame, rotations free: the sine modes of a pinned–pinned rod), mass-normalised.

Equations (frame components, FE nodal DOFs q = T y of the planar beam, field u = N(X) q):
the inertial acceleration of the material point X is ``b + alpha E p - w² p + 2 w E u' + u''``
with ``p = (X, 0) + u``, ``b`` the frame components of ``a_A - g`` and ``E (x, z) = (z, -x)``
(= e_y × p). Galerkin with the consistent fields gives

    M q'' + 2 w G q' + (K - w² M + alpha G) q + P b + alpha e - w² c = f,

``M = ∫ρA NᵀN``, ``G = ∫ρA NᵀEN`` (skew), ``P = ∫ρA Nᵀ``, ``e = ∫ρA NᵀE(X, 0)``, ``c = ∫ρA
Nᵀ(X, 0)`` (4-point Gauss: exact), and ``f`` nonzero only on the four pinned translations: the
pins' forces on the beam. Projected on the kept modes it is the modal ODE; projected on the
pins' Craig–Bampton constraint modes (the linear fields 1 - X/L and X/L along and across the
chord) it gives the pin forces, so the total force is exactly the rate of linear momentum.
The pin forces leave out the stretch's stiffness EA/L: the rigid side carries it as a spring
between the two points (:mod:`rbcosim.scenario.chord_spring`). This is the linear floating frame of
reference, exact in the frame's (large) motion, with a linear elastic field; optionally the
bending modes gain the geometric stiffness of the chord's quasi-static axial force
(`rbc_fx_chord_residual`, librbcosim/flex/chord.h). No rotary inertia of the sections
(Euler–Bernoulli, like :mod:`rbcosim.flex.modelling.beam`).

Limits: planar only (the pins must move in an x–z plane; out-of-plane components of their
motion are ignored). A 3D chord frame needs a rotation about the chord, taken e.g. from one
end's rotation, and the out-of-plane modes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbcosim.flex.modelling.beam import euler_bernoulli_beam
from rbcosim.flex.modelling.craig_bampton import craig_bampton

_GAUSS_X, _GAUSS_W = np.polynomial.legendre.leggauss(4)
_E = np.array([[0.0, 1.0], [-1.0, 0.0]])  # e_y × (x, z) in (x, z) components


def _field_rows(ell: float, xi: float) -> np.ndarray:
    """N (2, 6) at xi in [0, 1] of an element on its DOFs (u_x, u_z, theta_y) x 2 nodes:
    rows u_x (linear) and u_z (Hermite, theta_y = -w')."""
    n = np.zeros((2, 6))
    n[0, 0], n[0, 3] = 1.0 - xi, xi
    n[1, 1] = 1.0 - 3 * xi**2 + 2 * xi**3
    n[1, 2] = -ell * (xi - 2 * xi**2 + xi**3)
    n[1, 4] = 3 * xi**2 - 2 * xi**3
    n[1, 5] = -ell * (-(xi**2) + xi**3)
    return n


def _slope_row(ell: float, xi: float) -> np.ndarray:
    """dw/dx (6,) at xi of an element (the derivative of the u_z row of :func:`_field_rows`)."""
    return np.array([0.0, (-6 * xi + 6 * xi**2) / ell, -(1 - 4 * xi + 3 * xi**2), 0.0,
                     (6 * xi - 6 * xi**2) / ell, -(-2 * xi + 3 * xi**2)])


@dataclass(frozen=True)
class ChordModel:
    """The reduced chord-frame beam (immutable; see the module docstring).

    Reduced coordinates ``y = [s; eta]`` (1 + k). Matrices on y: ``mass``, ``stiffness``,
    ``gyro`` (G), ``load_b`` (P, (1 + k, 2), per m/s² of b), ``load_alpha`` (e), ``load_w2``
    (c), ``geometric`` (3, k, k): ∫ f(x) w'ᵀw' dx on the modes for f = 1, x − L/2, x²/2 −
    L²/6 (zero without stiffening); the same projected on the pins' constraint modes (rows
    A_x, A_z, B_x, B_z) for the pin forces: ``pin_mass``, ``pin_stiffness`` (its stretch
    column zero: that spring is on the rigid side), ``pin_gyro`` (4, 1 + k), ``pin_b`` (4, 2),
    ``pin_alpha``, ``pin_w2`` (4,), ``pin_geometric`` (3, 4, k). ``axial_stiffness`` EA/L N/m,
    ``line_density`` ρA kg/m. ``frequencies_hz``: the pinned–pinned modes' (k,). ``output_names`` /
    ``output_rows`` (n_out, 2, 1 + k): elastic (u_x, u_z) of output node j in the frame =
    ``output_rows[j] @ y``; ``output_x`` (n_out,) their undeformed positions along the chord, m.
    """

    length: float
    total_mass: float
    mass: np.ndarray
    stiffness: np.ndarray
    gyro: np.ndarray
    load_b: np.ndarray
    load_alpha: np.ndarray
    load_w2: np.ndarray
    pin_mass: np.ndarray
    pin_stiffness: np.ndarray
    pin_gyro: np.ndarray
    pin_b: np.ndarray
    pin_alpha: np.ndarray
    pin_w2: np.ndarray
    frequencies_hz: np.ndarray
    output_names: tuple[str, ...]
    output_rows: np.ndarray
    output_x: np.ndarray
    axial_stiffness: float = 0.0
    line_density: float = 0.0
    geometric: np.ndarray = field(default_factory=lambda: np.zeros((3, 0, 0)))
    pin_geometric: np.ndarray = field(default_factory=lambda: np.zeros((3, 4, 0)))

    attachment = "floating"
    n_boundary = 1  # the stretch s
    n_interfaces = 2  # the pins A and B

    @property
    def n_modes(self) -> int:
        return self.mass.shape[0] - 1

    @property
    def modal_rows(self) -> tuple:
        """The eta rows for :mod:`rbcosim.flex.runtime.chord_kernels`."""
        return (self.mass[1:], self.gyro[1:], self.stiffness[1:], self.load_b[1:],
                self.load_alpha[1:], self.load_w2[1:], self.geometric)

    @property
    def pin_rows(self) -> tuple:
        """The pin rows (A_x, A_z, B_x, B_z) for :mod:`rbcosim.flex.runtime.chord_kernels`."""
        return (self.pin_mass, self.pin_gyro, self.pin_stiffness, self.pin_b, self.pin_alpha,
                self.pin_w2, self.pin_geometric)

    @property
    def params(self) -> np.ndarray:
        """[L m, EA/L N/m, rho A kg/m]."""
        return np.array([self.length, self.axial_stiffness, self.line_density])

    @staticmethod
    def from_beam(length: float, youngs_modulus: float, density: float, area: float,
                  second_moment_y: float, *, n_elements: int, n_modes: int,
                  output_nodes: dict[str, float] | None = None,
                  geometric_stiffening: bool = False) -> ChordModel:
        """Uniform Euler–Bernoulli beam (SI) pinned at both ends; ``output_nodes`` maps a name
        to a coordinate along the chord (m, 0..L; "end" = L); ``geometric_stiffening``: the
        bending modes stiffen by the axial force (`rbc_fx_chord_residual`,
        librbcosim/flex/chord.h)."""
        beam = euler_bernoulli_beam(length, youngs_modulus, density, area, second_moment_y,
                                    n_elements=n_elements, planar=True)
        nn = n_elements + 1
        pins = np.array([0, 1, 3 * (nn - 1), 3 * (nn - 1) + 1])
        ell = length / n_elements
        rho_a = density * area
        n_dof = 3 * nn
        names, physical, xs = [], [], []
        for name, where in (output_nodes or {}).items():
            x = length if where == "end" else float(where)
            if not 0.0 <= x <= length:
                raise ValueError(f"output_nodes.{name}: coordinate out of [0, {length}] m, "
                                 f"got {where!r}")
            e = min(int(x / ell), n_elements - 1)
            row = np.zeros((2, n_dof))
            row[:, 3 * e:3 * e + 6] = _field_rows(ell, x / ell - e)
            names.append(name)
            physical.append(row)
            xs.append(x)
        # Mode signs (craig_bampton.mode_signs): the outputs' (u_x, u_z), then u_x, u_z of
        # every node; the pins' translations are boundary DOFs.
        translations = np.eye(n_dof)[np.arange(n_dof) % 3 != 2]
        cb = craig_bampton(beam.mass, beam.stiffness, pins, n_modes,
                           sign_references=(np.reshape(physical, (-1, n_dof)), translations))
        t = cb.transformation[:, [2, *range(4, 4 + n_modes)]]  # [s (B_x), eta]
        tb = cb.transformation[:, :4]  # the pins' constraint modes (forces: virtual work)
        mass, gyro = np.zeros((n_dof, n_dof)), np.zeros((n_dof, n_dof))
        load_b, load_alpha, load_w2 = np.zeros((n_dof, 2)), np.zeros(n_dof), np.zeros(n_dof)
        geo = np.zeros((3, n_dof, n_dof))  # ∫ f(x) w'ᵀw' dx, f = 1, x - L/2, x²/2 - L²/6
        for e in range(n_elements):
            o = slice(3 * e, 3 * e + 6)
            for xg, wg in zip(0.5 * (_GAUSS_X + 1.0), 0.5 * _GAUSS_W * ell, strict=True):
                n = _field_rows(ell, xg)
                x = (e + xg) * ell
                mass[o, o] += rho_a * wg * n.T @ n
                gyro[o, o] += rho_a * wg * n.T @ _E @ n
                load_b[o] += rho_a * wg * n.T
                load_alpha[o] += rho_a * wg * n.T @ (_E @ np.array([x, 0.0]))
                load_w2[o] += rho_a * wg * x * n[0]
                slope = _slope_row(ell, xg)
                for j, f in enumerate((1.0, x - length / 2, x * x / 2 - length**2 / 6)):
                    geo[j, o, o] += wg * f * np.outer(slope, slope)
        if not geometric_stiffening:
            geo[:] = 0.0
        phi = t[:, 1:]
        k = beam.stiffness
        pin_stiffness = tb.T @ k @ t
        pin_stiffness[:, 0] = 0.0  # the stretch's spring EA/L: on the rigid side
        rows = [row @ t for row in physical]

        def ro(a):
            a = np.array(a, dtype=float)
            a.setflags(write=False)
            return a

        return ChordModel(
            length=float(length), total_mass=rho_a * length,
            mass=ro(t.T @ mass @ t), stiffness=ro(t.T @ k @ t), gyro=ro(t.T @ gyro @ t),
            load_b=ro(t.T @ load_b), load_alpha=ro(t.T @ load_alpha), load_w2=ro(t.T @ load_w2),
            pin_mass=ro(tb.T @ mass @ t), pin_stiffness=ro(pin_stiffness),
            pin_gyro=ro(tb.T @ gyro @ t), pin_b=ro(tb.T @ load_b),
            pin_alpha=ro(tb.T @ load_alpha), pin_w2=ro(tb.T @ load_w2), frequencies_hz=ro(cb.frequencies_hz),
            output_names=tuple(names), output_rows=ro(np.reshape(rows, (-1, 2, 1 + n_modes))),
            output_x=ro(xs), axial_stiffness=youngs_modulus * area / length,
            line_density=rho_a, geometric=ro(phi.T @ geo @ phi),
            pin_geometric=ro(tb.T @ geo @ phi))

