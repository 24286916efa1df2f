"""Fixed-step integration loops, compiled: many micro steps in one call.

Each step: the method's stages, renormalised quaternions (the largest |‖q‖ − 1| before that
is kept), a finiteness check, optional projection onto the constraint manifold, and another
check. A step that fails leaves y at the last good state, its candidate in `failed`.

`stats` = [largest |‖q‖ − 1|, work W (J)]: W is the integral of the non-conservative power P
(`kernels.power`) as a quadrature state of the same method, W += h Σ b_i P(stage i), so that
E − E0 − W vanishes at the method's order (RK4: 4, SDIRK2: 2).
"""

from __future__ import annotations

import math

import numpy as np

from rbcosim.kernels import jit, jit_alloc
from rbcosim.kernels.equations import NO_CONVERGENCE, NOT_FINITE, OK, derivative, project
from rbcosim.kernels.power import stage_power
from rbcosim.kernels.rotation import normalize


@jit
def _finish(sys, w, y, new, t_new, do_project, stats, failed):
    """Renormalise, check and project the candidate `new`; copy it into y when it is good."""
    n = y.size // 13
    for i in range(n):
        err = normalize(new[3 * n + 4 * i: 3 * n + 4 * i + 4])
        if err > stats[0] or math.isnan(err):
            stats[0] = err
    if not _all_finite(new):
        _copy(new, failed)
        return NOT_FINITE
    if do_project:
        status, _ = project(sys, w, t_new, new, 1e-12, 8)
        if status != OK:
            _copy(new, failed)
            return status
        if not _all_finite(new):
            _copy(new, failed)
            return NOT_FINITE
    _copy(new, y)
    return OK


@jit
def _axpy(y, a, k, out):
    """out = y + a k."""
    for i in range(y.size):
        out[i] = y[i] + a * k[i]


@jit
def _copy(src, dst):
    for i in range(src.size):
        dst[i] = src[i]


@jit
def _all_finite(y):
    for i in range(y.size):
        if not math.isfinite(y[i]):
            return False
    return True


@jit_alloc
def rk4_steps(sys, w, y, times, h, do_project, stats, failed):
    """Classic RK4 from times[0] through each later entry of `times` (s), step h s, y in
    place. Returns (status, steps done)."""
    size = y.size
    k1, k2, k3, k4 = np.empty(size), np.empty(size), np.empty(size), np.empty(size)
    yt, new = np.empty(size), np.empty(size)
    for s in range(times.size - 1):
        t = times[s]
        status = derivative(sys, w, t, y, k1)
        work = stage_power(sys, w, t)
        _axpy(y, 0.5 * h, k1, yt)
        status |= derivative(sys, w, t + 0.5 * h, yt, k2)
        work += 2.0 * stage_power(sys, w, t + 0.5 * h)
        _axpy(y, 0.5 * h, k2, yt)
        status |= derivative(sys, w, t + 0.5 * h, yt, k3)
        work += 2.0 * stage_power(sys, w, t + 0.5 * h)
        _axpy(y, h, k3, yt)
        status |= derivative(sys, w, t + h, yt, k4)
        work += stage_power(sys, w, t + h)
        if status != OK:
            _copy(y, failed)
            return status, s
        for i in range(size):
            new[i] = y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
        status = _finish(sys, w, y, new, times[s + 1], do_project, stats, failed)
        if status != OK:
            return status, s
        stats[1] += h / 6.0 * work
    return OK, times.size - 1


@jit_alloc
def _fd_jacobian(sys, w, t, z, jac):
    """∂f/∂y by forward differences into jac; returns a status."""
    size = z.size
    f0, f1, zp = np.empty(size), np.empty(size), z.copy()
    status = derivative(sys, w, t, z, f0)
    for k in range(size):
        dy = 1e-7 * max(1.0, abs(z[k]))
        zp[k] = z[k] + dy
        status |= derivative(sys, w, t, zp, f1)
        zp[k] = z[k]
        jac[:, k] = (f1 - f0) / dy
    return status


@jit_alloc
def _stage(sys, w, t, base, gh, guess, newton, fz, tol, max_newton):
    """Solve z = base + γh f(t, z); f(t, z) into fz. newton: (matrix I − γh ∂f/∂y, valid
    flag (1,)), reused from earlier stages while it converges. Returns a status."""
    matrix, valid = newton
    size = base.size
    z = guess.copy()
    for attempt in range(2):
        if valid[0] == 0 or attempt == 1:
            status = _fd_jacobian(sys, w, t, z, matrix)
            if status != OK:
                return status
            matrix[:, :] = -gh * matrix
            for k in range(size):
                matrix[k, k] += 1.0
            valid[0] = 1
        for _ in range(max_newton):
            status = derivative(sys, w, t, z, fz)
            if status != OK:
                return status
            dz = np.linalg.solve(matrix, -(z - base - gh * fz))
            z += dz
            if np.linalg.norm(dz) <= tol * (1.0 + np.linalg.norm(z)):
                return derivative(sys, w, t, z, fz)
    return NO_CONVERGENCE


@jit_alloc
def sdirk2_steps(sys, w, y, times, h, do_project, stats, failed, newton, tol, max_newton):
    """Alexander's two-stage L-stable SDIRK (γ = 1 − 1/√2) from times[0] through `times`,
    step h s, y in place. Returns (status, steps done)."""
    g = 1.0 - 1.0 / math.sqrt(2.0)
    size = y.size
    k1, k2, new = np.empty(size), np.empty(size), np.empty(size)
    for s in range(times.size - 1):
        t = times[s]
        work = 0.0
        status = _stage(sys, w, t + g * h, y, g * h, y, newton, k1, tol, max_newton)
        if status == OK:
            work = (1.0 - g) * stage_power(sys, w, t + g * h)
            status = _stage(sys, w, t + h, y + (1.0 - g) * h * k1, g * h, y + h * k1, newton, k2,
                            tol, max_newton)
            work += g * stage_power(sys, w, t + h)
        if status != OK:
            _copy(y, failed)
            return status, s
        for i in range(size):
            new[i] = y[i] + h * ((1.0 - g) * k1[i] + g * k2[i])
        status = _finish(sys, w, y, new, times[s + 1], do_project, stats, failed)
        if status != OK:
            return status, s
        stats[1] += h * work
    return OK, times.size - 1

