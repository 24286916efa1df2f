"""A toy rigid side with the RigidSide interface, for protocol tests and benchmarks.

Each interface point is a free rigid body (its own centre of mass) of mass ``mass`` and
isotropic inertia ``inertia``, under ``gravity``, integrated with ``substeps`` semi-implicit
Euler micro steps per macro step in plain Python floats. Joint ``j`` sits at the point of the
same name. It exercises the service without the real solver and costs next to nothing, so a
benchmark built on it measures the protocol alone.

Scenario (TOML)::

    [toy]
    points = ["tip"]
    macro_step = 0.01
    substeps = 4
    mass = 1.0
    inertia = 0.1
    gravity = [0.0, 0.0, -9.81]
    t_end = 1.0          # s, only reported to clients (coupling_info)
    build_seconds = 0.0  # s the build takes (sleeps): a slow model build for isolation tests
    step_seconds = 0.0   # s each macro step takes (sleeps): a long step for fault tests
"""

from __future__ import annotations

import math
import struct
import time
import tomllib
from pathlib import Path

import numpy as np

from rbcosim.errors import ScenarioError, SimulationError

_DEFAULTS = {
    "points": ["tip"],
    "macro_step": 0.01,
    "substeps": 4,
    "mass": 1.0,
    "inertia": 0.1,
    "gravity": [0.0, 0.0, -9.81],
    "t_end": 1.0,
    "build_seconds": 0.0,
    "step_seconds": 0.0,
}


def _apply_override(table: dict, dotted: str, text: str) -> None:
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    keys = dotted.split(".")
    node = table
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ScenarioError(f"override {dotted!r}: {key!r} is not a table")
    node[keys[-1]] = value


