"""The mutable state of a rigid multibody system: the numbers that change in time."""

from __future__ import annotations

import numpy as np

from rbcosim.model import Model


class State:
    """Time s; per moving body: centre of mass r (n,3) m and velocity v (n,3) m/s, inertial;
    attitude q (n,4) scalar first; angular velocity w (n,3) rad/s in the body frame.

    The numbers live in one flat vector `vector` = [r, q, v, w] (13 n); r, q, v and w are
    views of it, and assigning to them copies into it. The compiled integrators advance
    `vector` in place."""

    __slots__ = ("_n", "t", "vector")

    def __init__(self, t: float, r, q, v, w):
        r = np.asarray(r, dtype=float).reshape(-1, 3)
        n = r.shape[0]
        self.t = float(t)
        self._n = n
        self.vector = np.concatenate([r.ravel(), np.asarray(q, float).reshape(n * 4),
                                      np.asarray(v, float).reshape(n * 3),
                                      np.asarray(w, float).reshape(n * 3)])

    def _view(self, start: int, width: int) -> np.ndarray:
        n = self._n
        return self.vector[start * n:(start + width) * n].reshape(n, width)

    @property
    def r(self) -> np.ndarray:
        return self._view(0, 3)

    @r.setter
    def r(self, value) -> None:
        self._view(0, 3)[:] = value

    @property
    def q(self) -> np.ndarray:
        return self._view(3, 4)

    @q.setter
    def q(self, value) -> None:
        self._view(3, 4)[:] = value

    @property
    def v(self) -> np.ndarray:
        return self._view(7, 3)

    @v.setter
    def v(self, value) -> None:
        self._view(7, 3)[:] = value

    @property
    def w(self) -> np.ndarray:
        return self._view(10, 3)

    @w.setter
    def w(self, value) -> None:
        self._view(10, 3)[:] = value

    @classmethod
    def initial(cls, model: Model) -> State:
        """The model's initial state at t = 0."""
        b = model.bodies
        return cls(0.0, [x.position for x in b], [x.quaternion for x in b],
                   [x.velocity for x in b], [x.angular_velocity for x in b])

    def copy(self) -> State:
        return State.from_vector(self.t, self.vector)

    def to_vector(self) -> np.ndarray:
        """A copy of the flat vector [r, q, v, w] of length 13 n."""
        return self.vector.copy()

    @classmethod
    def from_vector(cls, t: float, y: np.ndarray) -> State:
        """A state holding a copy of the flat vector y."""
        state = cls.__new__(cls)
        state.t = float(t)
        state.vector = np.array(y, dtype=float)
        state._n = state.vector.size // 13
        return state

    @property
    def velocities(self) -> np.ndarray:
        """Generalized velocities ν = [v_1, ω^b_1, v_2, ω^b_2, ...], shape (6n,)."""
        return np.hstack([self.v, self.w]).ravel()

    def is_finite(self) -> bool:
        return bool(np.isfinite(self.vector).all())
