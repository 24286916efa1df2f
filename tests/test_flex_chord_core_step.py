"""The chord body's step and pin forces, each one call of the C core (chord_body_step,
chord_pin_forces), against the same kernels called one by one as the body's Python composed
them (frame, acceleration polynomials, RK4 of the modes, the end frame; frame inputs, eta'',
the pin rows' residual): the same bits. Also its step glue: rows made contiguous once, the
frame's columns."""

from __future__ import annotations

import numpy as np
import pytest

from rbcosim import _core
from rbcosim.errors import SimulationError
from rbcosim.flex.modelling.chord import ChordModel
from rbcosim.flex.runtime.chord_body import ChordBody
from rbcosim.flex.runtime.chord_kernels import contiguous_rows, frame_inputs, modal_acceleration
from rbcosim.flex.runtime.frame import acceleration_polynomial, end_of_step, frame_at, set_frame
from rbcosim.flex.runtime.interface_motion import InterfaceMotion
from rbcosim.flex.runtime.layout import ETA

H = 2e-5
rng = np.random.default_rng(26)


def _model() -> ChordModel:
    return ChordModel.from_beam(0.3, 2.0e11, 7870.0, 2.8e-5, 6.4e-11, n_elements=8, n_modes=4,
                                output_nodes={"mid": 0.15})


def _motions(t: float | None) -> list[InterfaceMotion]:
    """Pins A near the origin and B near x = 0.3 m, moving, with random rates."""
    out = []
    for x in (0.0, 0.3):
        q = rng.normal(size=4)
        v = np.concatenate([[x, 0.0, 0.0] + 1e-3 * rng.normal(size=3), q / np.linalg.norm(q),
                            rng.normal(size=6), 100.0 * rng.normal(size=6)])
        out.append(InterfaceMotion.from_array(v, t))
    return out


def _kernel_by_kernel(body: ChordBody, motions, past, taus, n: int):
    """The step as the kernels one by one: (modes, end motions (2, 19))."""
    pins, coeffs = np.zeros((2, ETA)), []
    for i, m in enumerate(motions):
        set_frame(pins[i], m.as_array())
        rows = np.array([p[i].as_array() for p in past]) if past else np.zeros((0, 19))
        coeffs.append(acceleration_polynomial(m.as_array(), taus, rows))
    coeffs = np.array(coeffs)
    y = body._modes.copy()
    assert _core.chord_step(pins, coeffs, H, n, y, *body._modal_rows, body._minv,
                            body._params, body.gravity)
    end, out = np.empty((2, 19)), np.empty(18)
    for i in range(2):
        frame_at(pins[i], coeffs[i], H, out)
        end[i, 0:3], end[i, 7:10] = out[0:3], out[3:6]
        end[i, 3:7] = end_of_step(pins[i], coeffs[i], H, n)
        end[i, 10:13], end[i, 13:16], end[i, 16:19] = out[12:15], out[6:9], out[15:18]
    return y, end


def _forces_kernel_by_kernel(body: ChordBody) -> np.ndarray:
    m = body._motions
    inputs = frame_inputs(*(m[i, [0, 1, 2, 7, 8, 9, 13, 14, 15]].reshape(3, 3)
                            for i in range(2)), body.gravity)
    k = body.model.n_modes
    eta, etad = body._modes[:k], body._modes[k:]
    etadd = modal_acceleration(body._modal_rows, body._minv, body._params, inputs, eta, etad)
    on_beam = np.empty(4)
    _core.chord_residual(*body._pin_rows, body._params, inputs, eta, etad, etadd, on_beam)
    on_beam = on_beam.reshape(2, 2)
    ex, ez = inputs[0:2], np.array([-inputs[1], inputs[0]])
    f = np.zeros((2, 3))
    f[:, [0, 2]] = -(on_beam[:, :1] * ex + on_beam[:, 1:] * ez)
    return f


@pytest.mark.parametrize("n_past", [0, 1, 2])
@pytest.mark.parametrize("micro_steps", [1, 3])
@pytest.mark.parametrize("timed", [True, False])
def test_the_step_and_forces_are_the_kernels_one_by_one(n_past, micro_steps, timed):
    body = ChordBody(_model(), micro_steps=micro_steps)
    t = 0.01
    body.initialize(t, _motions(t))
    body._modes[:] = 1e-4 * rng.normal(size=body._modes.size)  # a deformed, moving rod
    past = [_motions(t - (j + 1) * 1.1 * H if timed else None) for j in range(n_past)]
    taus = np.array([(p[0].time - t) if timed else -(j + 1) * H for j, p in enumerate(past)])
    motions = _motions(t)
    want_modes, want_end = _kernel_by_kernel(body, motions, past, taus, micro_steps)
    body.step(t, H, motions, extrapolation=past)
    assert body._modes.tobytes() == want_modes.tobytes()
    assert body._motions.tobytes() == want_end.tobytes()
    assert body.time == t + H
    assert body.pin_forces().tobytes() == _forces_kernel_by_kernel(body).tobytes()
    assert np.abs(body.pin_forces()).max() > 0


def test_a_step_to_non_finite_modes_is_refused_and_keeps_the_modes():
    body = ChordBody(_model())
    body.initialize(0.0, _motions(0.0))
    modes = body._modes.copy()
    wild = [InterfaceMotion.from_array(np.concatenate([m.as_array()[:13], [1e300] * 6]))
            for m in _motions(None)]
    with pytest.raises(SimulationError) as caught:
        body.step(0.0, H, wild)
    assert str(caught.value) == ("chord body: non-finite modal state after the step from "
                                 f"t={0.0!r} (H={H!r})")
    assert body._modes.tobytes() == modes.tobytes() and body.time == 0.0


def test_rows_made_contiguous_are_taken_as_they_are():
    model = _model()
    rows = contiguous_rows(model.modal_rows)
    assert contiguous_rows(rows) is rows  # a body's rows, every step: no copy
    for made, given in zip(rows, model.modal_rows, strict=True):
        assert made.flags.c_contiguous and made.dtype == np.float64
        np.testing.assert_array_equal(made, given)
    again = contiguous_rows(tuple(model.modal_rows))  # a plain tuple: made again
    assert again is not rows and all(np.array_equal(a, b) for a, b in zip(again, rows))


def test_the_frame_takes_the_pins_position_velocity_and_acceleration():
    body = ChordBody(_model())
    motions = rng.normal(size=(2, 19))
    pins = [np.concatenate([m[0:3], m[7:10], m[13:16]]).reshape(3, 3) for m in motions]
    np.testing.assert_array_equal(body.frame(motions), frame_inputs(*pins, body.gravity))


def test_a_step_and_its_forces_are_one_core_call_each(monkeypatch):
    from rbcosim.flex.runtime import chord_body

    calls = []

    class Recording:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(_core, name)

    monkeypatch.setattr(chord_body, "_core", Recording())
    body = ChordBody(_model())
    body.initialize(0.0, _motions(0.0))
    calls.clear()
    body.step(0.0, H, _motions(0.0))
    body.pin_forces()
    assert calls == ["chord_body_step", "chord_pin_forces"]