class ToySide:
    """Free rigid bodies at the interface points; the RigidSide interface."""

    def __init__(self, config: dict) -> None:
        unknown = set(config) - set(_DEFAULTS)
        if unknown:
            raise ScenarioError(
                f"[toy]: unknown key(s) {sorted(unknown)}; valid keys: {sorted(_DEFAULTS)}"
            )
        cfg = {**_DEFAULTS, **config}
        points = cfg["points"]
        if not (isinstance(points, list) and points and all(isinstance(p, str) for p in points)):
            raise ScenarioError("[toy].points must be a non-empty list of names")
        try:
            self.macro_step = float(cfg["macro_step"])
            self._substeps = int(cfg["substeps"])
            self._mass = float(cfg["mass"])
            self._inertia = float(cfg["inertia"])
            self._gravity = tuple(float(g) for g in cfg["gravity"])
            self._t_end = float(cfg["t_end"])
            build_seconds = float(cfg["build_seconds"])
            self._step_seconds = float(cfg["step_seconds"])
        except (TypeError, ValueError) as exc:
            raise ScenarioError(f"[toy]: {exc}") from None
        if not (
            self.macro_step > 0 and self._substeps > 0 and self._mass > 0 and self._inertia > 0
        ):
            raise ScenarioError("[toy]: macro_step, substeps, mass and inertia must be positive")
        time.sleep(build_seconds)
        self.point_names = tuple(points)
        self.joint_names = tuple(points)
        self.time = 0.0
        n = len(points)
        # Per point: x y z q0 q1 q2 q3 vx vy vz wx wy wz, body i starts at (i, 0, 0).
        self._state = [
            [float(i), 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] for i in range(n)
        ]
        self._wrench = [[[0.0] * 6] for _ in range(n)]
        self._flex = [list(s) for s in self._state]
        self._index = {p: i for i, p in enumerate(points)}

    @classmethod
    def from_scenario(
        cls,
        path: str | Path | None = None,
        *,
        text: str | None = None,
        base_dir: str | Path | None = None,
        overrides: dict[str, str] | None = None,
    ) -> ToySide:
        if (path is None) == (text is None):
            raise ScenarioError("give exactly one of a scenario path or its text")
        try:
            if path is not None:
                p = Path(path)
                if base_dir is not None and not p.is_absolute():
                    p = Path(base_dir) / p
                text = p.read_text(encoding="utf-8")
            table = tomllib.loads(text)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ScenarioError(f"scenario {path or '<text>'}: {exc}") from None
        for dotted, value in (overrides or {}).items():
            _apply_override(table, dotted, value)
        if "toy" not in table:
            raise ScenarioError("the toy rigid side needs a [toy] table")
        return cls(table["toy"])

    def _i(self, name: str, kind: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise ScenarioError(
                f"Invalid {kind} name {name!r}. Valid names: {list(self.point_names)}"
            ) from None

    def coupling_info(self) -> dict:
        """The coupling a client runs (see RigidSide.coupling_info): Jacobi, held wrenches."""
        return {"scheme": "jacobi", "extrapolation": 0, "micro_steps": self._substeps,
                "macro_step": self.macro_step, "t_end": self._t_end,
                "n_steps": round(self._t_end / self.macro_step), "output_every": 1,
                "added_mass": False}

    def parameters(self) -> dict[str, float]:
        return {"mass": self._mass, "inertia": self._inertia, "macro_step": self.macro_step}

    def point_outputs(self) -> dict[str, np.ndarray]:
        """Point -> (13,) x y z q0..q3 vx vy vz wx wy wz, inertial frame."""
        return {p: np.array(self._state[i]) for p, i in self._index.items()}

    def motions_array(self) -> np.ndarray:
        """(n, 19): the 13 outputs of each point, then its acceleration ax ay az (m/s²) and
        angular acceleration (rad/s²), inertial, under the held wrench's constant term."""
        m, inertia = self._mass, self._inertia
        rows = []
        for s, coefficients in zip(self._state, self._wrench):
            c0 = coefficients[0]
            acc = [c0[j] / m + self._gravity[j] for j in range(3)]
            acc += [c0[j] / inertia for j in range(3, 6)]
            rows.append(list(s) + acc)
        return np.array(rows, dtype=np.float64).reshape(len(self._state), 19)

    def set_wrench(self, point: str, wrench: np.ndarray) -> None:
        """Force and moment, inertial frame, shape (6,), N and N·m, held over the next step."""
        self._wrench[self._i(point, "point")] = [[float(w) for w in wrench]]

    def set_wrench_polynomial(self, point: str, coefficients: np.ndarray) -> None:
        """W(τ) = Σ c_k τ^k over the next step, τ = t − t_now; coefficients shape (1 to 3, 6)."""
        self._wrench[self._i(point, "point")] = [[float(w) for w in row] for row in coefficients]

    def set_flex_kinematics(self, joint: str, kinematics: np.ndarray) -> None:
        """The flexible side's node kinematics at the joint, shape (13,)."""
        self._flex[self._i(joint, "joint")] = [float(k) for k in kinematics]

    def step(self, H: float) -> None:
        time.sleep(self._step_seconds)
        h = H / self._substeps
        m, inertia = self._mass, self._inertia
        gx, gy, gz = self._gravity
        for s, coefficients in zip(self._state, self._wrench):
            x, y, z, q0, q1, q2, q3, vx, vy, vz, wx, wy, wz = s
            for i in range(self._substeps):
                tau = i * h
                w = [sum(c[j] * tau**k for k, c in enumerate(coefficients)) for j in range(6)]
                vx += h * (w[0] / m + gx)
                vy += h * (w[1] / m + gy)
                vz += h * (w[2] / m + gz)
                wx += h * w[3] / inertia
                wy += h * w[4] / inertia
                wz += h * w[5] / inertia
                x += h * vx
                y += h * vy
                z += h * vz
                # q' = 1/2 (0, ω) ⊗ q with ω inertial.
                d0 = -0.5 * (wx * q1 + wy * q2 + wz * q3)
                d1 = 0.5 * (wx * q0 + wy * q3 - wz * q2)
                d2 = 0.5 * (-wx * q3 + wy * q0 + wz * q1)
                d3 = 0.5 * (wx * q2 - wy * q1 + wz * q0)
                q0, q1, q2, q3 = q0 + h * d0, q1 + h * d1, q2 + h * d2, q3 + h * d3
                norm = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
                if not 0.0 < norm < math.inf:
                    raise SimulationError(f"non-finite attitude at t = {self.time:g} s")
                q0, q1, q2, q3 = q0 / norm, q1 / norm, q2 / norm, q3 / norm
            values = (x, y, z, q0, q1, q2, q3, vx, vy, vz, wx, wy, wz)
            if not all(math.isfinite(v) for v in values):
                raise SimulationError(f"non-finite state at t = {self.time + H:g} s")
            s[:] = values
        self.time += H

    def gaps(self) -> dict[str, np.ndarray]:
        """Joint -> (4,) position gap m, rotation gap rad, velocity gap m/s, angular-velocity gap rad/s."""
        out = {}
        for name, i in self._index.items():
            a, b = self._state[i], self._flex[i]
            dot = abs(sum(a[k] * b[k] for k in range(3, 7)))
            out[name] = np.array(
                [
                    math.dist(a[0:3], b[0:3]),
                    2.0 * math.acos(min(1.0, dot)),
                    math.dist(a[7:10], b[7:10]),
                    math.dist(a[10:13], b[10:13]),
                ]
            )
        return out

    def get_state(self) -> bytes:
        wrench = [c[k] if k < len(c) else [0.0] * 6 for c in self._wrench for k in range(3)]
        flat = (
            [self.time] + [v for s in self._state for v in s] + [v for row in wrench for v in row]
        )
        return struct.pack(f"<{len(flat)}d", *flat)

    def set_state(self, blob: bytes) -> None:
        n = len(self._state)
        count = 1 + 13 * n + 18 * n
        if not isinstance(blob, (bytes, bytearray)) or len(blob) != 8 * count:
            raise ValueError(f"a toy state for {n} point(s) is {8 * count} bytes")
        flat = struct.unpack(f"<{count}d", blob)
        self.time = flat[0]
        for i in range(n):
            self._state[i] = list(flat[1 + 13 * i : 14 + 13 * i])
            base = 1 + 13 * n + 18 * i
            self._wrench[i] = [list(flat[base + 6 * k : base + 6 * k + 6]) for k in range(3)]
