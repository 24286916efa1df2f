"""The mutable state of a rigid multibody system: the numbers that change in time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbcosim.model import Model


@dataclass
class State:
    """Time s; per moving body: centre of mass r (n,3) m and velocity v (n,3) m/s, inertial;
    attitude q (n,4) scalar first; angular velocity w (n,3) rad/s in the body frame."""

    t: float
    r: np.ndarray
    q: np.ndarray
    v: np.ndarray
    w: np.ndarray

    @classmethod
    def initial(cls, model: Model) -> State:
        """The model's initial state at t = 0."""
        b = model.bodies
        return cls(
            t=0.0,
            r=np.array([x.position for x in b], dtype=float).reshape(-1, 3),
            q=np.array([x.quaternion for x in b], dtype=float).reshape(-1, 4),
            v=np.array([x.velocity for x in b], dtype=float).reshape(-1, 3),
            w=np.array([x.angular_velocity for x in b], dtype=float).reshape(-1, 3),
        )

    def copy(self) -> State:
        return State(self.t, self.r.copy(), self.q.copy(), self.v.copy(), self.w.copy())

    def to_vector(self) -> np.ndarray:
        """Flat vector [r, q, v, w] of length 13 n."""
        return np.concatenate([self.r.ravel(), self.q.ravel(), self.v.ravel(), self.w.ravel()])

    @classmethod
    def from_vector(cls, t: float, y: np.ndarray) -> State:
        n = y.size // 13
        return cls(
            t,
            y[: 3 * n].reshape(n, 3).copy(),
            y[3 * n : 7 * n].reshape(n, 4).copy(),
            y[7 * n : 10 * n].reshape(n, 3).copy(),
            y[10 * n :].reshape(n, 3).copy(),
        )

    @property
    def velocities(self) -> np.ndarray:
        """Generalized velocities ν = [v_1, ω^b_1, v_2, ω^b_2, ...], shape (6n,)."""
        return np.hstack([self.v, self.w]).ravel()

    def set_velocities(self, nu: np.ndarray) -> None:
        nv = nu.reshape(-1, 6)
        self.v = nv[:, :3].copy()
        self.w = nv[:, 3:].copy()

    def is_finite(self) -> bool:
        return bool(
            np.isfinite(self.r).all()
            and np.isfinite(self.q).all()
            and np.isfinite(self.v).all()
            and np.isfinite(self.w).all()
        )
